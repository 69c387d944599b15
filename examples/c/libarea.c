/* libarea.c - the shared library of the course's example shapes.c
 * (docs/course/): areas of shapes, one function each. */
double square_area(double side) { return side * side; }

double circle_area(double r) { return 3.14159265358979 * r * r; }

double ring_area(double outer, double inner) { return circle_area(outer) - circle_area(inner); }
