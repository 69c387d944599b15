/* recmul.c - a recursive multiplication, as bc's _bc_rec_mul (Karatsuba),
 * with calls and call chains known by construction.
 *
 *   rec_mul(n)   multiplies numbers of n digits: n <= 2 calls simple_mul
 *                once; more calls rec_mul three times on n/2 digits, then
 *                add_parts once.
 *
 * main calls rec_mul(16) once: rec_mul is called 1 + 3 + 9 + 27 = 40
 * times, simple_mul 27 times (at the fourth level of rec_mul), add_parts
 * 1 + 3 + 9 = 13 times. The deepest chain is six calls:
 * main;rec_mul;rec_mul;rec_mul;rec_mul;simple_mul, 27 times. Each of
 * simple_mul and add_parts works a little (a loop of the program's first
 * argument's iterations, default 20000), so that timing has something to
 * measure below the recursion.
 */
#include <stdlib.h>

#define KEEP __attribute__((noinline, noclone))

static volatile long s_sink;
static long s_work = 20000;

/* (Inlined: not a function of the profile.) */
static inline __attribute__((always_inline)) void spin(void)
{
	for (long i = 0; i < s_work; i++)
		s_sink += i;
}

KEEP long simple_mul(long a, long b)
{
	spin();
	return a * b;
}

KEEP long add_parts(long x, long y, long z)
{
	spin();
	return x + y + z;
}

KEEP long rec_mul(long a, long b, int n)
{
	if (n <= 2)
		return simple_mul(a, b);
	long lo = rec_mul(a, b, n / 2);
	long mid = rec_mul(a + 1, b + 1, n / 2);
	long hi = rec_mul(a + 2, b + 2, n / 2);
	return add_parts(lo, mid, hi);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		s_work = atol(argv[1]);
	return rec_mul(3, 4, 16) > 0 ? 0 : 1;
}
