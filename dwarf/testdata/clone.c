/* Functions gcc -O2 clones: scale gets a constant argument propagated
   (scale.constprop.0), sum_point gets its struct argument split into the
   scalar it uses (sum_point.isra.0). */
#include <stdio.h>

struct point {
	int x, y, z;
	int pad[16];
};

__attribute__((noinline)) static int scale(int x, int k)
{
	int s = 0;
	for (int i = 0; i < k; i++)
		s += x * i;
	return s;
}

__attribute__((noinline)) static int sum_point(struct point *p, int n)
{
	int s = 0, y = p->y;
	for (int i = 0; i < n; i++)
		s += y * i;
	return s;
}

int main(int argc, char **argv)
{
	struct point p = {argc, argc + 1, argc + 2, {0}};
	printf("%d %d\n", scale(argc, 7), sum_point(&p, argc + 3));
	printf("%d\n", scale(argc + 1, 7));
	return 0;
}
