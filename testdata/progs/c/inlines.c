/* inlines.c - a function inlined four times into one caller, each copy
 * reached on a path of its own (N, the first argument, 3,000 by default,
 * a multiple of 3):
 *
 *   bump     always inlined: walk holds four copies of it, the first on
 *            the path of x % 3 == 0 (N/3 passes), the second and third
 *            one after the other on the path of x % 3 == 1 (N/3), the
 *            fourth on the path of x % 3 == 2 (N/3): each line of bump
 *            runs 4N/3 times;
 *   walk     called N times.
 *
 * It prints "inlines done" and the total. */
#include <stdio.h>
#include <stdlib.h>

#define KEEP __attribute__((noinline, noclone))
#define INLINE static inline __attribute__((always_inline))

static volatile long total;

INLINE long bump(long x, long k)
{
    total += x * k;              /* bump: add */
    return total ^ k;            /* bump: back */
}

KEEP long walk(long x)
{
    long r;
    if (x % 3 == 0)
        r = bump(x, 3);
    else if (x % 3 == 1)
        r = bump(x, 5) + bump(x + 1, 7);
    else
        r = bump(x, 11) - 1;
    return r;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 3000;
    long s = 0;
    for (long x = 0; x < n; x++)
        s += walk(x);
    printf("inlines done %ld\n", s + total);
    return 0;
}
