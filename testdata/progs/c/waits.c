/* waits: a program whose threads mostly wait, for the threads' time on a
 * CPU of a function timing run (profile/cputime_test.go,
 * TestTimingCPUTime; profile/cpuview_test.go, TestTimingWaitsPerCall).
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
 *
 * Then what the threads' own CPU clocks (CLOCK_THREAD_CPUTIME_ID) measured
 * of each function, two ways: inside its body, from its first statement
 * to its last, and around its calls, in its caller, which adds what the
 * calls' edges cost (a profiler's code and stops there). The time on a
 * CPU a profiler gives a function lies between the two. main's thread's
 * work, then every thread's work, nap and spin, each as IN-OUT:
 * " own W-W work W-W nap N-N spin S-S". Last, how long the threads were
 * kept waiting for a CPU, ready to run, in their calls of work(), main's
 * and all (the run_delay of /proc/thread-self/schedstat, -1 where it
 * cannot be read): " delay D all A". A busy machine makes it long, and a
 * profiler may charge such a wait to a call beside the one it was in.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline, noclone))

static int naps = 5, nap_ms = 200, spin_ms = 50;
volatile unsigned long sink;

/* span is a function's CPU time, inside it and around its calls, its
 * threads' together. */
struct span {
	long long in, out;
};
static struct span main_work, all_work, all_nap, all_spin;
static long long all_delay;

static long long now(clockid_t clock) {
	struct timespec ts;
	clock_gettime(clock, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long cpu_now(void) { return now(CLOCK_THREAD_CPUTIME_ID); }

static void add(long long *to, long long since) { __atomic_fetch_add(to, cpu_now() - since, __ATOMIC_RELAXED); }

NOINLINE void nap(int ms) {
	long long start = cpu_now();
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0) {
	}
	add(&all_nap.in, start);
}

NOINLINE void spin(int ms) {
	long long start = cpu_now(), end = start + ms * 1000000LL;
	while (cpu_now() < end) {
		sink++;
	}
	add(&all_spin.in, start);
}

NOINLINE long long work(void) {
	long long start = cpu_now();
	for (int i = 0; i < naps; i++) {
		long long call = cpu_now();
		nap(nap_ms);
		add(&all_nap.out, call);
	}
	long long call = cpu_now();
	spin(spin_ms);
	add(&all_spin.out, call);
	long long used = cpu_now() - start;
	__atomic_fetch_add(&all_work.in, used, __ATOMIC_RELAXED);
	return used;
}

/* run_delay returns how long the thread has waited for a CPU, ready to
 * run, in nanoseconds; -1 where the kernel does not say. */
static long long run_delay(void) {
	long long cpu, delay = -1;
	FILE *f = fopen("/proc/thread-self/schedstat", "r");
	if (f != NULL) {
		if (fscanf(f, "%lld %lld", &cpu, &delay) != 2) {
			delay = -1;
		}
		fclose(f);
	}
	return delay;
}

/* timed_work calls work() and returns its CPU time, inside and around;
 * delay, the time its thread waited for a CPU in the call. */
static struct span timed_work(long long *delay) {
	long long waited = run_delay(), start = cpu_now();
	struct span s = {work(), 0};
	s.out = cpu_now() - start;
	*delay = waited < 0 ? -1 : run_delay() - waited;
	__atomic_fetch_add(&all_work.out, s.out, __ATOMIC_RELAXED);
	__atomic_fetch_add(&all_delay, *delay < 0 ? 0 : *delay, __ATOMIC_RELAXED);
	return s;
}

static void *beside(void *arg) {
	long long delay;
	timed_work(&delay);
	return arg;
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
	long long delay;
	main_work = timed_work(&delay);
	if (threads > 1) {
		pthread_join(th, NULL);
	}
	long long cpu = now(CLOCK_PROCESS_CPUTIME_ID);
	printf("waits cpu %lld main %lld elapsed %lld own %lld-%lld work %lld-%lld nap %lld-%lld spin %lld-%lld delay %lld all %lld\n",
	       cpu, cpu - cpu0, now(CLOCK_MONOTONIC) - start, main_work.in, main_work.out, all_work.in, all_work.out, all_nap.in,
	       all_nap.out, all_spin.in, all_spin.out, delay, delay < 0 ? -1 : all_delay);
	return 0;
}
