/* Inlined calls fixture: sq is inlined twice into twosq, and into outer,
 * itself inlined into nested; the tests find the calls by their "L:"
 * markers. */
#include <stdio.h>
#include <stdlib.h>

#define INLINE static inline __attribute__((always_inline))

static volatile int sink;

INLINE int sq(int x)
{
	sink += x;
	return x * x;
}

INLINE int outer(int x)
{
	sink -= x;
	return sq(x + 1) + 1; /* L:call-inner */
}

__attribute__((noinline)) int twosq(int a, int b)
{
	int r = sq(a); /* L:call-a */
	if (b > 0)
		r += sq(b); /* L:call-b */
	return r;
}

__attribute__((noinline)) int nested(int a)
{
	return outer(a) * 2; /* L:call-outer */
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3;
	printf("%d\n", twosq(n, n - 1) + nested(n));
	return 0;
}
