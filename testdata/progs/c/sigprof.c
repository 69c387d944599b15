/* sigprof: a program that samples itself, as gperftools or a language's
 * runtime do: a timer of the process's CPU time (ITIMER_PROF) sends it
 * SIGPROF every millisecond of it, and the handler notes where the
 * signal interrupted the program, the PC of its ucontext.
 *
 *   sigprof [N [S]]
 *
 * main calls f() N times (default 2,000,000), and again N times until
 * at least S signals have come (default 1; at most 10,000 rounds: a run
 * takes long enough to be sampled, whatever the machine makes of it);
 * f() calls g() twice, each call a few dozen nanoseconds of arithmetic:
 * most of the time is in calls, where PROFILE's entry, exit and line
 * probes are. The handler calls tick() once a signal. Counts: main 1, f
 * C, g 2C, tick one a signal, where C is the calls printed (N times the
 * rounds). At the end main reads /proc/self/maps and counts
 * the PCs the handler noted in an executable mapping of no file (the
 * program makes none; PROFILE's trampolines, slots and hops are such
 * mappings) and prints
 *
 *   sigprof calls N signals S foreign F
 *
 * F is 0 natively, and must be under PROFILE: a signal that comes while
 * the thread runs PROFILE's code is delivered where the thread is back
 * in the program's. The PCs noted are the first 100,000.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <ucontext.h>

#define NOINLINE __attribute__((noinline, noclone))
/* An empty asm after a call keeps the call from becoming a tail jump. */
#define KEEP() __asm__ volatile("")

enum { maxPCs = 100000 };

volatile unsigned long sink;
static uintptr_t pcs[maxPCs];
static volatile long signals;

NOINLINE void tick(void) {
	sink++;
	KEEP();
}

NOINLINE unsigned g(unsigned x) {
	for (unsigned k = 0; k < 4; k++) {
		x ^= x >> 13;
		x *= 0x2c1b3c6du;
	}
	return x;
}

NOINLINE unsigned f(unsigned x) {
	x = g(x);
	x = g(x + 1);
	KEEP();
	return x;
}

static uintptr_t interrupted_pc(void *context) {
	ucontext_t *uc = context;
#if defined(__x86_64__)
	return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
	return (uintptr_t)uc->uc_mcontext.pc;
#else
#error "sigprof: x86-64 or arm64"
#endif
}

static void on_prof(int sig, siginfo_t *info, void *context) {
	(void)sig;
	(void)info;
	if (signals < maxPCs)
		pcs[signals] = interrupted_pc(context);
	signals++;
	tick();
}

/* foreign counts the PCs noted in an executable mapping of no file:
 * "START-END r-xp OFFSET DEV INODE" with nothing after, or a name in
 * brackets other than the kernel's [vdso] and [vsyscall]. */
static long foreign(void) {
	FILE *maps = fopen("/proc/self/maps", "r");
	if (maps == NULL) {
		perror("sigprof: /proc/self/maps");
		exit(2);
	}
	long n = 0, noted = signals < maxPCs ? signals : maxPCs;
	char line[512];
	while (fgets(line, sizeof line, maps) != NULL) {
		unsigned long lo, hi;
		char perms[8], name[256] = "";
		if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %255s", &lo, &hi, perms, name) < 3 || perms[2] != 'x')
			continue;
		if (name[0] != '\0' && (name[0] != '[' || strcmp(name, "[vdso]") == 0 || strcmp(name, "[vsyscall]") == 0))
			continue;
		for (long i = 0; i < noted; i++)
			if (pcs[i] >= lo && pcs[i] < hi)
				n++;
	}
	fclose(maps);
	return n;
}

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 2000000, want = argc > 2 ? atol(argv[2]) : 1, calls = 0;
	struct sigaction sa = {.sa_sigaction = on_prof, .sa_flags = SA_SIGINFO | SA_RESTART};
	struct itimerval every = {{0, 1000}, {0, 1000}}, off = {{0, 0}, {0, 0}};
	if (sigaction(SIGPROF, &sa, NULL) != 0 || setitimer(ITIMER_PROF, &every, NULL) != 0) {
		perror("sigprof");
		return 2;
	}
	unsigned x = 1;
	for (int round = 0; round == 0 || (signals < want && round < 10000); round++) {
		for (long i = 0; i < n; i++)
			x = f(x);
		calls += n;
	}
	setitimer(ITIMER_PROF, &off, NULL);
	sink += x;
	printf("sigprof calls %ld signals %ld foreign %ld\n", calls, signals, foreign());
	return 0;
}
