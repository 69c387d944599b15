// The C++ fixture of the plan tests: overloaded members, a free function,
// and standard-library templates the default selections exclude.
#include <algorithm>
#include <vector>

struct Counter {
	int n;
	void bump(int k);
	void bump();
};

__attribute__((noinline)) void Counter::bump(int k) { n += k; }

__attribute__((noinline)) void Counter::bump() { n++; }

__attribute__((noinline)) int twice(int x) { return 2 * x; }

int main(int argc, char **)
{
	std::vector<int> v{3, 1, argc};
	std::sort(v.begin(), v.end());
	Counter c{0};
	c.bump(twice(v[0]));
	c.bump();
	return c.n == 42;
}
