/* inlined.c - functions that run inlined where they are called, for the
 * inlined frames of function sampling's stacks (issue 35). Each phase
 * spins on the main thread until it has used its CPU time (the thread's
 * own clock, CLOCK_THREAD_CPUTIME_ID), PHASE ms (argv[1], default 100):
 *
 *   outer runs spin inlined in its own code, for 2 PHASE;
 *   deep runs wrap inlined in its code, and spin inlined in wrap's copy,
 *     for PHASE;
 *   spin's own copy, called through a pointer, runs for PHASE.
 *
 * First warm spins in code of its own, WARM ms (argv[2], default PHASE).
 * spin and wrap have code of their own (their addresses are taken), so
 * PREP selects them, and their inlined copies are theirs on the stack.
 * At its end the program prints the CPU time of each phase, as measured
 * inside it, in nanoseconds:
 *   inlined outer=NS deep=NS own=NS */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define INLINE static inline __attribute__((always_inline))

static volatile unsigned long sink;

INLINE long long thread_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* spin uses ns of the thread's CPU time and returns what it used. Each
 * reading of a thread's CPU clock is a system call (it has no vDSO path),
 * whose samples are the C library's, below spin: one every 200,000
 * iterations keeps them under 1 % of spin's (one every 20,000 made them
 * 3 to 9 %, near TestSamplingInlined's tolerance). */
INLINE long long spin(long long ns)
{
    long long start = thread_ns(), t;
    do {
        for (int i = 0; i < 200000; i++)
            sink += i;
        t = thread_ns();
    } while (t - start < ns);
    return t - start;
}

INLINE long long wrap(long long ns)
{
    long long r = spin(ns);
    sink++;
    return r;
}

long long (*volatile spin_copy)(long long) = spin;
long long (*volatile wrap_copy)(long long) = wrap;

/* warm spins ns of the thread's CPU time in code of its own, before the
 * phases: the sampler's first samples (PROFILE loads the call frame
 * information of each module at the first that needs it) fall here. */
__attribute__((noinline)) void warm(long long ns)
{
    long long start = thread_ns();
    while (thread_ns() - start < ns)
        for (int i = 0; i < 200000; i++)
            sink += i;
}

__attribute__((noinline)) long long outer(long long ns)
{
    long long r = spin(ns);
    sink++; /* (no tail call) */
    return r;
}

__attribute__((noinline)) long long deep(long long ns)
{
    long long r = wrap(ns);
    sink++;
    return r;
}

int main(int argc, char **argv)
{
    long long phase = (argc > 1 ? atoll(argv[1]) : 100) * 1000000LL;
    warm(argc > 2 ? atoll(argv[2]) * 1000000LL : phase);
    long long o = outer(2 * phase);
    long long d = deep(phase);
    long long s = spin_copy(phase);
    printf("inlined outer=%lld deep=%lld own=%lld\n", o, d, s);
    return 0;
}
