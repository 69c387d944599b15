/* sighold.c - a server for the tests of signal frames under profile --pid
 * (e2e/attachwindow_test.go, TestAttachSignalFrames). Its worker thread
 * calls f() without end; SIGUSR1 goes to the worker alone, and its
 * handler looks at where the signal interrupted the worker (the PC of its
 * ucontext): when the test asks for one, it holds there, waiting in
 * read(2), until it is released, and then returns there. Commands on
 * stdin, answers on stdout:
 *
 *   h   "held": a handler holds that interrupted the worker inside f's
 *       first five bytes, past the first (inside the jump PROFILE writes
 *       at an entry on x86-64)
 *   p   "held": a handler holds that interrupted the worker in an
 *       executable mapping of no file (the program makes none: PROFILE's
 *       trampolines), at an instruction that reads the thread base
 *       through GS on x86-64 (anywhere there on arm64); "none" after
 *       20,000 signals without one, or ten seconds (an emulated CPU)
 *   r   "released": the handler returns, and the worker has called f()
 *       1,000 times since
 *   q   exit 0
 *
 * It prints "ready" once the worker runs. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__x86_64__)
#ifdef __CET__
#define NOCF __attribute__((nocf_check)) /* no endbr64: f starts with push %rbp */
#else
#define NOCF
#endif
#define PC(uc) ((uintptr_t)(uc)->uc_mcontext.gregs[REG_RIP])
#define THREAD_BASE_READ(pc) (*(volatile uint8_t *)(pc) == 0x65) /* a GS prefix */
#else
#define NOCF
#define PC(uc) ((uintptr_t)(uc)->uc_mcontext.pc)
#define THREAD_BASE_READ(pc) 1
#endif

#define KEEP __attribute__((noinline, noclone))

static volatile long calls, sink;
static volatile int want; /* 'h' or 'p' while a handler is wanted */
static int held[2], release[2];
static uintptr_t foreign[64][2]; /* the executable mappings of no file */
static int nforeign;

KEEP NOCF long f(long x) { return x * 2 + 1; }

static int wanted(uintptr_t pc)
{
    if (want == 'h')
        return pc > (uintptr_t)f && pc < (uintptr_t)f + 5;
    for (int i = 0; i < nforeign; i++)
        if (pc >= foreign[i][0] && pc < foreign[i][1])
            return THREAD_BASE_READ(pc);
    return 0;
}

static void on_usr1(int sig, siginfo_t *si, void *ctx)
{
    (void)sig, (void)si;
    if (!want || !wanted(PC((ucontext_t *)ctx)))
        return;
    want = 0;
    char c = 'h';
    write(held[1], &c, 1);
    read(release[0], &c, 1);
}

static void *worker(void *arg)
{
    for (long i = 0;; i++) {
        sink += f(i);
        calls++;
    }
    return arg;
}

/* findForeign notes the executable mappings of no file. */
static void findForeign(void)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[512];
    nforeign = 0;
    while (maps && fgets(line, sizeof line, maps) && nforeign < 64) {
        unsigned long lo, hi, off, inode;
        char perms[8], dev[16];
        int n = 0;
        if (sscanf(line, "%lx-%lx %7s %lx %15s %lu %n", &lo, &hi, perms, &off, dev, &inode, &n) >= 6 &&
            perms[2] == 'x' && inode == 0 && line[n] != '[') {
            foreign[nforeign][0] = lo;
            foreign[nforeign][1] = hi;
            nforeign++;
        }
    }
    if (maps)
        fclose(maps);
}

int main(void)
{
    // Any process of the user may attach (docs/linux.md, "Attaching to a
    // running process").
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    setvbuf(stdout, NULL, _IOLBF, 0);
    pipe(held);
    pipe(release);
    struct sigaction sa = {.sa_sigaction = on_usr1, .sa_flags = SA_SIGINFO | SA_RESTART};
    sigaction(SIGUSR1, &sa, NULL);
    pthread_t th;
    pthread_create(&th, NULL, worker, NULL);
    while (calls == 0)
        usleep(100);
    printf("ready\n");
    char line[64];
    while (fgets(line, sizeof line, stdin)) {
        if (line[0] == 'h' || line[0] == 'p') {
            if (line[0] == 'p')
                findForeign();
            want = line[0];
            int ok = 0;
            time_t until = time(NULL) + 10;
            for (int i = 0; i < 20000 && !ok && time(NULL) < until; i++) {
                pthread_kill(th, SIGUSR1);
                usleep(20);
                ok = want == 0;
            }
            if (ok) {
                char c;
                read(held[0], &c, 1);
            }
            want = 0;
            printf(ok ? "held\n" : "none\n");
        } else if (line[0] == 'r') {
            char c = 'r';
            write(release[1], &c, 1);
            long from = calls;
            while (calls - from < 1000)
                usleep(100);
            printf("released\n");
        } else if (line[0] == 'q') {
            return 0;
        }
    }
    return 0;
}
