/* unwind: a known call stack for profile/unwind's tests. main calls a,
 * a calls b, b calls c (none inlined), and c stops the program with a
 * breakpoint instruction, so that a tracer finds it in c with main, a
 * and b above it. With the argument "signal", c raises SIGUSR1 instead
 * and the handler stops on the breakpoint: the stack then holds the
 * handler, the signal return trampoline, raise's frames in libc, and c,
 * b, a, main. */
#include <signal.h>
#include <string.h>

volatile int sink;

static inline __attribute__((always_inline)) void trap(void) {
#if defined(__x86_64__)
	__asm__ volatile("int3");
#elif defined(__aarch64__)
	__asm__ volatile("brk #0");
#endif
}

__attribute__((noinline)) void handler(int sig) {
	sink += sig;
	trap();
	sink++;
}

/* Each function does work after its call, so that the call is no tail
 * call, and keeps a value in a callee-saved register across it. */
__attribute__((noinline)) int c(int n, int sig) {
	volatile int local[8];
	for (int i = 0; i < 8; i++)
		local[i] = n + i;
	if (sig)
		raise(SIGUSR1);
	else
		trap();
	return local[3] + n;
}

__attribute__((noinline)) int b(int n, int sig) {
	int r = c(n * 3, sig);
	sink += n;
	return r + n;
}

__attribute__((noinline)) int a(int n, int sig) {
	int r = b(n + 1, sig);
	sink += r;
	return r * 2;
}

int main(int argc, char **argv) {
	int sig = argc > 1 && strcmp(argv[1], "signal") == 0;
	if (sig)
		signal(SIGUSR1, handler);
	int r = a(argc, sig);
	sink += r;
	return 0;
}
