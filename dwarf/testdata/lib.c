/* A shared library: exported functions and a static one. */
static int hidden_helper(int x)
{
	return x * 7;
}

int lib_add(int a, int b)
{
	return a + b + hidden_helper(a);
}

int lib_mul(int a, int b)
{
	return a * b;
}
