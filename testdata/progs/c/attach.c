/* attach.c - a server for the tests of profile --pid (e2e/attach_test.go),
 * linked with libsq.so. It runs until told to stop, and does known work on
 * command; commands come on stdin, one per line, answers on stdout:
 *
 *   w N   main calls work() N times while the worker thread calls
 *         square() (libsq.so) N times; "did N" when both are done
 *   s     "signals N": the SIGUSR1s handled so far
 *   b     "busy": a third thread starts, which calls nop() and work()
 *         without end (profile --pid finds it anywhere in them), with
 *         every signal blocked
 *   t     "ticking": SIGALRM every millisecond from now on (a signal on
 *         its way whenever PROFILE attaches or detaches)
 *   T     "ticks N": the SIGALRMs handled so far
 *   f     "forked": main forks a child that exits at once, and reaps it
 *   q     exit 0
 *
 * It prints "ready" once the worker waits. Between commands main waits in
 * read(2) and the worker on a condition variable: profile --pid finds
 * both in a system call. Main waits more than 8 KiB below the frame it
 * calls work() from: the calls of the window are in stack pages above the
 * one PROFILE finds it in (profile/attach.go, ownFramesAbove). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

int square(int x);

static volatile sig_atomic_t signals;
static void on_usr1(int sig) { (void)sig; signals++; }
static volatile sig_atomic_t ticks;
static void on_alarm(int sig) { (void)sig; ticks++; }

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static long todo, gen, finished;
static volatile long sink;

__attribute__((noinline)) long work(long i) { return i * 2 + 1; }
__attribute__((noinline)) void nop(void) { sink++; }

static void *busy(void *arg) {
	// (Its signals go to the other threads: a handler run where it was
	// stopped inside a function's first instructions would return there,
	// into a patch PROFILE wrote when it attached: docs/linux.md,
	// "Attaching to a running process".)
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	for (;;) {
		nop();
		sink += work(sink & 7);
	}
	return arg;
}

static void *worker(void *arg) {
	long seen = 0;
	for (;;) {
		pthread_mutex_lock(&mu);
		while (gen == seen)
			pthread_cond_wait(&cv, &mu);
		seen = gen;
		long n = todo;
		pthread_mutex_unlock(&mu);
		long s = 0;
		for (long i = 0; i < n; i++)
			s += square((int)i);
		sink += s;
		pthread_mutex_lock(&mu);
		finished = seen;
		pthread_cond_broadcast(&cv);
		pthread_mutex_unlock(&mu);
	}
	return arg;
}

// next_line reads a command into line, deep below main's frame.
__attribute__((noinline)) static char *next_line(char *line, int size) {
	volatile char deep[8192];
	deep[0] = deep[sizeof deep - 1] = 0;
	return fgets(line, size, stdin);
}

int main(void) {
	// Any process of the user may attach (where Yama's ptrace_scope is 1,
	// only a parent could: docs/linux.md, "Attaching to a running
	// process"); without Yama this fails, harmlessly.
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	struct sigaction sa = {.sa_handler = on_usr1, .sa_flags = SA_RESTART};
	sigaction(SIGUSR1, &sa, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	pthread_t th;
	pthread_create(&th, NULL, worker, NULL);
	printf("ready\n");
	char line[64];
	while (next_line(line, sizeof line)) {
		if (line[0] == 'w') {
			long n = atol(line + 2), s = 0;
			pthread_mutex_lock(&mu);
			todo = n;
			gen++;
			pthread_cond_broadcast(&cv);
			pthread_mutex_unlock(&mu);
			for (long i = 0; i < n; i++)
				s += work(i);
			sink += s;
			pthread_mutex_lock(&mu);
			while (finished != gen)
				pthread_cond_wait(&cv, &mu);
			pthread_mutex_unlock(&mu);
			printf("did %ld\n", n);
		} else if (line[0] == 's') {
			printf("signals %d\n", (int)signals);
		} else if (line[0] == 'b') {
			pthread_t b;
			pthread_create(&b, NULL, busy, NULL);
			printf("busy\n");
		} else if (line[0] == 't') {
			struct sigaction al = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
			sigaction(SIGALRM, &al, NULL);
			struct itimerval it = {{0, 1000}, {0, 1000}};
			setitimer(ITIMER_REAL, &it, NULL);
			printf("ticking\n");
		} else if (line[0] == 'T') {
			printf("ticks %d\n", (int)ticks);
		} else if (line[0] == 'f') {
			pid_t child = fork();
			if (child == 0)
				_exit(0);
			while (waitpid(child, NULL, 0) < 0)
				;
			printf("forked\n");
		} else if (line[0] == 'q') {
			return 0;
		}
	}
	return 0;
}
