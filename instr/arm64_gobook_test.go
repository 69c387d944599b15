package instr

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The goroutines of the arm64 Go book tests (Book.Go), on the thread
// whose area, at abArea, TPIDR_EL0 gives: each its g, whose first two
// words are its stack's bounds (stack.lo, stack.hi), the base of its
// book (the book's address less its offset, as the area's BookCurBook
// holds it), and its stack [lo, hi), mapped with the agMove bytes below
// it, to which A's stack moves as Go copies a growing goroutine's stack.
type agGoroutine struct {
	name            string
	g, base, lo, hi uint64
}

var (
	agA = agGoroutine{"A", 0xc000000000, 0x7f0000400000, 0xc000102000, 0xc000104000}
	agB = agGoroutine{"B", 0xc000000080, 0x7f0000500000, 0xc000202000, 0xc000204000}
)

const (
	// agMove is how far A's stack moves down, its stack pointer and
	// g.stack.hi alike; agFill the byte the stacks are filled with, so
	// that whatever the code writes there shows.
	agMove = 0x1000
	agFill = 0xa5
	// agF and agG are the functions of the runs, f and g.
	agF, agG = 0, 1
	// agWork is the instructions a function's body runs between its
	// entry's code and its exit's, or around a call.
	agWork = 50
)

// agBook is the Go functions' book of the runs: two functions, f and g.
func agBook(nodes int) Book {
	return Book{Offset: 0x40, Frames: 8, Funcs: 2, Table: abTable, Areas: abAreas, Go: true, Nodes: nodes}
}

// agInitBook maps and writes in m the book b at base as abMem writes a
// thread's: its top at the first frame after the root, the root's stack
// pointer (a key here) the highest there is, ns nanoseconds a tick, and,
// where b keeps caller stacks, the root's node the only one in use.
func agInitBook(m *fakeMem, b Book, base, ns uint64) {
	m.poke(base+b.Offset, make([]byte, b.Size()))
	m.poke64(base+b.Offset+BookTop, b.FrameAt(1))
	m.poke64(base+b.FrameAt(0)+FrameSP, ^uint64(0))
	m.poke64(base+b.Offset+BookScale, ns<<BookScaleShift)
	if b.Nodes > 0 {
		m.poke64(base+b.Offset+BookNodeCount, RootNode+1)
		m.poke64(base+b.FrameAt(0)+FrameNode, RootNode)
	}
}

// agThread is the thread of the Go book runs: its book b in its area
// (the thread's own book, which a goroutine's code never keeps), the
// goroutines' g, books and stacks, nothing else mapped; and its counter.
type agThread struct {
	t     *testing.T
	b     Book
	mem   *fakeMem
	ticks uint64
}

// newAgThread is a thread of book b that runs goroutine A: the area's
// cache names A and its book, as PROFILE leaves it once A has run there.
// The thread's scale is a nanosecond a tick; the goroutines' books have
// one of 3, which the code must not read: the time is the thread's.
func newAgThread(t *testing.T, b Book) *agThread {
	m := newMem()
	agInitBook(m, b, abArea, 1)
	for _, g := range []agGoroutine{agA, agB} {
		agInitBook(m, b, g.base, 3)
		m.poke64(g.g, g.lo).poke64(g.g+8, g.hi)
		m.poke(g.lo-agMove, bytes.Repeat([]byte{agFill}, int(g.hi-g.lo+agMove)))
	}
	th := &agThread{t: t, b: b, mem: m, ticks: 1000}
	th.runs(agA)
	return th
}

// runs makes g the goroutine the area's cache names, with its book's
// base, as PROFILE does where g's code stops the thread.
func (th *agThread) runs(g agGoroutine) {
	th.mem.poke64(abArea+th.b.Offset+BookCurG, g.g)
	th.mem.poke64(abArea+th.b.Offset+BookCurBook, g.base)
}

// words are the words at at: a frame's, a function's figures, or a
// node's, its key the last.
func (th *agThread) words(at uint64) [8]uint64 {
	var w [8]uint64
	for i := range w {
		w[i] = th.mem.peek64(at + 8*uint64(i))
	}
	return w
}

// run runs code at sp on the goroutine whose g is in x28, the thread
// pointer the area. It returns the registers before and after, the time
// the code read (the instructions run before its MRS) and a64Exec's
// error.
func (th *agThread) run(code []byte, x28, sp uint64) (before, after *fakeRegs, read uint64, err error) {
	r := abRegs(sp, &th.ticks)
	r.tp, r.r[28] = abArea, x28
	before, read = r.clone(), th.ticks+uint64(abIndex(code, 0xffffffe0, abMrsCnt))
	err = a64Exec(code, pTramp, r, th.mem)
	return before, r, read, err
}

// goes runs code c of goroutine g at sp, which must go on at its end
// with every register back but x16, x17 and the flags, sp and the
// thread pointer too, having written nothing but the area's save slots,
// which must hold the registers saved, and g's book. It returns the
// time the code read.
func (th *agThread) goes(name string, c BookCode, g agGoroutine, sp uint64) uint64 {
	th.t.Helper()
	old := th.mem.clone()
	before, r, read, err := th.run(c.Code, g.g, sp)
	if err != nil {
		th.t.Fatalf("%s: %v", name, err)
	}
	want := before.clone()
	want.pc += uint64(len(c.Code))
	r.r[16], r.r[17], r.flags = want.r[16], want.r[17], want.flags
	if *r != *want {
		th.t.Errorf("%s: registers after\n got %+v\nwant %+v", name, *r, *want)
	}
	th.written(name, agSaved(old, c, before), g.base, sp)
	return read
}

// agSaved is memory old with the save slots of code c in the area
// holding the registers before.
func agSaved(old *fakeMem, c BookCode, before *fakeRegs) *fakeMem {
	want := old.clone()
	for _, s := range c.Saved {
		want.poke64(abArea+s.Offset, before.r[s.Reg])
	}
	return want
}

// written checks that the memory is want but within the book at base
// (none where 0), the code's at sp having run: nothing written below sp
// or anywhere else on the stacks, in the g's, or in another book.
func (th *agThread) written(name string, want *fakeMem, base, sp uint64) {
	th.t.Helper()
	lo, hi := base+th.b.Offset, base+th.b.Offset+th.b.Size()
	var bad []uint64
	for a, v := range th.mem.b {
		if (base == 0 || a < lo || a >= hi) && want.b[a] != v {
			bad = append(bad, a)
		}
	}
	if len(bad) > 0 {
		a := slices.Min(bad)
		th.t.Errorf("%s: %d bytes written, the first at %#x: %s", name, len(bad), a, th.where(a, sp))
	}
}

// where says what address a is, the code having run at sp.
func (th *agThread) where(a, sp uint64) string {
	for _, g := range []agGoroutine{agA, agB} {
		switch {
		case a >= g.lo-agMove && a < g.hi && a < sp:
			return fmt.Sprintf("%s's stack, %d bytes below sp", g.name, sp-a)
		case a >= g.lo-agMove && a < g.hi:
			return fmt.Sprintf("%s's stack, %d bytes above sp", g.name, a-sp)
		case a >= g.g && a < g.g+16:
			return g.name + "'s g"
		case a >= g.base+th.b.Offset && a < g.base+th.b.Offset+th.b.Size():
			return fmt.Sprintf("%s's book at %#x", g.name, a-g.base)
		}
	}
	return fmt.Sprintf("the thread's area at %#x", a-abArea)
}

// TestGoBookCodeRunsARM64 runs the code of Go functions' books in the
// A64 interpreter, where the counter counts the instructions run, on one
// thread whose area TPIDR_EL0 gives and two fake goroutines, each with
// its own book: goroutine A enters f; B, which the area's cache then
// names as PROFILE would make it, enters and leaves g; and A, named
// again, its stack moved down a page as Go moves a growing goroutine's
// (its stack pointer and g.stack.hi alike), enters and leaves g, and
// leaves f. Each piece of code goes on at its end with every register
// back but x16, x17 and the flags (sp too), and writes nothing but the
// area's save slots and its goroutine's book: nothing below sp, on the
// stacks, in the g's or in the other goroutine's book. Each goroutine's
// book then holds its own calls, closed, to the instruction, their
// frames keyed by the distance from the stack's top, which the move
// does not change; the thread's book holds nothing. With caller stacks,
// the nodes are in each goroutine's own book: A's f (2) and g from f
// (3), B's g (2).
func TestGoBookCodeRunsARM64(t *testing.T) {
	for _, nodes := range []int{0, 16} {
		t.Run(fmt.Sprintf("nodes=%d", nodes), func(t *testing.T) {
			b := agBook(nodes)
			entries, exits := abCloserCode(t, b)
			th := newAgThread(t, b)
			agCheckRun(th, agRun(th, entries, exits))
		})
	}
}

// agTimes are the times the code of TestGoBookCodeRunsARM64 read: at A's
// f's entry and exit, A's g's, and B's g's.
type agTimes struct{ f0, f1, g0, g1, b0, b1 uint64 }

// agRun runs TestGoBookCodeRunsARM64's sequence on th, the code of each
// function f at entries[f] and exits[f].
func agRun(th *agThread, entries, exits []BookCode) (tm agTimes) {
	spA, spB := agA.hi-0x100, agB.hi-0x200
	tm.f0 = th.goes("A: f's entry", entries[agF], agA, spA)
	th.ticks += agWork
	th.runs(agB)
	tm.b0 = th.goes("B: g's entry", entries[agG], agB, spB)
	th.ticks += agWork
	tm.b1 = th.goes("B: g's exit", exits[agG], agB, spB)
	th.runs(agA)
	// Go copies A's stack a page lower: its g's bounds move with it.
	th.mem.poke64(agA.g, agA.lo-agMove).poke64(agA.g+8, agA.hi-agMove)
	spA -= agMove
	tm.g0 = th.goes("A, its stack moved: g's entry", entries[agG], agA, spA-16)
	th.ticks += agWork
	tm.g1 = th.goes("A: g's exit", exits[agG], agA, spA-16)
	th.ticks += agWork
	tm.f1 = th.goes("A: f's exit", exits[agF], agA, spA)
	return tm
}

// agCheckRun checks the books after agRun, which read the times tm.
func agCheckRun(th *agThread, tm agTimes) {
	t, b := th.t, th.b
	t.Helper()
	tf, tg, tb := tm.f1-tm.f0, tm.g1-tm.g0, tm.b1-tm.b0
	keyA, keyB := uint64(0xffffffffffffff00), uint64(0xfffffffffffffe00) // sp less g.stack.hi: -0x100, -0x200
	for _, c := range []struct {
		what string
		at   uint64
		want [7]uint64
	}{
		// calls, own time, with children, open, kids, outermost, beneath
		{"A's f", agA.base + b.FigureAt(agF), [7]uint64{1, tf - tg, tf, 0, 1, 1, 1}},
		{"A's g", agA.base + b.FigureAt(agG), [7]uint64{1, tg, tg, 0, 0, 1, 0}},
		{"B's f", agB.base + b.FigureAt(agF), [7]uint64{}},
		{"B's g", agB.base + b.FigureAt(agG), [7]uint64{1, tb, tb, 0, 0, 1, 0}},
		{"the thread's f", abArea + b.FigureAt(agF), [7]uint64{}},
		{"the thread's g", abArea + b.FigureAt(agG), [7]uint64{}},
		// time, children, key, held, beneath, function, kids
		{"A's root frame", agA.base + b.FrameAt(0), [7]uint64{0, tf, ^uint64(0), 0, 2, 0, 1}},
		{"A's f's frame", agA.base + b.FrameAt(1), [7]uint64{tm.f0, tg, keyA, 0, 1, agF, 1}},
		{"A's g's frame", agA.base + b.FrameAt(2), [7]uint64{tm.g0, 0, keyA - 16, 0, 0, agG, 0}},
		{"B's root frame", agB.base + b.FrameAt(0), [7]uint64{0, tb, ^uint64(0), 0, 1, 0, 1}},
		{"B's g's frame", agB.base + b.FrameAt(1), [7]uint64{tm.b0, 0, keyB, 0, 0, agG, 0}},
	} {
		if w := th.words(c.at); [7]uint64(w[:7]) != c.want {
			t.Errorf("%s: %v, want %v", c.what, w[:7], c.want)
		}
	}
	for _, c := range []struct {
		what                string
		base, deepest, last uint64
		nodes               uint64
	}{
		{"A", agA.base, b.FrameAt(3), tm.f1, 4},
		{"B", agB.base, b.FrameAt(2), tm.b1, 3},
		{"the thread", abArea, 0, 0, RootNode + 1},
	} {
		w := th.words(c.base + b.Offset + BookTop)
		if top, deepest, last := w[0], w[(BookDeepest-BookTop)/8], w[(BookLast-BookTop)/8]; top != b.FrameAt(1) || deepest != c.deepest || last != c.last {
			t.Errorf("%s's book: top %#x, deepest %#x, last exit %d; want %#x, %#x, %d", c.what, top, deepest, last, b.FrameAt(1), c.deepest, c.last)
		}
		if count := w[(BookNodeCount-BookTop)/8]; b.Nodes > 0 && count != c.nodes {
			t.Errorf("%s's book: %d nodes, want %d", c.what, count, c.nodes)
		}
	}
	if b.Nodes > 0 {
		agCheckNodes(th, tm)
	}
}

// agCheckNodes checks the nodes of agRun's calls, each in its goroutine's
// own book.
func agCheckNodes(th *agThread, tm agTimes) {
	t, b := th.t, th.b
	t.Helper()
	tf, tg, tb := tm.f1-tm.f0, tm.g1-tm.g0, tm.b1-tm.b0
	for _, c := range []struct {
		what string
		at   uint64
		want [8]uint64 // calls, own time, with children, -, kids, -, beneath, key
	}{
		{"A's f", agA.base + b.NodeAt(2), [8]uint64{1, tf - tg, tf, 0, 1, 0, 1, NodeKeyOf(RootNode, agF)}},
		{"A's g from f", agA.base + b.NodeAt(3), [8]uint64{1, tg, tg, 0, 0, 0, 0, NodeKeyOf(2, agG)}},
		{"B's g", agB.base + b.NodeAt(2), [8]uint64{1, tb, tb, 0, 0, 0, 0, NodeKeyOf(RootNode, agG)}},
		{"B's node 3", agB.base + b.NodeAt(3), [8]uint64{}},
	} {
		if got := th.words(c.at); got != c.want {
			t.Errorf("node of %s: %v, want %v", c.what, got, c.want)
		}
	}
}

// TestGoBookCodeStopsARM64 runs, in the A64 interpreter, the entry and
// the exit of a Go function where they stop for PROFILE: no goroutine
// (x28 0, the area's cache empty too: the CBZ, not the compare, stops
// it), a goroutine other than the one the area's cache names, and a
// goroutine's book whose top was written over. Each stops at its BRK,
// x0 the time it read, the registers it saves in the area's save slots
// (x4 at BookSaveMore), every other one but x16 and x17 as it was; and
// it writes nothing else, in no book, but, where it stopped in the
// goroutine's book, an exit's last exit's time there.
func TestGoBookCodeStopsARM64(t *testing.T) {
	for _, nodes := range []int{0, 16} {
		b := agBook(nodes)
		entries, exits := abCloserCode(t, b)
		for _, c := range []struct {
			name string
			code BookCode
			exit bool
		}{{"entry", entries[agG], false}, {"exit", exits[agG], true}} {
			for _, s := range []struct {
				name  string
				setup func(th *agThread)
				x28   uint64
				in    bool // stopped in A's book
			}{
				{"no goroutine", func(th *agThread) { th.runs(agGoroutine{}) }, 0, false},
				{"another goroutine than the area's", func(th *agThread) { th.runs(agB) }, agA.g, false},
				{"the top written over", func(th *agThread) { th.mem.poke64(agA.base+b.Offset+BookTop, b.FrameAt(0)) }, agA.g, true},
			} {
				th := newAgThread(t, b)
				s.setup(th)
				name := fmt.Sprintf("nodes %d: %s, %s", nodes, c.name, s.name)
				read, want := th.stops(name, c.code, s.x28, agA.hi-0x100)
				if s.in && c.exit {
					want.poke64(agA.base+b.Offset+BookLast, read)
				}
				th.written(name, want, 0, agA.hi-0x100)
			}
		}
	}
}

// stops runs code c at sp, x28 as given, which must stop at its BRK, x0
// the time it read, the registers it saves in the area's save slots and
// every other one but x16 and x17 as it was. It returns the time, and
// the memory before with the save slots written.
func (th *agThread) stops(name string, c BookCode, x28, sp uint64) (uint64, *fakeMem) {
	th.t.Helper()
	old := th.mem.clone()
	before, r, read, err := th.run(c.Code, x28, sp)
	var brk a64Break
	if !errors.As(err, &brk) || r.pc != brk.pc || brk.pc+4 != pTramp+uint64(c.Stop) {
		th.t.Fatalf("%s: %v, at %#x; want a stop at %#x", name, err, r.pc, pTramp+uint64(c.Stop)-4)
	}
	if r.r[0] != read {
		th.t.Errorf("%s: x0 %d at the stop, want %d, the time read", name, r.r[0], read)
	}
	saved := map[int]bool{}
	for _, s := range c.Saved {
		saved[s.Reg] = true
		if got := th.mem.peek64(abArea + s.Offset); got != before.r[s.Reg] {
			th.t.Errorf("%s: x%d saved as %#x, want %#x", name, s.Reg, got, before.r[s.Reg])
		}
	}
	for i := range r.r {
		if !saved[i] && i != 16 && i != 17 && r.r[i] != before.r[i] {
			th.t.Errorf("%s: x%d %#x at the stop, %#x before", name, i, r.r[i], before.r[i])
		}
	}
	return read, agSaved(old, c, before)
}

// TestGoBookCodeARM64 checks the shape of a Go function's entry and exit
// code, with and without caller stacks, with the GNU disassembler: it
// finds the thread's area through TPIDR_EL0 and saves x0 to x3 there
// (those it uses) and x4 in the fifth slot, reads the counter by the
// thread's scale, then stops where x28 is 0 or not the goroutine the
// area names, finds the goroutine's book and the key, sp less
// g.stack.hi, before it loads the top; it uses sp nowhere else, neither
// as a base nor as the key, and puts the registers back from the area,
// found again. A Go function's book with a closer is refused, and so is
// a closer of one.
func TestGoBookCodeARM64(t *testing.T) {
	for _, nodes := range []int{0, 16} {
		b := Book{Offset: 0x40, Frames: 8, Funcs: 4, Table: abTable, Areas: abAreas, Go: true, Nodes: nodes}
		entry, ok1 := ARM64.BookEntryCode(b, 3)
		exit, ok2 := ARM64.BookExitCode(b, 3, 0)
		exit8, ok3 := ARM64.BookExitCode(b, 3, 8)
		if !ok1 || !ok2 || !ok3 {
			t.Fatalf("nodes %d: no code of a Go function", nodes)
		}
		name := fmt.Sprintf("nodes %d: ", nodes)
		agCheckListing(t, name+"entry", b, entry, nodes > 0)
		agCheckListing(t, name+"exit", b, exit, true)
		if lines := agCheckListing(t, name+"exit 8 above the entry's stack pointer", b, exit8, true); !slices.Contains(lines, "sub x2, x4, #0x8") {
			t.Errorf("%sexit 8 above the entry's stack pointer: no key less 8 (sub x2, x4, #0x8)", name)
		}
	}
	b := Book{Offset: 0x40, Frames: 8, Funcs: 4, Table: abTable, Areas: abAreas, Go: true, Closer: abCloserWord}
	if _, ok := ARM64.BookEntryCode(b, 3); ok {
		t.Error("a Go function's entry code with a closer")
	}
	if _, ok := ARM64.BookExitCode(b, 3, 0); ok {
		t.Error("a Go function's exit code with a closer")
	}
	for _, closer := range []uint64{abCloserWord, 0} {
		if b.Closer = closer; func() bool { _, ok := ARM64.BookCloserCode(b); return ok }() {
			t.Errorf("a closer of Go functions' books, Closer %#x", closer)
		}
	}
}

// agSPRE matches an instruction that names sp.
var agSPRE = regexp.MustCompile(`\bsp\b`)

// agCheckListing checks the listing of code c of Go functions' book b
// (TestGoBookCodeARM64), which saves x2 and x3 where pair is set, and
// returns it.
func agCheckListing(t *testing.T, name string, b Book, c BookCode, pair bool) []string {
	t.Helper()
	lines := gnuDisasm(t, c.Code, 0)
	at := func(off uint64) string { return fmt.Sprintf("[x16, #%d]", b.Offset+off) }
	saves := []string{"mrs x16, tpidr_el0", "stp x0, x1, " + at(BookSave), "str x4, " + at(BookSaveMore)}
	back := []string{"mrs x16, tpidr_el0", "ldp x0, x1, " + at(BookSave), "ldr x4, " + at(BookSaveMore)}
	saved := []SavedReg{{0, b.Offset + BookSave}, {1, b.Offset + BookSave + 8}}
	if pair {
		saves = slices.Insert(saves, 2, "stp x2, x3, "+at(BookSave+16))
		back = slices.Insert(back, 2, "ldp x2, x3, "+at(BookSave+16))
		saved = append(saved, SavedReg{2, b.Offset + BookSave + 16}, SavedReg{3, b.Offset + BookSave + 24})
	}
	saved = append(saved, SavedReg{4, b.Offset + BookSaveMore})
	if !slices.Equal(lines[:len(saves)], saves) || !slices.Equal(lines[len(lines)-len(back):], back) {
		t.Errorf("%s: starts %q, ends %q; want %q, %q", name, lines[:len(saves)], lines[len(lines)-len(back):], saves, back)
	}
	brk := slices.Index(lines, "brk #0x0")
	stop := fmt.Sprintf("%#x", 4*brk)
	top := slices.Index(lines, "ldr x17, "+at(BookTop))
	seq := []string{"mrs x0, cntvct_el0", "ldr x17, " + at(BookScale), // the thread's scale
		"cbz x28, " + stop, "ldr x17, " + at(BookCurG), "cmp x17, x28, uxtx", "b.ne " + stop,
		"ldr x16, " + at(BookCurBook), "ldr x4, [x28, #8]", "sub x4, sp, x4"}
	if i := agSubsequence(lines, seq); brk < 0 || top < 0 || i < 0 || i > top {
		t.Errorf("%s: no %q in order before the top's load (line %d), the stop at line %d:\n%s", name, seq, top, brk, strings.Join(lines, "\n"))
	}
	for i, l := range lines {
		if agSPRE.MatchString(l) && l != "sub x4, sp, x4" {
			t.Errorf("%s: line %d: %q: sp used but for the key", name, i, l)
		}
	}
	checkBookShape(t, name, c, 4*(brk+1), 4*len(saves), 4*(slices.Index(lines, "str x1, "+at(BookTop))+1), saved)
	return lines
}

// agSubsequence is the index in lines just after the last of seq, found
// one after the other, or -1.
func agSubsequence(lines, seq []string) int {
	i := 0
	for _, s := range seq {
		j := slices.Index(lines[i:], s)
		if j < 0 {
			return -1
		}
		i += j + 1
	}
	return i
}

// TestA64ExecGoBookInstructions checks the interpreter's instructions
// that only the code of Go functions' books uses, each word written out
// from the Arm ARM (C6.2) and checked with the GNU disassembler, and the
// package's words against them: MRS Xt, TPIDR_EL0 (1101010100 1 1 011
// 1101 0000 010 Rt: op0 3, op1 3, CRn 13, CRm 0, op2 2), which reads the
// thread pointer, and SUB (extended register), 1 1 0 01011 00 1 Rm
// option imm3 Rn Rd, UXTX (option 011) #0, whose Rn and Rd 31 are sp
// and Rm 31 xzr. Neither changes the flags.
func TestA64ExecGoBookInstructions(t *testing.T) {
	const tp = abArea
	thread := abRegs(abSP-0x100, nil).r
	sp, x1, x4 := thread[31], thread[1], thread[4]
	if w, x := uint32(a64MrsTPIDR|a64X16), a64SubExtSP(a64X4, a64X4); w != 0xd53bd050 || x != 0xcb2463e4 {
		t.Errorf("mrs x16, tpidr_el0 is %#08x, sub x4, sp, x4 %#08x; want 0xd53bd050, 0xcb2463e4", w, x)
	}
	for _, c := range []struct {
		word uint32
		text string
		reg  int // the register written
		want uint64
	}{
		{0xd53bd050, "mrs x16, tpidr_el0", 16, tp},
		{0xd53bd043, "mrs x3, tpidr_el0", 3, tp},
		{0xcb2463e4, "sub x4, sp, x4", 4, sp - x4},
		{0xcb2463ff, "sub sp, sp, x4", 31, sp - x4},
		{0xcb246020, "sub x0, x1, x4, uxtx", 0, x1 - x4},
		{0xcb3f6020, "sub x0, x1, xzr, uxtx", 0, x1},
	} {
		if _, err := exec.LookPath("aarch64-linux-gnu-objdump"); err == nil {
			if got := gnuDisasm(t, a64Words(c.word), 0); got[0] != c.text {
				t.Errorf("%#08x is %q, want %q", c.word, got[0], c.text)
			}
		}
		r := abRegs(sp, nil)
		r.tp, r.flags = tp, pstateN|pstateC
		want := r.clone()
		want.pc, want.r[c.reg] = pTramp+4, c.want
		if err := a64Exec(a64Words(c.word), pTramp, r, newMem()); err != nil || *r != *want {
			t.Errorf("%s: %v; registers after\n got %+v\nwant %+v", c.text, err, *r, *want)
		}
	}
}
