package instr

import (
	"encoding/binary"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/arch/x86/x86asm"
)

// TestGoBookCodeRunsAMD64 runs the code of Go functions' books on this
// machine: a C driver sets GS to a thread's block and hands a sequence
// two fake goroutines (g: the stack's bounds, then the goroutine's book's
// base, which the sequence writes in the block as PROFILE would). On one
// thread, goroutine A enters f, goroutine B then enters and leaves g,
// and A, its stack moved down a page as Go moves a growing goroutine's
// (its stack pointer and g.stack.hi alike), enters g, whose exit is not
// seen, and leaves f, whose exit closes g's call first (the closer).
// Each goroutine's book holds its own calls, closed; the thread's holds
// nothing; and the registers the code saves come back. With caller
// stacks (/AT), each goroutine's calls have their nodes in its own book:
// A's f (node 2) and g called from f (node 3), B's g (node 2).
func TestGoBookCodeRunsAMD64(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("runs x86-64 code")
	}
	need(t, "gcc")
	for _, nodes := range []int{0, 16} {
		t.Run(fmt.Sprintf("nodes=%d", nodes), func(t *testing.T) {
			testGoBookCodeRuns(t, Book{Offset: 0x40, Frames: 8, Funcs: 2, Go: true, Closer: goCloserPage, Nodes: nodes})
		})
	}
}

func testGoBookCodeRuns(t *testing.T, b Book) {
	const ff, fg = 0, 1
	code := goBookSequence(t, b, ff, fg)
	closer, ok := AMD64.BookCloserCode(b)
	if !ok {
		t.Fatal("no closer for a Go function's book")
	}
	src := fmt.Sprintf(goBookDriver, cArray(code), cArray(closer), b.Offset+b.Size(), b.Offset+BookTop, b.Offset+BookDeepest, b.FigureAt(0), b.Funcs,
		goCloserPage, max(b.Nodes, 4), b.Offset+BookNodeCount, b.NodeAt(0), b.FrameAt(0)+FrameNode, b.Offset+BookScale, b.FrameAt(1),
		b.FrameAt(0)+FrameSP, b.Offset+BookStackLo)
	out, err := exec.Command(buildDriver(t, src)).CombinedOutput()
	if err != nil {
		t.Fatalf("driver: %v\n%s", err, out)
	}
	// Per book (the thread's, A's, B's): its top, its deepest, its
	// functions' figures, and nodes 2 and 3's calls and keys.
	var books [3][]int64
	for i, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if i >= len(books) {
			t.Fatalf("driver said %q", out)
		}
		for _, w := range strings.Fields(line) {
			var v int64
			if _, err := fmt.Sscan(w, &v); err != nil {
				t.Fatalf("driver said %q: %v", out, err)
			}
			books[i] = append(books[i], v)
		}
		if len(books[i]) != 2+b.Funcs*BookFigureSize/8+4 {
			t.Fatalf("driver said %q", out)
		}
	}
	if b.Nodes > 0 {
		node := func(book, n int) [2]int64 { return [2]int64(books[book][len(books[book])-4+2*(n-2):]) }
		key := func(parent, fn int) int64 { return int64(NodeKeyOf(parent, fn)) }
		for _, c := range []struct {
			what string
			got  [2]int64
			want [2]int64
		}{
			{"A's f", node(1, 2), [2]int64{1, key(RootNode, ff)}},
			{"A's g from f", node(1, 3), [2]int64{1, key(2, fg)}},
			{"B's g", node(2, 2), [2]int64{1, key(RootNode, fg)}},
			{"B's node 3", node(2, 3), [2]int64{0, 0}},
		} {
			if c.got != c.want {
				t.Errorf("%s: calls and key %v, want %v", c.what, c.got, c.want)
			}
		}
	}
	fig := func(book, f, word int) int64 { return books[book][2+f*BookFigureSize/8+word/8] }
	for f := range b.Funcs {
		if c := fig(0, f, FigureCalls) + fig(0, f, FigureOpen); c != 0 {
			t.Errorf("the thread's book has %d calls of function %d: a goroutine's are its own", c, f)
		}
	}
	for _, c := range []struct {
		name          string
		book, deepest int
		calls         [2]int64
	}{{"A", 1, 3, [2]int64{1, 1}}, {"B", 2, 2, [2]int64{0, 1}}} {
		if top, deepest := uint64(books[c.book][0]), uint64(books[c.book][1]); top != b.FrameAt(1) || deepest != b.FrameAt(c.deepest) {
			t.Errorf("goroutine %s: top %#x, deepest %#x; want %#x, %#x", c.name, top, deepest, b.FrameAt(1), b.FrameAt(c.deepest))
		}
		for f, want := range c.calls {
			if calls, open := fig(c.book, f, FigureCalls), fig(c.book, f, FigureOpen); calls != want || open != 0 {
				t.Errorf("goroutine %s, function %d: %d calls, %d open; want %d, 0", c.name, f, calls, open, want)
			}
			if self, all := fig(c.book, f, FigureSelf), fig(c.book, f, FigureInclusive); want > 0 && (self <= 0 || all < self) {
				t.Errorf("goroutine %s, function %d: own time %d, with children %d", c.name, f, self, all)
			}
		}
	}
	// A's f holds B's g (A waited) and A's own g, closed by the closer.
	if f, g, gB := fig(1, ff, FigureInclusive), fig(1, fg, FigureInclusive), fig(2, fg, FigureInclusive); f != fig(1, ff, FigureSelf)+g || f < g+gB {
		t.Errorf("A's f %d ns with children, own %d; A's g %d, B's %d", f, fig(1, ff, FigureSelf), g, gB)
	}
}

// goCloserPage is where the driver maps the closer: its word, then its
// code.
const goCloserPage = 0x7ff00000

// goBookSequence is the code TestGoBookCodeRunsAMD64 runs: run(gA, gB),
// which ends at ud2 where a register the code saves did not come back.
func goBookSequence(t *testing.T, b Book, ff, fg int) []byte {
	t.Helper()
	code := func(c BookCode, ok bool) []byte {
		if !ok {
			t.Fatal("no code for a Go function's book")
		}
		return c.Code
	}
	gs := func(op ...byte) func(disp uint64) []byte { // op %gs:disp
		return func(disp uint64) []byte {
			return binary.LittleEndian.AppendUint32(append([]byte{0x65}, op...), uint32(disp))
		}
	}
	// The goroutine in r14 runs: PROFILE's part, which the code leaves
	// it where the block names another goroutine.
	switchTo := func(reg byte) []byte {
		s := []byte{0x49, 0x89, reg}                                    // mov %rdi or %rsi,%r14
		s = append(s, gs(0x4c, 0x89, 0x34, 0x25)(b.Offset+BookCurG)...) // mov %r14,%gs:CURG
		s = append(s, 0x49, 0x8b, 0x46, 0x10)                           // mov 16(%r14),%rax
		return append(s, gs(0x48, 0x89, 0x04, 0x25)(b.Offset+BookCurBook)...)
	}
	var s []byte
	var bad []int
	check := func() { // cmp $0x1111,%rcx; jne bad; cmp $0x2222,%r11; jne bad
		s = append(s, 0x48, 0x81, 0xf9, 0x11, 0x11, 0, 0, 0x0f, 0x85, 0, 0, 0, 0)
		bad = append(bad, len(s))
		s = append(s, 0x49, 0x81, 0xfb, 0x22, 0x22, 0, 0, 0x0f, 0x85, 0, 0, 0, 0)
		bad = append(bad, len(s))
	}
	s = append(s, 0x41, 0x56)        // push %r14
	s = append(s, switchTo(0xfe)...) // A
	s = append(s, 0xb9, 0x11, 0x11, 0, 0, 0x41, 0xbb, 0x22, 0x22, 0, 0)
	s = append(s, code(AMD64.BookEntryCode(b, ff))...)
	check()
	s = append(s, switchTo(0xf6)...) // B
	s = append(s, code(AMD64.BookEntryCode(b, fg))...)
	s = append(s, code(AMD64.BookExitCode(b, fg, 0))...)
	s = append(s, switchTo(0xfe)...)                              // A again,
	s = append(s, 0x48, 0x8d, 0xa4, 0x24, 0x00, 0xf0, 0xff, 0xff) // its stack a page lower:
	s = append(s, 0x49, 0x81, 0x6e, 0x08, 0x00, 0x10, 0, 0)       // subq $0x1000,8(%r14)
	s = append(s, 0x48, 0x8d, 0x64, 0x24, 0xf0)                   // lea -16(%rsp),%rsp: g's call,
	s = append(s, code(AMD64.BookEntryCode(b, fg))...)            // whose exit is not seen
	s = append(s, 0x48, 0x8d, 0x64, 0x24, 0x10)
	s = append(s, code(AMD64.BookExitCode(b, ff, 0))...)
	s = append(s, 0x48, 0x8d, 0xa4, 0x24, 0x00, 0x10, 0, 0)
	check()
	s = append(s, 0x41, 0x5e, 0xc3) // pop %r14; ret
	for _, end := range bad {
		binary.LittleEndian.PutUint32(s[end-4:], uint32(len(s)-end))
	}
	return append(s, 0x0f, 0x0b) // bad: ud2
}

// goBookDriver is the C driver of TestGoBookCodeRunsAMD64. Its
// arguments: the code and the closer's, a book's size from its block's
// start, the offsets of the top, the deepest and the figures, the number
// of functions, the closer's page, the number of nodes (4 for none), the
// offsets of the node count, of node 0 and of the root's node, the
// scale's offset, the top's first value, and the offsets of the root's
// stack pointer and of the stack's low bound.
const goBookDriver = `#define _GNU_SOURCE
#include <asm/prctl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static unsigned char code[] = {%s};
static unsigned char closer[] = {%s};
#define SIZE ((%d + 7) / 8)
#define TOP %d
#define DEEPEST %d
#define FIGURES %d
#define FUNCS %d
#define CLOSER %d
#define NODES %d
#define NODECOUNT %d
#define NODE0 %d
#define ROOTNODE %d
static uint64_t block[SIZE] __attribute__((aligned(64)));
static uint64_t books[2][SIZE] __attribute__((aligned(64)));

int main(void) {
	unsigned char *x = mmap(0, sizeof code, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (x == MAP_FAILED) return 1;
	memcpy(x, code, sizeof code);
	unsigned char *cl = mmap((void *)CLOSER, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (cl != (void *)CLOSER) return 3;
	*(uint64_t *)cl = (uint64_t)cl + 16;
	memcpy(cl + 16, closer, sizeof closer);
	block[%d / 8] = 1ul << 32; /* a nanosecond a tick */
	uint64_t *all[3] = {block, books[0], books[1]};
	for (int i = 0; i < 3; i++) {
		all[i][TOP / 8] = all[i][DEEPEST / 8] = %d;
		all[i][%d / 8] = ~(uint64_t)0;
		all[i][%d / 8] = -(1ul << 40); /* the keys' bounds: -2^40 to 0 */
		all[i][NODECOUNT / 8] = 2; /* the root, node 1, and node 0 unused */
		all[i][ROOTNODE / 8] = 1;
	}
	if (syscall(SYS_arch_prctl, ARCH_SET_GS, block)) return 2;
	uint64_t here = (uint64_t)__builtin_frame_address(0);
	uint64_t g[2][3] = {{here - (1 << 20), here + 4096, (uint64_t)books[0]}, {here - (1 << 20), here + 8192, (uint64_t)books[1]}};
	((void (*)(void *, void *))x)(g[0], g[1]);
	for (int i = 0; i < 3; i++) {
		printf("%%lu %%lu", (unsigned long)all[i][TOP / 8], (unsigned long)all[i][DEEPEST / 8]);
		for (int k = 0; k < FUNCS * 8; k++) printf(" %%ld", (long)all[i][FIGURES / 8 + k]);
		for (int n = 2; n < 4; n++) /* (node n's figures: 64 bytes, the key last) */
			printf(" %%ld %%ld", NODES > 4 ? (long)all[i][NODE0 / 8 + n * 8] : 0l, NODES > 4 ? (long)all[i][NODE0 / 8 + n * 8 + 7] : 0l);
		printf("\n");
	}
	return 0;
}
`

// TestGoBookCodeAMD64 checks the shape of a Go function's book code:
// where the block names another goroutine, the code goes to its
// breakpoint with the time in rax, the registers it uses saved; neither
// it nor its closer reads or writes the goroutine's stack.
func TestGoBookCodeAMD64(t *testing.T) {
	for _, nodes := range []int{0, 64} {
		testGoBookCode(t, Book{Offset: 0x40, Frames: 8, Funcs: 4, Go: true, Closer: goCloserPage, Nodes: nodes})
	}
	// (arm64's Go code has no closer: arm64_gobook_test.go.)
	arm := Book{Offset: 0x40, Frames: 8, Funcs: 4, Go: true, Table: 1, Areas: 1, Closer: goCloserPage}
	if _, ok := ARM64.BookEntryCode(arm, 0); ok {
		t.Error("a Go function's book on arm64 with a closer")
	}
	if _, ok := ARM64.BookCloserCode(arm); ok {
		t.Error("a closer of Go functions' books on arm64")
	}
}

// testGoBookCode checks the shape of the Go functions' code of book b
// (TestGoBookCodeAMD64).
func testGoBookCode(t *testing.T, b Book) {
	t.Helper()
	for _, exit := range []bool{false, true} {
		var c BookCode
		var ok bool
		if exit {
			c, ok = AMD64.BookExitCode(b, 3, 8)
		} else {
			c, ok = AMD64.BookEntryCode(b, 3)
		}
		if !ok {
			t.Fatalf("exit %v: no code", exit)
		}
		if c.Code[c.Stop-1] != 0xcc {
			t.Fatalf("exit %v: no breakpoint at %d", exit, c.Stop-1)
		}
		missed := 0
		for at := 0; at < len(c.Code); {
			in, err := x86asm.Decode(c.Code[at:], 64)
			if err != nil {
				t.Fatalf("exit %v: at %d: %v", exit, at, err)
			}
			text := x86asm.GNUSyntax(in, uint64(at), nil)
			switch {
			case in.Op == x86asm.CALL || in.Op == x86asm.PUSH || in.Op != x86asm.LEA && onStack(in):
				t.Errorf("exit %v: at %d: %s: the code touches the goroutine's stack", exit, at, text)
			case text == "test %r14,%r14" || strings.HasPrefix(text, "cmp %r14,%gs:"):
				next, _ := x86asm.Decode(c.Code[at+in.Len:], 64)
				rel, _ := next.Args[0].(x86asm.Rel)
				if want := map[x86asm.Op]x86asm.Op{x86asm.TEST: x86asm.JE, x86asm.CMP: x86asm.JNE}[in.Op]; next.Op != want || at+in.Len+next.Len+int(rel) != c.Stop-1 {
					t.Errorf("exit %v: %s: no goroutine, or one not the block's, does not go to the breakpoint", exit, text)
				}
				missed++
			}
			at += in.Len
		}
		if missed != 2 {
			t.Errorf("exit %v: the code checks the goroutine %d times, want 2 (none, not the block's)", exit, missed)
		}
		want := []SavedReg{{amd64RAX, b.Offset}, {amd64RDX, b.Offset + 8}, {amd64RCX, b.Offset + 16}, {amd64R11, b.Offset + 24}}
		if b.Nodes > 0 {
			want = append(want, SavedReg{amd64R8, b.Offset + BookSaveMore})
		}
		if fmt.Sprint(c.Saved) != fmt.Sprint(want) {
			t.Errorf("exit %v: saved %v, want %v", exit, c.Saved, want)
		}
	}
	closer, _ := AMD64.BookCloserCode(b)
	for at := 0; at < len(closer); {
		in, err := x86asm.Decode(closer[at:], 64)
		if err != nil {
			t.Fatalf("closer: at %d: %v", at, err)
		}
		switch in.Op {
		case x86asm.CALL, x86asm.RET, x86asm.PUSH, x86asm.POP:
			t.Errorf("closer: at %d: %v: a Go function's closer touches the goroutine's stack", at, in)
		default:
			if in.Op != x86asm.LEA && onStack(in) {
				t.Errorf("closer: at %d: %v: a Go function's closer touches the goroutine's stack", at, in)
			}
		}
		at += in.Len
	}
}

// onStack reports whether in reads or writes memory at the stack pointer.
func onStack(in x86asm.Inst) bool {
	for _, a := range in.Args {
		if m, ok := a.(x86asm.Mem); ok && m.Base == x86asm.RSP {
			return true
		}
	}
	return false
}
