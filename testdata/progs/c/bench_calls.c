/* bench_calls: a call-heavy workload for the in-process benchmark: about
 * 15 million calls of small functions that the compiler may not inline
 * (noinline, as functions across object files), each doing a few dozen
 * cycles of work: N rounds of mix(), which calls step() and clamp(), and
 * every 8th round fold(). The result depends on every call, so none is
 * optimised away.
 *
 *   bench_calls [N]   N rounds (default 5,000,000): 3N + N/8 calls
 */
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline, noclone))

/* scramble is one round of a multiply-xorshift hash: a dependency chain
 * the compiler cannot fold. */
static inline unsigned scramble(unsigned x) {
	x ^= x >> 15;
	x *= 0x2c1b3c6du;
	x ^= x >> 12;
	return x;
}

NOINLINE unsigned step(unsigned x) {
	for (int k = 0; k < 16; k++)
		x = scramble(x + (unsigned)k);
	return x;
}

NOINLINE unsigned clamp(unsigned x, unsigned lo, unsigned hi) {
	x = scramble(x);
	return x < lo ? lo : x > hi ? hi : x;
}

NOINLINE unsigned fold(unsigned x) { return scramble((x >> 16) ^ (x & 0xffff)); }

NOINLINE unsigned mix(unsigned acc, unsigned i) {
	unsigned s = step(acc + i);
	return clamp(s, 1000, 3000000000u) ^ (i & 7);
}

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 5000000;
	unsigned acc = 1;
	for (long i = 0; i < n; i++) {
		acc = mix(acc, (unsigned)i);
		if ((i & 7) == 0)
			acc += fold(acc);
	}
	printf("bench_calls %u\n", acc);
	return 0;
}
