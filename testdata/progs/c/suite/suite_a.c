/* suite_a.c: a test of suitelib.c's clamp below and inside its range (3 and 7 calls); twice never runs. */
int clamp(int v, int lo, int hi);

int main(void)
{
	int sum = 0;
	for (int i = 0; i < 10; i++)
		sum += clamp(i < 3 ? -5 : 5, 0, 10);
	return sum == 35 ? 0 : 1;
}
