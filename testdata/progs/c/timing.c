/* timing: function timing, the start function and attribution, with
 * results known by construction, and times the program measures itself.
 *
 *   timing work [N [U]]
 *                    top() N times (default 10): two() does 2 units of
 *                    work, four() calls one() (1 unit) and does 3 units:
 *                    function times 1:2:3, four's function+child time 4,
 *                    top's 6. A unit is U microseconds (default 2000) of
 *                    busy waiting on the monotonic clock, by work(), which
 *                    is not profiled. On a machine that runs nothing else
 *                    the functions take those times; on a busy one a
 *                    unit takes longer when the thread waits for a CPU
 *                    at its end, and the program's own measure (below) is
 *                    the truth.
 *   timing sf        pre() x5, run() x2 calling inner() x5 each, post() x2
 *                    (golden sf/: with /SF run: run 2, inner 10, depth 2).
 *   timing at        caller_a() calls leaf() 3 times, caller_b() 2 times;
 *                    main calls caller_a() once and caller_b() twice, and
 *                    rec(4) recurses 4 levels below itself.
 *   timing jump      jumper() calls deep1() -> deep2(), which longjmps back
 *                    into jumper() three times; then jumper() calls after().
 *   timing threads [U]
 *                    4 threads each call one() 3 times and two() 3 times.
 *   timing short [N [U [K]]]
 *                    many short calls beside a long one: tiny(), some 50
 *                    ns of arithmetic, N times (default 1,000,000), then
 *                    slow(), one unit of U microseconds (default 50,000).
 *                    The calls of tiny() are made in chunks of K (default
 *                    256), each followed by as many calls of twin(), the
 *                    same code at the same alignment, which is not
 *                    profiled: its calls' time, taken in the same run
 *                    under the same load, is what tiny's calls cost the
 *                    program without PROFILE's records (the "chunks" line
 *                    below).
 *   timing returns [U]
 *                    main calls wrap() three times in straight-line code,
 *                    and works a unit of its own after each; wrap() calls
 *                    work_leaf(), a unit of U microseconds (default 2000),
 *                    and returns: unoptimised, its epilogue is too short
 *                    for a jump, and it is timed where its calls return.
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
 *   timing join [N [K]]
 *                    fork and join: main starts a thread, joiner(), and
 *                    waits for it in wait_all(), which calls nothing
 *                    profiled: it lets the thread start (a barrier) and
 *                    joins it. The thread calls tiny() N times (default
 *                    20,000) in chunks of K (default 256), each followed
 *                    by as many calls of twin(). wait_all's time is the
 *                    worker's and the thread's end. Whatever PROFILE
 *                    holds the worker for, the program sees as its own
 *                    wait (the "own join" line below).
 *
 * The program's own measure. Timing tests take their truth from the run
 * they check, so that a machine's load moves both sides alike: at exit
 * the program prints, on the monotonic clock PROFILE's times are on, what
 * its calls of main, top, one, two, four, slow, work_leaf and wrap took,
 * summed over every call in every thread, one line a function:
 *
 *   own NAME calls C in I out O kin KI kout KO desc D
 *
 *   in    from the function's first statement to its last: the time inside;
 *   out   from before each call to after it, where it was made (main's:
 *         from a constructor to an exit handler);
 *   kin, kout  the in and out of the calls it made of those functions;
 *   desc  the gaps (out less in) of every such call below it, at any depth.
 *
 * Whatever PROFILE adds to a call, a record or a stop, lies in its gap:
 * before in begins or after it ends, within out. So a function's
 * function+child time as PROFILE measures it lies between in less desc
 * (the stops below it taken out) and out, and its function time between
 * in less kout and out less kin, each widened by the gaps themselves,
 * where the error of PROFILE's estimate of what it adds lies. In short
 * mode a line "own chunks" gives the calls of tiny() in chunks (see
 * main).
 *
 * In join mode a line "own join" gives wait_all's in and out, the
 * worker's time from its first statement to its last (worker), and of its
 * chunks of tiny(): the time off its CPU in those where it gave the CPU
 * up and was never preempted (held: stopped by PROFILE, for the worker
 * sleeps nowhere), in those where it was both (mixed), and what the chunks
 * took on the CPU beyond their twins' calls (extra: the cost of the
 * records, and of the traps, in the worker's CPU time).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))
/* An empty asm after a call keeps the call from becoming a tail jump, so
 * that the call tree is the source's at every optimisation level. */
#define KEEP() __asm__ volatile("")
/* tiny and twin are the same code: gcc must not fold one into the other
 * (-fipa-icf at -O2), and both start at the same alignment. */
#if defined(__GNUC__) && !defined(__clang__)
#define TWINS __attribute__((noipa, aligned(64)))
#else
#define TWINS __attribute__((noinline, aligned(64)))
#endif

volatile long sink;
static long unit_ns = 2000000;

static long now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* cpu_ns is the calling thread's CPU time. */
static long cpu_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* switches gives how often the calling thread has been taken off its CPU
 * while it could run (preempted: a wait that PROFILE counts as the
 * program's time) and how often it gave its CPU up (a stop: PROFILE's,
 * which it does not count). */
static void switches(long *preempted, long *stopped) {
	struct rusage r;
	getrusage(RUSAGE_THREAD, &r);
	*preempted = r.ru_nivcsw;
	*stopped = r.ru_nvcsw;
}

NOINLINE void work(long units) {
	long end = now_ns() + units * unit_ns;
	while (now_ns() < end)
		sink++;
}

/* The program's own measure (see the top). */
enum { O_MAIN, O_TOP, O_ONE, O_TWO, O_FOUR, O_SLOW, O_WORK_LEAF, O_WRAP, N_OWN };
static struct own {
	const char *name;
	long calls, in, out, kin, kout, desc;
} own[N_OWN] = {
	{.name = "main"}, {.name = "top"},  {.name = "one"},       {.name = "two"},
	{.name = "four"}, {.name = "slow"}, {.name = "work_leaf"}, {.name = "wrap"},
};

/* span is a call being measured: when it began, what the measured calls
 * it made took (in and out) and the gaps of every one below it. */
struct span {
	long begun, kin, kout, desc;
};

/* What the measured call that returned last in this thread took. */
static __thread long last_in, last_desc;

static void add(long *at, long v) { __atomic_fetch_add(at, v, __ATOMIC_RELAXED); }

static struct span begin(void) { return (struct span){.begun = now_ns()}; }

/* end books the call s of own[f], which ends here. */
static void end(struct span *s, int f) {
	long in = now_ns() - s->begun;
	add(&own[f].calls, 1);
	add(&own[f].in, in);
	add(&own[f].kin, s->kin);
	add(&own[f].kout, s->kout);
	add(&own[f].desc, s->desc);
	last_in = in;
	last_desc = s->desc;
}

/* called books, for the call s, its call of own[f], which took out where
 * it was made. */
static void called(struct span *s, int f, long out) {
	add(&own[f].out, out);
	s->kin += last_in;
	s->kout += out;
	s->desc += out - last_in + last_desc;
}

#define CALL(s, f, fn)                                                                             \
	do {                                                                                       \
		long at_ = now_ns();                                                               \
		fn();                                                                              \
		called(s, f, now_ns() - at_);                                                      \
	} while (0)

NOINLINE void one(void) {
	struct span s = begin();
	work(1);
	end(&s, O_ONE);
	KEEP();
}
NOINLINE void two(void) {
	struct span s = begin();
	work(2);
	end(&s, O_TWO);
	KEEP();
}
NOINLINE void four(void) {
	struct span s = begin();
	CALL(&s, O_ONE, one);
	work(3);
	end(&s, O_FOUR);
	KEEP();
}
NOINLINE void top(void) {
	struct span s = begin();
	CALL(&s, O_TWO, two);
	CALL(&s, O_FOUR, four);
	end(&s, O_TOP);
	KEEP();
}

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
 * of some 50 ns the compiler cannot fold. twin is the same, not profiled. */
#define TINY                                                                                       \
	for (unsigned k = 0; k < 20; k++) {                                                        \
		x += k;                                                                            \
		x ^= x >> 15;                                                                      \
		x *= 0x2c1b3c6du;                                                                  \
		x ^= x >> 12;                                                                      \
	}                                                                                          \
	return x;
TWINS unsigned tiny(unsigned x) { TINY }
TWINS unsigned twin(unsigned x) { TINY }

NOINLINE void slow(void) {
	struct span s = begin();
	work(1);
	end(&s, O_SLOW);
	KEEP();
}

/* The calls of tiny() in chunks (chunks, below): how many, the chunks'
 * size, the median time of that many calls of twin(), and over the chunks
 * of tiny(): their time, their CPU time, the time of the chunks in which
 * the thread was preempted (and how many), how many it stopped in, and
 * stray, the time the others, neither preempted nor stopped, spent off
 * their CPU all the same: a virtual CPU the host gave to something else,
 * which PROFILE counts as the program's time. */
static struct {
	long calls, size, twin, wall, cpu, preempted, npreempted, nstopped, stray;
} chunk;

static int by_value(const void *a, const void *b) {
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

/* chunks calls tiny() n times in chunks of k, each chunk followed by as
 * many calls of twin(), and fills chunk. */
static void chunks(long n, long k) {
	long nfull = 0, *twins = malloc((n / k + 1) * sizeof(long));
	unsigned x = 1, y = 1;
	chunk.calls = n;
	chunk.size = k;
	for (long done = 0; done < n; done += k) {
		long m = n - done < k ? n - done : k, p0, s0, p1, s1;
		switches(&p0, &s0);
		long c0 = cpu_ns(), t0 = now_ns();
		for (long i = 0; i < m; i++)
			x = tiny(x);
		long t1 = now_ns(), c1 = cpu_ns();
		switches(&p1, &s1);
		for (long i = 0; i < m; i++)
			y = twin(y);
		long t2 = now_ns();
		chunk.wall += t1 - t0;
		chunk.cpu += c1 - c0;
		if (p1 != p0) {
			chunk.preempted += t1 - t0;
			chunk.npreempted++;
		} else if (s1 != s0) {
			chunk.nstopped++;
		} else if ((t1 - t0) - (c1 - c0) > 0) {
			chunk.stray += (t1 - t0) - (c1 - c0);
		}
		if (m == k)
			twins[nfull++] = t2 - t1;
	}
	qsort(twins, nfull, sizeof *twins, by_value);
	chunk.twin = nfull > 0 ? twins[nfull / 2] : 0;
	free(twins);
	sink = x + y;
}

NOINLINE void work_leaf(void) {
	struct span s = begin();
	work(1);
	end(&s, O_WORK_LEAF);
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

/* The fork and join of join mode (see the top), measured by the worker
 * and main. */
static struct {
	long wait_in, wait_out, worker, held, mixed, extra;
} joined;
static pthread_barrier_t started_together;

NOINLINE void *joiner(void *arg) {
	pthread_barrier_wait(&started_together);
	long n = ((long *)arg)[0], k = ((long *)arg)[1], t0 = now_ns();
	unsigned x = 1, y = 1;
	for (long done = 0; done < n; done += k) {
		long m = n - done < k ? n - done : k, p0, s0, p1, s1;
		switches(&p0, &s0);
		long c0 = cpu_ns(), w0 = now_ns();
		for (long i = 0; i < m; i++)
			x = tiny(x);
		long w1 = now_ns(), c1 = cpu_ns();
		switches(&p1, &s1);
		long c2 = cpu_ns();
		for (long i = 0; i < m; i++)
			y = twin(y);
		long twins = cpu_ns() - c2;
		long off = (w1 - w0) - (c1 - c0);
		if (s1 != s0 && p1 == p0)
			joined.held += off;
		else if (s1 != s0)
			joined.mixed += off;
		if (c1 - c0 > twins)
			joined.extra += (c1 - c0) - twins;
	}
	sink = x + y;
	joined.worker = now_ns() - t0;
	return NULL;
}

NOINLINE void wait_all(pthread_t t) {
	long t0 = now_ns();
	pthread_barrier_wait(&started_together);
	pthread_join(t, NULL);
	joined.wait_in = now_ns() - t0;
	KEEP();
}

static void *worker(void *arg) {
	(void)arg;
	struct span s = begin();
	for (int i = 0; i < 3; i++) {
		CALL(&s, O_ONE, one);
		CALL(&s, O_TWO, two);
	}
	return NULL;
}

/* main's out: from before its entry to after its exit. */
static long started;
__attribute__((constructor)) static void starting(void) { started = now_ns(); }

static void report(void) {
	own[O_MAIN].out += now_ns() - started;
	for (int f = 0; f < N_OWN; f++)
		if (own[f].calls > 0)
			printf("own %s calls %ld in %ld out %ld kin %ld kout %ld desc %ld\n", own[f].name,
			       own[f].calls, own[f].in, own[f].out, own[f].kin, own[f].kout, own[f].desc);
	if (joined.worker > 0)
		printf("own join in %ld out %ld worker %ld held %ld mixed %ld extra %ld\n", joined.wait_in,
		       joined.wait_out, joined.worker, joined.held, joined.mixed, joined.extra);
	if (chunk.calls > 0)
		printf("own chunks calls %ld size %ld twin %ld wall %ld cpu %ld preempted %ld npreempted %ld "
		       "nstopped %ld stray %ld\n",
		       chunk.calls, chunk.size, chunk.twin, chunk.wall, chunk.cpu, chunk.preempted,
		       chunk.npreempted, chunk.nstopped, chunk.stray);
}

int main(int argc, char **argv) {
	struct span s = begin();
	atexit(report);
	const char *mode = argc > 1 ? argv[1] : "work";
	if (strcmp(mode, "work") == 0) {
		int n = argc > 2 ? atoi(argv[2]) : 10;
		if (argc > 3)
			unit_ns = atol(argv[3]) * 1000;
		for (int i = 0; i < n; i++)
			CALL(&s, O_TOP, top);
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
		chunks(n, argc > 4 ? atol(argv[4]) : 256);
		CALL(&s, O_SLOW, slow);
	} else if (strcmp(mode, "returns") == 0) {
		if (argc > 2)
			unit_ns = atol(argv[2]) * 1000;
		/* (wrap's out is measured around straight-line code, which is
		 * where its calls return; wrap cannot measure its in without
		 * changing its epilogue.) */
#define WRAPPED(i)                                                                                 \
	do {                                                                                       \
		long at = now_ns();                                                                \
		wrap();                                                                            \
		sink += i;                                                                         \
		add(&own[O_WRAP].out, now_ns() - at);                                              \
		add(&own[O_WRAP].calls, 1);                                                        \
		work(1);                                                                           \
	} while (0)
		WRAPPED(1);
		WRAPPED(2);
		WRAPPED(3);
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
	} else if (strcmp(mode, "join") == 0) {
		long arg[2] = {argc > 2 ? atol(argv[2]) : 20000, argc > 3 ? atol(argv[3]) : 256};
		pthread_t t;
		pthread_barrier_init(&started_together, NULL, 2);
		if (pthread_create(&t, NULL, joiner, arg) != 0)
			return 1;
		long at = now_ns();
		wait_all(t);
		joined.wait_out = now_ns() - at;
	} else {
		fprintf(stderr, "timing: unknown mode %s\n", mode);
		return 2;
	}
	printf("timing %s done\n", mode);
	end(&s, O_MAIN);
	return 0;
}
