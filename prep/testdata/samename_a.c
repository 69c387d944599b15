/* samename_a.c, with samename_b.c: two static functions named helper.
 * This one has code of its own (its address is taken) and is inlined
 * into afunc; samename_b.c's is only ever inlined, into bfunc. PREP
 * selects a.c's helper: its copy in afunc is a frame of it, and the copy
 * of b.c's helper in bfunc is another function's, no frame of a.c's. */
static volatile int sink;

static inline __attribute__((always_inline)) int helper(int x)
{
    sink += x;
    return x * 3;
}

int (*volatile helper_a)(int) = helper;

__attribute__((noinline)) int afunc(int x)
{
    return helper(x) + 1;
}

int bfunc(int x);

int main(int argc, char **argv)
{
    (void)argv;
    return (afunc(argc) + bfunc(argc) + helper_a(argc)) & 1;
}
