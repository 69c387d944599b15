package instr

import (
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// TestBookCloserRunsAMD64 runs the book code with its closer on this
// machine (x86-64), by a C driver: d's calls end with a plain ret, their
// exits never seen (as after a longjmp, or an exit left to a breakpoint
// and taken out): e calls d three times, and each of d's entries, then
// e's exit, has the closer close the call left open below it, at that
// time. g runs its exit's code once from deeper than its entry (a jump
// to its cold part, which keeps its frame): that closes nothing and does
// not stop. So d has 3 calls, e and g one, the shadow stack is back at
// its root, and nothing stopped. With the stack's bounds unknown the
// closer closes nothing, and the second of d's entries stops at the
// breakpoint, for PROFILE.
func TestBookCloserRunsAMD64(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("runs x86-64 code")
	}
	need(t, "gcc")
	const fd, fe, fg, closerAt = 0, 1, 2, 0x10000000
	b := Book{Offset: 0x40, Frames: 16, Funcs: 3, Closer: closerAt}
	closer, ok := amd64{}.BookCloserCode(b)
	if !ok {
		t.Fatal("no closer")
	}
	var code []byte
	entry := func(f int) []byte { c, _ := amd64{}.BookEntryCode(b, f); return c.Code }
	exit := func(f int) []byte { c, _ := amd64{}.BookExitCode(b, f, 0); return c.Code }
	offD := len(code)
	code = append(append(code, entry(fd)...), 0x90, 0xc3) // d: nop; ret, no exit code
	offE := len(code)
	code = append(code, entry(fe)...)
	for range 3 {
		code = append(code, callAt(len(code), offD)...)
	}
	code = append(append(code, exit(fe)...), 0xc3)
	offG := len(code)
	code = append(code, entry(fg)...)
	code = append(code, 0x48, 0x83, 0xec, 0x10) // sub $16,%rsp
	code = append(code, exit(fg)...)            // deeper: closes nothing
	code = append(code, 0x48, 0x83, 0xc4, 0x10) // add $16,%rsp
	code = append(append(code, exit(fg)...), 0xc3)
	src := fmt.Sprintf(closerDriver, cArray(code), cArray(closer), b.Offset+BookSize(b.Frames, b.Funcs), uint64(closerAt), uint64(closerAt),
		b.Offset+BookTop, b.FrameAt(1), b.FrameAt(0)+FrameSP, b.Offset+BookScale, b.Offset+BookStackLo, b.Offset+BookStackHi,
		offE, offG, b.FigureAt(0), b.Offset+BookTop, b.FrameAt(1))
	driver := buildDriver(t, src)
	for _, c := range []struct{ bounds, want string }{
		{"known", "calls 3 1 1, open 0 0 0, top at the root 1"},
		{"unknown", "stopped"},
	} {
		out, err := exec.Command(driver, c.bounds).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 77 {
			t.Skipf("no page at %#x for the closer's word", closerAt)
		}
		if err != nil || strings.TrimSpace(string(out)) != c.want {
			t.Errorf("stack bounds %s: %q (%v), want %q", c.bounds, out, err, c.want)
		}
	}
}

// closerDriver is the C driver of TestBookCloserRunsAMD64. Its
// arguments: the code, the closer's, the block's size, the closer's
// page (twice), the top's offset and first value, the root's stack pointer's
// offset, the scale's, the stack bounds', e's and g's offsets, the
// figures' offset and the top's again.
const closerDriver = `#define _GNU_SOURCE
#include <asm/prctl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static unsigned char code[] = {%s};
static unsigned char closer[] = {%s};
static uint64_t block[(%d + 7) / 8] __attribute__((aligned(64)));

static void trapped(int sig) { (void)sig; printf("stopped\n"); exit(0); }

int main(int argc, char **argv) {
	unsigned char *page = mmap((void *)%dul, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
		MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (page == MAP_FAILED || page != (void *)%dul) return 77;
	*(uint64_t *)page = (uint64_t)(page + 16);
	memcpy(page + 16, closer, sizeof closer);
	unsigned char *x = mmap(0, sizeof code, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (x == MAP_FAILED) return 1;
	memcpy(x, code, sizeof code);
	block[%d / 8] = %d;
	block[%d / 8] = ~(uint64_t)0;
	block[%d / 8] = 1ul << 32;
	if (strcmp(argv[1], "known") == 0) {
		block[%d / 8] = 0;
		block[%d / 8] = ~(uint64_t)0 >> 1;
	}
	signal(SIGTRAP, trapped);
	if (syscall(SYS_arch_prctl, ARCH_SET_GS, block)) return 2;
	((void (*)(void))(x + %d))();
	((void (*)(void))(x + %d))();
	uint64_t *fig = &block[%d / 8];
	printf("calls %%lu %%lu %%lu, open %%lu %%lu %%lu, top at the root %%d\n", fig[0], fig[8], fig[16], fig[3], fig[11], fig[19],
		block[%d / 8] == (uint64_t)(%d));
	return 0;
}
`
