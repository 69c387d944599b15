/* Fixture for instr's differential test against objdump: a little of every
 * kind of code a compiler emits (switch tables, calls through pointers,
 * tail calls, loops, floating point, vector loops with constants loaded
 * RIP-relative). Built at test time; see objdump_test.go. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

volatile int sink;
static double table[64];
static float vec[256];
static int32_t ivec[256];

typedef int (*op_fn)(int, int);

__attribute__((noinline)) static int add(int a, int b) { return a + b; }
__attribute__((noinline)) static int sub(int a, int b) { return a - b; }
__attribute__((noinline)) static int mul(int a, int b) { return a * b; }

static op_fn ops[] = {add, sub, mul};

__attribute__((noinline)) int apply(int which, int a, int b)
{
	return ops[which % 3](a, b);
}

__attribute__((noinline)) int classify(int x)
{
	switch (x) {
	case 0: return 10;
	case 1: return 21;
	case 2: return 32;
	case 3: return 43;
	case 4: return 54;
	case 5: return 65;
	case 6: return 76;
	case 7: return 87;
	default: return -1;
	}
}

__attribute__((noinline)) double poly(double x)
{
	double r = 0;
	for (int i = 0; i < 64; i++)
		r = r * x + table[i];
	return r;
}

__attribute__((noinline)) void scale(float k)
{
	for (int i = 0; i < 256; i++)
		vec[i] = vec[i] * k + 1.5f;
}

__attribute__((noinline)) int64_t isum(void)
{
	int64_t s = 0;
	for (int i = 0; i < 256; i++)
		s += ivec[i] * 3 + 7;
	return s;
}

__attribute__((noinline)) size_t count_char(const char *s, char c)
{
	size_t n = 0;
	for (; *s; s++)
		n += *s == c;
	return n;
}

__attribute__((noinline)) unsigned long mix(unsigned long a, unsigned long b)
{
	a ^= a >> 33;
	a *= 0xff51afd7ed558ccdUL;
	a ^= b << 7;
	return __builtin_popcountl(a) + __builtin_ctzl(a | 1) + (a % 1000003);
}

__attribute__((noinline)) int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

__attribute__((noinline)) int tail(int n) { return n > 100 ? n : apply(n, n, 3); }

int main(int argc, char **argv)
{
	char buf[128];
	memset(buf, 'a', sizeof buf - 1);
	buf[sizeof buf - 1] = 0;
	scale(2.0f);
	sink = apply(argc, 3, 4) + classify(argc) + (int)poly(0.5) + (int)isum() +
	       (int)count_char(argv[0], '/') + (int)mix((unsigned long)argc, 9) +
	       fib(10) + tail(argc) + (int)strlen(buf);
	return 0;
}
