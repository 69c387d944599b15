/* bench/punned.c: what returning into a punned jump's last bytes
 * costs on x86-64 (docs/performance.md, "Punned jumps").
 *
 * A loop of bench_calls.c's step() is written into memory mapped for it,
 * its first instruction (add %edx,%eax, 2 bytes) a line site:
 *
 *   punned   the jump e9 XX ends with the 3 bytes of the next instruction
 *            (add $1,%edx), left as they are; the trampoline counts, runs
 *            the add %edx,%eax and returns to the next instruction, into
 *            the bytes the CPU has just decoded as the jump's
 *   carried  the same jump, the same window; the trampoline carries out
 *            the next instruction too and returns after it
 *   whole    a jump of its own over both instructions, its trampoline as
 *            far away as the punned one's (what a patch of two
 *            instructions did before issue 31)
 *   native   no patch
 *
 *   punned MODE [N]   (built by bench/punned) N passes of the loop (default 100,000,000); prints
 *                     the nanoseconds a pass
 *
 * x86-64 only.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static uint8_t *map_at(uint64_t addr, size_t n) {
	void *p = mmap((void *)addr, n, PROT_READ | PROT_WRITE | PROT_EXEC,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p == MAP_FAILED || (uint64_t)p != addr) {
		perror("mmap");
		exit(1);
	}
	return p;
}

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

/* The loop (edx the pass, eax the hash, r8d the passes):
 * L: add %edx,%eax; add $1,%edx; mov %eax,%ecx; shr $15,%ecx; xor %ecx,%eax;
 *    imul $0x2c1b3c6d,%eax,%eax; mov %eax,%ecx; shr $12,%ecx; xor %ecx,%eax;
 *    cmp %r8d,%edx; jne L; ret */
static const uint8_t body[] = {0x01, 0xd0, 0x83, 0xc2, 0x01, 0x89, 0xc1, 0xc1, 0xe9, 0x0f,
                               0x31, 0xc8, 0x69, 0xc0, 0x6d, 0x3c, 0x1b, 0x2c, 0x89, 0xc1,
                               0xc1, 0xe9, 0x0c, 0x31, 0xc8, 0x44, 0x39, 0xc2};

static void rel32(uint8_t *at, uint64_t from, uint64_t to) {
	int32_t d = (int32_t)(to - from);
	memcpy(at, &d, 4);
}

/* trampoline writes, at t (mapped at taddr), incq counter(%rip), the n
 * bytes moved, and jmp back. */
static void trampoline(uint8_t *t, uint64_t taddr, int n, uint64_t back, uint64_t counter) {
	int i = 0;
	t[i++] = 0x48, t[i++] = 0xff, t[i++] = 0x05;
	rel32(t + i, taddr + 7, counter), i += 4;
	memcpy(t + i, body, n), i += n;
	t[i++] = 0xe9;
	rel32(t + i, taddr + i + 4, back);
}

int main(int argc, char **argv) {
	if (argc < 2) {
		fprintf(stderr, "usage: punned punned|carried|whole|native [N]\n");
		return 2;
	}
	const char *mode = argv[1];
	uint64_t n = argc > 2 ? strtoull(argv[2], 0, 0) : 100000000;
	const uint64_t base = 0x500000000000ull, off = 0x1d8; /* step()'s loop's offset */
	uint8_t *code = map_at(base, 4096), *c = code + off;
	c[-4] = 0x31, c[-3] = 0xd2, c[-2] = 0x90, c[-1] = 0x90; /* xor %edx,%edx */
	memcpy(c, body, sizeof body);
	int j = sizeof body;
	c[j] = 0x75, c[j + 1] = (uint8_t)(-(j + 2)), c[j + 2] = 0xc3; /* jne L; ret */
	uint64_t site = base + off;
	/* The punned jump's target: its last 3 bytes those of add $1,%edx. */
	uint64_t far = site + 5 + (0x03 | 0x83 << 8 | 0xc2 << 16 | 0x01 << 24);
	if (strcmp(mode, "native") != 0) {
		uint8_t *page = map_at(far & ~4095ull, 8192);
		int carried = strcmp(mode, "punned") != 0;
		trampoline(page + (far & 4095), far, carried ? 5 : 2, site + (carried ? 5 : 2), (far & ~4095ull) + 4096);
		if (strcmp(mode, "whole") == 0) {
			c[0] = 0xe9;
			rel32(c + 1, site + 5, far);
		} else {
			c[0] = 0xe9, c[1] = 0x03;
		}
	}
	uint32_t (*loop)(void) = (void *)(site - 4);
	double t0 = now();
	uint32_t r;
	__asm__ volatile("mov %2, %%r8d; xor %%eax, %%eax; call *%1"
	                 : "=a"(r)
	                 : "r"(loop), "r"((uint32_t)n)
	                 : "rcx", "rdx", "r8", "memory");
	double t1 = now();
	printf("%s %.3f ns a pass (%u)\n", mode, (t1 - t0) / n * 1e9, r);
	return 0;
}
