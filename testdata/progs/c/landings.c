/* landings.c: code whose jumps land where no decoding of the code sees
 * them (issue 31, items 1 to 5): a line patch that wrote over any
 * instruction but its site's would break each part. Every part adds to
 * a checksum that a misstep changes, and main prints them; the counts
 * are known by construction for N rounds (argv[1], default 4000, a
 * multiple of 8). argv[2] names the parts to run, by the letters below
 * (default all: sdpate):
 *
 *   s switchy  a dense switch, through a jump table (in the executable
 *              segment with -Wl,-z,noseparate-code)
 *   d dispatch a computed goto through label differences (the GCC
 *              manual's example)
 *   p packed   a code address at an unaligned place of the data (a
 *              packed struct; a plain word in a non-PIE program); the
 *              target runs N times
 *   a duff, t in_text, e evens: hand-written assembly (landings.S): a
 *              jump into an unrolled run (i additions for i below N/8), a
 *              jump table kept in .text ((i & 3) + 1 additions for i below
 *              N), and a function returning its result in the flags
 *              (the even numbers below N)
 */
#include <stdio.h>
#include <stdlib.h>

#define KEEP __attribute__((noinline, noclone))

long duff(long n);      /* n additions of 1, entered in an unrolled run */
long in_text(long i);   /* (i & 3) + 1 additions, through a table in .text */
long evens(long n);     /* the even numbers below n, asked of a function's flags */

/* The cases fall through: each case's first instruction follows the
 * last one of the case before. */
KEEP static unsigned long switchy(unsigned long i, unsigned long acc) {
	switch (i & 7) {
	case 0:
		acc += 1;
		/* fall through */
	case 1:
		acc ^= 3;
		/* fall through */
	case 2:
		acc += acc >> 3;
		/* fall through */
	case 3:
		acc -= 7;
		/* fall through */
	case 4:
		acc = acc * 3 + 1;
		/* fall through */
	case 5:
		acc |= 16;
		/* fall through */
	case 6:
		acc += i;
		/* fall through */
	default:
		acc -= i >> 1;
	}
	return acc;
}

/* The ops fall through too: op_d runs N/4 times, op_c N/2, op_b 3N/4
 * and op_a N. */
KEEP static unsigned long dispatch(long n) {
	static const int offs[] = {&&op_a - &&op_a, &&op_b - &&op_a, &&op_c - &&op_a, &&op_d - &&op_a};
	unsigned long acc = 0;
	long i = 0;
next:
	if (i == n)
		return acc;
	goto *(&&op_a + offs[i++ & 3]);
op_d:
	acc ^= 7;
op_c:
	acc += 5;
op_b:
	acc <<= 1;
op_a:
	acc += 1;
	goto next;
}

struct __attribute__((packed)) target {
	char tag;
	void *where;
};

/* there: runs N times, a quarter of them through the code address at an
 * unaligned place of t, the others falling through from the line
 * before; other: N/4 times, through t too (two labels, so that the
 * compiler cannot make the goto a direct jump). */
KEEP static long packed(long n) {
	static struct target t[2] = {{'x', &&there}, {'y', &&other}};
	long acc = 0;
	for (long i = 0; i < n; i++) {
		if (i & 1)
			goto *((volatile struct target *)&t[(i >> 1) & 1])->where;
		acc += 2;
	there:
		acc += t[0].tag;
		continue;
	other:
		acc += t[1].tag;
	}
	return acc;
}

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 4000;
	const char *parts = argc > 2 ? argv[2] : "sdpate"; /* the parts to run */
	printf("landings");
	for (const char *c = parts; *c; c++) {
		unsigned long s = 0;
		long a = 0;
		switch (*c) {
		case 's':
			for (long i = 0; i < n; i++)
				s = switchy(i, s);
			printf(" switch=%lu", s);
			break;
		case 'd':
			printf(" dispatch=%lu", dispatch(n));
			break;
		case 'p':
			printf(" packed=%ld", packed(n));
			break;
		case 'a':
			for (long i = 0; i < n / 8; i++)
				a += duff(i);
			printf(" duff=%ld", a);
			break;
		case 't':
			for (long i = 0; i < n; i++)
				a += in_text(i);
			printf(" in_text=%ld", a);
			break;
		case 'e':
			printf(" evens=%ld", evens(n));
			break;
		}
	}
	printf("\n");
	return 0;
}
