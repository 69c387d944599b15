/* epolltick.c - a server for the tests of profile --pid
 * (e2e/attachwindow_test.go, TestAttachNoEINTR): SIGALRM every 5
 * milliseconds (ITIMER_REAL: a signal to the process, which the kernel
 * gives the main thread, waiting in read(2), whose handler counts it),
 * and a thread waiting in epoll_wait(2) on an epoll of nothing, a second
 * at a time, that counts the waits that failed with EINTR: none
 * natively, where no signal is the thread's to handle, and epoll_wait is
 * never restarted. (The handler does not block SIGALRM while it runs,
 * SA_NODEFER: a tick that came meanwhile would go to the other thread,
 * natively, now and then.) Commands on stdin, answers on stdout:
 *
 *   w N   "did N": main calls work() N times
 *   e     "eintr N": the waits that failed with EINTR so far
 *   q     exit 0
 *
 * It prints "ready" once the thread waits. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/time.h>
#include <unistd.h>

#define KEEP __attribute__((noinline, noclone))

static volatile long eintr, waits, ticks, sink;

KEEP long work(long i) { return i * 2 + 1; }

static void on_alarm(int sig) { (void)sig; ticks++; }

static void *poller(void *arg)
{
    int ep = epoll_create1(0);
    struct epoll_event ev;
    for (;;) {
        waits++;
        if (epoll_wait(ep, &ev, 1, 1000) < 0 && errno == EINTR)
            eintr++;
    }
    return arg;
}

int main(void)
{
    // Any process of the user may attach (docs/linux.md, "Attaching to a
    // running process").
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    setvbuf(stdout, NULL, _IOLBF, 0);
    struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = SA_RESTART | SA_NODEFER};
    sigaction(SIGALRM, &sa, NULL);
    pthread_t th;
    pthread_create(&th, NULL, poller, NULL);
    while (waits == 0)
        usleep(100);
    struct itimerval it = {{0, 5000}, {0, 5000}};
    setitimer(ITIMER_REAL, &it, NULL);
    printf("ready\n");
    char line[64];
    while (fgets(line, sizeof line, stdin)) {
        if (line[0] == 'w') {
            long n = atol(line + 2);
            for (long i = 0; i < n; i++)
                sink += work(i);
            printf("did %ld\n", n);
        } else if (line[0] == 'e') {
            printf("eintr %ld\n", eintr);
        } else if (line[0] == 'q') {
            return 0;
        }
    }
    return 0;
}
