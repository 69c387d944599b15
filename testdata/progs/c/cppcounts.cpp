// cppcounts.cpp - C++ names with counts known by construction:
//   Counter::Counter()       1
//   Counter::bump(int)      60
//   Counter::value() const   1
//   twice(int)              50 (static overloads)
//   twice(double)           10
//   maxof<int>(int, int)    20 (a template instance)
//   main                     1
#include <cstdio>

#define KEEP __attribute__((noinline, noclone))

class Counter {
public:
    KEEP Counter() : n(0) {}
    KEEP void bump(int k) { n += k; }
    KEEP int value() const { return n; }
private:
    int n;
};

KEEP static int twice(int x) { return 2 * x; }
KEEP static double twice(double x) { return 2.0 * x; }

template <typename T> KEEP T maxof(T a, T b) { return a > b ? a : b; }

int main()
{
    Counter c;
    for (int i = 0; i < 50; i++)
        c.bump(twice(i));
    for (int i = 0; i < 10; i++)
        c.bump((int)twice(i + 0.5));
    int m = 0;
    for (int i = 0; i < 20; i++)
        m = maxof(m, i);
    std::printf("cppcounts %d %d\n", c.value(), m);
    return 0;
}
