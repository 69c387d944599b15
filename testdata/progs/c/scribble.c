/* scribble.c - a program that writes over the memory PROFILE shares with
 * it, as a wild write would (profile/hostile_test.go,
 * TestSharedWrittenOver). It calls f() N times (the first argument, 1000
 * by default), raises SIGUSR1, ignored (PROFILE reads its ring at the
 * signal's stop), fills the first MiB and the last 64 bytes of every
 * mapping of /memfd:sprof-counters in /proc/self/maps with each 8-byte
 * word's index (an array filled through a stray pointer), and calls f() N
 * times again: f 2N, main 1 (the fill is main's own code: a function of
 * its own would make a record as the fill begins, which the fill would
 * take). The fill gives a ring's head, at byte 24 on x86-64, a smaller
 * count than its tail, at byte 64: a ring that looks full for ever. It
 * prints how many mappings it filled (none natively) and "done". */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEEP __attribute__((noinline, noclone))

static volatile long sink;

KEEP long f(long x) { return x * 2 + 1; }

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000;
    signal(SIGUSR1, SIG_IGN);
    for (long i = 0; i < n; i++)
        sink += f(i);
    raise(SIGUSR1);
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[512];
    int filled = 0;
    while (maps && fgets(line, sizeof line, maps)) {
        unsigned long lo, hi;
        if (!strstr(line, "sprof-counters") || sscanf(line, "%lx-%lx", &lo, &hi) != 2)
            continue;
        unsigned long words = (hi - lo < (1ul << 20) ? hi - lo : 1ul << 20) / 8;
        for (unsigned long i = 0; i < words; i++)
            ((volatile unsigned long *)lo)[i] = i;
        for (unsigned long i = 0; i < 8; i++)
            ((volatile unsigned long *)(hi - 64))[i] = i;
        filled++;
    }
    if (maps)
        fclose(maps);
    for (long i = 0; i < n; i++)
        sink += f(i);
    printf("filled %d\ndone\n", filled);
    return 0;
}
