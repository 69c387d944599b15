/* libsq.c - a shared library (built with -shared -fPIC) for the tests of
 * modules other than the program. */
int square(int x) { return x * x; }
