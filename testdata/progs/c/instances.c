/* instances.c - holds three instances of one library at once: argv[1]
 * (libsq.so) loaded with dlopen, the same file loaded again with
 * dlmopen(LM_ID_NEWLM) (a second instance, in a namespace of its own),
 * and argv[2], a copy of the file at another path, loaded with dlopen.
 * Each instance is mapped apart; PROFILE must plant each, count all
 * three into square()'s item, and forget one at its dlclose without
 * harming the others (issue 18).
 *
 * square() runs 3 x 100 times, the three instances called in turn;
 * after the copy is closed, 2 x 10 times more (the first two in turn);
 * after the dlmopen'd one is closed, 10 times more: 330 calls in all.
 * The program prints "instances total 985905": 3 x sum(i * i, i < 100)
 * = 3 x 328350 = 985050 for the first 300 calls, then 2 x 285 and 285
 * for the last 30 (sum(i * i, i < 10) = 285). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

typedef int (*square_fn)(int);

static void *load(const char *path, int newns, square_fn *sq)
{
    void *h = newns ? dlmopen(LM_ID_NEWLM, path, RTLD_NOW | RTLD_LOCAL) : dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "load %s: %s\n", path, dlerror());
        return NULL;
    }
    *sq = (square_fn)dlsym(h, "square");
    return *sq != NULL ? h : NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: instances LIB COPY\n");
        return 2;
    }
    alarm(120);
    square_fn sq[3];
    void *h0 = load(argv[1], 0, &sq[0]);
    void *h1 = load(argv[1], 1, &sq[1]);
    void *h2 = load(argv[2], 0, &sq[2]);
    if (h0 == NULL || h1 == NULL || h2 == NULL)
        return 1;
    if (sq[0] == sq[1] || sq[0] == sq[2] || sq[1] == sq[2]) {
        fprintf(stderr, "instances: the three loads share one instance\n");
        return 1;
    }
    long long total = 0;
    for (int i = 0; i < 100; i++)
        for (int n = 0; n < 3; n++)
            total += sq[n](i);
    dlclose(h2);
    for (int i = 0; i < 10; i++)
        for (int n = 0; n < 2; n++)
            total += sq[n](i);
    dlclose(h1);
    for (int i = 0; i < 10; i++)
        total += sq[0](i);
    dlclose(h0);
    printf("instances total %lld\n", total);
    return 0;
}
