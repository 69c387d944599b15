package profile

import (
	"math"
	"math/bits"
	"slices"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/profile/books"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// Function timing with the books kept in the program (issue 33;
// docs/architecture.md, "Timing in-process"). The code of a timed
// function's entry and exits (instr.BookEntryCode, instr.BookExitCode)
// keeps, in the thread's block, a shadow stack of its open calls and each
// function's figures: calls, own time, time with children, in
// nanoseconds; nothing crosses to PROFILE per call, and the calls left
// open below the stack pointer (a longjmp, an exit not seen) are closed
// by the code's closer (instr.BookCloserCode). PROFILE's part is what the
// code leaves to it:
//
//   - a thread stopped at the code's breakpoint (a call on another stack
//     than the open call's, a shadow stack full, a book the program
//     wrote over): the event booked in its book by the books' rules, at
//     the counter's time the code read (books.ProgramBook), and the
//     thread on at the code's end;
//   - an event caught by a breakpoint (an entry or exit no jump fits),
//     booked the same way at the stop's time;
//   - the time PROFILE holds a thread, written in its book before it
//     goes on (BookHeld): an exit takes out what was held since its entry;
//   - the cost of the code, taken out of the figures at the end: the
//     code counts, with each function's calls, the calls they made and
//     the calls made beneath its outermost calls, so that what lies
//     inside each measured interval is a sum linear in the cost of a
//     call's code (books.Costs), which PROFILE measures in the run: the
//     samples of the threads' program counters in its own code, over the
//     calls (owncode.go), or where there are none, alone at start-up
//     (calibrate);
//   - the figures, read at a thread's signals, when it ends (its open
//     calls closed at its end), at an exec and at the end of the run, and
//     given to the run's books (books.Books.Add).
//
// A thread's book is in its block (amd64), or in its area of the stack
// table (arm64: layout.Layout.BookMem), which the code finds from the
// stack pointer; there a vfork child, on its parent's stack, books into
// its parent's book, which PROFILE keeps at the vfork and puts back
// (vforking).
//
// The books are kept so for function counting with a start function or
// caller stacks too: the counts are the books' calls. The rings (ring.go)
// stay for the runs that need every event, a trace, and for Go on arm64
// and programs that mix Go and C.

// ledgers is the part of a run whose books are kept in the program.
type ledgers struct {
	ledgerEnv
	counters *counters
	// open are the books of the blocks in use, block 0's (the
	// discard's) included; blockOf the block of each thread given one,
	// kept until the thread's book is read (the counters take the block
	// back first).
	open    map[int]*books.ProgramBook
	blockOf map[int]int
	// seen holds when PROFILE saw each stopped thread stop (stopSeen).
	seen map[int]seenStop
	// vforks holds the book of each thread that made a vfork child, as
	// it was then (vforking).
	vforks map[int]*books.ProgramBook
	// stacks holds the bounds of the stack of each block's thread, for
	// the closer (given); made the calls each block's thread made so
	// far, for the code's cost (debt).
	stacks map[int][2]uint64
	made   map[int]uint64
	// scale turns the counter's ticks into the books' nanoseconds
	// (instr.BookScale).
	scale uint64
	ledgerCosts
	// closer is the address of the word that holds the closer's in the
	// program (instr.Book.Closer), 0 where there is none.
	closer, closerSize uint64
	// stops counts the events the code left to PROFILE; damaged the
	// books found written over by the program (damage.go).
	stops   uint64
	damaged int
	// The figures of the threads that ended, and of their caller stacks,
	// by path, made the run's stacks at the end (runBooks.StackFor).
	figs  []books.Figure
	paths *books.Paths
	depth int
	// runBooks are the run's books, which get the figures at the end.
	runBooks *books.Books
	// gos keeps the goroutines' books, where the functions are Go's
	// (ledger_go.go).
	gos goLedgers
	// cpu measures the threads' waits (ledger_waits.go).
	cpu offCPU
}

// ledgerEnv is what the books in the program read and call of the run.
type ledgerEnv struct {
	arch    instr.Arch
	proc    process
	plan    *datafile.Plan
	threads map[int]*thread
	regs    *ptrace.Regs
	clocks  *clocks
	host    ringHost
	where   books.StackFinder
	mem     instr.Memory
	// sys makes a stopped thread of the program run a system call.
	sys func(tid int, call instr.Syscall, args ...uint64) (uint64, error)
}

// Two functions past the plan's have figures in every book: the
// calibration's (calibrate).
const (
	calOuter = iota
	calInner
	calFuncs
)

// newLedgers returns the books in the program of t's run.
func newLedgers(t *tracer) *ledgers {
	n := len(t.plan.Funcs)
	l := &ledgers{ledgerEnv: ledgerEnv{arch: t.arch, proc: t.proc, plan: t.plan, threads: t.threads, regs: &t.regs,
		clocks: &t.clocks, host: t, mem: t.mem, sys: func(tid int, call instr.Syscall, args ...uint64) (uint64, error) {
			return syscallIn(t, tid, call, args...)
		}}, open: map[int]*books.ProgramBook{}, blockOf: map[int]int{}, seen: map[int]seenStop{}, vforks: map[int]*books.ProgramBook{}, stacks: map[int][2]uint64{}, made: map[int]uint64{},
		figs: make([]books.Figure, n), runBooks: t.parts.books}
	l.gos = goLedgers{l: l, on: goTimed(t.arch, t.plan)}
	l.cpu = newOffCPU(t.plan.Method.IsTiming() && !t.cfg.NoCPUTime && !slices.ContainsFunc(t.plan.Funcs, func(f datafile.Func) bool { return f.Frame != datafile.FrameSP }),
		n, t.plan.Attribution)
	l.gos.reset()
	if t.parts.books != nil {
		l.where = t.parts.books.Where
	}
	return l
}

// booksInProgram is unset by the tests of the rings, for runs that
// would otherwise keep their books in the program.
var booksInProgram = true

// ledgerPossible reports whether t's run can keep its books in the
// program: it profiles functions (timing them, or counting them with a
// start function or caller stacks: the books' calls are the counts),
// needs no event of theirs one by one (no trace), they are all keyed by
// the stack pointer, or all Go functions (their goroutines' books:
// ledger_go.go) whose counter, where they are timed, is one clock across
// CPUs, in a program that leaves the thread pointer to PROFILE where the
// code finds the thread's book through it (arm64: caps.go), and the
// architecture has book code (with caller stacks, for attribution).
func ledgerPossible(t *tracer) bool {
	p := t.plan
	if !booksInProgram || !p.Method.IsFunction() || t.parts.trace != nil || len(p.Funcs) == 0 {
		return false
	}
	if slices.ContainsFunc(p.Funcs, func(f datafile.Func) bool { return f.Frame != datafile.FrameSP }) &&
		(!goTimed(t.arch, p) || (t.arch.GoRecordsNeedThreadPointer() && !t.caps.threadPointer) ||
			(p.Method.IsTiming() && !t.clocks.ctr.oneClock(t.arch, p, t.cfg.Warn))) {
		return false
	}
	_, ok := t.arch.BookEntryCode(probeBook(p, false), 0)
	return ok
}

// probeBook is a book of plan p's run, with caller stacks for
// attribution, a goroutine's where goroutine is set, for asking the
// architecture whether it has the code.
func probeBook(p *datafile.Plan, goroutine bool) instr.Book {
	b := instr.Book{Frames: depthSlots, Funcs: len(p.Funcs) + calFuncs, Table: 1 << 32, Areas: 1 << 33, Go: goroutine}
	if p.Attribution {
		b.Nodes = nodesPerBook
	}
	return b
}

// bookFuncs is the number of functions a book has figures for.
func (l *ledgers) bookFuncs() int { return len(l.plan.Funcs) + calFuncs }

// bookNodes is the number of caller stacks a book has room for: none
// without attribution (/AT).
func (l *ledgers) bookNodes() int {
	if !l.plan.Attribution {
		return 0
	}
	return nodesPerBook
}

// nodesPerBook is the number of caller stacks of a book, with attribution:
// a thread that takes more paths of calls stops at the next new one, its
// figures moved out (books.ProgramBook: renode), and again at each path
// it takes again. A book's nodes take 96 bytes each (their figures, and
// two slots of the table).
var nodesPerBook = 1 << 13

// start takes counters, just mapped, as the memory of the books: the
// discard block's book starts empty too. The books' scale is the
// counter clock's, measured over 2 ms at least: a pair of readings is
// good to some tens of nanoseconds, a scale of 1e-5 or better.
func (l *ledgers) start(c *counters) {
	l.counters = c
	if !l.plan.Method.IsTiming() {
		l.openBook(0) // (the code reads no counter: no scale)
		return
	}
	l.scale = l.clocks.bookScale()
	l.openBook(0)
}

// now returns the books' time of the moment ns of PROFILE's clock:
// the counter read now, scaled as the books' code scales it, less the
// time since then (a short time, in which the two clocks cannot part);
// 0 in a run that times nothing, as the code's (instr.Book.Untimed).
func (l *ledgers) now(ns int64) uint64 {
	if l.scale == 0 {
		return 0
	}
	hi, lo := bits.Mul64(ptrace.Counter(), l.scale)
	return (hi<<(64-instr.BookScaleShift) | lo>>instr.BookScaleShift) - uint64(max(l.clocks.clock()-ns, 0))
}

// openBook starts block b's book empty, for a new thread.
func (l *ledgers) openBook(b int) *books.ProgramBook {
	c := l.counters
	p := books.NewProgramBook(c.layout.BookMem(c.shared.Bytes(), b), l.bookOfBlocks())
	p.SetScale(l.scale)
	if st, ok := l.stacks[b]; ok {
		p.SetStack(st[0], st[1])
	}
	p.Where = l.where
	l.open[b] = p
	return p
}

// given opens the book of block b, given to thread tid
// (counters.giveBlock; owned: the thread's own, not shared).
func (l *ledgers) given(tid, b int, owned bool) {
	l.blockOf[tid] = b
	if !owned {
		return
	}
	// (The thread's stack, for the closer: the mapping its stack
	// pointer is in.)
	delete(l.stacks, b)
	var regs ptrace.Regs
	if l.where != nil && l.proc.getRegs(tid, &regs) == nil {
		if lo, hi, ok := l.where.StackAt(l.arch.SP(&regs)); ok {
			l.stacks[b] = [2]uint64{lo, hi}
		}
	}
	clockPages{l}.mapPage(l.threads[tid], b, l.openBook(b), inCode{l}.stopTime(l.threads[tid]))
}

// bookOf returns the book of thread tid's block, checked: a thread
// beyond the blocks, or a foreign one, writes in the discard's.
func (l *ledgers) bookOf(tid int) (int, *books.ProgramBook) {
	b := l.blockOf[tid]
	p := l.open[b]
	if p == nil {
		p = l.openBook(b)
	}
	l.check(p)
	return b, p
}

// bookFor returns the book the code of thread tid finds where its stack
// pointer is sp: its block's (amd64), or the book of the area the stack
// table gives sp (arm64): the thread's own, but on a stack PROFILE gave
// no area (a signal's alternate stack, a coroutine's), the discard's.
func (l *ledgers) bookFor(tid int, sp uint64) (int, *books.ProgramBook) {
	c := l.counters
	if !c.layout.Table {
		return l.bookOf(tid)
	}
	b := c.tableArea(sp)
	p := l.open[b]
	if p == nil {
		p = l.openBook(b)
	}
	l.check(p)
	return b, p
}

// check takes book p back where the program wrote over it: as it was at
// its thread's last signal, or empty (books.ProgramBook.Restore).
func (l *ledgers) check(p *books.ProgramBook) {
	if p.Damaged() {
		l.damaged++
		p.Restore()
	}
}

// take takes the figures of book p, its thread's block b, into the
// run's, and counts the calls for the code's cost (debt).
func (l *ledgers) take(b int, p *books.ProgramBook) {
	p.Take(func(fn int, f books.Figure) {
		l.add(fn, f)
		l.made[b] += f.Calls
	})
	if l.bookNodes() > 0 && l.runBooks != nil {
		if l.paths == nil {
			l.paths = books.NewPaths()
		}
		p.TakeNodesInto(l.paths)
	}
}

// debt notes what the code cost thread th, whose book, block b's, is
// read for the last time: a call's cost for each of its calls, taken
// out of its clock as it ends (clocks.closeThreadBooks, after this); the
// run's time has the most any thread paid taken out (the threads that
// ran side by side paid theirs at the same time), as the rings' have
// (clocks.elapsed). The calibrated cost is taken out then, and what the
// run measured beyond it at the end (ended: clocks.perCall).
func (l *ledgers) debt(th *thread, b int) {
	if th != nil {
		th.made = l.made[b]
		th.debt = float64(th.made) * l.calibrated.Call()
	}
	delete(l.made, b)
}

// signalled keeps what the book of thread th, stopped for a signal,
// holds: its figures added to the run's, its frames kept to take it back
// from, should the program write over it (a signal is where a program's
// own code often runs next what it would not otherwise: a handler, a
// crash's).
func (l *ledgers) signalled(th *thread) {
	if th.foreign || l.counters == nil {
		return
	}
	b, p := l.bookOf(th.tid)
	if b == 0 {
		return
	}
	l.take(b, p)
	p.Snapshot()
}

// add adds the figures of function fn to the run's.
func (l *ledgers) add(fn int, f books.Figure) {
	if fn < len(l.figs) {
		l.figs[fn].Add(f)
	}
}

// stop handles a thread stopped at the breakpoint of book code: the
// event is booked here, and the thread goes on at the code's end.
func (l *ledgers) stop(th *thread, addr uint64) (bool, error) {
	if !(inCode{l}).pass(th, addr) {
		return false, nil
	}
	return true, l.host.setAndResume(th, 0)
}

// passStop is pass for a thread PROFILE single-steps (its registers in
// l.regs, written back).
func (l *ledgers) passStop(th *thread) bool {
	if !(inCode{l}).pass(th, l.arch.BreakpointAddr(l.regs.PC())) {
		return false
	}
	l.proc.setRegs(th.tid, l.regs)
	return true
}

// book books the event of breakpoint site s, hit by thread th, in its
// book, at the stop's time on the counter (clocks.book).
func (l *ledgers) book(th *thread, s *site) {
	sp := l.arch.SP(l.regs)
	c := l.clocks
	now := l.now(c.waited - c.stopCost(th)/2)
	if p, _, ok := l.heldBooks(th); ok {
		clockPages{l}.settle(th, p, now, true) // (PROFILE cannot read the page: read the CPU time)
	}
	if s.item >= 0 {
		p, key := l.gos.frame(th, s.item, sp)
		p.Enter(s.item, key, now)
	}
	if s.exit >= 0 {
		p, key := l.gos.frame(th, s.exit, sp)
		p.Exit(s.exit, key, now)
	}
}

// vforking keeps, where books are found from the stack pointer (arm64),
// the book of thread th, which has made a vfork child: the child runs on
// th's stack, so its calls go into th's book, until th's vfork-done stop
// (vforkHook).
func (l *ledgers) vforking(th *thread) {
	if l.counters == nil || !l.counters.layout.Table || th.foreign {
		return
	}
	if b, ok := l.blockOf[th.tid]; ok && b != 0 && l.open[b] != nil {
		l.vforks[th.tid] = l.open[b].Copy()
	}
}

// vforkDone gives thread th its book back as it was at its vfork: what
// was booked since is its vfork child's, th having not run meanwhile.
func (l *ledgers) vforkDone(th *thread) {
	kept, ok := l.vforks[th.tid]
	delete(l.vforks, th.tid)
	if b := l.blockOf[th.tid]; ok && l.open[b] != nil {
		l.open[b].Become(kept)
	}
}

// threadBorn has nothing to do: a thread's book is opened with its block
// (counters.giveBlock).
func (l *ledgers) threadBorn(int, bool) error { return nil }

// threadEnded closes the open calls of thread tid at its end and keeps
// its book's figures: its block may be another thread's next
// (threadHook).
func (l *ledgers) threadEnded(tid int) {
	th := l.threads[tid]
	b, ok := l.blockOf[tid]
	delete(l.blockOf, tid)
	l.gos.left(b)
	if th == nil || th.foreign || !ok || b == 0 {
		return
	}
	if p := l.open[b]; p != nil {
		l.check(p)
		end := l.now(l.clocks.stopped(th))
		clockPages{l}.settle(th, p, end, true)
		delete(l.cpu.marks, tid)
		p.CloseAll(end)
		l.keep(b, p)
		l.debt(th, b)
		delete(l.open, b)
	}
}

// keep adds the figures of book p, block b's, to the run's, its
// thread's last.
func (l *ledgers) keep(b int, p *books.ProgramBook) {
	l.take(b, p)
	l.depth = max(l.depth, p.Depth())
}

// ended gives the run's books the figures of every book, the calls
// still open closed at the run's end, before the books' clocks close
// the threads left and make the run's figures (endHook).
func (l *ledgers) ended() {
	end := l.now(l.clocks.waited)
	owner := map[int]*thread{}
	for tid, b := range l.blockOf {
		owner[b] = l.threads[tid]
	}
	for b, p := range l.open {
		if b != 0 {
			// (On a copy: a process PROFILE let go runs on, and its
			// open calls with it.)
			l.check(p)
			at := end
			if th := owner[b]; th != nil {
				if th.ended != 0 {
					at = l.now(th.ended) // (its life ended at its exit stop)
				}
				clockPages{l}.settle(th, p, at, true)
			}
			q := p.Copy()
			q.CloseAll(at)
			l.keep(b, q)
			l.debt(owner[b], b)
		}
	}
	l.gos.ended(end)
	if p := l.open[0]; p != nil {
		p.Take(func(_ int, f books.Figure) { l.discarded += f.Calls })
	}
	l.open = map[int]*books.ProgramBook{}
	bk := l.runBooks
	if bk == nil {
		return
	}
	costs := l.costs()
	l.clocks.lives.perCall = costs.Call() - l.calibrated.Call()
	l.clocks.calculated = int64(math.Round(costs.Call() / 2)) // (an event's cost, as the report gives it)
	figs, inside := costs.CorrectedAll(l.figs)
	for fn, f := range figs {
		if f != (books.Figure{}) {
			bk.Add(fn, f.Calls, f.Self, f.All)
		}
	}
	if l.paths != nil {
		// (Each path once, however many books had it.)
		l.paths.Take(func(path []int, f books.Figure) {
			if slices.ContainsFunc(path, func(fn int) bool { return fn >= len(l.figs) }) {
				return // (the calibration's)
			}
			f = costs.Corrected(f)
			bk.AddStack(bk.StackFor(path), f.Calls, f.Self, f.All)
		})
	}
	bk.AddInside(inside, l.depth)
	if l.cpu.on {
		self, all := make([]int64, len(l.plan.Funcs)), make([]int64, len(l.plan.Funcs))
		for fn := range self {
			self[fn], all[fn] = figs[fn].Self, figs[fn].All
		}
		l.cpu.waits.Give(bk, self, all)
	}
	clear(l.figs)
}

// execed reads the books a last time as the program's image is
// replaced: its calls open end there, and profiling with them
// (execHook).
func (l *ledgers) execed() { l.ended() }

// collect gives the run's result the events the code left to PROFILE.
func (l *ledgers) collect(res *Result) {
	res.Books, res.BookStops, res.ClockStops = true, l.stops, l.cpu.stops
}

// plant has nothing to plant: the book code is written by the entries'
// and the exits' trampolines (entryTrampolines, exitPatches).
func (l *ledgers) plant(*planting) error { return nil }

// forget has nothing to do: a module's trampolines go with the counters.
func (l *ledgers) forget(lo, hi uint64) {}
