/* spinhost.c - spends known shares of its CPU time in a function of its
 * own and in one of a shared library it is linked with (libspin.c), for
 * function sampling (issue 21): each of ROUNDS rounds (argv[1], default
 * 100) calls lib_spin for 6 ms and host_spin for 4 ms of the thread's CPU
 * time, and the program prints what each used, as measured inside it:
 *   spinhost calls=N lib=NS host=NS */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

long long lib_spin(long long ns);

static volatile unsigned long sink;

static long long now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((noinline)) long long host_spin(long long ns)
{
    long long start = now(), t;
    do {
        for (int i = 0; i < 20000; i++)
            sink += i;
        t = now();
    } while (t - start < ns);
    return t - start;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 100;
    long long lib = 0, host = 0;
    for (int r = 0; r < rounds; r++) {
        lib += lib_spin(6000000);
        host += host_spin(4000000);
    }
    printf("spinhost calls=%d lib=%lld host=%lld\n", rounds, lib, host);
    return 0;
}
