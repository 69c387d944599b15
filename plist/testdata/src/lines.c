/* lines.c: a line profile fixture */
#include <stdio.h>

static int square(int x)
{
	return x * x;	/* tab-indented */
}

int main(void)
{
	int sum = 0;
	for (int i = 0; i < 10; i++)
		sum += square(i);
	if (sum < 0)
		puts("négatif");
	printf("%d\n", sum);
	return 0;
}
