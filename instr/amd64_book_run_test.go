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
	b := Book{Offset: 0x40, Frames: 16, Funcs: 3}
	top, deepest, fig := runBookCalls(t, b, ^uint64(0))
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
	if a, bb := fig[bookFa], fig[bookFb]; a[2] != a[1]+bb[2] {
		t.Errorf("a with children %d, want its own %d and b's %d", a[2], a[1], bb[2])
	}
	if c := fig[bookFc]; c[2] != c[1] {
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

// TestBookStartRunsAMD64 runs the functions of TestBookCodeRunsAMD64 on
// this machine with a start function (Book.Start), a() first and then
// c(3), each called with no call open.
//
// Where c is the start function, a's and b's entries find the shadow
// stack empty and the root's stack pointer its own (^0): they open no
// frame and count nothing (0 calls, none open, no time), and their exits
// close nothing; c's three calls count as they do with no start
// function, the top back at the root's next and the deepest top three
// frames on. Where a is the start function, a's call counts, and b's two
// calls within it; c, called after a's call has ended, counts nothing,
// and the deepest top is a's and b's, two frames on.
//
// Where the root's stack pointer is not ^0 (PROFILE spilled the frames
// of open calls, ProgramBook.spillHalf, and wrote the outermost one's
// stack pointer less one there; ^0 - 1 is above every stack pointer of
// the driver's, as such a call's is), the thread is within the start
// function though its shadow stack is empty: with c the start function,
// a's call and b's two count, and c's three, as with no start function.
func TestBookStartRunsAMD64(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("runs x86-64 code")
	}
	need(t, "gcc")
	for _, c := range []struct {
		name    string
		start   int
		rootSP  uint64
		calls   [3]int64
		deepest int
	}{
		{"c the start function", bookFc + 1, ^uint64(0), [3]int64{0, 0, 3}, 4},
		{"a the start function", bookFa + 1, ^uint64(0), [3]int64{1, 2, 0}, 3},
		{"c the start function, frames spilled", bookFc + 1, ^uint64(0) - 1, [3]int64{1, 2, 3}, 4},
	} {
		b := Book{Offset: 0x40, Frames: 16, Funcs: 3, Start: c.start}
		top, deepest, fig := runBookCalls(t, b, c.rootSP)
		if top != b.FrameAt(1) {
			t.Errorf("%s: shadow stack's top at %#x, want %#x, the root's next", c.name, top, b.FrameAt(1))
		}
		if deepest != b.FrameAt(c.deepest) {
			t.Errorf("%s: deepest top %#x, want %#x", c.name, deepest, b.FrameAt(c.deepest))
		}
		for f, calls := range c.calls {
			if fig[f][FigureCalls/8] != calls || fig[f][FigureOpen/8] != 0 {
				t.Errorf("%s: function %d: %d calls, %d open; want %d, 0", c.name, f, fig[f][FigureCalls/8], fig[f][FigureOpen/8], calls)
			}
			// A function that counts nothing has no figure at all; one
			// that counts has a time.
			if calls == 0 && fig[f] != [BookFigureSize / 8]int64{} {
				t.Errorf("%s: function %d, which counts nothing, has figures %v", c.name, f, fig[f])
			}
			if calls > 0 && (fig[f][FigureSelf/8] <= 0 || fig[f][FigureInclusive/8] < fig[f][FigureSelf/8]) {
				t.Errorf("%s: function %d: own time %d, with children %d", c.name, f, fig[f][FigureSelf/8], fig[f][FigureInclusive/8])
			}
		}
		if c.calls[bookFc] == 3 && fig[bookFc][FigureInclusive/8] != fig[bookFc][FigureSelf/8] {
			t.Errorf("%s: c with children %d, want its own three calls' %d", c.name, fig[bookFc][FigureInclusive/8], fig[bookFc][FigureSelf/8])
		}
		if c.calls[bookFa] == 1 && fig[bookFa][FigureInclusive/8] != fig[bookFa][FigureSelf/8]+fig[bookFb][FigureInclusive/8] {
			t.Errorf("%s: a with children %d, want its own %d and b's %d", c.name, fig[bookFa][FigureInclusive/8], fig[bookFa][FigureSelf/8], fig[bookFb][FigureInclusive/8])
		}
	}
}

// The functions of the book code's runs: a calls b twice, c(n) calls
// itself until n is 1.
const bookFa, bookFb, bookFc = 0, 1, 2

// runBookCalls builds a, b and c of book b's code (3 functions), and
// runs them in the C driver (bookDriver), on a thread whose book is new
// but for the root frame's stack pointer, rootSP: a() and then c(3). It
// returns the shadow stack's top after them, the deepest top, and the
// three functions' figures.
func runBookCalls(t *testing.T, b Book, rootSP uint64) (top, deepest uint64, fig [3][BookFigureSize / 8]int64) {
	t.Helper()
	var code []byte
	// fn appends function f, its entry, body, exit and ret, and returns
	// its offset; body is given the offset it starts at.
	fn := func(f int, body func(at int) []byte) int {
		at := len(code)
		entry, ok1 := amd64{}.BookEntryCode(b, f)
		exit, ok2 := amd64{}.BookExitCode(b, f, 0)
		if !ok1 || !ok2 {
			t.Fatalf("no code of function %d", f)
		}
		code = append(code, entry.Code...)
		code = append(code, body(len(code))...)
		code = append(code, exit.Code...)
		code = append(code, 0xc3)
		return at
	}
	offB := fn(bookFb, func(int) []byte { return []byte{0x90, 0x90} })
	offA := fn(bookFa, func(at int) []byte { return append(callAt(at, offB), callAt(at+5, offB)...) })
	offC := len(code)
	fn(bookFc, func(at int) []byte {
		// dec %rdi; jz over the call; call c
		return append([]byte{0x48, 0xff, 0xcf, 0x74, 0x05}, callAt(at+5, offC)...)
	})

	src := fmt.Sprintf(bookDriver, cArray(code), b.Offset+BookSize(b.Frames, b.Funcs),
		b.Offset+BookTop, b.FrameAt(1), b.FrameAt(0)+FrameSP, rootSP, b.Offset+BookScale, offA, offC, b.FigureAt(0), b.Offset+BookTop, b.Funcs, b.Offset+BookDeepest)
	out, err := exec.Command(buildDriver(t, src)).CombinedOutput()
	if err != nil {
		t.Fatalf("driver: %v\n%s", err, out)
	}
	t.Logf("driver: %s", out)
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
	return top, deepest, fig
}

// bookDriver is the C driver of the book code's runs (runBookCalls). Its
// arguments: the code, the block's size, the top's offset and its first
// value (the frame after the root), the offset of the root's stack
// pointer and its value, a's and c's offsets in the code, the figures'
// offset, the top's offset again, the number of functions, and the
// deepest top's offset.
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
	block[%d / 8] = %#xull;
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
