package profile

import (
	"encoding/binary"
	"errors"
	"slices"
	"syscall"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/profile/books"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// Function timing in-process (docs/architecture.md, "Timing in-process").
// Every entry and exit of a timed function jumps to a
// trampoline whose instrumentation appends a record to its thread's ring
// (instr.RecordCode): the CPU counter's time, the stack pointer, the
// function and whether it is entered or left. PROFILE reads the rings
// while it waits for stops, at every stop of a thread before anything is
// booked for it, and at the end, and hands the records to the books, as
// it hands them the events of its breakpoints: the books do not know how
// an event was caught. A stop of a thread waits until its ring is read,
// so the records of one thread reach the books in the order they were
// made, before and after its stops.
//
// A goroutine's records may be in the rings of several threads: they
// wait until they can be put back in its order (goroutines.go).
//
// Times. A record's counter reading becomes PROFILE's clock through a
// scale measured against that clock (counterClock), less what the
// thread's stops took from it, less the cost of the records it made
// before: every record costs the program the same, measured at start-up
// (calibrateRing), and a function's time is what its own code took.

// ringRecords is the number of records of a thread's ring, a power of
// two: a ring full stops the thread until PROFILE has read it. (A
// variable for the test of full rings.)
var ringRecords = 8192

// drainInterval is how often PROFILE reads the rings while it waits
// for stops: often enough that a ring does not fill (8192 records take a
// program making an event every 10 ns some 80 µs), seldom enough that the
// thread and PROFILE do not take each other the cache lines of a ring's
// head at every record (which was seen to cost the program 4 ns a
// record). (A variable for the test of full rings.)
var drainInterval int64 = 50e3

// rings is the mechanism of function timing in-process: it reads the
// threads' rings and hands their records to the books.
type rings struct {
	ringEnv
	// cost is what one record costs the program, in nanoseconds
	// (clock.go).
	cost    float64
	drained int64  // when the rings were last read
	full    uint64 // the stops for a full ring
	// sink keeps what calibrateRing read of a ring, so that the reads
	// are made.
	sink uint64
	// What PROFILE found of the rings the program wrote over (damage.go).
	ringMarks
	// The goroutines' records waiting for their order (goroutines.go).
	goQueue
}

// ringEnv is what the rings read and call of the run: the program, its
// threads, the books their records go to, and the clocks of the
// threads' stops, which are the tracer's (timing.go, waits.go, clock.go).
type ringEnv struct {
	arch instr.Arch
	proc process
	plan *datafile.Plan
	// counters is the memory the rings are in, from the moment it is
	// mapped (start).
	counters *counters
	books    *books.Books
	threads  map[int]*thread
	told     observers
	// regs are the registers of the thread whose stop is being handled,
	// as the tracer read them.
	regs *ptrace.Regs
	// clocks are timing's clocks (timing.go): when the stop being
	// handled was seen, the time each thread's stops took from it, the
	// goroutine of each thread's last Go event, the records' times turned
	// into the clock's, the waits.
	clocks *clocks
	warn   func(*prf.Diagnostic)
	host   ringHost
	// caps are the run's capabilities (caps.go): with recordRing, they
	// say which functions the rings can time (ringTimed).
	caps caps
}

// ringHost is what the rings ask of the loop: letting a thread go.
type ringHost interface {
	resume(tid int, sig syscall.Signal) error
	setAndResume(th *thread, sig syscall.Signal) error
}

// newRings returns the rings of t's run, reading t's threads, books and
// clocks.
func newRings(t *tracer) *rings {
	return &rings{
		ringEnv: ringEnv{arch: t.arch, proc: t.proc, plan: t.plan, counters: t.parts.counters, books: t.parts.books, threads: t.threads,
			told: t.told, regs: &t.regs,
			clocks: &t.clocks, warn: t.cfg.Warn, host: t, caps: t.caps},
		ringMarks: ringMarks{marks: map[int]uint64{}, broken: map[int]bool{}, held: -1},
		goQueue:   goQueue{goroutines: map[uint64]*goroutine{}},
	}
}

// start takes counters, just mapped, as the memory of the rings: the
// discard ring, whose records are dropped, starts empty too (an arm64
// cursor of zeros is a full ring).
func (r *rings) start(c *counters) {
	r.counters = c
	r.reset(0)
}

// errGoFrames is why a Go function keeps breakpoints when timed: one of
// assembly, where the goroutine register may hold anything, or an
// architecture without goroutines' records.
var errGoFrames = errors.New("a Go function of assembly, whose goroutine register is not known: timed with breakpoints")

// errGoThreadPointer is why a Go function keeps breakpoints on arm64 in a
// program whose thread pointer is not PROFILE's to set (probeCaps).
var errGoThreadPointer = errors.New("a Go function, in a program whose thread pointer its dynamic linker or C library sets")

// ringPossible reports whether function timing can run in-process: the
// architecture has record code, and some function of the plan can be
// timed with it.
func (r *rings) ringPossible() bool {
	if _, ok := r.arch.RecordCode(instr.Ring{Records: ringRecords, Table: 1}, 0); !ok {
		return false
	}
	return slices.ContainsFunc(r.plan.Funcs, func(f datafile.Func) bool { return r.ringTimed(&f) == nil })
}

// ringTimed returns nil when f's calls can be timed in-process, else why
// not: a Go function of assembly, on arm64 in a program that sets its own
// thread pointer, or where the counter is not one clock across CPUs
// (PRF4680).
func (r *rings) ringTimed(f *datafile.Func) error {
	switch {
	case f.Frame == datafile.FrameSP:
		return nil
	case !goFrames(f):
		return errGoFrames
	case r.arch.GoRecordsNeedThreadPointer() && !r.caps.threadPointer:
		return errGoThreadPointer
	case !r.caps.goRing:
		return errGoFrames
	case !r.clocks.ctr.oneClock(r.arch, r.plan, r.warn):
		return errGoClock
	}
	return nil
}

// ringArea returns block b's ring area, or area b of the table.
func (c *counters) ringArea(b int) []byte { return c.layout.RingArea(c.shared.Bytes(), b) }

// reset empties block b's ring, for a new thread.
func (r *rings) reset(b int) {
	r.marks[b] = instr.RingReset(r.arch, r.counters.ringArea(b), ringRecords)
	delete(r.broken, b)
}

// drop empties block b's ring of the records in it: they are not the
// program's (a vfork child's, a thread's beyond the blocks).
func (r *rings) drop(b int) {
	area := r.counters.ringArea(b)
	if !r.intact(b, area) {
		return
	}
	_, n := instr.RingUnread(r.arch, area, ringRecords)
	r.marks[b] = instr.RingRead(r.arch, area, ringRecords, n)
}

// drain books the records in thread th's ring. A thread with no block
// of its own (a vfork child, in the discard block) has its records
// dropped.
func (r *rings) drain(th *thread) int {
	c := r.counters
	if c == nil || !c.layout.Rings {
		return 0
	}
	b, ok := c.blockOf[th.tid]
	if !ok || th.foreign {
		// A vfork child, or a thread beyond the blocks: block 0, whose
		// records are dropped (a thread waiting on its full ring goes on).
		r.drop(0)
		return 0
	}
	if th.vforking {
		// The records of its vfork child, on its stack, in its area.
		r.drop(b)
		return 0
	}
	area := c.ringArea(b)
	if !r.intact(b, area) {
		return 0
	}
	first, unread := instr.RingUnread(r.arch, area, ringRecords)
	if unread == 0 {
		return 0
	}
	k := threadLedger(th.tid)
	r.clocks.settleWait(th)
	if th.fullAt != 0 {
		// Its first record was made when it could go on after a stop
		// for a full ring: all of the time since it stopped was the
		// stop's.
		rec := instr.ReadRecord(instr.RingSlot(area, first))
		r.clocks.steal(th, th.fullAt, r.clocks.ctr.ns(rec.Time))
		th.fullAt = 0
	}
	base := r.clocks.stolen[k]
	n := len(r.plan.Funcs)
	l := r.books.Ledger(k)
	for i := range unread {
		rec := instr.ReadRecord(instr.RingSlot(area, (first+i)&(ringRecords-1)))
		if rec.Item >= n {
			continue
		}
		if r.told.on() {
			r.told.note(recordEvent{th.tid, rec})
		}
		if rec.G != 0 {
			r.clocks.carried[th.tid] = rec.G
			r.keep(th.tid, rec.G, rec, r.clocks.ctr.ns(rec.Time), base, false)
			continue
		}
		if rec.Returned {
			rec.SP -= instr.ReturnPop(r.arch)
		}
		if g := r.clocks.carrier(r.books, th.tid, rec.Item); g != 0 {
			r.keep(th.tid, g, rec, r.clocks.ctr.ns(rec.Time), base, true)
			continue
		}
		raw := r.clocks.ctr.ns(rec.Time) - base
		th.debt = r.debt(th, raw)
		th.lastRaw = raw
		th.events++
		now := raw - int64(th.debt)
		if rec.Exit {
			r.books.ExitLedger(l, rec.Item, rec.SP, now)
		} else {
			r.books.EnterLedger(l, rec.Item, rec.SP, now)
		}
	}
	r.marks[b] = instr.RingRead(r.arch, area, ringRecords, unread)
	if r.told.on() {
		r.told.note(drainedEvent{th.tid, unread})
	}
	return unread
}

// vforking notes that thread th has made a vfork child, where rings are
// found from the stack pointer: until th's vfork-done stop, the records
// in its ring are the child's, made on its stack. Its own come first.
func (r *rings) vforking(th *thread) {
	if c := r.counters; c != nil && c.layout.Rings && c.layout.Table {
		r.drain(th)
		th.vforking = true
	}
}

// vforkDone drops the records of thread th's vfork child, whose memory
// it has back: it has not run since its vfork.
func (r *rings) vforkDone(th *thread) {
	if th.vforking {
		r.drain(th)
		th.vforking = false
	}
}

// fullStop handles thread th, stopped at a ring-full breakpoint: it
// notes the moment it stopped, which the record code saved, and empties
// the ring it was writing to when that is not its own (its own was read
// at the stop): where rings are found from the stack, one on a stack no
// thread owns writes into the discard area (an alternate signal stack),
// and a vfork child into its parent's.
func (r *rings) fullStop(th *thread, sp uint64, tp bool) {
	c := r.counters
	b, own := c.blockOf[th.tid]
	if !own || th.foreign {
		b, own = 0, false
	}
	if c.layout.Table && !tp { // (through the thread pointer: its own, or the discard area)
		if w := c.tableArea(sp); w != b {
			b, own = w, false
		}
	}
	// (When it stopped is in the program's memory: a time a second or
	// more after PROFILE saw the stop, or before it last let the thread
	// go, was written over, and it stopped as PROFILE saw it.)
	waited := r.clocks.waited
	at := r.clocks.ctr.ns(binary.LittleEndian.Uint64(c.ringArea(b)[instr.RingFullTime:]))
	if at > waited+int64(time.Second) || at < th.released-int64(time.Second) {
		r.damaged++
		at = waited
	}
	if own {
		th.fullAt = at
		return
	}
	var owner *thread
	for tid, ob := range c.blockOf {
		if ob == b && b != 0 {
			owner = r.threads[tid]
		}
	}
	if owner != nil {
		r.drain(owner) // (a vforking parent's drops them)
	} else {
		r.drop(b)
	}
	if !th.foreign {
		r.clocks.steal(th, at, waited)
	}
}

// pastFull moves thread tid, stopped on a ring-full breakpoint that
// leaves the PC on itself (arm64's BRK), to where it goes on: a thread
// let go there would run the breakpoint again, untraced.
func (r *rings) pastFull(tid int) {
	if r == nil || r.counters == nil || !r.counters.layout.Rings {
		return
	}
	var regs ptrace.Regs
	if r.proc.getRegs(tid, &regs) != nil {
		return
	}
	pc := regs.PC()
	if after := r.arch.BreakpointAddr(pc) + uint64(len(r.arch.Breakpoint())); after != pc && r.counters.ringFull(after) {
		regs.SetPC(after)
		r.proc.setRegs(tid, &regs)
	}
}

// fullEnded ends, at the stop being handled, the time taken out for
// thread th's last stop for a full ring when it has made no record since
// (a signal came first, or it ended): the time from that stop to this one
// was a stop's.
func (r *rings) fullEnded(th *thread) {
	if th.fullAt == 0 {
		return
	}
	r.clocks.steal(th, th.fullAt, r.clocks.waited)
	th.fullAt = 0
}

// debt is what the records thread th made so far cost it, at raw on
// its clock (its stops taken out): each record's cost is taken from the
// time between it and the thread's next event, and never more than that
// time. A cost measured too high (a record costs less in place than in
// the calibration; under emulation, much less) then shortens the
// shortest of those times to nothing, but cannot add up to move the
// thread's clock back: the books would hold every later event at the
// last one's time until the true time caught up, a long function that
// followed many short calls measured as nothing.
func (r *rings) debt(th *thread, raw int64) float64 {
	if r == nil {
		return th.debt // (the books in the program's: ledger.go)
	}
	if th.events == 0 {
		return 0
	}
	return th.debt + owed(r.cost, raw-th.lastRaw)
}

// owed is what a record of cost takes from the gap after it: its cost,
// no more than the gap, nothing from none. (Plain comparisons: the min
// and max of floats, which order NaNs and signed zeros, cost more, and
// this runs for every record.)
func owed(cost float64, gap int64) float64 {
	g := float64(gap)
	switch {
	case g <= 0:
		return 0
	case g < cost:
		return g
	}
	return cost
}

// drainIdle books the records of every thread's ring, and reports
// whether there were any: PROFILE's work while it waits for stops, no
// more often than every drainInterval.
func (r *rings) drainIdle() bool {
	now := r.clocks.clock()
	if now-r.drained < drainInterval {
		return false
	}
	r.drained = now
	return r.drainAll() > 0
}

// drainAll books the records of every thread's ring, twice over when
// goroutines' records wait (goroutines.go).
func (r *rings) drainAll() int {
	n := 0
	for _, th := range r.threads {
		n += r.drain(th)
	}
	if len(r.queued) > 0 {
		first := r.seq + 1
		for _, th := range r.threads {
			n += r.drain(th)
		}
		r.bookGoroutines(first)
	}
	r.clocks.refineCounter()
	r.clocks.waitTick(r.threads, r.books)
	return n
}

// drainEnd books every record left, at the end of the run (or of the
// image, at an exec): every thread has stopped, and each goroutine's
// records are all read.
func (r *rings) drainEnd() {
	r.drainAll()
	r.bookGoroutines(r.seq + 1)
}

// waiting says that the rings are read while PROFILE waits for stops,
// which it does polling, yielding, first (idleHook).
func (r *rings) waiting() (bool, time.Duration, bool) { return true, 0, true }

// idle reads the rings when they are due (idleHook).
func (r *rings) idle() bool { return r.drainIdle() }

// execed reads the rings a last time: the image is being replaced
// (execHook).
func (r *rings) execed() { r.drainEnd() }

// stopSeen books, at a stop of thread th, the records its ring holds,
// which came before the stop (seenHook).
func (r *rings) stopSeen(th *thread) {
	if c := r.counters; c != nil {
		if b, ok := c.blockOf[th.tid]; ok {
			r.held = b
			defer func() { r.held = -1 }()
		}
	}
	r.drain(th)
	r.fullEnded(th)
}

// stop handles a thread stopped by a breakpoint at addr: one of a
// trampoline's ring-full breakpoints, reached when its ring was full.
// The ring has been read (stopped): the thread tries again.
func (r *rings) stop(th *thread, addr uint64) (bool, error) {
	after := addr + uint64(len(r.arch.Breakpoint()))
	reg, ok := r.counters.fullRegion(after)
	if !ok {
		return false, nil
	}
	r.fullStop(th, r.arch.SP(r.regs), reg.tp)
	r.full++
	if r.regs.PC() != after {
		r.regs.SetPC(after) // past arm64's BRK
		return true, r.host.setAndResume(th, 0)
	}
	return true, r.host.resume(th.tid, 0)
}

// passFull moves thread th, stopped at a ring-full breakpoint while
// PROFILE single-steps it (its registers in r.regs), past it, its ring
// read, and reports whether it was one.
func (r *rings) passFull(th *thread) bool {
	addr := r.arch.BreakpointAddr(r.regs.PC())
	after := addr + uint64(len(r.arch.Breakpoint()))
	reg, ok := r.counters.fullRegion(after)
	if !ok {
		return false
	}
	r.stopSeen(th)
	r.fullStop(th, r.arch.SP(r.regs), reg.tp)
	r.full++
	if r.regs.PC() != after {
		r.regs.SetPC(after) // past arm64's BRK
		r.proc.setRegs(th.tid, r.regs)
	}
	return true
}

// collect gives the run's result the number of stops for a full ring.
func (r *rings) collect(res *Result) { res.FullRings = r.full }

// plant has nothing to plant: the records are made by the entries' and
// the exits' trampolines (entryTrampolines, exitPatches).
func (r *rings) plant(*planting) error { return nil }

// forget has nothing to do: a module's trampolines go with the
// counters (counters.forget).
func (r *rings) forget(lo, hi uint64) {}

// ringFull reports whether a thread that trapped at a breakpoint that
// ends at after stopped at a ring-full breakpoint of a trampoline: it
// goes on from after.
func (c *counters) ringFull(after uint64) bool {
	_, ok := c.fullRegion(after)
	return ok
}

// fullRegion returns the record code's region whose ring-full breakpoint
// ends at after, if there is one.
func (c *counters) fullRegion(after uint64) (region, bool) {
	if c == nil || !c.layout.Rings {
		return region{}, false
	}
	tr := trampAt(c.tramps, after-1)
	if tr == nil {
		return region{}, false
	}
	for _, r := range tr.regions {
		if r.full != 0 && tr.addr+uint64(r.at+r.full) == after {
			return r, true
		}
	}
	return region{}, false
}
