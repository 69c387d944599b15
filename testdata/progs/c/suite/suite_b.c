/* suite_b.c: a test of suitelib.c's clamp above its range (4 calls) and of twice (2 calls). */
int clamp(int v, int lo, int hi);
int twice(int v);

int main(void)
{
	int sum = 0;
	for (int i = 0; i < 4; i++)
		sum += clamp(50, 0, 10);
	for (int i = 0; i < 2; i++)
		sum += twice(1);
	return sum == 44 ? 0 : 1;
}
