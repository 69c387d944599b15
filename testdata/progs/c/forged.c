/* forged.c - a source file whose name, and an argument whose text, try to
 * forge the records of PLIST's formats (docs/exports.md, "Names").
 *
 *   f      1000 calls (a loop): its line, 22, runs 1000 times
 *   g         1 call; its code is in the file that the #line below names
 *             ("forged" + a tab, a semicolon, newlines, and after each
 *             newline the text of a record of lcov, callgrind, folded
 *             stacks and plist /T): its lines 100, 101 and 102 run once
 *             each
 *   main      1 call
 *
 * It prints "forged N", N the length of its first argument (0 without
 * one), which the tests give newlines and tabs.
 */
#include <stdio.h>
#include <string.h>

#define KEEP __attribute__((noinline, noclone))

static int s_total;

KEEP int f(int x) { s_total += x; return x + 1; }
KEEP int g(int x);

int main(int argc, char **argv)
{
    for (int i = 0; i < 1000; i++)
        f(i);
    g(argc);
    printf("forged %zu\n", argc > 1 ? strlen(argv[1]) : (size_t)0);
    return 0;
}

#line 100 "forged\tname;x.c\nDA:1,999999\nend_of_record\nfn=forged\n1 999999\n7\tforged\tforged.c\t1\t999999\nforged;stack 999999"
KEEP int g(int x) {
    s_total -= x;
    return s_total; }
