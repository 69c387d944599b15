// Package books keeps PROFILE's books of timed calls: from the entries
// and exits of profiled functions, thread by thread (or goroutine by
// goroutine), each call's time, its caller stack and the call depth.
//
// The books keep what function timing, the start function (/SF) and
// attribution (/AT) need beyond a count per function: for every thread (or,
// in Go, every goroutine) the stack of its profiled calls, each with the
// stack pointer of its entry and the time it began. From those stacks come
// each call's time, its caller stack, and the call depth. They are written
// from events, an entry or an exit of a profiled function in one thread at
// one time, and know nothing of how the events were caught.
//
// Rules, for a stack that never hears of some of its returns (a longjmp, an
// exception, a Go panic, an exit through an indirect or conditional jump):
//
//   - A frame whose entry stack pointer is at or below a new entry's has
//     returned: a callee's entry is always deeper than its caller's. It is
//     closed at the time of that event.
//   - An exit closes the frames deeper than its stack pointer, then the
//     frame whose entry had that stack pointer, if it is the function's.
//     An exit deeper than the top frame (a jump to a function's cold part,
//     which looks like a tail call but keeps the frame) closes nothing.
//   - When a thread ends its frames close at its end; frames still open at
//     the end of the run close at their stack's last event.
//
// Stack pointers are compared only on one stack. A thread may run on
// several: a signal handler on an alternate signal stack, a coroutine on a
// stack of its own (swapcontext). Where the books are told which mapping
// an address is in (Books.Where: PROFILE, from the memory map), a
// thread's frames are in stretches, each on one mapping (segment); the
// rules above hold within the stretch of the event's stack:
//
//   - An entry on a stack the frames are not on starts a stretch: its
//     frame nests in the frame it interrupted or switched from, as a
//     handler's does on the thread's own stack.
//   - An event on the stack of a stretch under the top one means the
//     thread is back there (the handler returned, the coroutine switched
//     back): the frames above that stretch close at that event.
//   - An exit on a stack none of the frames is on closes nothing.
//
// Stacks in one mapping (coroutine stacks carved from one allocation)
// are one stack to these rules. A goroutine's frames, and the frames of
// functions not keyed by their stack pointer (Go), are not told apart:
// they are compared with every frame, as where the mappings are not known.
//
// A goroutine's ledger also holds the C frames of its cgo calls (the
// tracer books there a thread's C calls made while it runs the
// goroutine), and the Go frames of the callbacks those make: runs of
// frames of one kind, Go's keyed by their distance from the goroutine's
// stack top, C's by the stack pointer of the thread's system stack, two
// keys that say nothing of each other. The rules above hold within the
// latest run of the event's kind (runFloor):
//
//   - An entry of the other kind than the top run's, deeper than the top
//     frame of the latest run of its kind (or the first of its kind),
//     starts a run: a C function called by Go, a Go function called back
//     by C, nested in the frame below.
//   - An event of that kind that is not deeper is back in that run, or
//     in one below: the frames above close (their exits were not seen).
//
// Times are in nanoseconds of a clock that stops while the thread is
// stopped by PROFILE (the tracer removes that time before an event gets
// here). That clock is an estimate, which may step back by less than an
// event's cost: each stack's time is kept from going back, so that no
// time is ever negative and every frame's time is the sum of its own and
// its children's.
package books

import (
	"slices"

	"github.com/sourceprofiler/sprof/datafile"
)

// Books are the books of one run (see the package's comment).
type Books struct {
	// start is the /SF function's index: only calls made while it is on
	// the stack count. -1: no start function, everything counts. noStart:
	// a start function was asked for and not found, nothing counts.
	start int
	// attribution is /AT; levels is /STACK (0: unlimited).
	attribution bool
	levels      int

	hits       []uint64
	self, all  []int64
	depth      int
	inside     int64 // time within outermost frames
	goroutines bool  // set once a goroutine's ledger is opened
	// waits are the times off a CPU inside the calls, where the run
	// measured them (Waits.Give), else nil.
	waits      *datafile.WaitStats
	stacks     []datafile.Stack
	stackIndex map[stackKey]int
	// steps finds a call's caller stack from its caller's: the stack
	// (books.stacks) of a call of fn made from a frame whose stack is
	// from (-1: from the stack base). See stackOf.
	steps map[step]int
	// lastStep holds, for each caller stack (from+1), the last step
	// from it: most calls from a frame are of the function it called
	// last (a loop), found without hashing.
	lastStep []cachedStep
	// hashed counts the callers hashed into stack keys: what finding
	// new stacks costs (TestBooksDeepStackCost).
	hashed  int
	ledgers map[Key]*Ledger
	// where tells which mapping an address is in, for the rules of
	// stacks (nil: every thread's frames are taken as on one stack);
	// noSP marks the functions whose frames are not keyed by the stack
	// pointer (Go's), whose events are not told apart by stack (nil:
	// none).
	Where StackFinder
	noSP  []bool
	// trace, when not nil, receives every call and return booked
	// (profile /TRACE).
	Trace *datafile.TraceWriter
}

// StackFinder tells which mapping holds an address.
type StackFinder interface {
	// StackAt returns the bounds of the mapping that holds sp; ok is
	// false where none is known to.
	StackAt(sp uint64) (lo, hi uint64, ok bool)
}

// segment is a stretch of a ledger's frames, from its first to the next
// segment's, entered on one stack: the mapping from lo to hi (none known
// when lo and hi are 0). A mapping is known by its end, which stays where
// it is when a stack grows.
type segment struct {
	lo, hi uint64
	first  int
}

// step is a call of fn from a frame whose caller stack is from.
type step struct {
	from, fn int
}

// noStart is books.start when the start function was not found.
const noStart = -2

// Key names the owner of one stack of calls: a thread, by its ID, or
// a goroutine, by the address of its g.
type Key struct {
	Goroutine bool
	ID        uint64
}

// Ledger is the stack of profiled calls of one thread or goroutine.
type Ledger struct {
	frames []frame
	// open counts the frames of each function on the stack: the
	// function+child time of a recursive function is its outermost
	// frame's, not the sum of every level's. A slice indexed by
	// function where the plan has few enough (events are booked at tens
	// of millions a second), else a map.
	open    []int32
	openMap map[int]int
	last    int64 // the time of its last event
	// split is set when its frames are told apart by stack: a thread's
	// whose books know the mappings. segs are then its stretches of
	// frames, bottom first; the bottom one stays, empty, when the
	// frames are gone: the stack the thread was on last.
	split bool
	segs  []segment
	// traced is its owner in the trace (nil: no trace).
	traced *datafile.TraceOwnerState
	// goroutine marks a goroutine's ledger, whose frames are in runs of
	// Go's and C's (runFloor), bottom first.
	goroutine bool
	runs      []kindRun
}

// kindRun is a stretch of a goroutine's frames, from first to the next
// run's, all of Go functions or all of C functions (c).
type kindRun struct {
	first int
	c     bool
}

// maxOpenSlice is the most functions for which a ledger's open counts
// are a slice.
const maxOpenSlice = 1 << 14

// opened adds d to the frames of fn open and returns how many are.
func (l *Ledger) opened(fn, d int) int {
	if l.open != nil {
		l.open[fn] += int32(d)
		return int(l.open[fn])
	}
	n := l.openMap[fn] + d
	if n == 0 {
		delete(l.openMap, fn)
	} else {
		l.openMap[fn] = n
	}
	return n
}

// frame is one profiled call in progress.
type frame struct {
	fn    int
	sp    uint64 // the stack pointer at entry (a frame key: see Frame)
	begun int64
	// children is the time spent in the profiled calls it made.
	children int64
	// stack indexes books.stacks (attribution), or is -1.
	stack int
}

// stackKey identifies one caller stack: the function and the hash of its
// chain of callers (up to /STACK levels).
type stackKey struct {
	fn   int
	hash uint64
}

// New returns the books of a run of plan p: its functions, start
// function (/SF), attribution (/AT) and its depth (/STACK).
func New(p *datafile.Plan) *Books {
	n := len(p.Funcs)
	b := &Books{
		start:       -1,
		attribution: p.Attribution,
		levels:      p.StackDepth,
		hits:        make([]uint64, n),
		self:        make([]int64, n),
		all:         make([]int64, n),
		stackIndex:  map[stackKey]int{},
		steps:       map[step]int{},
		ledgers:     map[Key]*Ledger{},
	}
	for i, f := range p.Funcs {
		if f.Frame != datafile.FrameSP {
			if b.noSP == nil {
				b.noSP = make([]bool, n)
			}
			b.noSP[i] = true
		}
	}
	if p.StartFunc != "" {
		b.start = p.StartIndex
		if b.start < 0 {
			b.start = noStart
		}
	}
	return b
}

// tick returns the time of an event of l at now, never before its last.
func (l *Ledger) tick(now int64) int64 {
	if now < l.last {
		return l.last
	}
	l.last = now
	return now
}

// Ledger returns the ledger of k, opened at its first event.
func (b *Books) Ledger(k Key) *Ledger {
	l := b.ledgers[k]
	if l == nil {
		l = &Ledger{split: b.Where != nil && !k.Goroutine, goroutine: k.Goroutine}
		b.goroutines = b.goroutines || k.Goroutine
		if b.Trace != nil {
			l.traced = b.Trace.Owner(datafile.TraceOwner{Goroutine: k.Goroutine, ID: k.ID})
		}
		if n := len(b.hits); n <= maxOpenSlice {
			l.open = make([]int32, n)
		} else {
			l.openMap = map[int]int{}
		}
		b.ledgers[k] = l
	}
	return l
}

// Enter records a call of fn, whose entry had stack pointer sp, at time
// now.
func (b *Books) Enter(k Key, fn int, sp uint64, now int64) {
	b.EnterLedger(b.Ledger(k), fn, sp, now)
}

// EnterLedger is Enter for l, the ledger of k.
func (b *Books) EnterLedger(l *Ledger, fn int, sp uint64, now int64) {
	now = l.tick(now)
	floor, on := b.onStack(l, fn, sp, now)
	nested := false
	if l.goroutine {
		floor, nested = b.runFloor(l, fn, sp, now, false)
	}
	// Frames at or above sp have returned unseen.
	for len(l.frames) > floor && l.frames[len(l.frames)-1].sp <= sp {
		b.close(l, now)
	}
	if len(l.frames) == 0 && b.start != -1 && fn != b.start {
		return // the start function is not active here
	}
	if l.split {
		l.stretch(on)
	}
	if nested {
		l.runs = append(l.runs, kindRun{first: len(l.frames), c: b.keyedBySP(fn)})
	}
	b.hits[fn]++
	stack := -1
	if b.attribution {
		stack = b.callerStack(l, fn)
		b.stacks[stack].Hits++
	}
	l.frames = append(l.frames, frame{fn: fn, sp: sp, begun: now, stack: stack})
	l.opened(fn, 1)
	if l.traced != nil {
		b.Trace.Event(l.traced, false, fn, now)
	}
	b.depth = max(b.depth, len(l.frames))
}

// Exit records that fn leaves the frame whose entry had stack pointer sp.
func (b *Books) Exit(k Key, fn int, sp uint64, now int64) {
	if l := b.ledgers[k]; l != nil {
		b.ExitLedger(l, fn, sp, now)
	}
}

// ExitLedger is Exit for l, the ledger of k.
func (b *Books) ExitLedger(l *Ledger, fn int, sp uint64, now int64) {
	now = l.tick(now)
	floor, _ := b.onStack(l, fn, sp, now)
	if l.goroutine {
		floor, _ = b.runFloor(l, fn, sp, now, true)
	}
	for len(l.frames) > floor && l.frames[len(l.frames)-1].sp < sp {
		b.close(l, now)
	}
	if n := len(l.frames); n > floor && l.frames[n-1].sp == sp && l.frames[n-1].fn == fn {
		b.close(l, now)
	}
}

// onStack returns the first of l's frames an event of fn at sp is
// compared with (those below are on other stacks), and the stack it is
// on (hi 0: not known, the event is compared with every frame). When the
// event is on the stack of a stretch under the top one, the frames above
// that stretch are closed at now: the thread has come back. floor is the
// number of frames when none of them is on the event's stack.
func (b *Books) onStack(l *Ledger, fn int, sp uint64, now int64) (floor int, on segment) {
	if !l.split || (b.noSP != nil && b.noSP[fn]) {
		return 0, segment{}
	}
	n := len(l.segs)
	if n > 0 {
		if s := l.segs[n-1]; s.lo <= sp && sp < s.hi {
			return s.first, s
		}
	}
	i := n - 2
	for i >= 0 && !(l.segs[i].lo <= sp && sp < l.segs[i].hi) {
		i--
	}
	if i < 0 {
		lo, hi, ok := b.Where.StackAt(sp)
		if !ok {
			return 0, segment{}
		}
		for i = n - 1; i >= 0 && l.segs[i].hi != hi; i-- {
		}
		if i < 0 {
			return len(l.frames), segment{lo: lo, hi: hi, first: len(l.frames)}
		}
		l.segs[i].lo = lo // (a stack that grew)
	}
	if i < n-1 {
		for above := l.segs[i+1].first; len(l.frames) > above; {
			b.close(l, now)
		}
	}
	return l.segs[i].first, l.segs[i]
}

// keyedBySP reports whether fn's frames are keyed by the stack pointer
// (C's; not Go's).
func (b *Books) keyedBySP(fn int) bool { return b.noSP == nil || !b.noSP[fn] }

// runFloor returns the first of goroutine ledger l's frames an event of
// fn at key is compared with. It looks at the runs of fn's kind from the
// latest down: an event deeper than such a run's top frame is a call
// from the frames above it (an entry nests in them, starting a run of its
// own; an exit closes nothing), unless that run is the top one (the rules
// hold in it); an event within a run (deeper than its first frame, or an
// exit of it) is back there: the frames above the run close at now. An
// event at or above a run's first frame returns from the whole run, and
// the next one down is looked at; when none is left, the frames from the
// lowest one up close, and an entry starts a run where they were.
func (b *Books) runFloor(l *Ledger, fn int, key uint64, now int64, exit bool) (floor int, nested bool) {
	c := b.keyedBySP(fn)
	lowest := -1
	for i := len(l.runs) - 1; i >= 0; i-- {
		r := l.runs[i]
		if r.c != c {
			continue
		}
		lowest = i
		top := len(l.frames) - 1
		if i+1 < len(l.runs) {
			top = l.runs[i+1].first - 1
		}
		switch bottom := l.frames[r.first].sp; {
		case key < l.frames[top].sp:
			if i == len(l.runs)-1 {
				return r.first, false
			}
			return len(l.frames), !exit
		case key < bottom || (exit && key == bottom):
			for len(l.frames) > top+1 {
				b.close(l, now)
			}
			return r.first, false
		}
	}
	if lowest >= 0 {
		for first := l.runs[lowest].first; len(l.frames) > first; {
			b.close(l, now)
		}
	}
	return len(l.frames), !exit
}

// stretch notes the stretch of a frame about to be pushed, entered on
// stack on: the top one if it is on that stack, or a stack not known
// (the first stretch, when there is none yet), else a new one.
func (l *Ledger) stretch(on segment) {
	n := len(l.segs)
	switch {
	case n > 0 && (on.hi == 0 || l.segs[n-1].hi == on.hi):
	case n > 0 && l.segs[n-1].first == len(l.frames):
		l.segs[n-1] = segment{lo: on.lo, hi: on.hi} // the bottom stretch, empty
	default:
		l.segs = append(l.segs, segment{lo: on.lo, hi: on.hi, first: len(l.frames)})
	}
}

// End closes every frame of k at now: its thread has ended.
func (b *Books) End(k Key, now int64) {
	if l := b.ledgers[k]; l != nil {
		now = l.tick(now)
		for len(l.frames) > 0 {
			b.close(l, now)
		}
		delete(b.ledgers, k)
	}
}

// Finish closes the frames still open at the end of the run, each stack
// at its last event.
func (b *Books) Finish() {
	for k, l := range b.ledgers {
		b.End(k, l.last)
	}
}

// Figures are what the books booked: by function, the calls (Hits), the
// function time (Self) and function+child time (All), in nanoseconds;
// the time within outermost frames (Inside); whether any ledger was a
// goroutine's (Goroutines); the call depth; and the caller stacks where
// calls are attributed (/AT; nil otherwise).
type Figures struct {
	Hits       []uint64
	Self, All  []int64
	Inside     int64
	Goroutines bool
	Depth      int
	Stacks     []datafile.Stack
	Waits      *datafile.WaitStats
}

// Figures returns the figures booked so far. Hits, Self and All are the
// books' own (a run's status reads them as they go); Stacks is a copy.
func (b *Books) Figures() Figures {
	f := Figures{Hits: b.hits, Self: b.self, All: b.all, Inside: b.inside,
		Goroutines: b.goroutines, Depth: b.depth, Waits: b.waits}
	if b.attribution {
		f.Stacks = slices.Clone(b.stacks)
	}
	return f
}

// Call is a call open in a ledger: its function, the key of its frame
// (the stack pointer of its entry, or a goroutine's distance from its
// stack top) and when it began.
type Call struct {
	Fn    int
	SP    uint64
	Begun int64
}

// OpenCalls returns the calls open in k's ledger, bottom first (nil
// where k has none): what the books hold of a stack, for tests and
// tools that look inside.
func (b *Books) OpenCalls(k Key) []Call {
	l := b.ledgers[k]
	if l == nil {
		return nil
	}
	calls := make([]Call, len(l.frames))
	for i, f := range l.frames {
		calls[i] = Call{Fn: f.fn, SP: f.sp, Begun: f.begun}
	}
	return calls
}

// Open reports whether k has a profiled call open.
func (b *Books) Open(k Key) bool {
	l := b.ledgers[k]
	return l != nil && len(l.frames) > 0
}

// CarriedByGoroutine reports whether a call of fn, in a program with Go
// functions, is a C call, which the goroutine of the thread that makes
// it carries (its ledger holds it, nested in its Go frames: runFloor).
func (b *Books) CarriedByGoroutine(fn int) bool { return b.noSP != nil && !b.noSP[fn] }

// close ends l's top frame at now and books its time.
func (b *Books) close(l *Ledger, now int64) {
	n := len(l.frames) - 1
	f := l.frames[n]
	l.frames = l.frames[:n]
	if s := len(l.segs) - 1; s > 0 && l.segs[s].first == n {
		l.segs = l.segs[:s]
	}
	if r := len(l.runs) - 1; r >= 0 && l.runs[r].first == n {
		l.runs = l.runs[:r]
	}
	if l.traced != nil {
		b.Trace.Event(l.traced, true, f.fn, now)
	}
	elapsed := now - f.begun
	self := elapsed - f.children
	b.self[f.fn] += self
	if l.opened(f.fn, -1) == 0 {
		b.all[f.fn] += elapsed
	}
	if f.stack >= 0 {
		b.stacks[f.stack].Time += self
		b.stacks[f.stack].ChildTime += elapsed
	}
	if n > 0 {
		l.frames[n-1].children += elapsed
	} else {
		b.inside += elapsed
	}
}

// Add books figures kept elsewhere (a thread's book in the program,
// ProgramBook) for fn: its calls, its function time and its
// function+child time, in nanoseconds.
func (b *Books) Add(fn int, calls uint64, self, all int64) {
	b.hits[fn] += calls
	b.self[fn] += self
	b.all[fn] += all
}

// TimedGoroutines notes that goroutines were timed, in books of their
// own kept in the program (Figures.Goroutines).
func (b *Books) TimedGoroutines() { b.goroutines = true }

// AddInside adds time within outermost frames kept elsewhere, in
// nanoseconds, and a call depth reached there.
func (b *Books) AddInside(ns int64, depth int) {
	b.inside += ns
	b.depth = max(b.depth, depth)
}
