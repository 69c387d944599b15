/* dlopen.c - loads the shared library its argument names (libsq.so) with
 * dlopen, calls its square() 10 times and closes it; then starts four
 * threads, loads the library again, and lets each thread call square()
 * 1000 times: square() runs 4010 times in all, in two loads of the
 * library, the second while other threads run. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define CALLS 1000

static int (*square)(int);
static pthread_barrier_t ready;
static long long sums[THREADS];

static void *worker(void *arg)
{
    long long *sum = arg;
    pthread_barrier_wait(&ready);
    for (int i = 0; i < CALLS; i++)
        *sum += square(i);
    return NULL;
}

static void *load(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return NULL;
    }
    square = (int (*)(int))dlsym(h, "square");
    return h;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "./libsq.so";
    long long total = 0;
    void *h = load(path);
    if (h == NULL || square == NULL)
        return 1;
    for (int i = 0; i < 10; i++)
        total += square(i);
    dlclose(h);
    square = NULL;

    pthread_t th[THREADS];
    pthread_barrier_init(&ready, NULL, THREADS + 1);
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, worker, &sums[i]);
    h = load(path);
    if (h == NULL || square == NULL)
        return 1;
    pthread_barrier_wait(&ready);
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        total += sums[i];
    }
    dlclose(h);
    printf("total %lld\n", total);
    return 0;
}
