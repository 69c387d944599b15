/* waits: a program whose threads mostly wait, for the threads' time on a
 * CPU of a function timing run (profile/cputime_test.go,
 * TestTimingCPUTime).
 *
 *   waits THREADS NAPS NAP_MS SPIN_MS
 *
 * Each of THREADS threads (1 or 2: main alone, or main and one thread
 * beside it) calls work(), which calls nap() NAPS times, each a sleep of
 * NAP_MS milliseconds (nanosleep), then spin() once, which runs on a CPU
 * until its thread has used SPIN_MS milliseconds of one (its own CPU
 * clock). It prints the process's time on a CPU at its end, its threads'
 * together (CLOCK_PROCESS_CPUTIME_ID: since its start, what ran before
 * main included: the dynamic linker, and what a tracer had it run), the
 * part of it since main's start, and the time from main's start to then
 * (CLOCK_MONOTONIC), in nanoseconds: "waits cpu C main M elapsed E".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline, noclone))

static int naps = 5, nap_ms = 200, spin_ms = 50;
volatile unsigned long sink;

static long long now(clockid_t clock) {
	struct timespec ts;
	clock_gettime(clock, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

NOINLINE void nap(int ms) {
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0) {
	}
}

NOINLINE void spin(int ms) {
	long long end = now(CLOCK_THREAD_CPUTIME_ID) + ms * 1000000LL;
	while (now(CLOCK_THREAD_CPUTIME_ID) < end) {
		sink++;
	}
}

NOINLINE void work(void) {
	for (int i = 0; i < naps; i++) {
		nap(nap_ms);
	}
	spin(spin_ms);
}

static void *beside(void *arg) {
	(void)arg;
	work();
	return NULL;
}

int main(int argc, char **argv) {
	long long start = now(CLOCK_MONOTONIC), cpu0 = now(CLOCK_PROCESS_CPUTIME_ID);
	int threads = 1;
	if (argc > 4) {
		threads = atoi(argv[1]);
		naps = atoi(argv[2]);
		nap_ms = atoi(argv[3]);
		spin_ms = atoi(argv[4]);
	}
	pthread_t th;
	if (threads > 1 && pthread_create(&th, NULL, beside, NULL) != 0) {
		return 2;
	}
	work();
	if (threads > 1) {
		pthread_join(th, NULL);
	}
	long long cpu = now(CLOCK_PROCESS_CPUTIME_ID);
	printf("waits cpu %lld main %lld elapsed %lld\n", cpu, cpu - cpu0, now(CLOCK_MONOTONIC) - start);
	return 0;
}
