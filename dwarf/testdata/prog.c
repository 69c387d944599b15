/* Functions of known kinds for the dwarf tests: static and global, one
   never called, a recursive one, one called through a pointer. The tests
   find declaration lines by the "decl:" markers. */
#include <stdio.h>

static int counter;

static int square(int x) /* decl:square */
{
	return x * x;
}

int twice(int x) /* decl:twice */
{
	return 2 * x;
}

int fact(int n) /* decl:fact */
{
	if (n <= 1)
		return 1;
	return n * fact(n - 1);
}

int never_called(int a) /* decl:never_called */
{
	return a + 42;
}

__attribute__((noinline)) static int accumulate(int x, int k) /* decl:accumulate */
{
	int s = 0;
	for (int i = 0; i < k; i++)
		s += x * i + counter;
	return s;
}

typedef int (*op_fn)(int);

int main(int argc, char **argv) /* decl:main */
{
	op_fn op = argc > 5 ? square : twice;
	int total = 0;
	(void)argv;
	for (int i = 0; i < 10; i++) {
		total += op(i);
		counter++;
	}
	total += fact(5);
	total += accumulate(total, argc + 6);
	printf("%d\n", total);
	return 0;
}
