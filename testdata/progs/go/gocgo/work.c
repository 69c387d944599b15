// The C half of gocgo (main.go): C functions that Go calls, and that call
// Go back, measured by the program itself.

#include <time.h>

#include "_cgo_export.h"
#include "own.h"

struct own own[N_OWN];
struct last last;
long unit_ns = 1000000;
volatile unsigned long c_sink;

/* The helpers of the measure are inlined: none is a function PREP would
 * profile. */
#define INLINE static inline __attribute__((always_inline))

INLINE long now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* The measure of a call, as testdata/progs/c/timing.c keeps it. */
struct span {
	long begun, kin, kout, desc;
};

INLINE struct span begin(void) { return (struct span){.begun = now_ns()}; }

INLINE void end(struct span *s, int f) {
	long in = now_ns() - s->begun;
	own[f].calls++;
	own[f].in += in;
	own[f].kin += s->kin;
	own[f].kout += s->kout;
	own[f].desc += s->desc;
	last = (struct last){in, s->desc};
}

INLINE void called(struct span *s, int f, long out) {
	own[f].out += out;
	s->kin += last.in;
	s->kout += out;
	s->desc += out - last.in + last.desc;
}

#define NOINLINE __attribute__((noinline, noclone))
#define KEEP() __asm__ volatile("")

/* c_work busy-waits a unit on the monotonic clock. */
NOINLINE void c_work(void) {
	struct span s = begin();
	long until = s.begun + unit_ns;
	while (now_ns() < until)
		c_sink++;
	end(&s, O_C_WORK);
	KEEP();
}

/* c_leaf is called by Go (goCallback): a unit of work in C. */
NOINLINE void c_leaf(void) {
	struct span s = begin();
	long at = now_ns();
	c_work();
	called(&s, O_C_WORK, now_ns() - at);
	end(&s, O_C_LEAF);
	KEEP();
}

/* c_outer is called by Go (run): n times a unit of work, then a call of
 * Go's goCallback. */
NOINLINE void c_outer(int n) {
	struct span s = begin();
	for (int i = 0; i < n; i++) {
		long at = now_ns();
		c_work();
		called(&s, O_C_WORK, now_ns() - at);
		at = now_ns();
		goCallback(i);
		called(&s, O_GO_CALLBACK, now_ns() - at);
	}
	end(&s, O_C_OUTER);
	KEEP();
}
