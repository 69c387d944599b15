/* inproc.c - what in-process counting must survive, each with the count it
 * must give:
 *
 *   f        called 1000 times from main and once per SIGALRM (every 200 µs,
 *            or the second argument) from its handler (the handler counts
 *            its calls: main prints the total)
 *   jumper   called 50 times; each calls leaf, which longjmps out of both
 *   leaf     50
 *   load     called with a null pointer once: the SIGSEGV handler checks
 *            that the fault is reported in load's own code (at -O2 its
 *            first instruction, which runs in the trampoline) and
 *            siglongjmps out; then 9 good calls: 10
 *   sys3     3 calls: its first instructions hold a system call (x86-64:
 *            the jump over its first instruction leaves it in place) or
 *            begin with an exclusive load (arm64: its entry keeps a
 *            breakpoint, not relocatable)
 *   tiny     5 calls: one instruction, no padding after it (x86-64: a
 *            jump of one byte, punned over the next function's code)
 *
 *   f4       N calls per iteration of main's loop (the argument, 50 by
 *            default), 1000N in all, and one per SIGALRM: main checks the
 *            sum of what they return
 *
 * It prints "inproc f=N load-pc=ok|bad f4=ok|bad". The deepest nesting of
 * the functions above is 3 or 4: main, on_alarm (run where the alarm
 * interrupts main, or f or f4 when it interrupts them), f or f4. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>

#define KEEP __attribute__((noinline, noclone))

static volatile long sink;
static volatile sig_atomic_t handled;

KEEP int f(int x) { sink += x; return x + 1; }

/* Four arguments: the fourth is in rcx on x86-64, which the call depth's
 * code of a trampoline saves and restores; a signal landing in that code
 * must not change it. */
KEEP long f4(long a, long b, long c, long d) { return a + 2 * b + 3 * c + 4 * d; }

static void on_alarm(int sig) {
    (void)sig;
    f(1);
    sink += f4(1, 2, 3, 4);
    handled++;
}

static jmp_buf jb;
KEEP void leaf(int x) { sink += x; longjmp(jb, 1); }
KEEP void jumper(int x) { leaf(x + 1); sink -= 1; }

KEEP int load(int *p) { return *p; }

static sigjmp_buf segv_jb;
static volatile int pc_ok = -1;
static void on_segv(int sig, siginfo_t *si, void *uc_) {
    ucontext_t *uc = uc_;
    (void)sig; (void)si;
#if defined(__x86_64__)
    unsigned long pc = uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    unsigned long pc = uc->uc_mcontext.pc;
#endif
    /* The fault is in load's own code (its first instruction at -O2),
     * not in a trampoline. */
    unsigned long at = (unsigned long)load;
    pc_ok = pc >= at && pc < at + 32;
    siglongjmp(segv_jb, 1);
}

/* Hand-written functions, each a fall-back case. */
#if defined(__x86_64__)
__asm__(".text\n"
        ".globl sys3\n.type sys3,@function\n"
        "sys3: xor %eax,%eax\n mov $39,%al\n syscall\n ret\n.size sys3,.-sys3\n"
        ".globl tiny\n.type tiny,@function\n"
        "tiny: ret\n.size tiny,.-tiny\n"
        ".globl aftertiny\n.type aftertiny,@function\n"
        "aftertiny: xor %eax,%eax\n ret\n.size aftertiny,.-aftertiny\n");
#elif defined(__aarch64__)
__asm__(".text\n"
        ".globl sys3\n.type sys3,@function\n"
        "sys3: ldxr x9, [sp]\n clrex\n mov x8, #172\n svc #0\n ret\n.size sys3,.-sys3\n"
        ".globl tiny\n.type tiny,@function\n"
        "tiny: ret\n.size tiny,.-tiny\n"
        ".globl aftertiny\n.type aftertiny,@function\n"
        "aftertiny: mov w0, #0\n ret\n.size aftertiny,.-aftertiny\n");
#endif
long sys3(void);
void tiny(void);
int aftertiny(void);

int main(int argc, char **argv) {
    int inner = argc > 1 ? atoi(argv[1]) : 50;     /* f4 calls per iteration */
    int every = argc > 2 ? atoi(argv[2]) : 200;    /* SIGALRM period, µs */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, every}, {0, every}};
    setitimer(ITIMER_REAL, &it, NULL);
    long total = 0, sum = 0;
    for (int i = 0; i < 1000; i++) {
        f(i);
        total++;
        for (int k = 0; k < inner; k++)
            sum += f4(i, 1, 2, k);
        for (volatile int k = 0; k < 20000; k++)
            ;
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    total += handled;

    for (int i = 0; i < 50; i++)
        if (setjmp(jb) == 0)
            jumper(i);

    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
    int *volatile null = NULL;
    if (sigsetjmp(segv_jb, 1) == 0)
        sink += load(null);
    int v = 7;
    for (int i = 0; i < 9; i++)
        sink += load(&v);

    for (int i = 0; i < 3; i++)
        sink += sys3();
    for (int i = 0; i < 5; i++)
        tiny();
    sink += aftertiny();

    /* sum of i + 2 + 6 + 4k over i < 1000, k < inner */
    long want = inner * 499500L + 1000L * inner * 8 + 1000L * 4 * (inner * (inner - 1L) / 2);
    printf("inproc f=%ld load-pc=%s f4=%s\n", total, pc_ok == 1 ? "ok" : "bad", sum == want ? "ok" : "bad");
    return 0;
}
