/* samename: two source files of one base name, a/util.c and b/util.c,
 * whose functions sit on the same lines: util_a is called 10 times, its
 * loop's body runs 30 times; util_b 20 times, its loop's body 100 times.
 * It prints "samename done" and the sum. */
#include <stdio.h>

int util_a(int x);
int util_b(int x);

int main(void)
{
    int s = 0;
    for (int i = 0; i < 10; i++)
        s += util_a(i);
    for (int i = 0; i < 20; i++)
        s += util_b(i);
    printf("samename done %d\n", s);
    return 0;
}
