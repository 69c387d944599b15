/* The C fixture of the plan tests: six functions of its own, one of them
   static, none inlined or cloned at -O2, so every build lists exactly these. */
#include <stdio.h>

#define KEEP __attribute__((noinline, noclone))

static KEEP int helper(int x) { return x * 3; }

KEEP int h(int x) { return helper(x) + 1; }

KEEP int g(int x) { return h(x) * 2; }

KEEP int f(int x) { return g(x) - 1; }

KEEP int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

int main(int argc, char **argv)
{
	(void)argv;
	printf("%d %d\n", f(argc), fib(10 + argc));
	return 0;
}
