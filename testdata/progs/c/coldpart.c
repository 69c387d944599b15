/* coldpart.c - GCC places the path of check() that calls a cold function
 * apart, at -O2, in a cold part of its own ("check.cold"): a symbol that
 * starts no function (TestFuncStarts). */
#include <stdio.h>

__attribute__((cold, noinline)) void complain(int x) { fprintf(stderr, "complain %d\n", x); }

__attribute__((noinline)) int check(int x) {
	if (x < 0) {
		complain(x);
		fprintf(stderr, "negative %d\n", x);
		return -1;
	}
	return x * 3;
}

int main(int argc, char **argv) {
	(void)argv;
	return check(argc) == 3 ? 0 : 1;
}
