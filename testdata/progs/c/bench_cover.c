/* bench_cover.c - eight functions, each called a million times (more with
 * an argument): function coverage must cost little over a native run,
 * since each breakpoint is removed at its first hit. */
#include <stdlib.h>

#define KEEP __attribute__((noinline, noclone))
static volatile long sink;
KEEP void f0(long x) { sink += x; }
KEEP void f1(long x) { sink ^= x; }
KEEP void f2(long x) { sink -= x; }
KEEP void f3(long x) { sink += x * 3; }
KEEP void f4(long x) { sink |= x; }
KEEP void f5(long x) { sink += x >> 1; }
KEEP void f6(long x) { sink -= x * 5; }
KEEP void f7(long x) { sink += ~x; }

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000, i;
    for (i = 0; i < n; i++) {
        f0(i); f1(i); f2(i); f3(i); f4(i); f5(i); f6(i); f7(i);
    }
    return 0;
}
