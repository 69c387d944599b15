/* threads60.c - a server of 60 threads that call f() without end, for
 * profile --pid (e2e/attachwindow_test.go, TestAttachManyThreads): timed
 * in-process, each call writes two records into its thread's ring, faster
 * than PROFILE reads 60 rings on a machine of few CPUs, and the threads
 * stop for full rings all the time. Commands on stdin, answers on stdout:
 *
 *   n   "threads N": the threads running f (60, and main)
 *   q   exit 0
 *
 * It prints "ready" once every thread has called f. */
#include <pthread.h>
#include <stdio.h>
#include <sys/prctl.h>

#define KEEP __attribute__((noinline, noclone))
#define THREADS 60

static volatile long sink;
static pthread_barrier_t started;

KEEP long f(long x) { return x * 2 + 1; }

static void *spin(void *arg)
{
    sink += f(0);
    pthread_barrier_wait(&started);
    for (long i = 0;; i++)
        sink += f(i);
    return arg;
}

int main(void)
{
    // Any process of the user may attach (docs/linux.md, "Attaching to a
    // running process").
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    setvbuf(stdout, NULL, _IOLBF, 0);
    pthread_barrier_init(&started, NULL, THREADS + 1);
    pthread_t t;
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t, NULL, spin, NULL);
    pthread_barrier_wait(&started);
    printf("ready\n");
    char line[64];
    while (fgets(line, sizeof line, stdin)) {
        if (line[0] == 'n')
            printf("threads %d\n", THREADS);
        else if (line[0] == 'q')
            return 0;
    }
    return 0;
}
