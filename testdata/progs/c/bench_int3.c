/* bench_int3.c - executes int3 N times (x86-64): the floor of a breakpoint
 * profiler, a tracer that does nothing but wait for the stop and continue. */
#include <stdlib.h>

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 100000, i;
    for (i = 0; i < n; i++)
        __asm__ volatile("int3");
    return 0;
}
