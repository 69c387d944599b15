/* A second unit for the split DWARF tests: linked with prog.c, the program
   has two skeletons, two .dwo files, and a package of two units. At -O2,
   checked has a cold part, a second range. */
#include <stdio.h>

__attribute__((noinline)) static int hidden(int x) /* decl:hidden */
{
	return x ^ 0x5a;
}

int exposed(int x) /* decl:exposed */
{
	return hidden(x) + 1;
}

__attribute__((cold, noinline)) void complain(int x) /* decl:complain */
{
	fprintf(stderr, "bad %d\n", x);
}

__attribute__((noinline)) int checked(int x) /* decl:checked */
{
	if (x < 0) {
		complain(x);
		fprintf(stderr, "negative %d\n", x);
		return -1;
	}
	return exposed(x) * 3;
}
