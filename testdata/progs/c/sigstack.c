/* sigstack: function timing when a signal handler runs on an alternate
 * signal stack, above or below the stack of the thread it interrupts.
 *
 *   sigstack above|below [N [U [P]]]
 *
 * A thread calls outer(), which calls spin() N times (default 80); spin()
 * busy-waits U microseconds (default 1000) on the monotonic clock. A timer
 * sends SIGALRM every P microseconds (default 1000) while outer() runs;
 * its handler, on the thread's alternate signal stack (SA_ONSTACK), calls
 * tick(). outer's function+child time includes every call of spin() and
 * every tick() that interrupts it.
 *
 * above: the thread's stack is a static buffer (in the program's data, at
 * low addresses) and the alternate stack is mapped (mmap: high addresses);
 * below: the thread's stack is mapped (the default) and the alternate
 * stack is a static buffer. The order is checked at run time (exit status
 * 3 if it is not the one asked for). Prints the number of ticks:
 * "sigstack above ticks T".
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>

#define NOINLINE __attribute__((noinline, noclone))
/* An empty asm after a call keeps the call from becoming a tail jump. */
#define KEEP() __asm__ volatile("")

enum { threadStack = 1 << 18, altStack = 1 << 16 };

static _Alignas(4096) char static_stack[threadStack];
static _Alignas(4096) char static_alt[altStack];

volatile long sink;
static volatile sig_atomic_t ticks;
static long spins = 80, spin_ns = 1000000, period_us = 1000;
static int above;

static long now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

NOINLINE void tick(void) {
	ticks++;
	KEEP();
}

NOINLINE void spin(void) {
	long end = now_ns() + spin_ns;
	while (now_ns() < end)
		sink++;
	KEEP();
}

NOINLINE void outer(void) {
	for (long i = 0; i < spins; i++)
		spin();
	KEEP();
}

static void on_alarm(int sig) {
	(void)sig;
	tick();
}

static void *worker(void *arg) {
	(void)arg;
	char here;
	stack_t ss = {.ss_size = altStack};
	if (above) {
		ss.ss_sp = mmap(NULL, altStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (ss.ss_sp == MAP_FAILED)
			exit(1);
	} else {
		ss.ss_sp = static_alt;
	}
	uintptr_t alt = (uintptr_t)ss.ss_sp, sp = (uintptr_t)&here;
	if (above ? alt < sp : alt + altStack > sp) {
		fprintf(stderr, "sigstack: the alternate stack %#lx is not %s the thread's %#lx\n",
			(unsigned long)alt, above ? "above" : "below", (unsigned long)sp);
		exit(3);
	}
	struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = SA_ONSTACK | SA_RESTART};
	sigset_t alrm;
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	if (sigaltstack(&ss, NULL) != 0 || sigaction(SIGALRM, &sa, NULL) != 0)
		exit(1);
	struct timeval period = {period_us / 1000000, period_us % 1000000};
	struct itimerval every = {period, period}, never = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &every, NULL);
	pthread_sigmask(SIG_UNBLOCK, &alrm, NULL);
	outer();
	pthread_sigmask(SIG_BLOCK, &alrm, NULL);
	setitimer(ITIMER_REAL, &never, NULL);
	return NULL;
}

int main(int argc, char **argv) {
	if (argc < 2 || (strcmp(argv[1], "above") != 0 && strcmp(argv[1], "below") != 0)) {
		fprintf(stderr, "usage: sigstack above|below [N [U [P]]]\n");
		return 2;
	}
	above = strcmp(argv[1], "above") == 0;
	if (argc > 2)
		spins = atol(argv[2]);
	if (argc > 3)
		spin_ns = atol(argv[3]) * 1000;
	if (argc > 4)
		period_us = atol(argv[4]);
	/* Only the worker takes SIGALRM. */
	sigset_t alrm;
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &alrm, NULL);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	if (above && pthread_attr_setstack(&attr, static_stack, threadStack) != 0)
		return 1;
	pthread_t t;
	if (pthread_create(&t, &attr, worker, NULL) != 0 || pthread_join(t, NULL) != 0)
		return 1;
	printf("sigstack %s ticks %d\n", argv[1], (int)ticks);
	return 0;
}
