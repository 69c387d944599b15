/* primes.c - the demo program of `make demo`: counts the primes below a
 * limit three ways, so the function-counting report has something to show.
 *
 *   is_prime       called once per candidate (limit - 2 times)
 *   sieve          called once
 *   count_naive    called once
 *   gcd            called by coprime, 1,000 times
 *   unused         never called: function coverage shows it with a '.'
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_prime(int n)
{
    if (n < 2)
        return 0;
    for (int d = 2; d * d <= n; d++)
        if (n % d == 0)
            return 0;
    return 1;
}

static int count_naive(int limit)
{
    int count = 0;
    for (int n = 2; n < limit; n++)
        count += is_prime(n);
    return count;
}

static int sieve(int limit)
{
    char *composite = calloc(limit, 1);
    int count = 0;
    for (int n = 2; n < limit; n++) {
        if (composite[n])
            continue;
        count++;
        for (long m = (long)n * n; m < limit; m += n)
            composite[m] = 1;
    }
    free(composite);
    return count;
}

static int gcd(int a, int b)
{
    while (b != 0) {
        int t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static int coprime(int a, int b) { return gcd(a, b) == 1; }

int unused(int x) { return x * 42; }

int main(int argc, char **argv)
{
    int limit = argc > 1 ? atoi(argv[1]) : 10000;
    int pairs = 0;
    for (int i = 1; i <= 1000; i++)
        pairs += coprime(i, 1001);
    printf("primes below %d: %d (naive), %d (sieve); %d numbers up to 1000 coprime to 1001\n",
           limit, count_naive(limit), sieve(limit), pairs);
    return 0;
}
