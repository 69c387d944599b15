/* hostile.c - programs that do, behind a profiler's back, what a tracer
 * cannot stop them doing (docs/linux.md, "What PROFILE cannot see"). The
 * first argument chooses:
 *
 *   patch     writes a new constant into its own function value()
 *             (mprotect, write, mprotect back), then calls it: natively
 *             it prints "value 1" then "value 2"
 *   writable  makes value()'s code writable and leaves it so, changing
 *             nothing: "value 1" twice
 *   copy      copies value()'s code into a page of its own and calls the
 *             copy: "copy 1"
 *   gsbase    (x86-64) sets its own GS base to a buffer of its own, then
 *             calls f 1000 times: "f 1000 buffer clean" natively, where
 *             nothing writes the buffer
 *   untraced  makes a child with clone(CLONE_UNTRACED | SIGCHLD), which
 *             calls f 50,000 times and exits 0, and calls f 100 times
 *             itself: "child 0"
 *   signals   raises SIGUSR1 5,000 times (or its second argument's
 *             number), each caught: "signals 5000"
 *   sigchld   forks a child that calls f and exits, and sends itself
 *             SIGCHLD with kill and with raise (as a program or its
 *             tracer may), each caught: "sigchld 3 child 0"
 *
 * value() is written in assembly, so that its layout is known: one
 * instruction that loads the constant 1, then a return. */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define KEEP __attribute__((noinline, noclone))

int value(void);
__asm__(".text\n"
        ".globl value\n"
        ".type value, @function\n"
        ".p2align 4\n"
        "value:\n"
#if defined(__x86_64__)
        "  mov $1, %eax\n"
#else
        "  mov w0, #1\n"
#endif
        "  ret\n"
        ".size value, .-value\n");

KEEP int f(int x) { return x + 1; }

static long page;

/* protect sets the protection of the page or pages of value()'s first
 * 16 bytes (a page past them may not be mapped: 16K pages). */
static void protect(int prot)
{
    uintptr_t p = (uintptr_t)value & ~(uintptr_t)(page - 1);
    uintptr_t end = ((uintptr_t)value + 16 + page - 1) & ~(uintptr_t)(page - 1);
    if (mprotect((void *)p, end - p, prot) != 0) {
        perror("mprotect");
        exit(1);
    }
}

/* set_value writes v as value()'s constant. */
static void set_value(int v)
{
    unsigned char *p = (unsigned char *)value;
    protect(PROT_READ | PROT_WRITE | PROT_EXEC);
#if defined(__x86_64__)
    memcpy(p + 1, &v, 4); /* mov $imm32, %eax: b8 imm32 */
#else
    uint32_t movz = 0x52800000u | ((uint32_t)v << 5); /* mov w0, #v */
    memcpy(p, &movz, 4);
    __builtin___clear_cache((char *)p, (char *)p + 4);
#endif
    protect(PROT_READ | PROT_EXEC);
}

static volatile int caught;
static void on_usr1(int sig) { (void)sig; caught++; }

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    page = sysconf(_SC_PAGESIZE);
    setvbuf(stdout, NULL, _IONBF, 0);
    if (strcmp(mode, "patch") == 0) {
        printf("value %d\n", value());
        set_value(2);
        printf("value %d\n", value());
    } else if (strcmp(mode, "writable") == 0) {
        printf("value %d\n", value());
        protect(PROT_READ | PROT_WRITE | PROT_EXEC);
        printf("value %d\n", value());
    } else if (strcmp(mode, "copy") == 0) {
        /* A page far from the program's code, where a copied relative
         * jump lands on nothing. */
        void *hint = (void *)(uintptr_t)0x20000000000ull;
        unsigned char *c = mmap(hint, page, PROT_READ | PROT_WRITE | PROT_EXEC,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (c == MAP_FAILED) {
            perror("mmap");
            return 1;
        }
        memcpy(c, (void *)value, 16);
        __builtin___clear_cache((char *)c, (char *)c + 16);
        printf("copy %d\n", ((int (*)(void))c)());
#if defined(__x86_64__)
    } else if (strcmp(mode, "gsbase") == 0) {
        static uint64_t buffer[1 << 16];
        const int archSetGS = 0x1001;
        if (syscall(SYS_arch_prctl, archSetGS, buffer) != 0) {
            perror("arch_prctl");
            return 1;
        }
        int n = 0;
        for (int i = 0; i < 1000; i++)
            n += f(i) - i;
        int clean = 1;
        for (size_t i = 0; i < sizeof buffer / sizeof buffer[0]; i++)
            clean &= buffer[i] == 0;
        printf("f %d buffer %s\n", n, clean ? "clean" : "written");
#endif
    } else if (strcmp(mode, "untraced") == 0) {
        long r = syscall(SYS_clone, CLONE_UNTRACED | SIGCHLD, 0, 0, 0, 0);
        if (r < 0) {
            perror("clone");
            return 1;
        }
        if (r == 0) {
            int n = 0;
            for (int i = 0; i < 50000; i++)
                n += f(i) - i;
            _exit(n == 50000 ? 0 : 1);
        }
        int n = 0, status;
        for (int i = 0; i < 100; i++)
            n += f(i) - i;
        waitpid(r, &status, 0);
        if (WIFSIGNALED(status))
            printf("child killed by signal %d\n", WTERMSIG(status));
        else
            printf("child %d\n", WEXITSTATUS(status));
    } else if (strcmp(mode, "sigchld") == 0) {
        signal(SIGCHLD, on_usr1);
        pid_t child = fork();
        if (child == 0)
            _exit(f(1) == 2 ? 0 : 1);
        int status;
        while (waitpid(child, &status, 0) < 0)
            ;
        kill(getpid(), SIGCHLD);
        raise(SIGCHLD);
        printf("sigchld %d child %d\n", caught, WEXITSTATUS(status));
    } else if (strcmp(mode, "signals") == 0) {
        int n = argc > 2 ? atoi(argv[2]) : 5000;
        signal(SIGUSR1, on_usr1);
        for (int i = 0; i < n; i++)
            raise(SIGUSR1);
        printf("signals %d\n", caught);
    } else {
        fprintf(stderr, "usage: hostile patch|writable|copy|gsbase|untraced|sigchld|signals\n");
        return 2;
    }
    return 0;
}
