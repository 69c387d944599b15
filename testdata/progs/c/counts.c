/* counts.c - function counts known by construction.
 *
 *   f        1000 calls (a loop)
 *   g           3
 *   h           0 (never called)
 *   helper      4 (static)
 *   fib      1973 (fib(15): C(n) = 1 + C(n-1) + C(n-2), C(0) = C(1) = 1)
 *   viaptr      7 (called through a function pointer)
 *   main        1
 *
 * The program's exit status is its first argument (default 0), so tests can
 * check that PROFILE leaves it untouched.
 */
#include <stdio.h>
#include <stdlib.h>

#define KEEP __attribute__((noinline, noclone))

static int s_total;

KEEP int f(int x) { s_total += x; return x + 1; }
KEEP int g(int x) { s_total -= x; return x * 2; }
KEEP int h(int x) { s_total *= x; return x - 1; }

KEEP int fib(int n)
{
    int a, b;
    if (n < 2)
        return n;
    a = fib(n - 1);
    b = fib(n - 2);
    /* The empty asm hides b from the optimiser: without it gcc -O2 turns
     * the second call into a loop, and the binary makes 987 calls, not
     * 1973 (callgrind confirms either way). */
    __asm__("" : "+r"(b));
    return a + b;
}

KEEP static int helper(int x) { return x + 3; }

KEEP int viaptr(int x) { return x ^ 5; }

int (*volatile fp)(int) = viaptr;

int main(int argc, char **argv)
{
    int i, r = 0;
    for (i = 0; i < 1000; i++)
        r += f(i);
    for (i = 0; i < 3; i++)
        r += g(i);
    for (i = 0; i < 4; i++)
        r += helper(i);
    r += fib(15);
    for (i = 0; i < 7; i++)
        r += fp(i);
    printf("counts result %d\n", r);
    return argc > 1 ? atoi(argv[1]) : 0;
}
