/* threads.c - four threads call work() 20,000 times each: 80,000 calls,
 * every one of which must be counted. worker runs 4 times, main once. */
#include <pthread.h>
#include <stdio.h>

#define KEEP __attribute__((noinline, noclone))
#define THREADS 4
#define CALLS 20000

static volatile long sink;

KEEP long work(long x) { sink += x; return x * 3; }

KEEP void *worker(void *arg)
{
    long i, r = 0;
    for (i = 0; i < CALLS; i++)
        r += work(i);
    return (void *)r;
}

int main(void)
{
    pthread_t t[THREADS];
    int i;
    for (i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("threads done %ld\n", (long)sink);
    return 0;
}
