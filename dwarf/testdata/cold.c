/* gcc -O2 moves the branch that starts with a call to a cold function
   into process.cold, a second range of process. */
#include <stdio.h>

__attribute__((cold, noinline)) void fail(const char *what, int i)
{
	fprintf(stderr, "bad %s at %d\n", what, i);
}

__attribute__((noinline)) int process(int *v, int n)
{
	int sum = 0;
	for (int i = 0; i < n; i++) {
		if (v[i] < 0) {
			fail("value", i);
			fprintf(stderr, "negative %d %d %d\n", v[i], i, n);
			return -1;
		}
		sum += v[i] * 3;
	}
	return sum;
}

int main(int argc, char **argv)
{
	int v[4] = {1, 2, 3, argc};
	(void)argv;
	printf("%d\n", process(v, 4));
	return 0;
}
