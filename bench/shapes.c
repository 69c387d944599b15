/* bench/shapes.c: what each part of an entry's trampoline costs a call of
 * a tiny function on x86-64 (docs/performance.md, "Counting at native
 * speed"). The function is bench_mixed.c's mark (movslq; lea; movb; ret),
 * called in a loop from one place, as a sieve calls it: every call a
 * sibling of the last. Its shapes:
 *
 *   native    the function as compiled
 *   compiled  a count the compiler would write: incq of a global
 *             counter, in the function (the floor of exact counts)
 *   jumps     two jumps, there and back, nothing else
 *   count     a trampoline's count (incq %gs:counter) between the jumps
 *   taken     the count, then the call depth's test of the last entry's
 *             stack pointer, its branch taken on the common course (over
 *             the rest, in line)
 *   inline    the same test, its branch not taken (the rest out of line)
 *   leaf      one jump: the count, then the function to its return
 *   leaftaken one jump, the count, the test taken over the rest, the
 *             function: a leaf's trampoline as PROFILE writes it
 *   leafout   one jump, the count, the test not taken (the rest out of
 *             line), the function
 *
 *   shapes SHAPE [N]   (built by bench/shapes) N calls (default
 *                      200,000,000); prints the nanoseconds a call
 *
 * x86-64 only: GS is set to a block of the process's own.
 */
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static uint64_t block[64] __attribute__((aligned(64)));
char sieve[1 << 20];
long counter;

/* The function's body, after its entry's count. */
#define BODY "movslq %edi,%rdi\n lea sieve(%rip),%rax\n movb $1,(%rax,%rdi,1)\n ret\n"
/* The call depth's test: the last entry's stack pointer, kept where the
 * rest of the code (here a store of it) would keep it. */
#define TAKEN "cmp %rsp,%gs:40\n je 3f\n mov %rsp,%gs:40\n .fill 100,1,0x90\n 3:"
#define INLINE "cmp %rsp,%gs:40\n jne 4f\n"
#define SLOW(back) "4: mov %rsp,%gs:40\n jmp " back "\n"

#define SHAPE(name, code) __attribute__((naked, noinline)) static void name(int i) { __asm__(code); }
SHAPE(native, BODY)
SHAPE(compiled, "incq counter(%rip)\n" BODY)
SHAPE(jumps, "jmp 1f\n 1: jmp 2f\n 2:" BODY)
SHAPE(count, "jmp 1f\n 1: incq %gs:0\n jmp 2f\n 2:" BODY)
SHAPE(taken, "jmp 1f\n 1: incq %gs:0\n " TAKEN " jmp 2f\n 2:" BODY)
SHAPE(inl, "jmp 1f\n 1: incq %gs:0\n " INLINE " 5: jmp 2f\n " SLOW("5b") " 2:" BODY)
SHAPE(leaf, "jmp 1f\n 1: incq %gs:0\n" BODY)
SHAPE(leaftaken, "jmp 1f\n 1: incq %gs:0\n " TAKEN BODY)
SHAPE(leafout, "jmp 1f\n 1: incq %gs:0\n " INLINE " 5:" BODY SLOW("5b"))

static const struct {
	const char *name;
	void (*f)(int);
} shapes[] = {
	{"native", native}, {"compiled", compiled}, {"jumps", jumps}, {"count", count},
	{"taken", taken},   {"inline", inl},        {"leaf", leaf},   {"leaftaken", leaftaken},
	{"leafout", leafout},
};

int main(int argc, char **argv) {
	if (argc < 2) {
		fprintf(stderr, "usage: shapes SHAPE [N]\n");
		return 2;
	}
	long n = argc > 2 ? atol(argv[2]) : 200000000;
	void (*f)(int) = 0;
	for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
		if (strcmp(argv[1], shapes[k].name) == 0)
			f = shapes[k].f;
	if (!f || syscall(SYS_arch_prctl, ARCH_SET_GS, block) != 0) {
		fprintf(stderr, "shapes: no shape %s, or no GS\n", argv[1]);
		return 2;
	}
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long k = 0; k < n; k++)
		f((int)(k & ((1 << 20) - 1)));
	clock_gettime(CLOCK_MONOTONIC, &b);
	double ns = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
	if (block[0] != 0 && block[0] != (uint64_t)n)
		return 3; /* (a count lost) */
	printf("%s %.3f\n", argv[1], ns / (double)n);
	return 0;
}
