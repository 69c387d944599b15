package profile

import (
	"encoding/binary"
	"slices"
	"strings"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/profile/books"
)

// Go functions timed in-process (docs/architecture.md, "Goroutines in
// the rings").
//
// A Go function's record code names the goroutine (r14, Go's goroutine
// register) and keys the frame by its distance from the goroutine's stack
// top (instr.Ring.Goroutine). A goroutine runs on whichever thread is
// free, so its records are in the rings of every thread that ran it, each
// thread's in order; PROFILE puts them back in the goroutine's order by
// their times, which are one clock across CPUs (the TSC the kernel
// checked and chose as its clock source, or arm64's system counter), and
// books them in the goroutine's ledger.
//
// A goroutine's record may be read before an earlier one of its own in
// another ring: the goroutine left that thread after the earlier record
// was made, but PROFILE had read that ring before it was. So the rings
// are read twice in a row (rings.drainAll): every record read before the
// second pass began has all of its goroutine's earlier records read by
// the end of it (they were made before it was, on a thread whose ring the
// second pass reads after). Those records, and every earlier one of their
// goroutines, are booked; the others wait for the next reading.

// goRecord is a goroutine's record read from a thread's ring, waiting to
// be booked in its goroutine's order.
type goRecord struct {
	// ns is the record's time on PROFILE's clock; stolen is what the
	// stops of its thread had taken from the thread when it was read.
	ns, stolen int64
	// key is the frame's distance from the goroutine's stack top, or
	// for a C function's frame (sp) the stack pointer.
	key uint64
	// seq is the order in which the records were read.
	seq  uint64
	tid  int32
	item int32
	exit bool
	sp   bool
}

// goQueue is what the rings keep of the goroutines: what PROFILE keeps
// of each, the last found, those with records waiting, and the number of
// the last record read; merged and byThread are the merge's buffers.
type goQueue struct {
	goroutines map[uint64]*goroutine
	last       *goroutine
	queued     []*goroutine
	seq        uint64
	merged     []goRecord
	byThread   [][]int
}

// goroutine is what PROFILE keeps of a goroutine: its ledger in the
// books, its clock, and its records waiting to be booked, in the order
// they were read.
type goroutine struct {
	id     uint64
	ledger *books.Ledger
	clock  goClock
	recs   []goRecord
	queued bool // in rings.queued: it has records waiting
}

// goClock is a goroutine's clock: the counter's time less the stops of
// the threads it ran on, while it ran on them (a stop of another thread
// does not stop it, as a stop of another thread does not stop a thread),
// and less the cost of its own records.
type goClock struct {
	tid             int   // the thread of its last event
	threadStolen    int64 // what that thread's stops had taken from it then
	stolen          int64 // what stops took from the goroutine
	debt            float64
	lastRaw, events int64
}

// raw is the goroutine's time at ns, an event on thread tid whose stops
// had taken threadStolen from it: the stops of the thread it stayed on
// since its last event are taken out (a goroutine that moved was not
// running between its two threads' stops).
func (c *goClock) raw(tid int, ns, threadStolen int64) int64 {
	if c.events > 0 && tid == c.tid {
		c.stolen += threadStolen - c.threadStolen
	}
	c.tid, c.threadStolen = tid, threadStolen
	return ns - c.stolen
}

// goFrames reports whether f's frames are keyed by goroutine: a Go
// function (PREP keys only Go's otherwise than by the stack pointer)
// compiled from Go, whose goroutine register is a goroutine at its entry
// and at its returns (or 0 in the runtime's code that runs without one),
// not one of assembly (declared in a .s file). (An inlinable function's
// copy has no file of its own in Go's DWARF: it is Go's.)
func goFrames(f *datafile.Func) bool {
	switch f.Frame {
	case datafile.FrameGoroutine:
		return true
	case datafile.FrameNone:
		return !strings.HasSuffix(f.File, ".s")
	}
	return false
}

// goStackTop returns the top of the stack of goroutine g, g.stack.hi,
// where g's stack holds sp: g.stack is the first two words of g
// (runtime/runtime2.go: type g struct { stack stack; ...}, type stack
// struct { lo, hi uintptr }). ok is false for no goroutine (0), a g
// PROFILE cannot read, or a stack that does not hold sp (the runtime's
// code on a thread's g0 or signal stack) or is larger than any of Go's
// (goStackSize: a g the program wrote over).
func goStackTop(mem instr.Memory, g, sp uint64) (hi uint64, ok bool) {
	var stack [16]byte
	if g == 0 || mem == nil || mem.ReadMem(g, stack[:]) != nil {
		return 0, false
	}
	lo, hi := binary.LittleEndian.Uint64(stack[:]), binary.LittleEndian.Uint64(stack[8:])
	if sp < lo || sp >= hi || hi-sp > goStackSize {
		return 0, false
	}
	return hi, true
}

// recordRing is the ring of f's record code: a goroutine's for a Go
// function.
func (r *rings) recordRing(f *datafile.Func) instr.Ring {
	return r.caps.recordRing(r.counters.layout.Ring(), f)
}

// goroutine returns what PROFILE keeps of goroutine id.
func (r *rings) goroutine(id uint64) *goroutine {
	if g := r.last; g != nil && g.id == id {
		return g
	}
	g := r.goroutines[id]
	if g == nil {
		g = &goroutine{id: id, ledger: r.books.Ledger(books.Key{Goroutine: true, ID: id})}
		r.goroutines[id] = g
	}
	r.last = g
	return g
}

// keep holds a record of goroutine id read from thread tid's ring, whose
// stops had taken stolen from it: the goroutine's own, or (sp) one of a
// C function its thread ran for it (clocks.carrier).
func (r *rings) keep(tid int, id uint64, rec instr.Record, ns, stolen int64, sp bool) {
	g := r.goroutine(id)
	r.seq++
	g.recs = append(g.recs, goRecord{ns: ns, stolen: stolen, key: rec.SP, seq: r.seq, tid: int32(tid), item: int32(rec.Item), exit: rec.Exit, sp: sp})
	if !g.queued {
		g.queued = true
		r.queued = append(r.queued, g)
	}
}

// bookGoroutines books the goroutines' records read before seq first
// (all of them: every record read), with every earlier record of their
// goroutines, in each goroutine's order; the others wait.
func (r *rings) bookGoroutines(first uint64) {
	waiting := r.queued[:0]
	for _, g := range r.queued {
		recs := r.ordered(g.recs)
		last := -1
		for k := len(recs) - 1; k >= 0; k-- {
			if recs[k].seq < first {
				last = k
				break
			}
		}
		for _, rec := range recs[:last+1] {
			r.bookGoroutine(g, rec)
		}
		g.recs = append(g.recs[:0], recs[last+1:]...)
		if len(g.recs) > 0 {
			waiting = append(waiting, g)
		} else {
			g.queued = false
		}
	}
	clear(r.queued[len(waiting):])
	r.queued = waiting
}

// ordered returns a goroutine's records, read in runs of one thread's
// records each in that thread's order, merged by time: a thread's own
// order is kept whatever the times say, and the runs of different
// threads, which the scheduler's hand-over separates by microseconds, go
// by their times. Most goroutines stay on a thread between two readings:
// their records are returned as they are; else the merge is in r.merged.
func (r *rings) ordered(recs []goRecord) []goRecord {
	if !r.switches(recs) {
		return recs
	}
	// Each thread's records, in order: the indexes of recs by thread.
	r.byThread = r.byThread[:0]
	for i := range recs {
		t := slices.IndexFunc(r.byThread, func(b []int) bool { return recs[b[0]].tid == recs[i].tid })
		if t < 0 {
			r.byThread = append(r.byThread, nil)
			t = len(r.byThread) - 1
		}
		r.byThread[t] = append(r.byThread[t], i)
	}
	out := r.merged[:0]
	for len(out) < len(recs) {
		best := -1
		for t, b := range r.byThread {
			if len(b) > 0 && (best < 0 || recs[b[0]].ns < recs[r.byThread[best][0]].ns) {
				best = t
			}
		}
		out = append(out, recs[r.byThread[best][0]])
		r.byThread[best] = r.byThread[best][1:]
	}
	r.merged = out
	return out
}

// switches reports whether recs are of more than one thread.
func (r *rings) switches(recs []goRecord) bool {
	for i := 1; i < len(recs); i++ {
		if recs[i].tid != recs[0].tid {
			return true
		}
	}
	return false
}

// bookGoroutine books a goroutine's record, its goroutine's next event.
func (r *rings) bookGoroutine(g *goroutine, rec goRecord) {
	c := &g.clock
	raw := c.raw(int(rec.tid), rec.ns, rec.stolen)
	if c.events > 0 {
		c.debt += owed(r.cost, raw-c.lastRaw)
	}
	c.lastRaw = raw
	c.events++
	now := raw - int64(c.debt)
	key := 1<<63 - rec.key
	if rec.sp {
		key = rec.key
	}
	if rec.exit {
		r.books.ExitLedger(g.ledger, int(rec.item), key, now)
	} else {
		r.books.EnterLedger(g.ledger, int(rec.item), key, now)
	}
}

// goStop books, before an event of goroutine id at a stop of thread th,
// every record of the goroutine: the rings are read twice, and its
// records were all made before the stop.
func (r *rings) goStop(id uint64) {
	r.drainAll()
	g := r.goroutine(id)
	for _, rec := range r.ordered(g.recs) {
		r.bookGoroutine(g, rec)
	}
	g.recs = g.recs[:0]
	// (It stays in r.queued, with nothing waiting, until the next
	// reading.)
}

// goNow is the time on goroutine id's clock of the event of thread th at
// the stop being handled: the time of the stop on PROFILE's clock (less
// half the calibrated cost of a stop, as tracer.now), on the goroutine's
// clock.
func (r *rings) goNow(th *thread, id uint64) int64 {
	c := &r.goroutine(id).clock
	stolen := r.clocks.stolen[threadLedger(th.tid)]
	raw := c.raw(th.tid, r.clocks.waited-r.clocks.stopCost(th)/2, stolen)
	c.lastRaw = raw
	c.events++
	return raw - int64(c.debt)
}
