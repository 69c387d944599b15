/* A shared library of the plan tests. */
__attribute__((noinline)) int lib_twice(int x) { return 2 * x; }

int lib_add(int a, int b) { return lib_twice(a) + b; }
