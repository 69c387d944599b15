/* samename_b.c: see samename_a.c. */
static volatile int sink;

static inline __attribute__((always_inline)) int helper(int x)
{
    sink -= x;
    return x * 5;
}

__attribute__((noinline)) int bfunc(int x)
{
    return helper(x) + 2;
}
