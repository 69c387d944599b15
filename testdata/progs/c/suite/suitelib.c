/* suitelib.c: the library of a test suite's two programs (suite_a.c, suite_b.c; e2e TestCombineSuite). */
int clamp(int v, int lo, int hi)
{
	if (v < lo)
		return lo;
	if (v > hi)
		return hi;
	return v;
}

int twice(int v)
{
	return 2 * v;
}
