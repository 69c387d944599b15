package profile

import (
	"encoding/binary"
	"maps"
	"slices"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/profile/books"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// The books of goroutines (issue 33, part 4; docs/architecture.md,
// "Goroutines' books"). A goroutine runs on whichever thread is free,
// and its stack moves as it grows, so the calls of a Go function are
// kept in the book of the goroutine that makes them (instr.Book.Go), not
// of the thread: a table of books like the threads', after the blocks
// (layout.Layout.GoBookMem), one for each goroutine PROFILE gives one.
// A frame's key is its distance from the goroutine's stack top, less,
// which the copying of a stack does not change.
//
// The code finds a goroutine's book through the thread's block, which
// caches the last goroutine whose book the thread used (instr.BookCurG).
// Where the thread runs another goroutine, the event is PROFILE's: it
// finds the goroutine's book, or gives it the next, writes both in the
// thread's block, and books the event. A goroutine's book is its own
// for the life of the program's image (a g the runtime uses again for
// a new goroutine keeps it: the new one's first calls close what the
// old one left open, by the stack pointer rules). Past the table, a
// goroutine's events are all PROFILE's, in a book of its own memory.
//
// What PROFILE held a thread is added to its block's book and to the
// book of the goroutine it runs (held): the one its registers name, or
// else the one whose event PROFILE booked last on its block. Frames still open at the end close at
// their goroutine's last event, as the rings' (books.Books.Finish): a
// goroutine's end is not seen. Their time is taken from the holds
// before that event alone (goLedgers.hold).

// goBooksPerRun is the number of goroutines' books in the table: the
// goroutines that make calls in a run, at most, before PROFILE books
// the events of the others itself.
var goBooksPerRun = 256

// goStackSize bounds the keys of a goroutine's frames for its closer:
// their distances from its stack top, less, are from -goStackSize to 0
// (Go's stacks are at most 1 GiB on 64-bit systems; goStackTop).
const goStackSize = 1 << 40

// goLedgers is the ledgers' part that keeps the goroutines' books.
type goLedgers struct {
	l *ledgers
	// on is set where the functions are Go's, whose calls are kept in
	// their goroutines' books; closer is the address of the word that
	// holds the goroutines' closer's (instr.Book.Closer), 0 for none.
	on     bool
	closer uint64
	// of is the book of each goroutine given one, by its g; open the
	// books given, by number; over the books of the goroutines past the
	// table, in PROFILE's memory.
	of   map[uint64]int
	open map[int]*books.ProgramBook
	over map[uint64]*books.ProgramBook
	// last is the goroutine of each block's last event PROFILE booked,
	// and ranOn the block of each goroutine's (held).
	last  map[int]uint64
	ranOn map[uint64]int
	// quiet is, for a goroutine's book held since its last event, that
	// event's time and what the book had held before it (hold).
	quiet map[*books.ProgramBook]heldMark
}

// heldMark is a goroutine book's last event's time (LastTime) and the
// time PROFILE had held it then (Held).
type heldMark struct{ last, held uint64 }

// goTimed reports whether the run's functions are Go's, each with its
// goroutine register known (Go's internal ABI, not assembly: goFrames),
// and the architecture keeps goroutines' books.
func goTimed(arch instr.Arch, plan *datafile.Plan) bool {
	if arch == nil || plan == nil {
		return false
	}
	for _, f := range plan.Funcs {
		if !goFrames(&f) {
			return false
		}
	}
	_, ok := arch.BookEntryCode(probeBook(plan, true), 0)
	return ok && len(plan.Funcs) > 0
}

// count is the number of goroutines' books of the run's layout.
func (gl *goLedgers) count() int {
	if !gl.on {
		return 0
	}
	return goBooksPerRun
}

// book returns the book of goroutine g, run by thread th, and caches
// it in the thread's block for its code (instr.BookCurG).
func (gl *goLedgers) book(th *thread, g uint64) *books.ProgramBook {
	l := gl.l
	c := l.counters
	lay := &c.layout
	b := 0 // (no thread: none, as the discard's)
	if th != nil {
		b = l.blockOf[th.tid]
		gl.last[b], gl.ranOn[g] = g, b
	}
	i, ok := gl.of[g]
	if !ok && len(gl.of) < lay.GoBooks {
		i, ok = len(gl.of), true
		gl.of[g] = i
		p := books.FreshProgramBook(lay.GoBookMem(c.shared.Bytes(), i), l.bookOfBlocks())
		p.SetScale(l.scale)
		p.SetStack(^uint64(goStackSize-1), 0) // (-goStackSize)
		gl.open[i] = p
	}
	if !ok {
		p := gl.over[g]
		if p == nil {
			bk := l.bookOfBlocks()
			p = books.NewProgramBook(make([]byte, bk.Offset+bk.Size()), bk)
			gl.over[g] = p
		}
		return p
	}
	if b != 0 {
		// (Not the discard's block, which threads share.)
		at := lay.BookMem(c.shared.Bytes(), b)[lay.Book().Offset:]
		binary.LittleEndian.PutUint64(at[instr.BookCurG:], g)
		binary.LittleEndian.PutUint64(at[instr.BookCurBook:], lay.GoBookBase(i))
	}
	p := gl.open[i]
	l.check(p)
	return p
}

// frame returns the book and the frame's key of an event of Go
// function fn at a stop of thread th, its stack pointer sp (its entry's):
// the goroutine's, keyed by sp's distance from the goroutine's stack
// top; the thread's and sp where the goroutine register names no
// goroutine whose stack holds sp.
func (gl *goLedgers) frame(th *thread, fn int, sp uint64) (*books.ProgramBook, uint64) {
	l := gl.l
	if fn < len(l.plan.Funcs) && gl.on && goFrames(&l.plan.Funcs[fn]) {
		g := l.arch.Goroutine(l.regs)
		if hi, ok := goStackTop(l.mem, g, sp); ok {
			return gl.book(th, g), sp - hi
		}
	}
	_, p := l.bookFor(th.tid, sp)
	return p, sp
}

// held returns the book of the goroutine thread th, its block b, is
// running, which the time PROFILE holds the thread is taken from: the
// goroutine its registers name (r14) where its stack holds the thread's
// stack pointer (a thread in the runtime's own code, on its g0 or
// signal stack, runs none), or else the goroutine whose event PROFILE
// booked last on the block, where it has not been seen on another block
// since; nil for none.
func (gl *goLedgers) held(th *thread, b int) *books.ProgramBook {
	if !gl.on {
		return nil
	}
	if p := gl.running(th); p != nil {
		return p
	}
	g, ok := gl.last[b]
	if !ok || gl.ranOn[g] != b {
		return nil
	}
	return gl.bookOf(g)
}

// running returns the book of the goroutine stopped thread th runs, as
// its registers name it, nil for none known.
func (gl *goLedgers) running(th *thread) *books.ProgramBook {
	l := gl.l
	var regs ptrace.Regs
	if l.proc == nil || l.mem == nil || l.proc.getRegs(th.tid, &regs) != nil {
		return nil
	}
	g := l.arch.Goroutine(&regs)
	if _, ok := goStackTop(l.mem, g, l.arch.SP(&regs)); !ok {
		return nil
	}
	return gl.bookOf(g)
}

// bookOf returns the book goroutine g was given, nil for none.
func (gl *goLedgers) bookOf(g uint64) *books.ProgramBook {
	if i, ok := gl.of[g]; ok {
		return gl.open[i]
	}
	return gl.over[g]
}

// hold adds held, a hold of a thread that runs (or ran last) the
// goroutine of book p, to p's, and notes what p had held at its last
// event where the hold comes after it: frames still open at the end
// close at their goroutine's last event (ended), and a hold after it,
// of a thread running others or none (the goroutine may have ended),
// is not theirs.
func (gl *goLedgers) hold(p *books.ProgramBook, held uint64) {
	last := p.LastTime()
	if m, ok := gl.quiet[p]; !ok || m.last != last {
		gl.quiet[p] = heldMark{last: last, held: p.Held()}
	}
	p.SetHeld(p.Held() + held)
}

// left forgets the goroutine booked last on block b, whose thread has
// ended: the block's next thread runs others.
func (gl *goLedgers) left(b int) { delete(gl.last, b) }

// ended closes the calls still open in the goroutines' books, each at
// its goroutine's last event (before end), and keeps their figures, and counts the code's cost of the
// goroutine that made the most calls against the run's time, as a
// thread's (clocks.elapsed): the goroutines that ran side by side paid
// theirs at the same time.
func (gl *goLedgers) ended(end uint64) {
	l := gl.l
	if !gl.on {
		return
	}
	each := func(key int, p *books.ProgramBook) {
		l.check(p)
		q := p
		if p.Open() > 0 {
			// (On a copy, as a thread's: a process PROFILE let go runs
			// on. Most goroutines have ended: their books, large, are
			// read where they are.)
			q = p.Copy()
			if m, ok := gl.quiet[p]; ok && m.last == p.LastTime() {
				q.SetHeld(m.held) // (the holds since its last event: hold)
			}
			q.CloseAll(min(end, p.LastTime()))
		}
		l.keep(key, q)
		made := l.made[key]
		delete(l.made, key)
		if debt := float64(made) * l.calibrated.Call(); debt >= l.clocks.debt {
			l.clocks.debt, l.clocks.lives.debtMade = debt, made
		}
	}
	// (In the order the books were given, and the goroutines past the
	// table by g: the run's stacks in an order no map's.)
	for _, i := range slices.Sorted(maps.Keys(gl.open)) {
		each(goKey(i), gl.open[i])
	}
	k := len(gl.open)
	for _, g := range slices.Sorted(maps.Keys(gl.over)) {
		each(goKey(k), gl.over[g])
		k++
	}
	gl.reset()
	if l.runBooks != nil {
		l.runBooks.TimedGoroutines()
	}
}

// goKey is the key of goroutine book i among the blocks' (ledgers.made).
func goKey(i int) int { return -1 - i }

// reset forgets the books given: the image they were in is gone.
func (gl *goLedgers) reset() {
	gl.of, gl.open, gl.over = map[uint64]int{}, map[int]*books.ProgramBook{}, map[uint64]*books.ProgramBook{}
	gl.last, gl.ranOn = map[int]uint64{}, map[uint64]int{}
	gl.quiet = map[*books.ProgramBook]heldMark{}
}

// entered is how many calls of function k the goroutines' books hold,
// ended and open.
func (gl *goLedgers) entered(k int) uint64 {
	var n uint64
	c := gl.l.counters
	for i := range gl.open {
		n += c.layout.GoEntered(c.shared.Bytes(), i, k)
	}
	for _, p := range gl.over {
		n += p.Figure(k).Calls // (its calls ended: enough to tell a first hit)
	}
	return n
}
