package instr

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestBookCodeRunsAMD64 runs the book code on this machine (x86-64): a C
// driver maps functions made of it, sets GS to a block, and calls them.
// a calls b twice; c calls itself to a depth of three. The figures that
// come back hold by construction: the calls, no call left open, the
// shadow stack back at its root, a's time with its children its own time
// and b's, and c's three own times adding up to its time with children,
// counted once for the recursion; and the counts of calls beneath that
// PROFILE takes the code's cost out by.
func TestBookCodeRunsAMD64(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("runs x86-64 code")
	}
	need(t, "gcc")
	const fa, fb, fc = 0, 1, 2
	b := Book{Offset: 0x40, Frames: 16, Funcs: 3}
	var code []byte
	// fn appends function f, its entry, body, exit and ret, and returns
	// its offset; body is given the offset it starts at.
	fn := func(f int, body func(at int) []byte) int {
		at := len(code)
		entry, _ := amd64{}.BookEntryCode(b, f)
		exit, _ := amd64{}.BookExitCode(b, f, 0)
		code = append(code, entry.Code...)
		code = append(code, body(len(code))...)
		code = append(code, exit.Code...)
		code = append(code, 0xc3)
		return at
	}
	offB := fn(fb, func(int) []byte { return []byte{0x90, 0x90} })
	offA := fn(fa, func(at int) []byte { return append(callAt(at, offB), callAt(at+5, offB)...) })
	offC := len(code)
	fn(fc, func(at int) []byte {
		// dec %rdi; jz over the call; call c
		return append([]byte{0x48, 0xff, 0xcf, 0x74, 0x05}, callAt(at+5, offC)...)
	})

	src := fmt.Sprintf(bookDriver, cArray(code), b.Offset+BookSize(b.Frames, b.Funcs),
		b.Offset+BookTop, b.FrameAt(1), b.FrameAt(0)+FrameSP, b.Offset+BookScale, offA, offC, b.FigureAt(0), b.Offset+BookTop, b.Funcs, b.Offset+BookDeepest)
	out, err := exec.Command(buildDriver(t, src)).CombinedOutput()
	if err != nil {
		t.Fatalf("driver: %v\n%s", err, out)
	}
	t.Logf("driver: %s", out)
	var top, deepest uint64
	var fig [3][BookFigureSize / 8]int64
	words := strings.Fields(string(out))
	if len(words) != 2+len(fig)*len(fig[0]) {
		t.Fatalf("driver said %q", out)
	}
	for i, w := range words {
		var v int64
		if _, err := fmt.Sscan(w, &v); err != nil {
			t.Fatalf("driver said %q: %v", out, err)
		}
		switch {
		case i == 0:
			top = uint64(v)
		case i == len(words)-1:
			deepest = uint64(v)
		default:
			fig[(i-1)/len(fig[0])][(i-1)%len(fig[0])] = v
		}
	}
	if top != b.FrameAt(1) {
		t.Errorf("shadow stack's top at %#x, want %#x, the root's next", top, b.FrameAt(1))
	}
	if deepest != b.FrameAt(4) {
		t.Errorf("deepest top %#x, want %#x: three calls of c open at once", deepest, b.FrameAt(4))
	}
	for f, calls := range []int64{1, 2, 3} {
		if fig[f][FigureCalls/8] != calls || fig[f][FigureOpen/8] != 0 {
			t.Errorf("function %d: %d calls, %d open; want %d, 0", f, fig[f][0], fig[f][3], calls)
		}
		if fig[f][FigureSelf/8] <= 0 || fig[f][FigureInclusive/8] < fig[f][FigureSelf/8] {
			t.Errorf("function %d: own time %d, with children %d", f, fig[f][1], fig[f][2])
		}
	}
	if a, bb := fig[fa], fig[fb]; a[2] != a[1]+bb[2] {
		t.Errorf("a with children %d, want its own %d and b's %d", a[2], a[1], bb[2])
	}
	if c := fig[fc]; c[2] != c[1] {
		t.Errorf("c with children %d, want its own three calls' %d (one recursion, counted once)", c[2], c[1])
	}
	// The counts the code's cost is taken out by: the calls each
	// function's calls made, its outermost calls, and the calls made
	// beneath those.
	for f, want := range [][3]int64{{2, 1, 2}, {0, 2, 0}, {2, 1, 2}} {
		got := [3]int64{fig[f][FigureKids/8], fig[f][FigureOuter/8], fig[f][FigureBeneath/8]}
		if got != want {
			t.Errorf("function %d: kids, outermost calls and calls beneath %v, want %v", f, got, want)
		}
	}
}

// bookDriver is the C driver of TestBookCodeRunsAMD64. Its arguments:
// the code, the block's size, the top's offset and its first value (the
// frame after the root), the offset of the root's stack pointer, a's and
// c's offsets in the code, the figures' offset, the top's offset again,
// and the number of functions.
const bookDriver = `#define _GNU_SOURCE
#include <asm/prctl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static unsigned char code[] = {%s};
static uint64_t block[(%d + 7) / 8] __attribute__((aligned(64)));

int main(void) {
	unsigned char *x = mmap(0, sizeof code, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (x == MAP_FAILED) return 1;
	memcpy(x, code, sizeof code);
	block[%d / 8] = %d;
	block[%d / 8] = ~(uint64_t)0;
	block[%d / 8] = 1ul << 32; /* a nanosecond a tick */
	if (syscall(SYS_arch_prctl, ARCH_SET_GS, block)) return 2;
	void (*a)(void) = (void (*)(void))(x + %d);
	void (*c)(long) = (void (*)(long))(x + %d);
	a();
	c(3);
	uint64_t *fig = &block[%d / 8];
	printf("%%lu", (unsigned long)block[%d / 8]);
	for (int i = 0; i < %d * 8; i++) printf(" %%ld", (long)fig[i]);
	printf(" %%lu\n", (unsigned long)block[%d / 8]);
	return 0;
}
`

// The C drivers of the book code's tests: callAt is a call rel32 at
// from, to to; cArray is code as the elements of a C array; buildDriver
// compiles a driver's source and returns its path.
func callAt(from, to int) []byte {
	return binary.LittleEndian.AppendUint32([]byte{0xe8}, uint32(int32(to-(from+5))))
}

func cArray(code []byte) string {
	s := make([]string, len(code))
	for i, c := range code {
		s[i] = fmt.Sprint(c)
	}
	return strings.Join(s, ",")
}

func buildDriver(t *testing.T, src string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "driver.c"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, "gcc", "-O1", "-o", filepath.Join(dir, "driver"), filepath.Join(dir, "driver.c"))
	return filepath.Join(dir, "driver")
}
