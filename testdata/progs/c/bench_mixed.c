/* bench_mixed: a mixed workload for the in-process benchmark: loops doing
 * real work (a sieve, an insertion sort, a checksum) among tens of millions
 * of calls of small and middle-sized functions.
 *
 *   bench_mixed [N]   N rounds (default 40): each sieves 200,000 numbers
 *                     (680,000 calls), sorts 700 (120,000 calls) and
 *                     checksums 1,000,000 bytes (62,500 calls): about 35
 *                     million calls in all, a tenth of a second of loops
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

static char sieve[200000];
static int nums[700];
static unsigned char data[1000000];

NOINLINE int is_marked(int i) { return sieve[i]; }
NOINLINE void mark(int i) { sieve[i] = 1; }

NOINLINE int primes(int n) {
	memset(sieve, 0, sizeof sieve);
	int count = 0;
	for (int i = 2; i < n; i++) {
		if (is_marked(i))
			continue;
		count++;
		for (long j = (long)i * i; j < n; j += i)
			mark((int)j);
	}
	return count;
}

NOINLINE int less(int a, int b) { return a < b; }

NOINLINE void sort(int *a, int n) {
	for (int i = 1; i < n; i++) {
		int v = a[i], j = i - 1;
		while (j >= 0 && less(v, a[j])) {
			a[j + 1] = a[j];
			j--;
		}
		a[j + 1] = v;
	}
}

NOINLINE unsigned rotl(unsigned x, int r) { return x << r | x >> (32 - r); }
NOINLINE unsigned mixin(unsigned h, unsigned v) { return rotl(h ^ v, 5) * 0x9e3779b1u; }

int main(int argc, char **argv) {
	int rounds = argc > 1 ? atoi(argv[1]) : 40;
	unsigned h = 0, seed = 7;
	for (int r = 0; r < rounds; r++) {
		h = mixin(h, (unsigned)primes(200000));
		for (int i = 0; i < 700; i++)
			nums[i] = (int)((seed = seed * 1103515245u + 12345u) >> 8) % 100000;
		sort(nums, 700);
		h = mixin(h, (unsigned)nums[350]);
		for (int i = 0; i < (int)sizeof data; i += 32) {
			unsigned w = 0;
			for (int k = 0; k < 32; k++)
				w = w * 31 + (data[i + k] ^= (unsigned char)(w >> 3));
			h = mixin(h, w);
		}
	}
	printf("bench_mixed %u\n", h);
	return 0;
}
