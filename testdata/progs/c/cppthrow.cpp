// cppthrow.cpp - a C++ exception thrown through two profiled frames: main
// calls outer 30 times; outer calls inner; inner throws every third time
// and the exception unwinds inner and outer (running a destructor) to
// main's catch. Counts: outer 30, inner 30, Guard::~Guard 30, main 1.
#include <cstdio>
#include <stdexcept>

static volatile long sink;

struct Guard {
    __attribute__((noinline)) ~Guard() { sink++; }
};

__attribute__((noinline)) int inner(int i) {
    if (i % 3 == 0)
        throw std::runtime_error("third");
    return i * 2;
}

__attribute__((noinline)) int outer(int i) {
    Guard g;
    return inner(i) + 1;
}

int main() {
    int caught = 0, sum = 0;
    for (int i = 0; i < 30; i++) {
        try {
            sum += outer(i);
        } catch (const std::exception &) {
            caught++;
        }
    }
    std::printf("cppthrow %d %d %ld\n", sum, caught, (long)sink);
    return 0;
}
