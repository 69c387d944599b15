/* shapes.c - a program and its shared library (libarea.so, libarea.c) for
 * the course (docs/course/): the program's own function and the library's
 * are profiled together with `prep /FC shapes libarea.so`.
 *
 *   shapes [N]      total() adds N squares and N rings (default 10):
 *                   square_area N times, ring_area N times, and
 *                   circle_area 2N times (ring_area calls it twice)
 */
#include <stdio.h>
#include <stdlib.h>

double square_area(double side);
double ring_area(double outer, double inner);

static double total(int n)
{
    double sum = 0;
    for (int i = 1; i <= n; i++)
        sum += square_area(i) + ring_area(i + 1, i);
    return sum;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 10;
    printf("shapes: %d of each, total area %.2f\n", n, total(n));
    return 0;
}
