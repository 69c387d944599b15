/* workers.c - a threaded example for the course (docs/course/): three
 * threads each sum the squares of a range of numbers in chunks, and the
 * main thread waits for them.
 *
 *   workers [N]     each worker calls chunk() N times (default 100), and
 *                   chunk() calls square() 1,000 times
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define WORKERS 3

static volatile long sink;

static long square(long x) { return x * x; }

static long chunk(long from)
{
    long sum = 0;
    for (long i = from; i < from + 1000; i++)
        sum += square(i);
    return sum;
}

static void *worker(void *arg)
{
    long n = (long)arg, sum = 0;
    for (long i = 0; i < n; i++)
        sum += chunk(i * 1000);
    sink += sum;
    return NULL;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 100;
    pthread_t t[WORKERS];
    for (int i = 0; i < WORKERS; i++)
        pthread_create(&t[i], NULL, worker, (void *)n);
    for (int i = 0; i < WORKERS; i++)
        pthread_join(t[i], NULL);
    printf("workers done: %d threads, %ld chunks each\n", WORKERS, n);
    return 0;
}
