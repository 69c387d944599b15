/* shares.c - spends known shares of its CPU time in known functions, over
 * several threads, for function sampling (issue 21): spin_a, spin_b and
 * spin_c each spin until their thread has used 5, 3 and 2 ms of CPU
 * time (its own clock, CLOCK_THREAD_CPUTIME_ID) since they were called,
 * so 50 %, 30 % and 20 % of the work is theirs whatever else runs on the
 * machine. The main thread and two workers, the second born late (after
 * its elder's first 20 rounds), each run ROUNDS rounds of one call of
 * each (argv[1], default 100). spin_c is reached through middle, which
 * does nothing else: its time with children is spin_c's.
 *
 * At its end the program prints the CPU time each function used, summed
 * over the threads, as measured inside it:
 *   shares calls=N a=NS b=NS c=NS total=NS
 * where total is the CPU time of the whole process (CLOCK_PROCESS_CPUTIME_ID)
 * and N the calls of each spin function; then the user-space CPU time of
 * each thread (getrusage RUSAGE_THREAD at its work's end), main's first,
 * which user-space samples see (a thread's spinning counts the kernel's
 * time in it too):
 *   threads user=US,US,US sys=US,US,US
 * (with the system time of each: a sampler of the kernel's time too sees
 * both); then the CPU time each thread spun, by its own clock (the
 * kernel's time in it included; each spin may overshoot its due, by
 * more under emulation):
 *   spun NS,NS,NS */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long long now(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static volatile unsigned long sink;

/* spin uses ns of the thread's CPU time and returns what it used. It
 * reads its clock, a system call, every 200,000 additions (some 60 us
 * here): a sampler that stops the thread (PROFILE's with ptrace) sees it
 * where it stops, often at the end of a system call, outside functions. */
static inline __attribute__((always_inline)) long long spin(long long ns)
{
    long long start = now(CLOCK_THREAD_CPUTIME_ID), t;
    do {
        for (int i = 0; i < 200000; i++)
            sink += i;
        t = now(CLOCK_THREAD_CPUTIME_ID);
    } while (t - start < ns);
    return t - start;
}

__attribute__((noinline)) long long spin_a(void) { return spin(5000000); }
__attribute__((noinline)) long long spin_b(void) { return spin(3000000); }
__attribute__((noinline)) long long spin_c(void) { return spin(2000000); }
__attribute__((noinline)) long long middle(void)
{
    long long r = spin_c();
    sink++; /* (no tail call: middle's frame stays while spin_c runs) */
    return r;
}

static int rounds = 100;
static long long used[3][3]; /* per thread, per function */
static volatile int started;

static long long user_us[3], sys_us[3]; /* per thread */

static void work(int th)
{
    for (int r = 0; r < rounds; r++) {
        used[th][0] += spin_a();
        used[th][1] += spin_b();
        used[th][2] += middle();
        if (th == 1 && r == (rounds > 20 ? 20 : rounds - 1))
            started = 1;
    }
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) == 0) {
        user_us[th] = ru.ru_utime.tv_sec * 1000000LL + ru.ru_utime.tv_usec;
        sys_us[th] = ru.ru_stime.tv_sec * 1000000LL + ru.ru_stime.tv_usec;
    }
}

static void *worker(void *arg)
{
    work((int)(long)arg);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        rounds = atoi(argv[1]);
    pthread_t t1, t2;
    pthread_create(&t1, NULL, worker, (void *)1L);
    while (!started)
        usleep(1000); /* the late thread waits for its elder's 20th round */
    pthread_create(&t2, NULL, worker, (void *)2L);
    work(0);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    long long a = 0, b = 0, c = 0;
    for (int th = 0; th < 3; th++)
        a += used[th][0], b += used[th][1], c += used[th][2];
    printf("shares calls=%d a=%lld b=%lld c=%lld total=%lld\n", 3 * rounds, a, b, c, now(CLOCK_PROCESS_CPUTIME_ID));
    printf("threads user=%lld,%lld,%lld sys=%lld,%lld,%lld\n", user_us[0], user_us[1], user_us[2],
           sys_us[0], sys_us[1], sys_us[2]);
    long long spun[3];
    for (int th = 0; th < 3; th++)
        spun[th] = used[th][0] + used[th][1] + used[th][2];
    printf("spun %lld,%lld,%lld\n", spun[0], spun[1], spun[2]);
    return 0;
}
