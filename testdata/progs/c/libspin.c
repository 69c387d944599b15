/* libspin.c - the library of spinhost.c: lib_spin uses ns of its thread's
 * CPU time (its own clock) and returns what it used, for function
 * sampling in a shared library (issue 21). */
#include <time.h>

static volatile unsigned long sink;

static long long now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

long long lib_spin(long long ns)
{
    long long start = now(), t;
    do {
        for (int i = 0; i < 20000; i++)
            sink += i;
        t = now();
    } while (t - start < ns);
    return t - start;
}
