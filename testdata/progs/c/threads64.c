/* threads64.c - 64 threads, started together, each call f N times (N is
 * the first argument, 100,000 by default): f 64N, worker 64, main 1. The
 * threads wait at a barrier so that they all run f at the same time. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define KEEP __attribute__((noinline, noclone))
#define THREADS 64

static volatile long sink;
static long calls = 100000;
static pthread_barrier_t start;

KEEP long f(long x) { return x * 2 + 1; }

KEEP void *worker(void *arg)
{
    long r = 0;
    (void)arg;
    pthread_barrier_wait(&start);
    for (long i = 0; i < calls; i++)
        r += f(i);
    sink += r;
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t t[THREADS];
    if (argc > 1)
        calls = atol(argv[1]);
    pthread_barrier_init(&start, NULL, THREADS);
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("threads64 done\n");
    return 0;
}
