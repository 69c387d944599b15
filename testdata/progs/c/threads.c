/* threads.c - four threads call work() N times each (N is the first
 * argument, 20,000 by default): 4N calls, every one of which must be
 * counted. worker runs 4 times, main once. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define KEEP __attribute__((noinline, noclone))
#define THREADS 4

static long calls = 20000;

static volatile long sink;

KEEP long work(long x) { sink += x; return x * 3; }

KEEP void *worker(void *arg)
{
    long i, r = 0;
    for (i = 0; i < calls; i++)
        r += work(i);
    return (void *)r;
}

int main(int argc, char **argv)
{
    pthread_t t[THREADS];
    int i;
    if (argc > 1)
        calls = atol(argv[1]);
    for (i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("threads done %ld\n", (long)sink);
    return 0;
}
