/* crash.c - calls f 3 times, then dereferences NULL: the run ends with
 * SIGSEGV and the 3 hits must still be written. With an argument "int" it
 * instead waits for SIGINT (after the 3 calls), for interrupt tests. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define KEEP __attribute__((noinline, noclone))

KEEP int f(int x) { return x + 1; }

int main(int argc, char **argv)
{
    volatile int *p = NULL;
    int i, r = 0;
    for (i = 0; i < 3; i++)
        r += f(i);
    printf("before crash %d\n", r);
    fflush(stdout);
    if (argc > 1 && strcmp(argv[1], "int") == 0) {
        for (;;)
            pause();
    }
    return *p;
}
