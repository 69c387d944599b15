/* sharer.c - a server for the tests of profile --pid on a process that
 * shares its memory with another (e2e/share_test.go): at its start main
 * makes a child with clone(CLONE_VM | SIGCHLD), a process of its own in
 * the same memory, not a thread. Commands come on stdin, one per line,
 * answers on stdout:
 *
 *   w N   main calls work() N times, then the child calls other() N
 *         times; "did N" when both are done
 *   c     "child PID"
 *   q     the child is told to end and is reaped; exit 0
 *
 * In a window around one "w N": work N, other N, every other function 0
 * (main, child_main and next_line are already running or not called).
 * Between commands main waits in read(2) and the child in read(2) on a
 * pipe. It prints "ready" once the child runs (child_main has said so:
 * its entry is behind it before any window). If the child dies, main
 * says how ("the child died of signal 11") and exits 1. */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define KEEP __attribute__((noinline, noclone))

static volatile long sink;
static int cmd[2], done[2];

KEEP long work(long i) { return i * 2 + 1; }
KEEP long other(long i) { return i * 3 + 1; }

// child_main runs in the child: N calls of other() for each N read, "N"
// written back; a negative N ends it.
static int child_main(void *arg)
{
    (void)arg;
    // (Its own table of descriptors, a copy: with the ends it does not
    // use closed, it sees main's end, and main its end.)
    close(cmd[1]);
    close(done[0]);
    long n = 0;
    if (write(done[1], &n, sizeof n) != sizeof n) // (running: main says "ready")
        return 1;
    while (read(cmd[0], &n, sizeof n) == sizeof n && n >= 0) {
        long s = 0;
        for (long i = 0; i < n; i++)
            s += other(i);
        sink += s;
        if (write(done[1], &n, sizeof n) != sizeof n)
            return 1;
    }
    return 0;
}

// gone says how the child ended, and ends the program.
static void gone(pid_t child)
{
    int st = 0;
    if (waitpid(child, &st, 0) == child && WIFSIGNALED(st))
        printf("the child died of signal %d\n", WTERMSIG(st));
    else
        printf("the child ended, status %#x\n", st);
    exit(1);
}

int main(void)
{
    // Any process of the user may attach (Yama's ptrace_scope 1).
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    signal(SIGPIPE, SIG_IGN);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (pipe(cmd) != 0 || pipe(done) != 0)
        return 1;
    size_t size = 256 << 10;
    char *stack = malloc(size);
    if (stack == NULL)
        return 1;
    pid_t child = clone(child_main, stack + size, CLONE_VM | SIGCHLD, NULL);
    if (child < 0) {
        perror("clone");
        return 1;
    }
    close(cmd[0]);
    close(done[1]);
    long running;
    if (read(done[0], &running, sizeof running) != sizeof running)
        gone(child);
    printf("ready\n");
    char line[64];
    while (fgets(line, sizeof line, stdin)) {
        if (line[0] == 'w') {
            long n = atol(line + 2), s = 0, back = 0;
            for (long i = 0; i < n; i++)
                s += work(i);
            sink += s;
            if (write(cmd[1], &n, sizeof n) != sizeof n || read(done[0], &back, sizeof back) != sizeof back)
                gone(child);
            printf("did %ld\n", back);
        } else if (line[0] == 'c') {
            printf("child %d\n", (int)child);
        } else if (line[0] == 'q') {
            break;
        }
    }
    long stop = -1;
    if (write(cmd[1], &stop, sizeof stop) != sizeof stop)
        gone(child);
    int st = 0;
    if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        printf("the child ended, status %#x\n", st);
        return 1;
    }
    return 0;
}
