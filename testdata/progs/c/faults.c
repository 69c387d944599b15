/* faults.c - the scenarios of the fault and signal suite, one per first
 * argument. Each runs the same natively and under PROFILE: the tests
 * compare its output and exit status, and check the counts of f and g,
 * which each scenario's comment gives.
 *
 *   catch      handles SIGINT, SIGTERM and SIGHUP; prints "ready PID", calls
 *              f 3 times, waits for one of them, calls f 2 more times and
 *              exits 0: f 5, a complete run.
 *   clonevm    clone(CLONE_VM|SIGCHLD): the child, which shares the
 *              program's memory, calls f 1000 times; the parent waits for it
 *              and calls f 1000 times: f 2000.
 *   clonefork  clone(SIGCHLD) without CLONE_VM, a fork by another name: the
 *              child calls f 500 times in its own copy (uncounted), then the
 *              parent 1000 times: f 1000.
 *   trapcatch  a SIGTRAP handler that calls g; raises SIGTRAP 5 times:
 *              g 5, "traps 5".
 *   trapign    ignores SIGTRAP, calls f, raises SIGTRAP: f 1, "ignored".
 *   trapblock  blocks SIGTRAP, calls f, prints whether SIGTRAP is still
 *              blocked and its disposition still the handler: f 1.
 *   stop       prints "ready PID", then calls f every millisecond until
 *              SIGUSR1: stopped from outside with SIGSTOP, it must stay
 *              stopped until SIGCONT.
 *   args       calls f once per argument after it and prints how many there
 *              were and the length of the last.
 *   mainexit   the main thread starts a thread and ends (pthread_exit); that
 *              thread starts another that calls f 1000 times, joins it, calls
 *              f 1000 times and exits the process: f 2000.
 *   orphan     clone(CLONE_VM|SIGCHLD) a child and exit at once, having
 *              called f once; the child, sharing the memory of a program
 *              that is gone, waits 200 ms, calls f and g and prints
 *              "orphan 3": f 1 (PROFILE lets the child go, unharmed, when
 *              the program exits).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define KEEP __attribute__((noinline, noclone))

KEEP int f(int x) { return x + 1; }
KEEP int g(int x) { return x * 3; }

static volatile sig_atomic_t caught, traps, done;

static void ready(void)
{
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
}

static void on_signal(int sig) { caught = sig; }
static void on_trap(int sig) { (void)sig; traps += g(1) == 3; }
static void on_usr1(int sig) { (void)sig; done = 1; }

static int child_calls(void *arg)
{
    int n = *(int *)arg, r = 0;
    for (int i = 0; i < n; i++)
        r += f(i);
    return r == n * (n + 1) / 2 ? 0 : 1;
}

static int orphan(void *arg)
{
    (void)arg;
    usleep(200000);
    char line[32];
    int n = snprintf(line, sizeof line, "orphan %d\n", g(f(0)));
    return write(1, line, n) == n ? 0 : 1;
}

static void *calls(void *arg)
{
    child_calls(arg);
    return NULL;
}

static void *second_main(void *arg)
{
    pthread_t t;
    int n = 1000;
    (void)arg;
    pthread_create(&t, NULL, calls, &n);
    pthread_join(t, NULL);
    child_calls(&n);
    printf("mainexit done\n");
    fflush(stdout);
    exit(0);
}

static int clone_child(int flags, int n)
{
    size_t size = 1 << 20;
    char *stack = malloc(size);
    int status;
    pid_t pid = clone(child_calls, stack + size, flags | SIGCHLD, &n);
    if (pid < 0 || waitpid(pid, &status, __WALL) != pid)
        return -1;
    free(stack);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int catch_signals(void)
{
    struct sigaction sa;
    int r = 0;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    for (int i = 0; i < 3; i++)
        r += f(i);
    /* The signals stay blocked until sigsuspend waits for them: one that
     * arrived between a test of caught and pause() would be lost, and the
     * program would wait for ever. */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    sigprocmask(SIG_BLOCK, &block, &old);
    ready();
    while (!caught)
        sigsuspend(&old);
    sigprocmask(SIG_SETMASK, &old, NULL);
    for (int i = 0; i < 2; i++)
        r += f(i);
    printf("caught %s r=%d\n", strsignal(caught), r);
    return 0;
}

static int trap_block(void)
{
    sigset_t set, now;
    struct sigaction sa, after;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_trap;
    sigaction(SIGTRAP, &sa, NULL);
    sigemptyset(&set);
    sigaddset(&set, SIGTRAP);
    sigprocmask(SIG_BLOCK, &set, NULL);
    f(1);
    sigprocmask(SIG_BLOCK, NULL, &now);
    sigaction(SIGTRAP, NULL, &after);
    printf("blocked %d handler %d\n", sigismember(&now, SIGTRAP), after.sa_handler == on_trap);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "catch") == 0)
        return catch_signals();
    if (strcmp(mode, "clonevm") == 0) {
        int child = clone_child(CLONE_VM, 1000);
        int r = child_calls(&(int){1000});
        printf("clonevm child %d parent %d\n", child, r);
        return 0;
    }
    if (strcmp(mode, "clonefork") == 0) {
        int child = clone_child(0, 500);
        int r = child_calls(&(int){1000});
        printf("clonefork child %d parent %d\n", child, r);
        return 0;
    }
    if (strcmp(mode, "trapcatch") == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_trap;
        sigaction(SIGTRAP, &sa, NULL);
        for (int i = 0; i < 5; i++)
            raise(SIGTRAP);
        printf("traps %d\n", (int)traps);
        return 0;
    }
    if (strcmp(mode, "trapign") == 0) {
        signal(SIGTRAP, SIG_IGN);
        f(1);
        raise(SIGTRAP);
        printf("ignored\n");
        return 0;
    }
    if (strcmp(mode, "trapblock") == 0)
        return trap_block();
    if (strcmp(mode, "stop") == 0) {
        signal(SIGUSR1, on_usr1);
        ready();
        while (!done) {
            f(1);
            usleep(1000);
        }
        printf("stopped and continued\n");
        return 0;
    }
    if (strcmp(mode, "mainexit") == 0) {
        pthread_t t;
        pthread_create(&t, NULL, second_main, NULL);
        pthread_exit(NULL);
    }
    if (strcmp(mode, "orphan") == 0) {
        size_t size = 1 << 20;
        f(1);
        fflush(stdout);
        if (clone(orphan, (char *)malloc(size) + size, CLONE_VM | SIGCHLD, NULL) < 0)
            return 1;
        _exit(0);
    }
    if (strcmp(mode, "args") == 0) {
        for (int i = 2; i < argc; i++)
            f(i);
        printf("args %d last %zu\n", argc - 2, argc > 2 ? strlen(argv[argc - 1]) : 0);
        return 0;
    }
    fprintf(stderr, "faults: unknown scenario %s\n", mode);
    return 2;
}
