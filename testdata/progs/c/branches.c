/* branches.c - conditional branches whose ways are known by construction,
 * for branch coverage (plist's BRDA records). Built at -O0, where each
 * test of the source is one conditional branch of the line it is on.
 *
 *   both     its test goes each way: called with 5 negative and 5 other
 *            numbers;
 *   one      its test never goes the way of a negative number: called
 *            with the number of arguments, never below 1;
 *   never    never called: its line never ran, and neither did its
 *            branch.
 *
 * main's loop tests its counter 11 times, 10 of them going on into the
 * loop and once out of it. spin's loop goes back 1,000 times before it
 * goes on once: more than a branch's breakpoint stops the program
 * before it is taken out (and the branch left uncounted). It prints
 * "branches done" and the sum. */
#include <stdio.h>

#define KEEP __attribute__((noinline, noclone))
KEEP int spin(int n);

KEEP int both(int x)
{
    if (x < 0)
        return -1;
    return 1;
}

KEEP int one(int x)
{
    if (x < 0)
        return 0;
    return x;
}

KEEP int never(int x)
{
    if (x < 0)
        return 0;
    return x;
}

int main(int argc, char **argv)
{
    int s = 0;
    for (int i = 0; i < 10; i++)
        s += both(i - 5);
    s += one(argc);
    if (argc > 99)
        s += never(argc);
    s += spin(1000) - 500;
    printf("branches done %d\n", s);
    return 0;
}

KEEP int spin(int n)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += i & 1;
    return s;
}
