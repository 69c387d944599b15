/* A program that calls a shared library (lib.c) and the C library through
 * its PLT. */
#include <stdio.h>

int lib_add(int a, int b);
int lib_mul(int a, int b);

int main(int argc, char **argv)
{
	printf("%d\n", lib_add(argc, 2) + lib_mul(argc, 3));
	puts(argv[0]);
	return 0;
}
