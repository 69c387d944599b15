package profile

import (
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/profile/books"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// TestClocksBook: timing's clocks book a breakpoint's event with what the
// stop gives them (booking), no tracer: a Go function's entry goes to the
// goroutine whose stack holds the stack pointer, keyed by its distance
// from the stack's top; a C function's call made next on the same thread
// is that goroutine's (carrier); a Go function where the goroutine
// register holds no goroutine is the thread's. Each event is the
// goroutine's or thread's time at the stop, and the one the stop is
// charged to.
func TestClocksBook(t *testing.T) {
	arch, err := instr.ForName(runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	const (
		tid       = 7
		g         = 0x2000                     // the goroutine's g
		lo, hi    = 0xc000100000, 0xc000101000 // its stack
		goSP, cSP = 0xc000100f00, 0x7ffe0000
		work      = 1 // main.work
		cfunc     = 2
	)
	plan := &datafile.Plan{Method: datafile.FuncTiming, Funcs: []datafile.Func{
		{Name: "main", Frame: datafile.FrameSP},
		{Name: "main.work", Frame: datafile.FrameGoroutine, File: "main.go"},
		{Name: "cfunc", Frame: datafile.FrameSP},
	}}
	stack := make([]byte, 16)
	binary.LittleEndian.PutUint64(stack, lo)
	binary.LittleEndian.PutUint64(stack[8:], hi)
	mem := &fakeMem{areas: map[uint64][]byte{g: stack}}
	var regs ptrace.Regs
	// (The register the architecture keeps g in, by its DWARF number.)
	for n := 0; n < 64 && arch.Goroutine(&regs) == 0; n++ {
		regs.SetReg(n, g)
		if arch.Goroutine(&regs) != g {
			regs.SetReg(n, 0)
		}
	}
	if arch.Goroutine(&regs) != g {
		t.Fatal("no register holds the goroutine")
	}
	b := books.New(plan)
	c := &clocks{waited: 50_000, stolen: map[books.Key]int64{}, carried: map[int]uint64{}}
	th := &thread{tid: tid}
	goKey := books.Key{Goroutine: true, ID: g}
	c.stolen[goKey] = 20_000
	at := booking{books: b, funcs: plan.Funcs, arch: arch, regs: &regs, mem: mem}

	arch.SetSP(&regs, goSP)
	c.book(th, &site{meaning: meaning{item: work, exit: -1}}, at)
	l := b.OpenCalls(goKey)
	if len(l) != 1 || l[0].SP != 1<<63-(hi-goSP) || l[0].Begun != 30_000 {
		t.Fatalf("main.work's entry: goroutine ledger %+v, want one frame keyed %#x at 30000", l, uint64(1<<63-(hi-goSP)))
	}
	if c.charged != goKey || c.carried[tid] != g {
		t.Errorf("charged %+v, carried %#x: want the goroutine", c.charged, c.carried[tid])
	}

	arch.SetSP(&regs, cSP)
	c.book(th, &site{meaning: meaning{item: cfunc, exit: -1}}, at)
	if l = b.OpenCalls(goKey); len(l) != 2 || l[1].Fn != cfunc || l[1].SP != cSP {
		t.Errorf("cfunc's entry, carried: goroutine frames %+v, want cfunc's on top at sp %#x", l, cSP)
	}
	if c.charged != goKey {
		t.Errorf("cfunc's entry charged to %+v, want the goroutine", c.charged)
	}

	c.carried = map[int]uint64{}
	regs = ptrace.Regs{}
	arch.SetSP(&regs, cSP)
	c.book(th, &site{meaning: meaning{item: work, exit: -1}}, at)
	if tl := b.OpenCalls(threadLedger(tid)); len(tl) != 1 || tl[0].SP != cSP || tl[0].Begun != 50_000 {
		t.Errorf("main.work's entry with no goroutine: thread ledger %+v, want one frame at sp %#x at 50000", tl, cSP)
	}
	if c.charged != threadLedger(tid) {
		t.Errorf("charged to %+v, want the thread", c.charged)
	}
}

// TestClocksElapsed: the run's time is from its first thread's start to
// its last thread's end, less the union of its stops, but never less than
// the longest life of a thread on its own clock. Each thread's books
// close at its end, on its clock, or at its exit stop where it had one
// (PROFILE's hold of it there and its reaping are no one's time), and its
// stolen time is forgotten. The total time, of which the percentages
// are, is the one thread's elapsed time, or the threads' lives on their
// own clocks added up.
func TestClocksElapsed(t *testing.T) {
	// A thread's life: born and ended, held by PROFILE in stops.
	type life struct {
		born, end int64
		stops     [][2]int64
		exit      int64 // (its exit stop, seen before its end: 0 for none)
	}
	for _, c := range []struct {
		name        string
		lives       []life
		want, total int64
	}{
		{"one thread", []life{
			{born: 1000, end: 5000, stops: [][2]int64{{2000, 2500}}},
		}, 3500, 3500},
		{"one after the other", []life{
			{born: 1000, end: 6000, stops: [][2]int64{{2000, 3000}}},
			{born: 5000, end: 11000},
		}, 9000, 4000 + 6000},
		{"ended at its exit stop", []life{
			{born: 1000, end: 9000, stops: [][2]int64{{2000, 2500}}, exit: 5000},
		}, 3500, 3500},
		{"side by side", []life{
			{born: 1000, end: 11000, stops: [][2]int64{{2000, 4000}}},
			{born: 1000, end: 11000, stops: [][2]int64{{3000, 9000}}},
		}, 8000, 8000 + 4000},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := testBooks(-1, "", false, 0)
			ck := &clocks{stolen: map[books.Key]int64{}, carried: map[int]uint64{}}
			threads := map[int]*thread{}
			for i, l := range c.lives {
				th := &thread{tid: i + 1, lifespan: lifespan{born: l.born}}
				threads[th.tid] = th
				if ck.started == 0 || l.born < ck.started {
					ck.started = l.born
				}
				ck.carried[th.tid] = 0xc000001000
				b.Enter(threadLedger(th.tid), 0, 0x1000, l.born)
				for _, s := range l.stops {
					ck.steal(th, s[0], s[1])
				}
			}
			for i, l := range c.lives {
				th := threads[i+1]
				if th.ended = l.exit; l.exit != 0 {
					// (Held at its exit stop, and reaped after: no one's
					// time, its life ended there.)
					ck.waited, ck.resumed = l.exit, l.exit+1000
					ck.charge(th, nil)
				}
				ck.waited = l.end
				ck.closeThreadBooks(th, threads, b, nil)
				k := threadLedger(th.tid)
				if _, ok := ck.stolen[k]; ok {
					t.Errorf("thread %d: its stolen time kept after its end", th.tid)
				}
				if _, ok := ck.carried[th.tid]; ok {
					t.Errorf("thread %d: its goroutine kept after its end", th.tid)
				}
				if open := b.OpenCalls(k); len(open) != 0 {
					t.Errorf("thread %d: %d frames open after its end", th.tid, len(open))
				}
			}
			if got := ck.elapsed(nil); got != c.want {
				t.Errorf("elapsed %d, want %d", got, c.want)
			}
			b.Finish()
			if got := ck.total(nil, b.Figures()); got != c.total {
				t.Errorf("total %d, want %d", got, c.total)
			}
		})
	}
}

// TestClocksTotalGoroutines: where goroutines were timed, the total time
// is the run's elapsed time, or the time within outermost calls where
// that is more; their threads' lives are the goroutines', not added up.
func TestClocksTotalGoroutines(t *testing.T) {
	b := testBooks(-1, "", false, 0)
	g1, g2 := books.Key{Goroutine: true, ID: 0xc000001000}, books.Key{Goroutine: true, ID: 0xc000002000}
	b.Enter(g1, 0, 0x100, 100)
	b.Exit(g1, 0, 0x100, 300)
	b.Enter(g2, 0, 0x100, 200)
	b.Exit(g2, 0, 0x100, 1200)
	ck := &clocks{lives: lives{sum: 3 * 5000, n: 3}, started: 0, ended: 5000}
	f := b.Figures()
	if got := ck.total(nil, f); got != 5000 || f.Inside != 200+1000 {
		t.Errorf("total %d, inside %d: want the elapsed 5000, 1200", got, f.Inside)
	}
	// Goroutines side by side for longer than the run.
	b.Enter(g1, 0, 0x100, 1000)
	b.Exit(g1, 0, 0x100, 5000)
	b.Enter(g2, 0, 0x100, 2000)
	b.Exit(g2, 0, 0x100, 5000)
	if got := ck.total(nil, b.Figures()); got != 1200+4000+3000 {
		t.Errorf("total %d, want the time inside, 8200", got)
	}
}

// TestClocksMeasuredCost: the threads' clocks took the calibrated cost
// of their calls out as they ended; what the run measured beyond it, at
// its end, comes out of the total too, by each thread's calls: of the
// threads' lives added up, of the longest one's life, of the most debt.
// (The books in the program: the time inside, the books', is theirs,
// corrected apart; none here.)
func TestClocksMeasuredCost(t *testing.T) {
	b := testBooks(-1, "", false, 0)
	ck := &clocks{stolen: map[books.Key]int64{}, carried: map[int]uint64{}, started: 1000}
	threads := map[int]*thread{}
	for i, l := range []struct {
		born, end int64
		made      uint64
	}{{1000, 101000, 1000}, {1000, 51000, 500}} {
		th := &thread{tid: i + 1, lifespan: lifespan{born: l.born}, made: l.made, debt: float64(l.made) * 10}
		threads[th.tid] = th
		ck.carried[th.tid] = 0
		ck.waited = l.end
		ck.closeThreadBooks(th, threads, b, nil)
	}
	// Lives on their clocks, their calibrated debts (10 ns a call) out:
	// 100,000 - 10,000 and 50,000 - 5,000.
	if got := ck.total(nil, b.Figures()); got != 90000+45000 {
		t.Fatalf("total %d at the calibrated cost, want 135000", got)
	}
	ck.lives.perCall = 4 // the run measured 14 ns a call
	if got, want := ck.total(nil, b.Figures()), int64(135000-4*1500); got != want {
		t.Errorf("total %d at the measured cost, want %d", got, want)
	}
	// One thread alone: its elapsed time, the longest life less its own
	// calls' extra cost.
	one := &clocks{lives: lives{n: 1, perCall: 4, longestMade: 1000}, longest: 90000, started: 1000, ended: 101000, debt: 10000, held: ck.held}
	one.lives.debtMade = 1000
	if got := one.elapsed(nil); got != 90000-4000 {
		t.Errorf("one thread's elapsed %d, want 86000", got)
	}
}

// TestClocksTakeTheBooksHold: a stop the books kept in the program held
// from its event (ledgers.releasing) is taken out of the thread's clock
// from there, not from the stop's guessed cost before PROFILE saw it; a
// hold the books took of another stop, let go with no charge, is not
// this one's. A thread past its exit stop has none taken out.
func TestClocksTakeTheBooksHold(t *testing.T) {
	for _, c := range []struct {
		name string
		hold bookHold
		want int64
	}{
		{"this stop's", bookHold{from: 2000, seen: 5000}, 6000 - 2000},
		{"another stop's", bookHold{from: 2000, seen: 4000}, 6000 - (5000 - 500)},
		{"none", bookHold{}, 6000 - (5000 - 500)},
	} {
		ck := &clocks{stolen: map[books.Key]int64{}, overhead: 500, forced: true, waited: 5000, resumed: 6000}
		th := &thread{tid: 1, lifespan: lifespan{born: 100}, bookHold: c.hold}
		ck.charge(th, nil)
		if got := ck.stolen[threadLedger(1)]; got != c.want {
			t.Errorf("%s: took out %d, want %d", c.name, got, c.want)
		}
		if th.bookHold != (bookHold{}) {
			t.Errorf("%s: the hold kept after the charge", c.name)
		}
	}
	// Past its exit stop, its life ended: the hold is taken out of no
	// clock, but counted in its holds (a thread joining it waits for it).
	ck := &clocks{stolen: map[books.Key]int64{}, overhead: 500, forced: true, waited: 5000, resumed: 6000}
	th := &thread{tid: 1, lifespan: lifespan{born: 100, ended: 4750}}
	ck.charge(th, nil)
	if got := ck.stolen[threadLedger(1)]; got != 0 || th.heldTotal != 6000-(5000-500) || ck.held.sum() != 0 {
		t.Errorf("past its exit stop: took out %d, held %d (run %d), want 0, 1500 (0)", got, th.heldTotal, ck.held.sum())
	}
}
