package instr

import (
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// TestBookOffCPURunsAMD64 runs the timed book code's check that the
// thread stayed on its CPU (Book.Clock) on this machine, with a C
// driver that catches the code's int3 (SIGTRAP) and leaves the code by
// siglongjmp, as PROFILE would have moved the thread on.
//
// With no clock (Book.Clock 0: no check), or a page whose lock word is
// the one the book noted, the code runs through. A lock word the book has not noted stops the entry
// before it opens a frame, at the code's breakpoint, the time in rax and
// the word noted; the next call runs through. A word that changes inside
// a call (function d's body adds two to it, as the kernel's update as the
// thread comes back onto a CPU does) stops the exit, d's frame still
// open. Last, with the kernel's own page of the thread's task clock (where
// perf events are allowed): a sleep between two calls stops the next
// entry, and calls made with no context switch between them do not stop.
func TestBookOffCPURunsAMD64(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("runs x86-64 code")
	}
	need(t, "gcc")
	// (The page 64 KiB from the block, past the book: a page of any
	// size fits there, page-aligned.)
	const clock = 0x10000
	b := Book{Offset: 0x40, Frames: 16, Funcs: 3, Clock: clock}
	word := uint64(clock + PerfPageLock) // the page's lock word, in the block's mapping for the first cases
	var code []byte
	var entryStop, exitStop [3]int
	add := func(f int, body []byte) int {
		at := len(code)
		entry, ok1 := amd64{}.BookEntryCode(b, f)
		exit, ok2 := amd64{}.BookExitCode(b, f, 0)
		if !ok1 || !ok2 {
			t.Fatalf("no code of function %d", f)
		}
		entryStop[f] = at + entry.Stop
		code = append(append(code, entry.Code...), body...)
		exitStop[f] = len(code) + exit.Stop
		code = append(append(code, exit.Code...), 0xc3)
		return at
	}
	unchecked := b
	unchecked.Clock = 0
	plain, _ := amd64{}.BookEntryCode(unchecked, 2)
	plainExit, _ := amd64{}.BookExitCode(unchecked, 2, 0)
	offN := len(code)
	code = append(append(append(code, plain.Code...), plainExit.Code...), 0xc3)
	offA := add(0, []byte{0x90})
	// d: addl $2,%gs:WORD, the lock word changed inside the call.
	bump := append([]byte{0x65, 0x83, 0x04, 0x25}, le32(uint32(word))...)
	offD := add(1, append(bump, 0x02))
	src := fmt.Sprintf(offCPUDriver, cArray(code), 2*clock,
		b.Offset+BookTop, b.FrameAt(1), b.FrameAt(0)+FrameSP, b.Offset+BookScale,
		clock, b.Offset+BookLock, word, offN, offA, offD, b.FigureAt(0))
	out, err := exec.Command(buildDriver(t, src)).CombinedOutput()
	if err != nil {
		t.Fatalf("driver: %v\n%s", err, out)
	}
	t.Logf("driver:\n%s", out)
	lines := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		k, v, _ := strings.Cut(l, ":")
		lines[k] = strings.TrimSpace(v)
	}
	root := b.FrameAt(1)
	for _, c := range []struct{ key, want string }{
		{"no clock", fmt.Sprintf("trap -1 top %d calls 1", root)},
		{"lock as noted", fmt.Sprintf("trap -1 top %d calls 1", root)},
		{"lock not noted", fmt.Sprintf("trap %d top %d calls 1 noted 1 time 1", entryStop[0], root)},
		{"then", fmt.Sprintf("trap -1 top %d calls 2", root)},
		{"changed in the call", fmt.Sprintf("trap %d top %d calls 0 noted 1 time 1", exitStop[1], root+BookFrameSize)},
	} {
		if got := lines[c.key]; got != c.want {
			t.Errorf("%s: %q, want %q", c.key, got, c.want)
		}
	}
	switch kernel := lines["kernel's page"]; {
	case strings.HasPrefix(kernel, "none"):
		t.Logf("no task clock's page here (%s): the kernel's part not run", kernel)
	case kernel != fmt.Sprintf("after a sleep trap %d; on the CPU trap -1", entryStop[0]) &&
		!strings.Contains(kernel, "switched"):
		t.Errorf("the kernel's page: %q, want a stop after the sleep and none after", kernel)
	}
}

func le32(v uint32) []byte { return []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)} }

// offCPUDriver is TestBookOffCPURunsAMD64's driver. Its arguments: the
// code, the block's mapping's size, the top's offset and its first
// value, the root's stack pointer's offset, the scale's offset, the
// clock's page's and the lock's offsets, the page's lock word's offset,
// the unchecked function's, a's and d's offsets in the code, and the
// figures' offset.
const offCPUDriver = `#define _GNU_SOURCE
#include <asm/prctl.h>
#include <linux/perf_event.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

static unsigned char code[] = {%s};
static uint64_t *block;
enum { SIZE = %d, TOP = %d / 8, FIRST = %d, ROOTSP = %d / 8, SCALE = %d / 8, CLOCK = %d, LOCK = %d / 8, WORD = %d / 8, N = %d, A = %d, D = %d, FIG = %d / 8 };
static unsigned char *x;
static sigjmp_buf env;
static volatile long trapAt, trapRAX;

static void trapped(int sig, siginfo_t *si, void *uc) {
	ucontext_t *u = uc;
	trapAt = (unsigned char *)u->uc_mcontext.gregs[REG_RIP] - x;
	trapRAX = u->uc_mcontext.gregs[REG_RAX];
	siglongjmp(env, 1);
}

/* call runs f (once, or through g with an argument), catching a stop. */
static long call(void (*f)(void)) {
	trapAt = -1;
	if (sigsetjmp(env, 1) == 0) f();
	return trapAt;
}

static void report(const char *what, int fn, uint32_t word) {
	long calls = (long)block[FIG + fn * 8];
	printf("%%s: trap %%ld top %%lu calls %%ld", what, trapAt, (unsigned long)block[TOP], calls);
	if (trapAt >= 0) printf(" noted %%d time %%d", (uint32_t)block[LOCK] == word, trapRAX > 0);
	printf("\n");
}

static long switches(void) {
	struct rusage r;
	getrusage(RUSAGE_THREAD, &r);
	return r.ru_nvcsw + r.ru_nivcsw;
}

int main(void) {
	x = mmap(0, sizeof code, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (x == MAP_FAILED) return 1;
	memcpy(x, code, sizeof code);
	block = mmap(0, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (block == MAP_FAILED) return 1;
	struct sigaction sa = {0};
	sa.sa_sigaction = trapped;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGTRAP, &sa, 0);
	block[TOP] = FIRST;
	block[ROOTSP] = ~0ull;
	block[SCALE] = 1ull << 32;
	if (syscall(SYS_arch_prctl, ARCH_SET_GS, block)) return 2;
	void (*n)(void) = (void (*)(void))(x + N);
	void (*a)(void) = (void (*)(void))(x + A);
	void (*d)(void) = (void (*)(void))(x + D);

	uint32_t *word = (uint32_t *)&block[WORD];
	*word = 42;
	block[LOCK] = 40;
	call(n);
	report("no clock", 2, 0);
	*word = 40;
	call(a);
	report("lock as noted", 0, 40);
	*word = 42;
	call(a);
	report("lock not noted", 0, 42);
	call(a);
	report("then", 0, 42);
	call(d);
	report("changed in the call", 1, 44);
	block[TOP] = FIRST; /* (d's frame left open by the stop) */

	struct perf_event_attr at = {0};
	at.size = sizeof at;
	at.type = PERF_TYPE_SOFTWARE;
	at.config = PERF_COUNT_SW_TASK_CLOCK;
	at.exclude_kernel = 1;
	at.exclude_hv = 1;
	int fd = syscall(SYS_perf_event_open, &at, 0, -1, -1, 0);
	struct perf_event_mmap_page *pg = fd < 0 ? MAP_FAILED
		: mmap((char *)block + CLOCK, sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0);
	if (pg == MAP_FAILED) {
		printf("kernel's page: none (%%m)\n");
		return 0;
	}
	close(fd);
	block[LOCK] = pg->lock;
	usleep(2000);
	long s0 = switches(), slept = call(a);
	long s1 = switches(), onCPU = call(a), s2 = switches();
	printf("kernel's page: after a sleep trap %%ld; on the CPU trap %%ld", slept, onCPU);
	if (s0 != s1 || s1 != s2) printf(" (switched: %%ld, %%ld)", s1 - s0, s2 - s1);
	printf("\n");
	return 0;
}
`

// TestOffCPUJumpsToStopAMD64: in every form of the timed code (a closer
// or none, caller stacks or none, an exit at the function's own return
// or where its call returned), the check of the thread's CPU jumps to
// the code's breakpoint, within a short jump's reach; a Go function's
// code, an untimed book's and a book with no clock check nothing.
func TestOffCPUJumpsToStopAMD64(t *testing.T) {
	for _, closer := range []uint64{0, 0x7ff00000} {
		for _, nodes := range []int{0, 100} {
			b := Book{Offset: 0x1000, Frames: 8, Funcs: 8, Nodes: nodes, Closer: closer, Clock: 0x10000}
			entry, _ := amd64{}.BookEntryCode(b, 3)
			exit0, _ := amd64{}.BookExitCode(b, 3, 0)
			exit8, _ := amd64{}.BookExitCode(b, 3, 8)
			for name, c := range map[string]BookCode{"entry": entry, "exit": exit0, "exit after the call": exit8} {
				note := append([]byte{0x65, 0x89, 0x14, 0x25}, le32(uint32(b.Offset+BookLock))...)
				at := strings.Index(string(c.Code), string(note))
				if at < 0 || c.Code[at+len(note)] != 0xeb {
					t.Errorf("closer %#x, %d nodes, %s: no note of the word and jump", closer, nodes, name)
					continue
				}
				end := at + len(note) + 2
				if to := end + int(int8(c.Code[end-1])); to != c.Stop-1 || c.Code[to] != 0xcc {
					t.Errorf("closer %#x, %d nodes, %s: the check jumps to %#x, the breakpoint at %#x", closer, nodes, name, to, c.Stop-1)
				}
			}
		}
	}
	read := []byte{0x65, 0x8b, 0x14, 0x25} // mov %gs:disp32,%edx: the only 32-bit load of the code, the page's word
	for name, b := range map[string]Book{
		"go":       {Offset: 0x1000, Frames: 8, Funcs: 8, Go: true, Clock: 0x10000},
		"untimed":  {Offset: 0x1000, Frames: 8, Funcs: 8, Untimed: true, Clock: 0x10000},
		"no clock": {Offset: 0x1000, Frames: 8, Funcs: 8},
	} {
		entry, _ := amd64{}.BookEntryCode(b, 3)
		exit, _ := amd64{}.BookExitCode(b, 3, 0)
		if strings.Contains(string(entry.Code), string(read)) || strings.Contains(string(exit.Code), string(read)) {
			t.Errorf("%s: the clock's page read", name)
		}
	}
}
