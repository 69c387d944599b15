/* lines.c - the shapes of code a line's probe must leave as they were,
 * each run a known number of times (N, the first argument, 3,000 by
 * default; every count below is a multiple of it or printed; SPIN, the
 * second argument, 1,000 N by default):
 *
 *   sw       a switch of 12 dense cases: a jump table at -O2;
 *   interp   a computed goto, the dispatch of an interpreter (a table of
 *            label addresses, as Lua's disptab);
 *   jumper   a longjmp out of a call, every tenth pass: the line after
 *            the call runs N - N/10 times;
 *   spin     a hot loop of SPIN passes while another thread sends the
 *            main thread SIGUSR1: the signals land in the loop's probes,
 *            and the handler's line runs "handled" times, printed;
 *   racers   four threads over sw's and interp's lines at once.
 *
 * It prints "lines done" and the figures the test checks against. */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define KEEP __attribute__((noinline, noclone))
#define RACERS 4
#define SIGNALS 200

static long n = 3000;
static volatile long sink;
static volatile long handled;

KEEP long sw(long x)
{
    switch (x % 12) {
    case 0: return x + 3;
    case 1: return x * 5;
    case 2: return x - 7;
    case 3: return x ^ 9;
    case 4: return x << 2;
    case 5: return x >> 1;
    case 6: return x | 16;
    case 7: return x & 255;
    case 8: return x * x;
    case 9: return ~x;
    case 10: return -x;
    default: return x / 3;
    }
}

/* interp runs the program in code: 0 adds one, 1 doubles, 2 takes one
 * away, 3 ends. */
KEEP long interp(const unsigned char *code)
{
    static void *const disp[] = {&&op_inc, &&op_dbl, &&op_dec, &&op_end};
    long acc = 0;
    goto *disp[*code++];
op_inc:
    acc += 1;
    goto *disp[*code++];
op_dbl:
    acc *= 2;
    goto *disp[*code++];
op_dec:
    acc -= 1;
    goto *disp[*code++];
op_end:
    return acc;
}

static const unsigned char program[] = {0, 1, 0, 1, 2, 0, 1, 3}; /* ((1*2+1)*2-1+1)*2 = 12 */

static jmp_buf env;

KEEP void thrower(long i)
{
    if (i % 10 == 9)
        longjmp(env, 1);
    sink += i;
}

KEEP long jumper(void)
{
    volatile long i, thrown = 0;
    for (i = 0; i < n; i++) {
        if (setjmp(env)) {
            thrown++;
            continue;
        }
        thrower(i);
        sink += 1;
    }
    return thrown;
}

static void on_signal(int sig)
{
    handled += sig;
}

KEEP long spin(long times)
{
    long i, s = 0;
    for (i = 0; i < times; i++)
        s += i ^ (s >> 3);
    return s;
}

static volatile int spinning = 1;

static void *pester(void *arg)
{
    pthread_t main_thread = *(pthread_t *)arg;
    for (int i = 0; i < SIGNALS && spinning; i++) {
        pthread_kill(main_thread, SIGUSR1);
        usleep(200);
    }
    return NULL;
}

static void *racer(void *arg)
{
    long r = 0;
    for (long i = 0; i < n; i++)
        r += sw(i) + interp(program);
    return (void *)r;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        n = atol(argv[1]);
    long spins = argc > 2 ? atol(argv[2]) : n * 1000;
    long s = 0;
    for (long i = 0; i < n; i++)
        s += sw(i) + interp(program);
    long thrown = jumper();

    signal(SIGUSR1, on_signal);
    pthread_t self = pthread_self(), p;
    pthread_create(&p, NULL, pester, &self);
    long spun = spin(spins);
    spinning = 0;
    pthread_join(p, NULL);

    pthread_t t[RACERS];
    for (int i = 0; i < RACERS; i++)
        pthread_create(&t[i], NULL, racer, NULL);
    for (int i = 0; i < RACERS; i++)
        pthread_join(t[i], NULL);
    printf("lines done %ld spun=%ld thrown=%ld handled=%ld\n", s, spun, thrown, handled / SIGUSR1);
    return 0;
}
