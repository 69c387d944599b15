/* Line-table fixture: the tests find lines by their "L:" markers. */
#include <stdio.h>

int add(int a, int b) { /* L:add */
	int s = a + b; /* L:add-sum */
	return s; /* L:add-return */
} /* L:add-end */

int loop(int n) { /* L:loop */
	int t = 0; /* L:loop-init */
	for (int i = 0; i < n; i++) /* L:loop-for */
		t += add(i, t); /* L:loop-body */
	return t; /* L:loop-return */
} /* L:loop-end */

int main(void)
{
	printf("%d\n", loop(10));
	return 0;
}
