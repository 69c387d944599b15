/* The program of the sampling tests (sampling_test.go): built with
   gcc -O0 -g, never run. The tests give its functions samples and calls
   of their own; the goldens show its line numbers. */
volatile long sink;

void spin_a(long n)
{
	for (long i = 0; i < n; i++)
		sink += i;
}

void spin_b(long n)
{
	for (long i = 0; i < n; i++)
		sink -= i;
	sink *= 3;
}

int main(void)
{
	for (int k = 0; k < 3; k++)
		spin_a(1000);
	spin_b(2000);
	return 0;
}
