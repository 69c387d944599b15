// C++ names: a class with a constructor and a method defined out of the
// class (DW_AT_specification), an overload, a template, a namespace.
#include <cstdio>

namespace shapes {

class Circle {
public:
	explicit Circle(double r);
	double area() const;

private:
	double r_;
};

Circle::Circle(double r) : r_(r) {}

double Circle::area() const { return 3.0 * r_ * r_; }

} // namespace shapes

__attribute__((noinline)) int scaled(int x) { return x * 3; }
__attribute__((noinline)) double scaled(double x) { return x * 3.5; }

// Static overloads: gcc gives them no DW_AT_linkage_name.
__attribute__((noinline, noclone)) static int twice(int x) { return 2 * x; }
__attribute__((noinline, noclone)) static double twice(double x) { return 2 * x; }

template <typename T> __attribute__((noinline)) T biggest(T a, T b) { return a > b ? a : b; }

int main(int argc, char **)
{
	shapes::Circle c(argc);
	std::printf("%g %d %g %d %g %d %g\n", c.area(), scaled(argc), scaled(1.5), biggest(argc, 4), biggest(2.5, 1.0 * argc),
		twice(argc), twice(0.5 * argc));
	return 0;
}
