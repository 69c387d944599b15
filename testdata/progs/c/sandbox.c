/* sandbox.c - a program that puts itself under a seccomp filter that
 * kills it for the system calls a profiler makes in it, as the default
 * action of many allow-list sandboxes does (SECCOMP_RET_KILL_PROCESS:
 * e2e/share_test.go). Two modes:
 *
 *   sandbox serve      a server for profile --pid: it installs a filter
 *                      that kills it for openat, open, mmap and
 *                      memfd_create, prints "ready", then takes commands
 *                      on stdin: "w N", main calls work() N times and
 *                      says "did N"; "q", exit 0. In a window around one
 *                      "w N": work N, every other function 0.
 *   sandbox dlopen LIB a program PROFILE starts: it calls f() 10 times,
 *                      installs a filter that kills it for an anonymous
 *                      executable mmap (what a JIT would need: a sandbox
 *                      that forbids code made at run time) and for
 *                      memfd_create, loads LIB (libsq.so) with dlopen,
 *                      whose own mmaps are of its file, calls its
 *                      square() 100 times, and prints "sum 328350": f 10,
 *                      square 100, main 1.
 *
 * Without a profiler neither call is ever made, and the program runs to
 * its end. */
#include <dlfcn.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#endif

#define KEEP __attribute__((noinline, noclone))

KEEP long work(long i) { return i * 2 + 1; }
KEEP int f(int x) { return x + 1; }

// The filter's parts: the architecture checked, the call's number loaded,
// a number that kills, an argument's low word loaded.
#define CHECK_ARCH                                                                  \
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),        \
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0),                            \
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),                        \
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
#define KILL_ON(nr)                                                                 \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1),                                \
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS)
#define ALLOW BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
#define ARG(n) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[n]))

static void install(struct sock_filter *filter, unsigned short len)
{
    struct sock_fprog prog = {.len = len, .filter = filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) {
        perror("sandbox: seccomp");
        exit(1);
    }
}

static int serve(void)
{
    static char in[4096], out[4096];
    // (stdio's buffers are the program's own, not malloc's: it may no
    // longer mmap.)
    setvbuf(stdin, in, _IOFBF, sizeof in);
    setvbuf(stdout, out, _IOLBF, sizeof out);
    struct sock_filter filter[] = {
        CHECK_ARCH,
        KILL_ON(__NR_openat),
#ifdef __NR_open
        KILL_ON(__NR_open),
#endif
        KILL_ON(__NR_mmap),
        KILL_ON(__NR_memfd_create),
        ALLOW,
    };
    install(filter, sizeof filter / sizeof filter[0]);
    printf("ready\n");
    char line[64];
    static volatile long sink;
    while (fgets(line, sizeof line, stdin)) {
        if (line[0] == 'w') {
            long n = atol(line + 2), s = 0;
            for (long i = 0; i < n; i++)
                s += work(i);
            sink += s;
            printf("did %ld\n", n);
        } else if (line[0] == 'q') {
            break;
        }
    }
    return 0;
}

static int load(const char *path)
{
    long long sum = 0;
    for (int i = 0; i < 10; i++)
        sum += f(i) - (i + 1);
    struct sock_filter filter[] = {
        CHECK_ARCH,
        KILL_ON(__NR_memfd_create),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mmap, 1, 0),
        ALLOW,
        ARG(2),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, PROT_EXEC, 1, 0),
        ALLOW,
        ARG(3),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, MAP_ANONYMOUS, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        ALLOW,
    };
    install(filter, sizeof filter / sizeof filter[0]);
    void *h = dlopen(path, RTLD_NOW);
    if (h == NULL) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    int (*square)(int) = (int (*)(int))dlsym(h, "square");
    if (square == NULL)
        return 1;
    for (int i = 0; i < 100; i++)
        sum += square(i);
    printf("sum %lld\n", sum);
    return 0;
}

int main(int argc, char **argv)
{
    // Any process of the user may attach (Yama's ptrace_scope 1).
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    if (argc == 2 && strcmp(argv[1], "serve") == 0)
        return serve();
    if (argc == 3 && strcmp(argv[1], "dlopen") == 0)
        return load(argv[2]);
    fprintf(stderr, "usage: sandbox serve | sandbox dlopen LIB\n");
    return 2;
}
