/* altentry.c - g and h are hand-written assembly, and h has no code of
 * its own past its first instruction: it jumps into g's second
 * instruction, an alternate entry of g, as hand-written assembly has. A
 * patch of g's entry must not cover where that jump lands (issue 18).
 *
 * main calls g 100 times and h 100 times: g's entry runs 100 times (h's
 * jump is no call of g), h's 100 times. g(i) and h(i) are both i + 1:
 * the program prints "altentry sum 10100". An alarm ends a run that
 * hangs. */
#include <stdio.h>
#include <unistd.h>

int g(int), h(int);

#if defined(__x86_64__)
__asm__(".text\n"
        ".globl g\n.type g, @function\n"
        "g:\n\tmov %edi, %eax\n\tadd $1, %eax\n\tret\n.size g, .-g\n"
        ".globl h\n.type h, @function\n"
        "h:\n\tmov %edi, %eax\n\tjmp g+2\n.size h, .-h\n");
#elif defined(__aarch64__)
__asm__(".text\n"
        ".globl g\n.type g, %function\n"
        "g:\n\tmov w1, w0\n\tadd w0, w1, #1\n\tret\n.size g, .-g\n"
        ".globl h\n.type h, %function\n"
        "h:\n\tmov w1, w0\n\tb g+4\n.size h, .-h\n");
#else
#error "altentry.c: x86-64 or arm64 only"
#endif

int main(void)
{
    long sum = 0;
    alarm(60);
    for (int i = 0; i < 100; i++) {
        sum += g(i);
        sum += h(i);
    }
    printf("altentry sum %ld\n", sum);
    return 0;
}
