/* bench_deep: what attribution (/AT) costs against the depth of the stack:
 * main calls down(D), which recurses until D calls of it are on the
 * stack, and the deepest calls leaf() N times. Every call of leaf() is made
 * under D + 1 profiled frames (main and the D of down).
 *
 *   bench_deep D [N]   N calls of leaf() (default 1,000,000) at depth D
 */
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline, noclone))
/* An empty asm after a call keeps it from becoming a tail jump. */
#define KEEP() __asm__ volatile("")

/* leaf is one round of a multiply-xorshift hash: a dependency chain the
 * compiler cannot fold. */
NOINLINE unsigned leaf(unsigned x) {
	x ^= x >> 15;
	x *= 0x2c1b3c6du;
	x ^= x >> 12;
	return x;
}

NOINLINE unsigned down(long d, long n) {
	unsigned x = 1;
	if (d > 1) {
		x = down(d - 1, n);
		KEEP();
		return x + 1;
	}
	for (long i = 0; i < n; i++)
		x = leaf(x);
	return x;
}

int main(int argc, char **argv) {
	long d = argc > 1 ? atol(argv[1]) : 10;
	long n = argc > 2 ? atol(argv[2]) : 1000000;
	if (d < 1)
		d = 1;
	printf("bench_deep %u\n", down(d, n));
	return 0;
}
