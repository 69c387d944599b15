/* timing: function timing, the start function and attribution, with
 * results known by construction.
 *
 *   timing work [N [U]]
 *                    top() N times (default 10): two() does 2 units of
 *                    work, four() calls one() (1 unit) and does 3 units:
 *                    function times 1:2:3, four's function+child time 4,
 *                    top's 6. A unit is U microseconds (default 2000) of
 *                    busy waiting on the monotonic clock, by work(), which
 *                    is not profiled: the functions take those times
 *                    whatever the CPU, the optimisation or the machine's
 *                    load.
 *   timing sf        pre() x5, run() x2 calling inner() x5 each, post() x2
 *                    (golden sf/: with /SF run: run 2, inner 10, depth 2).
 *   timing at        caller_a() calls leaf() 3 times, caller_b() 2 times;
 *                    main calls caller_a() once and caller_b() twice, and
 *                    rec(4) recurses 4 levels below itself.
 *   timing jump      jumper() calls deep1() -> deep2(), which longjmps back
 *                    into jumper() three times; then jumper() calls after().
 *   timing threads [U]
 *                    4 threads each call one() 3 times and two() 3 times.
 *   timing short [N [U]]
 *                    many short calls beside a long one: tiny(), some 50
 *                    ns of arithmetic, N times (default 1,000,000), then
 *                    slow(), U microseconds of busy waiting (default
 *                    50,000); prints the time the loop of tiny() calls and
 *                    slow() took, as the program measures them itself
 *                    (natively, the truth PROFILE's times are held to).
 *   timing returns [U]
 *                    main calls wrap() three times in straight-line code;
 *                    wrap() calls work_leaf(), a unit of U microseconds
 *                    (default 2000), and returns: unoptimised, its
 *                    epilogue is too short for a jump, and it is timed
 *                    where its calls return.
 *   timing ways      every other way out of a frame: is_even(10) and
 *                    is_odd() call each other 11 times down to 0 (depth
 *                    12 with main); a thread ends with pthread_exit inside
 *                    quitter(), called from its start routine starter();
 *                    a signal handler, raised inside interrupted(), runs
 *                    leaf() twice in the middle of it.
 *   timing altstack [N]
 *                    a SIGUSR1 handler on an alternate signal stack calls
 *                    tiny() N times (default 20,000); then main calls it
 *                    N times.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))
/* An empty asm after a call keeps the call from becoming a tail jump, so
 * that the call tree is the source's at every optimisation level. */
#define KEEP() __asm__ volatile("")

volatile long sink;
static long unit_ns = 2000000;

static long now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

NOINLINE void work(long units) {
	long end = now_ns() + units * unit_ns;
	while (now_ns() < end)
		sink++;
}

NOINLINE void one(void) { work(1); KEEP(); }
NOINLINE void two(void) { work(2); KEEP(); }
NOINLINE void four(void) { one(); work(3); KEEP(); }
NOINLINE void top(void) { two(); four(); KEEP(); }

NOINLINE void pre(void) { sink++; KEEP(); }
NOINLINE void inner(void) { sink++; KEEP(); }
NOINLINE void post(void) { sink++; KEEP(); }
NOINLINE void run(void) {
	for (int i = 0; i < 5; i++)
		inner();
	KEEP();
}

NOINLINE void leaf(void) { sink++; KEEP(); }
NOINLINE void caller_a(void) {
	for (int i = 0; i < 3; i++)
		leaf();
	KEEP();
}
NOINLINE void caller_b(void) {
	for (int i = 0; i < 2; i++)
		leaf();
	KEEP();
}
NOINLINE int rec(int n) {
	int r = n > 0 ? rec(n - 1) + 1 : 0;
	KEEP();
	return r;
}

static jmp_buf env;
NOINLINE void deep2(void) { longjmp(env, 1); }
NOINLINE void deep1(void) { deep2(); KEEP(); }
NOINLINE void after(void) { sink++; KEEP(); }
NOINLINE void jumper(void) {
	for (volatile int i = 0; i < 3; i++)
		if (setjmp(env) == 0)
			deep1();
	after();
	KEEP();
}

NOINLINE int is_odd(int n);
NOINLINE int is_even(int n) {
	int r = n == 0 ? 1 : is_odd(n - 1);
	KEEP();
	return r;
}
NOINLINE int is_odd(int n) {
	int r = n == 0 ? 0 : is_even(n - 1);
	KEEP();
	return r;
}

/* tiny is twenty rounds of a multiply-xorshift hash: a dependency chain
 * of some 50 ns the compiler cannot fold. */
NOINLINE unsigned tiny(unsigned x) {
	for (unsigned k = 0; k < 20; k++) {
		x += k;
		x ^= x >> 15;
		x *= 0x2c1b3c6du;
		x ^= x >> 12;
	}
	return x;
}
NOINLINE void slow(void) { work(1); KEEP(); }

NOINLINE void work_leaf(void) {
	work(1);
	sink += 1; /* an epilogue long enough for a jump */
}
NOINLINE void wrap(void) { work_leaf(); }

NOINLINE void quitter(void) { pthread_exit(NULL); }
NOINLINE void *starter(void *arg) {
	(void)arg;
	quitter();
	return NULL;
}

static void on_signal(int sig) {
	(void)sig;
	leaf();
	leaf();
}
NOINLINE void interrupted(void) {
	raise(SIGUSR1);
	sink++;
	KEEP();
}

static long alt_calls = 20000;
static void on_alt(int sig) {
	(void)sig;
	unsigned x = 1;
	for (long i = 0; i < alt_calls; i++)
		x = tiny(x);
	sink = x;
}

static void *worker(void *arg) {
	(void)arg;
	for (int i = 0; i < 3; i++) {
		one();
		two();
	}
	return NULL;
}

int main(int argc, char **argv) {
	const char *mode = argc > 1 ? argv[1] : "work";
	if (strcmp(mode, "work") == 0) {
		int n = argc > 2 ? atoi(argv[2]) : 10;
		if (argc > 3)
			unit_ns = atol(argv[3]) * 1000;
		for (int i = 0; i < n; i++)
			top();
	} else if (strcmp(mode, "sf") == 0) {
		for (int i = 0; i < 5; i++)
			pre();
		run();
		run();
		post();
		post();
	} else if (strcmp(mode, "at") == 0) {
		caller_a();
		caller_b();
		caller_b();
		rec(4);
	} else if (strcmp(mode, "jump") == 0) {
		jumper();
	} else if (strcmp(mode, "threads") == 0) {
		pthread_t t[4];
		if (argc > 2)
			unit_ns = atol(argv[2]) * 1000;
		for (int i = 0; i < 4; i++)
			pthread_create(&t[i], NULL, worker, NULL);
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
	} else if (strcmp(mode, "short") == 0) {
		long n = argc > 2 ? atol(argv[2]) : 1000000;
		unit_ns = (argc > 3 ? atol(argv[3]) : 50000) * 1000;
		unsigned x = 1;
		long t0 = now_ns();
		for (long i = 0; i < n; i++)
			x = tiny(x);
		long t1 = now_ns();
		slow();
		long t2 = now_ns();
		sink = x;
		printf("tiny %ld ns, slow %ld ns\n", t1 - t0, t2 - t1);
	} else if (strcmp(mode, "returns") == 0) {
		if (argc > 2)
			unit_ns = atol(argv[2]) * 1000;
		wrap();
		sink += 1;
		wrap();
		sink += 2;
		wrap();
		sink += 3;
	} else if (strcmp(mode, "ways") == 0) {
		pthread_t t;
		if (is_even(10) != 1)
			return 1;
		pthread_create(&t, NULL, starter, NULL);
		pthread_join(t, NULL);
		signal(SIGUSR1, on_signal);
		interrupted();
	} else if (strcmp(mode, "altstack") == 0) {
		static char stack[1 << 16];
		stack_t ss = {.ss_sp = stack, .ss_size = sizeof stack};
		struct sigaction sa = {.sa_handler = on_alt, .sa_flags = SA_ONSTACK};
		if (argc > 2)
			alt_calls = atol(argv[2]);
		if (sigaltstack(&ss, NULL) != 0 || sigaction(SIGUSR1, &sa, NULL) != 0)
			return 1;
		raise(SIGUSR1);
		unsigned x = 1;
		for (long i = 0; i < alt_calls; i++)
			x = tiny(x);
		sink += x;
	} else {
		fprintf(stderr, "timing: unknown mode %s\n", mode);
		return 2;
	}
	printf("timing %s done\n", mode);
	return 0;
}
