/* sweep.c - line coverage's jumps taken out of a program of several
 * threads while they run. THREADS threads call step() over and over,
 * busy, until told to stop; step() and mix() are alone in the section
 * "swept", and every line of theirs runs in the first three calls. The
 * main thread compares that section's bytes in memory with those of the
 * program's file (/proc/self/exe) every millisecond, for up to the first
 * argument's seconds (10 by default): under line coverage, the bytes are
 * the same once PROFILE has taken every jump out, the threads running.
 * It prints "sweep clean after N ms", or "sweep not clean: N bytes
 * differ", then the rounds the threads made. never() never runs.
 *
 * No jump outside the section may end with its bytes (a short
 * instruction's jump ends with the next one's, which then stays until
 * the first is out): its functions are aligned, the space before each
 * no line's, and main, last in the file, ends with a call to exit, no
 * short instruction. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SWEPT __attribute__((noinline, noclone, section("swept"), used, aligned(64)))
#define THREADS 4

extern char __start_swept[], __stop_swept[];

static volatile int stop;
static volatile long rounds[THREADS];

SWEPT long mix(long x)
{
    long y = x * 7;
    y ^= y >> 3;
    return y + 1;
}

SWEPT long step(long i, long r)
{
    r += mix(i);
    if (i % 3 == 0)
        r -= 2;
    else
        r += 1;
    return r;
}

static void *worker(void *arg)
{
    long n = (long)arg, i = 0, r = 0;
    while (!stop) {
        r = step(i++, r);
        rounds[n]++;
    }
    return (void *)r;
}

static void never(void)
{
    puts("never");
    exit(3);
}

/* found is where the section's bytes are in the program's file. */
static long found = -1;

static int find(struct dl_phdr_info *info, size_t size, void *data)
{
    uintptr_t at = (uintptr_t)__start_swept;
    int i;
    (void)size;
    (void)data;
    for (i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && at >= lo && at < lo + ph->p_filesz) {
            found = (long)(ph->p_offset + (at - lo));
            return 1;
        }
    }
    return 0;
}

/* first is the offset in the section of the first byte that differs. */
static long first = -1;

/* differ counts the bytes of the section that differ from the file's. */
static long differ(int fd)
{
    size_t n = (size_t)(__stop_swept - __start_swept);
    unsigned char buf[4096];
    long diff = 0;
    size_t i;
    if (n > sizeof buf || pread(fd, buf, n, found) != (ssize_t)n)
        return -1;
    for (i = n; i-- > 0;)
        if (buf[i] != (unsigned char)__start_swept[i]) {
            diff++;
            first = (long)i;
        }
    return diff;
}

int main(int argc, char **argv)
{
    pthread_t t[THREADS];
    long limit = argc > 1 ? atol(argv[1]) * 1000 : 10000, ms, diff, total = 0;
    int fd = open("/proc/self/exe", O_RDONLY), i;
    dl_iterate_phdr(find, NULL);
    if (fd < 0 || found < 0) {
        puts("sweep: cannot read the program's file");
        return 2;
    }
    for (i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)(long)i);
    for (ms = 0; (diff = differ(fd)) != 0 && ms < limit; ms++)
        usleep(1000);
    stop = 1;
    for (i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        total += rounds[i];
    }
    if (diff == 0)
        printf("sweep clean after %ld ms\n", ms);
    else
        printf("sweep not clean: %ld bytes differ, the first at %p\n", diff, (void *)(__start_swept + first));
    if (argc > 5)
        never();
    printf("sweep done, %ld rounds\n", total);
    exit(0);
}
