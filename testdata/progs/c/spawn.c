/* spawn.c - children made by fork and vfork run unprofiled and unharmed.
 *
 * A vfork child, which shares the program's memory and so its breakpoints,
 * calls f once and execs "true"; a forked child calls f 5 times and exits 3;
 * then the parent calls f 10 times. Only the parent's 10 calls count, and
 * the vfork child hits f's breakpoint first (coverage must not remove it for
 * the child). The program also raises SIGTRAP itself and catches it: the
 * signal must reach it unchanged. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define KEEP __attribute__((noinline, noclone))

static volatile int traps;

KEEP int f(int x) { return x * 2; }

static void on_trap(int sig) { (void)sig; traps++; }

int main(void)
{
    int i, r = 0, status, forked, vforked;
    pid_t pid;
    signal(SIGTRAP, on_trap);
    raise(SIGTRAP);

    pid = vfork();
    if (pid == 0) {
        if (f(100) != 200)
            _exit(99);
        execlp("true", "true", (char *)NULL);
        _exit(127);
    }
    waitpid(pid, &status, 0);
    vforked = WIFEXITED(status) ? WEXITSTATUS(status) : -1;

    pid = fork();
    if (pid == 0) {
        for (i = 0; i < 5; i++)
            r += f(i);
        _exit(3);
    }
    waitpid(pid, &status, 0);
    forked = WIFEXITED(status) ? WEXITSTATUS(status) : -1;

    for (i = 0; i < 10; i++)
        r += f(i);
    printf("spawn fork=%d vfork=%d traps=%d r=%d\n", forked, vforked, traps, r);
    return 0;
}
