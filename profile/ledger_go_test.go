package profile

import (
	"encoding/binary"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/profile/books"
	"github.com/sourceprofiler/sprof/profile/layout"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// gStacks is a program's memory that holds goroutines' g structs alone:
// the bounds of each one's stack, lo and hi, its first two words.
type gStacks map[uint64][2]uint64

func (m gStacks) ReadMem(addr uint64, b []byte) error {
	s, ok := m[addr]
	if !ok || len(b) > 16 {
		return errors.New("no g there")
	}
	var g [16]byte
	binary.LittleEndian.PutUint64(g[:], s[0])
	binary.LittleEndian.PutUint64(g[8:], s[1])
	copy(b, g[:])
	return nil
}

func (m gStacks) WriteMem(uint64, []byte) error { return errors.New("read only") }

// Three goroutines, each with a stack of 32 KiB.
const (
	gA, gB, gC = 0xc000000100, 0xc000000200, 0xc000000300
	hiA, hiB   = 0xc000108000, 0xc000208000
	hiC        = 0xc000308000
)

// goPlan is a plan of three Go functions.
func goPlan() *datafile.Plan {
	return &datafile.Plan{Method: datafile.FuncTiming, Funcs: []datafile.Func{
		{Name: "main.main", Frame: datafile.FrameGoroutine},
		{Name: "main.f", Frame: datafile.FrameGoroutine},
		{Name: "main.g", Frame: datafile.FrameGoroutine}}}
}

const goMain, goF, goG = 0, 1, 2

// down is the key of a frame d bytes below its goroutine's stack top.
func down(d uint64) uint64 { return -d }

// goLedgerRig is a run's books in the program of Go functions without a
// program: thread 100 with block 1, a table of two goroutines' books,
// and the goroutines gA, gB and gC in the program's memory.
type goLedgerRig struct {
	l    *ledgers
	th   *thread
	regs ptrace.Regs
	mem  []byte
}

func newGoLedgerRig(t *testing.T) *goLedgerRig {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Skip("x86-64's book code, on the host's registers")
	}
	plan := goPlan()
	lay, size := layout.New(layout.Spec{Kind: instr.CountPerThread, Items: 3, Books: true, BookFuncs: 3 + calFuncs,
		MaxBlocks: 4, DepthSlots: 8, GoBooks: 2})
	shared, err := ptrace.NewShared(int(size))
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { shared.Close() })
	lay.Place(0x7f0000000000)
	r := &goLedgerRig{th: &thread{tid: 100, tgid: 100}, mem: shared.Bytes()}
	gs := gStacks{gA: {hiA - 0x8000, hiA}, gB: {hiB - 0x8000, hiB}, gC: {hiC - 0x8000, hiC}}
	tr := &tracer{plan: plan, arch: instr.AMD64, threads: map[int]*thread{100: r.th}, mem: gs}
	tr.clocks.epoch = time.Now()
	c := &counters{shared: shared, layout: lay, next: 2, blockOf: map[int]int{100: 1}}
	r.l = newLedgers(tr)
	if !r.l.gos.on {
		t.Fatal("the goroutines' books are off for Go functions")
	}
	r.l.regs = &r.regs
	r.l.counters, r.l.scale = c, 1<<instr.BookScaleShift
	r.l.given(100, 1, true)
	return r
}

// on makes goroutine g the one thread 100 runs (r14).
func (r *goLedgerRig) on(g uint64) { r.regs.SetReg(14, g) }

// cached returns what block b caches of its goroutine's book: the
// goroutine and the book's base (instr.BookCurG, instr.BookCurBook).
func (r *goLedgerRig) cached(b int) (g, base uint64) {
	lay := &r.l.counters.layout
	book := lay.BookMem(r.mem, b)[lay.Book().Offset:]
	return binary.LittleEndian.Uint64(book[instr.BookCurG:]), binary.LittleEndian.Uint64(book[instr.BookCurBook:])
}

// TestGoTimed: the goroutines' books are kept where every function is
// Go's, on x86-64 and arm64; not where one is keyed by the stack
// pointer, nor for a plan of no function.
func TestGoTimed(t *testing.T) {
	for _, arch := range []instr.Arch{instr.AMD64, instr.ARM64} {
		if !goTimed(arch, goPlan()) {
			t.Errorf("Go functions on %s: not timed in goroutines' books", arch.Name())
		}
		mixed := goPlan()
		mixed.Funcs[goF].Frame = datafile.FrameSP
		if goTimed(arch, mixed) {
			t.Errorf("a function keyed by the stack pointer among Go's on %s: timed in goroutines' books", arch.Name())
		}
	}
	if goTimed(instr.AMD64, &datafile.Plan{Method: datafile.FuncTiming}) || goTimed(nil, goPlan()) {
		t.Error("no function, or no architecture: timed in goroutines' books")
	}
}

// TestGoLedgerBooks: a Go function's event goes into the book of the
// goroutine r14 names, its key the stack pointer's distance from the
// goroutine's stack top; the thread's block caches the goroutine and its
// book's base. The first two goroutines get the table's two books, in
// turn, and keep them; the third gets one of PROFILE's own, the block's
// cache left as it was. A stack pointer off the goroutine's stack, or no
// goroutine, gives the thread's book, keyed by the stack pointer.
func TestGoLedgerBooks(t *testing.T) {
	r := newGoLedgerRig(t)
	lay := &r.l.counters.layout
	off := lay.Book().Offset
	r.on(gA)
	pA, key := r.l.gos.frame(r.th, goF, hiA-0x100)
	if key != down(0x100) {
		t.Errorf("gA's key %#x, want -0x100", key)
	}
	if g, base := r.cached(1); g != gA || base != lay.GoBookBase(0) {
		t.Errorf("the block caches g %#x, book %#x; want gA, %#x", g, base, lay.GoBookBase(0))
	}
	if s := binary.LittleEndian.Uint64(lay.GoBookMem(r.mem, 0)[off+instr.BookScale:]); s != r.l.scale {
		t.Errorf("gA's book has the scale %#x, want the run's %#x: not the table's first", s, r.l.scale)
	}
	r.on(gB)
	pB, key := r.l.gos.frame(r.th, goF, hiB-0x200)
	if g, base := r.cached(1); pB == pA || key != down(0x200) || g != gB || base != lay.GoBookBase(1) {
		t.Errorf("gB: key %#x, cached g %#x and book %#x; want its own book, -0x200, gB, %#x", key, g, base, lay.GoBookBase(1))
	}
	r.on(gA)
	if p, _ := r.l.gos.frame(r.th, goMain, hiA-0x80); p != pA {
		t.Error("gA again: not its book")
	}
	if g, base := r.cached(1); g != gA || base != lay.GoBookBase(0) {
		t.Errorf("gA again: the block caches g %#x, book %#x; want gA, %#x", g, base, lay.GoBookBase(0))
	}
	r.on(gC)
	pC, key := r.l.gos.frame(r.th, goF, hiC-0x300)
	if pC == pA || pC == pB || key != down(0x300) {
		t.Errorf("gC, the table full: key %#x, or a book of the table's", key)
	}
	if p, _ := r.l.gos.frame(r.th, goF, hiC-0x400); p != pC {
		t.Error("gC again: not its book")
	}
	if g, base := r.cached(1); g != gA || base != lay.GoBookBase(0) {
		t.Errorf("gC: the block caches g %#x, book %#x; want gA's, as it was", g, base)
	}
	own := r.l.open[1]
	for _, c := range []struct {
		name string
		g    uint64
		sp   uint64
	}{{"gA at its stack top", gA, hiA}, {"gA below its stack", gA, hiA - 0x8001}, {"no goroutine", 0, hiA - 0x100}} {
		r.on(c.g)
		if p, key := r.l.gos.frame(r.th, goF, c.sp); p != own || key != c.sp {
			t.Errorf("%s: key %#x, or not the thread's book; want the thread's, %#x", c.name, key, c.sp)
		}
	}
}

// TestGoLedgerEnded: at the end, the goroutines' books are closed and
// kept: gA's call of f, 1000 to 1600, is 600 ns; gB's call of main,
// entered at 2000 and left open, ends at gB's last event, g's exit at
// 2400 (a goroutine's end is not seen: books.Books.Finish), and the two
// calls of g it made, 100 ns each, are not its own: 200 ns. The
// code's cost counted against the run is gB's, which made the most
// calls: 3 of 20 ns. PROFILE held gB's thread 50 ns in its first call
// of g, which the call and main lose, and 500 ns after its last event,
// which none does: main ends at 2400 all the same. The books in the
// program stay as they are.
func TestGoLedgerEnded(t *testing.T) {
	r := newGoLedgerRig(t)
	r.l.calibrated = books.Costs{In: 10, Out: 10}
	event := func(g uint64, fn int, sp, now uint64, exit bool) *books.ProgramBook {
		r.on(g)
		p, key := r.l.gos.frame(r.th, fn, sp)
		if exit {
			p.Exit(fn, key, now)
		} else {
			p.Enter(fn, key, now)
		}
		return p
	}
	event(gA, goF, hiA-0x100, 1000, false)
	event(gA, goF, hiA-0x100, 1600, true)
	event(gB, goMain, hiB-0x100, 2000, false)
	pB := r.l.gos.open[1]
	for _, at := range []uint64{2100, 2300} {
		event(gB, goG, hiB-0x180, at, false)
		if at == 2100 {
			r.l.gos.hold(pB, 50)
		}
		event(gB, goG, hiB-0x180, at+100, true)
	}
	r.l.gos.hold(pB, 500)
	r.l.gos.ended(3000)
	want := []books.Figure{goMain: {Calls: 1, Self: 200, All: 350}, goF: {Calls: 1, Self: 600, All: 600}, goG: {Calls: 2, Self: 150, All: 150}}
	for fn, w := range want {
		if f := r.l.figs[fn]; f.Calls != w.Calls || f.Self != w.Self || f.All != w.All {
			t.Errorf("function %d: %d calls, %d ns, %d ns with its children; want %d, %d, %d", fn, f.Calls, f.Self, f.All, w.Calls, w.Self, w.All)
		}
	}
	if c := r.l.clocks; c.debt != 60 || c.lives.debtMade != 3 {
		t.Errorf("the run's debt %v ns for %d calls, want gB's: 60 ns, 3 calls", c.debt, c.lives.debtMade)
	}
	if len(r.l.made) != 0 || len(r.l.gos.open) != 0 || len(r.l.gos.of) != 0 {
		t.Errorf("%d calls made, %d books open, %d goroutines left: want none", len(r.l.made), len(r.l.gos.open), len(r.l.gos.of))
	}
	if pB.Open() != 1 {
		t.Errorf("gB's book in the program has %d calls open, want main's, as it was", pB.Open())
	}
}

// TestGoLedgerHeld: the time PROFILE holds a thread is taken from the
// goroutine it runs. Its registers name it where they can (r14, its
// stack holding the stack pointer): gB, though the block booked gA's
// event last. Where they cannot (no process to ask here, or r14 in a
// runtime stack's code), it is the goroutine whose event PROFILE booked
// last on the thread's block: gA; a goroutine past the table, in its
// own book; none on a block that booked none, on one whose last
// goroutine was seen on another block since, or on one whose thread
// ended.
func TestGoLedgerHeld(t *testing.T) {
	r := newGoLedgerRig(t)
	r.on(gA)
	pA, _ := r.l.gos.frame(r.th, goF, hiA-0x100)
	if g := r.l.gos.held(r.th, 1); g != pA {
		t.Errorf("held from %p, want gA's book %p", g, pA)
	}
	th2 := &thread{tid: 101, tgid: 100}
	r.l.threads[101] = th2
	r.l.given(101, 2, true)
	if g := r.l.gos.held(th2, 2); g != nil {
		t.Errorf("a block that booked no goroutine's event: held from %p, want none", g)
	}
	// gB fills the table; gC is past it.
	r.on(gB)
	pB, _ := r.l.gos.frame(r.th, goF, hiB-0x100)
	r.on(gC)
	pC, _ := r.l.gos.frame(r.th, goF, hiC-0x100)
	if g := r.l.gos.held(r.th, 1); g != pC || pC == pA || pC == pB {
		t.Errorf("held from %p, want gC's book %p (past the table, its event last)", g, pC)
	}
	// gC moves to thread 101's block: block 1 knows none it runs.
	r.l.gos.frame(th2, goF, hiC-0x100)
	if g, g2 := r.l.gos.held(r.th, 1), r.l.gos.held(th2, 2); g != nil || g2 != pC {
		t.Errorf("held from %p and %p, want none and gC's book %p", g, g2, pC)
	}
	r.l.threadEnded(101)
	if g := r.l.gos.held(th2, 2); g != nil {
		t.Errorf("a block whose thread ended: held from %p, want none", g)
	}

	// With the thread's registers: the goroutine they name, where its
	// stack holds the stack pointer.
	fp := newFakeProcess(instr.AMD64, nil)
	r.l.proc = fp
	var regs ptrace.Regs
	regs.SetReg(14, gB)
	instr.AMD64.SetSP(&regs, hiB-0x40)
	fp.regs[100] = &regs
	r.on(gA)
	r.l.gos.frame(r.th, goF, hiA-0x100) // (block 1 books gA last)
	if g := r.l.gos.held(r.th, 1); g != pB {
		t.Errorf("held from %p, want gB's book %p, which the registers name", g, pB)
	}
	instr.AMD64.SetSP(&regs, hiA-0x40) // (on another stack than gB's)
	if g := r.l.gos.held(r.th, 1); g != pA {
		t.Errorf("held from %p, want gA's book %p: r14 does not name the goroutine whose stack the thread is on", g, pA)
	}
}

// TestGoStackTop: a goroutine's stack top is read from its g only where
// the g names a stack that holds the stack pointer and is no larger than
// Go's: no goroutine (0), a g PROFILE cannot read, a stack pointer below
// the stack or at its top, and a g the program wrote over (a stack of
// 2^41 bytes) give none.
func TestGoStackTop(t *testing.T) {
	const gBig = 0xc000000400
	mem := gStacks{gA: {hiA - 0x8000, hiA}, gBig: {0x1000, 0x1000 + 2*goStackSize}}
	for _, c := range []struct {
		what   string
		g, sp  uint64
		hi     uint64
		wantOK bool
	}{
		{"on its stack", gA, hiA - 0x100, hiA, true},
		{"its lowest word", gA, hiA - 0x8000, hiA, true},
		{"no goroutine", 0, hiA - 0x100, 0, false},
		{"an unreadable g", gB, hiA - 0x100, 0, false},
		{"below its stack", gA, hiA - 0x8001, 0, false},
		{"at its top", gA, hiA, 0, false},
		{"a stack written over", gBig, 0x2000, 0, false},
	} {
		hi, ok := goStackTop(mem, c.g, c.sp)
		if hi != c.hi || ok != c.wantOK {
			t.Errorf("%s: %#x, %v; want %#x, %v", c.what, hi, ok, c.hi, c.wantOK)
		}
	}
}

// TestGoLedgerTakesBackAWrittenBook: a goroutine's book the program
// wrote over (its top, a wild write) is taken back empty the next time
// PROFILE finds it, with the counter's scale and the keys' bounds its
// code and closer read: the goroutine's next calls are booked whole.
func TestGoLedgerTakesBackAWrittenBook(t *testing.T) {
	r := newGoLedgerRig(t)
	r.on(gA)
	p, key := r.l.gos.frame(r.th, goF, hiA-0x100)
	p.Enter(goF, key, 1000)
	mem := r.l.counters.layout.GoBookMem(r.mem, 0)
	top := r.l.counters.layout.Book().Offset + instr.BookTop
	for i := range uint64(64) {
		mem[top+i] = byte(i) // a wild write
	}
	q, _ := r.l.gos.frame(r.th, goF, hiA-0x100)
	b := r.l.counters.layout.Book()
	word := func(off uint64) uint64 { return binary.LittleEndian.Uint64(mem[b.Offset+off:]) }
	if q != p || r.l.damaged != 1 || p.Damaged() || p.Open() != 0 {
		t.Fatalf("damaged %d, still damaged %v, %d open: want the book taken back empty", r.l.damaged, p.Damaged(), p.Open())
	}
	if word(instr.BookScale) != 1<<instr.BookScaleShift || word(instr.BookStackLo) != ^uint64(goStackSize-1) || word(instr.BookStackHi) != 0 {
		t.Errorf("scale %#x, keys' bounds %#x to %#x: want %#x, -2^40 to 0", word(instr.BookScale), word(instr.BookStackLo),
			word(instr.BookStackHi), uint64(1<<instr.BookScaleShift))
	}
	p.Enter(goF, key, 2000)
	p.Exit(goF, key, 2500)
	r.l.gos.ended(3000)
	if f := r.l.figs[goF]; f.Calls != 1 || f.Self != 500 {
		t.Errorf("f: %d calls, %d ns; want the call after the write, 1 of 500 ns", f.Calls, f.Self)
	}
}
