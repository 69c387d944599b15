/* bench_hits.c - calls f N times (N = first argument, default 100000): the
 * per-hit cost of a counting breakpoint is the run's time divided by N. */
#include <stdlib.h>

__attribute__((noinline, noclone)) int f(int x) { return x + 1; }

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 100000, i;
    int r = 0;
    for (i = 0; i < n; i++)
        r += f((int)i);
    return r == 42;
}
