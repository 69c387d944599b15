package profile

import (
	"encoding/binary"
	"errors"
	"slices"
	"sort"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
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
	t *tracer
	// cost is what one record costs the program, in nanoseconds
	// (clock.go).
	cost    float64
	drained int64  // when the rings were last read
	full    uint64 // the stops for a full ring
	// marks are PROFILE's words of the rings as it last left them, by
	// block (instr.RingIntact); damaged counts the rings found written
	// over by the program, broken those not yet taken back whole, held
	// is the block of the thread whose stop is being handled, -1 for
	// none (damage.go).
	marks   map[int]uint64
	broken  map[int]bool
	damaged int
	held    int
	// sink keeps what calibrateRing read of a ring, so that the reads
	// are made.
	sink uint64
	// The goroutines (goroutines.go): what PROFILE keeps of each, the
	// last found, those with records waiting, and the number of the
	// last record read; merged and byThread are the merge's buffers.
	goroutines map[uint64]*goroutine
	last       *goroutine
	queued     []*goroutine
	seq        uint64
	merged     []goRecord
	byThread   [][]int
}

func newRings(t *tracer) *rings {
	return &rings{t: t, goroutines: map[uint64]*goroutine{}, marks: map[int]uint64{}, broken: map[int]bool{}, held: -1}
}

// errGoFrames is why a Go function keeps breakpoints when timed: one of
// assembly, where the goroutine register may hold anything, or an
// architecture without goroutines' records.
var errGoFrames = errors.New("a Go function of assembly, whose goroutine register is not known: timed with breakpoints")

// errGoThreadPointer is why a Go function keeps breakpoints on arm64 in a
// program whose thread pointer is not PROFILE's to set (goThreadPointer).
var errGoThreadPointer = errors.New("a Go function, in a program whose thread pointer its dynamic linker or C library sets")

// ringPossible reports whether function timing can run in-process: the
// architecture has record code, and some function of the plan can be
// timed with it.
func (t *tracer) ringPossible() bool {
	if _, ok := t.arch.RecordCode(instr.Ring{Records: ringRecords, Table: 1}, 0); !ok {
		return false
	}
	return slices.ContainsFunc(t.plan.Funcs, func(f datafile.Func) bool { return t.ringTimed(&f) == nil })
}

// ringTimed returns nil when f's calls can be timed in-process, else why
// not: a Go function of assembly, on arm64 in a program that sets its own
// thread pointer, or where the counter is not one clock across CPUs
// (PRF4680).
func (t *tracer) ringTimed(f *datafile.Func) error {
	switch {
	case f.Frame == datafile.FrameSP:
		return nil
	case !goFrames(f):
		return errGoFrames
	case t.arch.GoRecordsNeedThreadPointer() && !t.goThreadPointer():
		return errGoThreadPointer
	case !t.goRingPossible():
		return errGoFrames
	case !t.clocks.ctr.oneClock(t.arch, t.plan, t.cfg.Warn):
		return errGoClock
	}
	return nil
}

// ringArea returns block b's ring area, or area b of the table.
func (c *counters) ringArea(b int) []byte { return c.layout.ringArea(c.shared.Bytes(), b) }

// reset empties block b's ring, for a new thread.
func (r *rings) reset(b int) {
	r.marks[b] = instr.RingReset(r.t.arch, r.t.counters.ringArea(b), ringRecords)
	delete(r.broken, b)
}

// drop empties block b's ring of the records in it: they are not the
// program's (a vfork child's, a thread's beyond the blocks).
func (r *rings) drop(b int) {
	area := r.t.counters.ringArea(b)
	if !r.intact(b, area) {
		return
	}
	_, n := instr.RingUnread(r.t.arch, area, ringRecords)
	r.marks[b] = instr.RingRead(r.t.arch, area, ringRecords, n)
}

// drain books the records in thread th's ring. A thread with no block
// of its own (a vfork child, in the discard block) has its records
// dropped.
func (r *rings) drain(th *thread) int {
	t, c := r.t, r.t.counters
	if c == nil || !c.layout.rings {
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
	first, unread := instr.RingUnread(t.arch, area, ringRecords)
	if unread == 0 {
		return 0
	}
	k := threadLedger(th.tid)
	t.clocks.settleWait(th)
	if th.fullAt != 0 {
		// Its first record was made when it could go on after a stop
		// for a full ring: all of the time since it stopped was the
		// stop's.
		rec := instr.ReadRecord(instr.RingSlot(area, first))
		t.clocks.steal(th, th.fullAt, t.clocks.ctr.ns(rec.Time))
		th.fullAt = 0
	}
	base := t.clocks.stolen[k]
	n := len(t.plan.Funcs)
	l := t.books.ledger(k)
	for i := range unread {
		rec := instr.ReadRecord(instr.RingSlot(area, (first+i)&(ringRecords-1)))
		if rec.Item >= n {
			continue
		}
		t.explain.record(th.tid, &rec)
		if rec.G != 0 {
			t.clocks.carried[th.tid] = rec.G
			r.keep(th.tid, rec.G, rec, t.clocks.ctr.ns(rec.Time), base, false)
			continue
		}
		if rec.Returned {
			rec.SP -= instr.ReturnPop(t.arch)
		}
		if g := t.clocks.carrier(t.books, th.tid, rec.Item); g != 0 {
			r.keep(th.tid, g, rec, t.clocks.ctr.ns(rec.Time), base, true)
			continue
		}
		raw := t.clocks.ctr.ns(rec.Time) - base
		th.debt = r.debt(th, raw)
		th.lastRaw = raw
		th.events++
		now := raw - int64(th.debt)
		if rec.Exit {
			t.books.exitLedger(l, rec.Item, rec.SP, now)
		} else {
			t.books.enterLedger(l, rec.Item, rec.SP, now)
		}
	}
	r.marks[b] = instr.RingRead(t.arch, area, ringRecords, unread)
	t.explain.drained(th.tid, unread)
	return unread
}

// vforking notes that thread th has made a vfork child, where rings are
// found from the stack pointer: until th's vfork-done stop, the records
// in its ring are the child's, made on its stack. Its own come first.
func (t *tracer) vforking(th *thread) {
	if c := t.counters; t.rings != nil && c != nil && c.layout.rings && c.layout.table {
		t.rings.drain(th)
		th.vforking = true
	}
}

// vforkDone drops the records of thread th's vfork child, whose memory
// it has back: it has not run since its vfork.
func (t *tracer) vforkDone(th *thread) {
	if th.vforking {
		t.rings.drain(th)
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
	t, c := r.t, r.t.counters
	b, own := c.blockOf[th.tid]
	if !own || th.foreign {
		b, own = 0, false
	}
	if c.layout.table && !tp { // (through the thread pointer: its own, or the discard area)
		if w := c.tableArea(sp); w != b {
			b, own = w, false
		}
	}
	// (When it stopped is in the program's memory: a time a second or
	// more after PROFILE saw the stop, or before it last let the thread
	// go, was written over, and it stopped as PROFILE saw it.)
	at := t.clocks.ctr.ns(binary.LittleEndian.Uint64(c.ringArea(b)[instr.RingFullTime:]))
	if at > t.clocks.waited+int64(time.Second) || at < th.released-int64(time.Second) {
		r.damaged++
		at = t.clocks.waited
	}
	if own {
		th.fullAt = at
		return
	}
	var owner *thread
	for tid, ob := range c.blockOf {
		if ob == b && b != 0 {
			owner = t.threads[tid]
		}
	}
	if owner != nil {
		r.drain(owner) // (a vforking parent's drops them)
	} else {
		r.drop(b)
	}
	if !th.foreign {
		t.clocks.steal(th, at, t.clocks.waited)
	}
}

// pastFull moves thread tid, stopped on a ring-full breakpoint that
// leaves the PC on itself (arm64's BRK), to where it goes on: a thread
// let go there would run the breakpoint again, untraced.
func (t *tracer) pastFull(tid int) {
	if t.rings == nil || t.counters == nil || !t.counters.layout.rings {
		return
	}
	var regs ptrace.Regs
	if t.proc.getRegs(tid, &regs) != nil {
		return
	}
	pc := regs.PC()
	if after := t.arch.BreakpointAddr(pc) + uint64(len(t.arch.Breakpoint())); after != pc && t.counters.ringFull(after) {
		regs.SetPC(after)
		t.proc.setRegs(tid, &regs)
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
	r.t.clocks.steal(th, th.fullAt, r.t.clocks.waited)
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
	if r == nil || th.events == 0 {
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
	now := r.t.clocks.clock()
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
	for _, th := range r.t.threads {
		n += r.drain(th)
	}
	if len(r.queued) > 0 {
		first := r.seq + 1
		for _, th := range r.t.threads {
			n += r.drain(th)
		}
		r.bookGoroutines(first)
	}
	r.t.clocks.refineCounter()
	r.t.clocks.waitTick(r.t.threads, r.t.books)
	return n
}

// drainEnd books every record left, at the end of the run (or of the
// image, at an exec): every thread has stopped, and each goroutine's
// records are all read.
func (r *rings) drainEnd() {
	r.drainAll()
	r.bookGoroutines(r.seq + 1)
}

// stopped books, at a stop of thread th, the records its ring holds,
// which came before the stop.
func (r *rings) stopped(th *thread) {
	if c := r.t.counters; c != nil {
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
	t := r.t
	after := addr + uint64(len(t.arch.Breakpoint()))
	reg, ok := t.counters.fullRegion(after)
	if !ok {
		return false, nil
	}
	r.fullStop(th, t.arch.SP(&t.regs), reg.tp)
	r.full++
	if t.regs.PC() != after {
		t.regs.SetPC(after) // past arm64's BRK
		return true, t.setAndResume(th, 0)
	}
	return true, t.resume(th.tid, 0)
}

// passFull moves thread th, stopped at a ring-full breakpoint while
// PROFILE single-steps it (its registers in t.regs), past it, its ring
// read, and reports whether it was one.
func (r *rings) passFull(th *thread) bool {
	t := r.t
	addr := t.arch.BreakpointAddr(t.regs.PC())
	after := addr + uint64(len(t.arch.Breakpoint()))
	reg, ok := t.counters.fullRegion(after)
	if !ok {
		return false
	}
	r.stopped(th)
	r.fullStop(th, t.arch.SP(&t.regs), reg.tp)
	r.full++
	if t.regs.PC() != after {
		t.regs.SetPC(after) // past arm64's BRK
		t.proc.setRegs(th.tid, &t.regs)
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
	if c == nil || !c.layout.rings {
		return region{}, false
	}
	i := sort.Search(len(c.tramps), func(i int) bool { return c.tramps[i].addr >= after }) - 1
	if i < 0 {
		return region{}, false
	}
	tr := c.tramps[i]
	for _, r := range tr.regions {
		if r.full != 0 && tr.addr+uint64(r.at+r.full) == after {
			return r, true
		}
	}
	return region{}, false
}
