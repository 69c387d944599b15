/* kernel.c - spends known shares of its CPU time in the kernel, for the
 * kernel's samples of function sampling (issue 35, part 4). Three phases
 * run one after the other on the main thread, each until the thread has
 * used PHASE ms of CPU time since it began (its own clock,
 * CLOCK_THREAD_CPUTIME_ID; argv[1], default 300):
 *
 *   in_syscalls reads 64 KiB of /dev/zero at a time with the system call
 *     instruction in its own code (inline assembly): the kernel's time is
 *     the function's own;
 *   via_libc does the same through the C library's read: the kernel's
 *     time is spent for the library's code, under via_libc;
 *   in_user spins in user space, reading its clock (a system call) every
 *     200,000 additions: the reading is a small share of its time.
 *
 * After each phase the program prints the thread's user and system time
 * in it (getrusage RUSAGE_THREAD), in microseconds:
 *   phase NAME user=US sys=US
 *
 * With a second argument N, each phase does a fixed work instead (for
 * bench/sampling): N reads of 64 KiB, and N rounds of 1,000 additions. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static char buf[64 << 10];
static volatile unsigned long sink;

static long long thread_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* raw_read is read(2) with the system call instruction where it is
 * inlined. */
static inline __attribute__((always_inline)) long raw_read(long fd, void *p, long n)
{
#if defined(__x86_64__)
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "0"(0L), "D"(fd), "S"(p), "d"(n) : "rcx", "r11", "memory");
    return ret;
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = 63; /* __NR_read */
    register long x0 __asm__("x0") = fd;
    register long x1 __asm__("x1") = (long)p;
    register long x2 __asm__("x2") = n;
    __asm__ volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
    return x0;
#else
#error "x86-64 and arm64 only"
#endif
}

/* more reports whether a phase goes on after done rounds: until n
 * rounds where n is not 0, else until the thread has used ns since start. */
static int more(long done, long n, long long start, long long ns)
{
    return n ? done < n : thread_ns() - start < ns;
}

__attribute__((noinline)) void in_syscalls(int fd, long long ns, long n)
{
    long long start = thread_ns();
    long done = 0;
    do {
        for (int i = 0; i < 16; i++)
            sink += raw_read(fd, buf, sizeof buf);
        done += 16;
    } while (more(done, n, start, ns));
}

__attribute__((noinline)) void via_libc(int fd, long long ns, long n)
{
    long long start = thread_ns();
    long done = 0;
    do {
        for (int i = 0; i < 16; i++)
            sink += read(fd, buf, sizeof buf);
        done += 16;
    } while (more(done, n, start, ns));
}

__attribute__((noinline)) void in_user(long long ns, long n)
{
    long long start = thread_ns();
    long done = 0;
    do {
        for (int i = 0; i < 200000; i++)
            sink += i;
        done += 200;
    } while (more(done, n, start, ns));
}

static struct rusage before;

static void report(const char *name)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    long long user = (ru.ru_utime.tv_sec - before.ru_utime.tv_sec) * 1000000LL + ru.ru_utime.tv_usec - before.ru_utime.tv_usec;
    long long sys = (ru.ru_stime.tv_sec - before.ru_stime.tv_sec) * 1000000LL + ru.ru_stime.tv_usec - before.ru_stime.tv_usec;
    printf("phase %s user=%lld sys=%lld\n", name, user, sys);
    before = ru;
}

int main(int argc, char **argv)
{
    long long ns = (argc > 1 ? atoll(argv[1]) : 300) * 1000000LL;
    long n = argc > 2 ? atol(argv[2]) : 0;
    int fd = open("/dev/zero", O_RDONLY);
    if (fd < 0) {
        perror("/dev/zero");
        return 1;
    }
    getrusage(RUSAGE_THREAD, &before);
    in_syscalls(fd, ns, n);
    report("in_syscalls");
    via_libc(fd, ns, n);
    report("via_libc");
    in_user(ns, n);
    report("in_user");
    return 0;
}
