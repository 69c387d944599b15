/* nodump.c - a program that makes itself non-dumpable, as ssh-agent and
 * gpg-agent do (prctl(PR_SET_DUMPABLE, 0)): an unprivileged tracer can no
 * longer open its /proc files. Then it calls f 10 times, loads the
 * library its argument names (libsq.so) with dlopen, calls its square()
 * 100 times, and forks a child that calls f and square() 50 times each
 * (a copy of the program: not counted, and unharmed) before it exits 7.
 * In the program f runs 10 times and square() 100 times. It prints the
 * sum of its squares (328350), the child's status (7) and whether it is
 * still non-dumpable (0): a profiler must not change that. */
#include <dlfcn.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define KEEP __attribute__((noinline, noclone))

KEEP int f(int x) { return x + 1; }

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "./libsq.so";
    long long sum = 0;
    int status = -1;
    if (prctl(PR_SET_DUMPABLE, 0) != 0) {
        perror("prctl");
        return 1;
    }
    for (int i = 0; i < 10; i++)
        sum += f(i) - (i + 1);
    void *h = dlopen(path, RTLD_NOW);
    if (h == NULL) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    int (*square)(int) = (int (*)(int))dlsym(h, "square");
    if (square == NULL)
        return 1;
    for (int i = 0; i < 100; i++)
        sum += square(i);
    pid_t pid = fork();
    if (pid == 0) {
        int r = 0;
        for (int i = 0; i < 50; i++)
            r += f(i) + square(i);
        _exit(r > 0 ? 7 : 1);
    }
    waitpid(pid, &status, 0);
    printf("sum %lld child %d dumpable %d\n", sum,
           WIFEXITED(status) ? WEXITSTATUS(status) : -1, prctl(PR_GET_DUMPABLE));
    return 0;
}
