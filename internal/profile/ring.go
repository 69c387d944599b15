package profile

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/elfid"
	"github.com/sourceprofiler/sprof/internal/instr"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/internal/profile/ptrace"
)

// Function timing in-process (docs/architecture.md, "Timing in-process").
// Every entry and exit of a timed C, C++ or Rust function jumps to a
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
// Go functions keep breakpoints: a goroutine's events may be in the rings
// of several threads, whose records would have to be merged by time.
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
// record).
const drainInterval = 50e3

// calibrationRecords is how many records the first calibration block
// makes between its pieces of work, at most: no more than half a ring.
const calibrationRecords = 128

// calibrating is how many it makes.
func calibrating() int { return min(calibrationRecords, ringRecords/2) }

// errGoFrames is why a Go function keeps breakpoints when timed.
var errGoFrames = errors.New("a Go function, timed with breakpoints")

// ringPossible reports whether function timing can run in-process: the
// architecture has record code, and some function of the plan keys its
// frames by the stack pointer.
func (t *tracer) ringPossible() bool {
	if _, ok := t.arch.RecordCode(instr.Ring{Records: ringRecords, Table: 1}, 0); !ok {
		return false
	}
	return slices.ContainsFunc(t.plan.Funcs, func(f datafile.Func) bool { return f.Frame == datafile.FrameSP })
}

// ring is what the record code of item's entry, or exit, needs.
func (ip *inproc) ring() instr.Ring {
	r := instr.Ring{Offset: ip.ringAt, Records: ringRecords}
	if ip.table {
		r.Table = ip.progAddr + ip.tableAt
		r.Areas = ip.progAddr + ip.areasAt
	}
	return r
}

// ringArea returns block b's ring area, or area b of the table.
func (ip *inproc) ringArea(b int) []byte {
	at := uint64(b)*ip.blockSize + ip.ringAt
	if ip.table {
		at = ip.areasAt + uint64(b)*ip.stride
	}
	return ip.shared.Bytes()[at : at+instr.RingSize(ringRecords)]
}

// resetRing empties block b's ring, for a new thread.
func (t *tracer) resetRing(b int) {
	instr.RingReset(t.arch, t.inproc.ringArea(b), ringRecords)
}

// dropRing empties block b's ring of the records in it: they are not the
// program's (a vfork child's, a thread's beyond the blocks).
func (t *tracer) dropRing(b int) {
	area := t.inproc.ringArea(b)
	_, n := instr.RingUnread(t.arch, area, ringRecords)
	instr.RingRead(t.arch, area, ringRecords, n)
}

// drainThread books the records in thread th's ring. A thread with no
// block of its own (a vfork child, in the discard block) has its records
// dropped.
func (t *tracer) drainThread(th *thread) int {
	ip := t.inproc
	if ip == nil || !ip.rings {
		return 0
	}
	b, ok := ip.blockOf[th.tid]
	if !ok || th.foreign {
		// A vfork child, or a thread beyond the blocks: block 0, whose
		// records are dropped (a thread waiting on its full ring goes on).
		t.dropRing(0)
		return 0
	}
	if th.vforking {
		// The records of its vfork child, on its stack, in its area.
		t.dropRing(b)
		return 0
	}
	area := ip.ringArea(b)
	first, unread := instr.RingUnread(t.arch, area, ringRecords)
	if unread == 0 {
		return 0
	}
	k := threadLedger(th.tid)
	if th.fullAt != 0 {
		// Its first record was made when it could go on after a stop
		// for a full ring: all of the time since it stopped was the
		// stop's.
		r := instr.ReadRecord(instr.RingSlot(area, first))
		if d := t.ctr.ns(r.Time) - th.fullAt; d > 0 {
			t.stolen[k] += d
		}
		th.fullAt = 0
	}
	base := t.stolen[k]
	n := len(t.plan.Funcs)
	l := t.books.ledger(k)
	for i := range unread {
		r := instr.ReadRecord(instr.RingSlot(area, (first+i)&(ringRecords-1)))
		if r.Item >= n {
			continue
		}
		if r.Returned {
			r.SP -= instr.ReturnPop(t.arch)
		}
		raw := t.ctr.ns(r.Time) - base
		th.debt = t.ringDebt(th, raw)
		th.lastRaw = raw
		th.events++
		now := raw - int64(th.debt)
		if r.Exit {
			t.books.exitLedger(l, r.Item, r.SP, now)
		} else {
			t.books.enterLedger(l, r.Item, r.SP, now)
		}
	}
	instr.RingRead(t.arch, area, ringRecords, unread)
	return unread
}

// vforking notes that thread th has made a vfork child, where rings are
// found from the stack pointer: until th's vfork-done stop, the records
// in its ring are the child's, made on its stack. Its own come first.
func (t *tracer) vforking(th *thread) {
	if ip := t.inproc; ip != nil && ip.rings && ip.table {
		t.drainThread(th)
		th.vforking = true
	}
}

// vforkDone drops the records of thread th's vfork child, whose memory
// it has back: it has not run since its vfork.
func (t *tracer) vforkDone(th *thread) {
	if th.vforking {
		t.drainThread(th)
		th.vforking = false
	}
}

// ringStopped handles thread th, stopped at a ring-full breakpoint: it
// notes the moment it stopped, which the record code saved, and empties
// the ring it was writing to when that is not its own (its own was read
// at the stop): where rings are found from the stack, one on a stack no
// thread owns writes into the discard area (an alternate signal stack),
// and a vfork child into its parent's.
func (t *tracer) ringStopped(th *thread, sp uint64) {
	ip := t.inproc
	b, own := ip.blockOf[th.tid]
	if !own || th.foreign {
		b, own = 0, false
	}
	if ip.table {
		if w := ip.tableArea(sp); w != b {
			b, own = w, false
		}
	}
	at := t.ctr.ns(binary.LittleEndian.Uint64(ip.ringArea(b)[instr.RingFullTime:]))
	if own {
		th.fullAt = at
		return
	}
	var owner *thread
	for tid, ob := range ip.blockOf {
		if ob == b && b != 0 {
			owner = t.threads[tid]
		}
	}
	if owner != nil {
		t.drainThread(owner) // (a vforking parent's drops them)
	} else {
		t.dropRing(b)
	}
	if d := t.waited - at; d > 0 && !th.foreign {
		t.stolen[threadLedger(th.tid)] += d
	}
}

// pastFull moves thread tid, stopped on a ring-full breakpoint that
// leaves the PC on itself (arm64's BRK), to where it goes on: a thread
// let go there would run the breakpoint again, untraced.
func (t *tracer) pastFull(tid int) {
	if t.inproc == nil || !t.inproc.rings {
		return
	}
	var regs ptrace.Regs
	if ptrace.GetRegs(tid, &regs) != nil {
		return
	}
	pc := regs.PC()
	if after := t.arch.BreakpointAddr(pc) + uint64(len(t.arch.Breakpoint())); after != pc && t.inproc.ringFull(after) {
		regs.SetPC(after)
		ptrace.SetRegs(tid, &regs)
	}
}

// fullEnded ends, at the stop being handled, the time taken out for
// thread th's last stop for a full ring when it has made no record since
// (a signal came first, or it ended): the time from that stop to this one
// was a stop's.
func (t *tracer) fullEnded(th *thread) {
	if th.fullAt == 0 {
		return
	}
	if d := t.waited - th.fullAt; d > 0 {
		t.stolen[threadLedger(th.tid)] += d
	}
	th.fullAt = 0
}

// ringDebt is what the records thread th made so far cost it, at raw on
// its clock (its stops taken out): each record's cost is taken from the
// time between it and the thread's next event, and never more than that
// time. A cost measured too high (a record costs less in place than in
// the calibration; under emulation, much less) then shortens the
// shortest of those times to nothing, but cannot add up to move the
// thread's clock back: the books would hold every later event at the
// last one's time until the true time caught up, a long function that
// followed many short calls measured as nothing.
func (t *tracer) ringDebt(th *thread, raw int64) float64 {
	if th.events == 0 {
		return 0
	}
	return th.debt + min(t.ringCost, max(float64(raw-th.lastRaw), 0))
}

// drainRings books the records of every thread's ring, and reports
// whether there were any: PROFILE's work while it waits for stops, no
// more often than every drainInterval.
func (t *tracer) drainRings() bool {
	now := t.clock()
	if now-t.drained < drainInterval {
		return false
	}
	t.drained = now
	return t.drainAll() > 0
}

// drainAll books the records of every thread's ring.
func (t *tracer) drainAll() int {
	n := 0
	for _, th := range t.threads {
		n += t.drainThread(th)
	}
	t.refineCounter()
	return n
}

// ringFull reports whether a thread that trapped at a breakpoint that
// ends at after stopped at a ring-full breakpoint of a trampoline: it
// goes on from after.
func (ip *inproc) ringFull(after uint64) bool {
	if ip == nil || !ip.rings {
		return false
	}
	i := sort.Search(len(ip.tramps), func(i int) bool { return ip.tramps[i].addr >= after }) - 1
	if i < 0 {
		return false
	}
	tr := ip.tramps[i]
	return slices.ContainsFunc(tr.regions, func(r region) bool { return r.full != 0 && tr.addr+uint64(r.at+r.full) == after })
}

// counterClock turns the CPU counter's readings into PROFILE's clock: a
// reading and the clock at the same moment, and the clock's nanoseconds
// per count, measured over the run so far.
type counterClock struct {
	ctr0    uint64
	ns0     int64
	scale   float64
	refined int64 // the clock when scale was last measured
}

// counterPair reads the counter and the clock together: of a few tries,
// the one with the two clock readings around the counter's closest.
func (t *tracer) counterPair() (uint64, int64) {
	best := int64(math.MaxInt64)
	var ctr uint64
	var ns int64
	for range 5 {
		a := t.clock()
		c := ptrace.Counter()
		b := t.clock()
		if b-a < best {
			best, ctr, ns = b-a, c, a+(b-a)/2
		}
	}
	return ctr, ns
}

// startCounter takes the clock's first pair.
func (t *tracer) startCounter() {
	t.ctr.ctr0, t.ctr.ns0 = t.counterPair()
}

// refineCounter measures the scale from the first pair to now; at most
// every 100 ms, each pair's error being some tens of nanoseconds.
func (t *tracer) refineCounter() {
	c := &t.ctr
	if c.scale != 0 && t.clock()-c.refined < 100e6 {
		return
	}
	ctr, ns := t.counterPair()
	if ctr <= c.ctr0 || ns <= c.ns0 {
		return
	}
	c.scale = float64(ns-c.ns0) / float64(ctr-c.ctr0)
	c.refined = ns
}

// ns converts a counter reading.
func (c *counterClock) ns(ctr uint64) int64 {
	return c.ns0 + int64(float64(int64(ctr-c.ctr0))*c.scale)
}

// calibrateRing measures what one record costs the program, in counter
// counts: the main thread, at the exec stop, runs the two calibration
// blocks (see calibrationBlocks) a few times, each timed by its first and
// last records; what the records between the pieces of work add to the
// first block's time, per record, is the cost (the least time of each
// block over the rounds: what the machine adds, an interrupt, a
// migration, only adds). Its registers come back, and its ring is emptied.
func (t *tracer) calibrateRing() (float64, error) {
	ip := t.inproc
	var saved ptrace.Regs
	if err := ptrace.GetRegs(t.pid, &saved); err != nil {
		return 0, err
	}
	defer ptrace.SetRegs(t.pid, &saved)
	b := ip.blockOf[t.pid]
	area := ip.ringArea(b)
	// run runs the block at addr and returns the time from its first
	// record to its last.
	run := func(addr uint64, records int) (int64, error) {
		// The records go into cache lines PROFILE has just read, as in
		// a run, where it reads each record a moment after the thread
		// wrote it.
		t.resetRing(b)
		var sink uint64
		for i := range records {
			sink += atomic.LoadUint64((*uint64)(unsafe.Pointer(&instr.RingSlot(area, i)[0])))
		}
		t.touched = sink
		defer t.resetRing(b)
		regs := saved
		regs.SetPC(addr)
		if err := ptrace.SetRegs(t.pid, &regs); err != nil {
			return 0, err
		}
		if err := ptrace.Cont(t.pid, 0); err != nil {
			return 0, err
		}
		ws, err := ptrace.WaitFor(t.pid)
		if err != nil {
			return 0, err
		}
		if !ws.Stopped() || ws.StopSignal() != syscall.SIGTRAP {
			return 0, fmt.Errorf("program did not stop after the calibration records (%v)", ws.StopSignal())
		}
		if first, n := instr.RingUnread(t.arch, area, ringRecords); first != 0 || n != records {
			return 0, fmt.Errorf("calibration made %d records, want %d", n, records)
		}
		first := instr.ReadRecord(instr.RingSlot(area, 0))
		last := instr.ReadRecord(instr.RingSlot(area, records-1))
		return int64(last.Time - first.Time), nil
	}
	var with, without []int64
	const rounds = 31
	for round := range rounds {
		w, err := run(ip.calibration[0], calibrating()+2)
		if err != nil {
			return 0, err
		}
		wo, err := run(ip.calibration[1], 2)
		if err != nil {
			return 0, err
		}
		if round > 0 { // the first round warms the caches
			with, without = append(with, w), append(without, wo)
		}
	}
	return max(float64(slices.Min(with)-slices.Min(without)), 0) / float64(calibrating()), nil
}

// calibrationBlocks returns the code of the two calibration blocks: a
// record, calibrationRecords pieces of work (instr.CalibrationWork) each
// after a record, a record and a breakpoint; the same without the
// records between; their records go to ring r.
func (t *tracer) calibrationBlocks(r instr.Ring) (with, without []byte) {
	rc, _ := t.arch.RecordCode(r, 0)
	work := instr.CalibrationWork(t.arch)
	with, without = slices.Clone(rc.Code), slices.Clone(rc.Code)
	for range calibrating() {
		with = append(append(with, rc.Code...), work...)
		without = append(without, work...)
	}
	bp := t.arch.Breakpoint()
	return append(append(with, rc.Code...), bp...), append(append(without, rc.Code...), bp...)
}

// exitTrampolines patches in-process the exits of the functions in exits
// (planted by p) that instr.PlanExits can patch and that no patch or
// breakpoint planted before overlaps (p's entries, with their jumps):
// with full jumps, then with short ones to hops in the padding, and the
// functions whose exits could not all be patched at the return sites of
// their calls. Each trampoline is built where it goes, at the area's
// next. It returns the jumps to write, and the exits left for
// breakpoints, by item.
func (t *tracer) exitTrampolines(p *planting, exits map[int][]instr.Exit) ([]patchWrite, map[int][]instr.Exit) {
	e := &exitPatching{p: p, taken: takenSpans(p.jumps, t.sites), left: map[int][]instr.Exit{}}
	inEntry := entryExits(p.jumps)
	for _, item := range slices.Sorted(maps.Keys(exits)) {
		t.patchExits(e, item, exits[item], inEntry)
	}
	e.claimed = slices.Clone(e.windows)
	t.shortExits(e)
	t.returnSitesOf(e)
	return e.out, e.left
}

// exitPatching is the work of patching one module's exits in-process
// (exitTrampolines).
type exitPatching struct {
	p *planting
	// taken is what the entries' patches and breakpoints cover.
	taken spans
	// left are the exits left for breakpoints, by item.
	left map[int][]instr.Exit
	// out are the jumps to write.
	out []patchWrite
	// short are the exits to try again with a short jump.
	short []shortExit
	// windows are the exits' patches; claimed those and the short
	// jumps' hops and the return sites' patches, in no order.
	windows, claimed spans
}

// entryExits returns the exits that the entries' trampolines of jumps
// carry out, with their records (a function whose first instructions,
// moved, hold its return).
func entryExits(jumps []patchWrite) map[uint64]bool {
	inEntry := map[uint64]bool{}
	for _, j := range jumps {
		if p := &j.tramp.patch; j.tramp.code.Exit {
			pc := p.Site
			for _, in := range p.Insts {
				if in.Kind == instr.Ret || in.Kind == instr.Jump {
					inEntry[pc] = true
					break
				}
				pc += uint64(in.Len)
			}
		}
	}
	return inEntry
}

// addExit takes exit trampoline w into the area and the run.
func (t *tracer) addExit(e *exitPatching, w patchWrite) {
	e.p.area.alloc(len(w.code)) // where it was built: next
	e.p.area.put(w.tramp.addr, w.code)
	e.out = append(e.out, w)
	t.inproc.add(w.tramp)
	t.inproc.exitsPatched++
	e.windows = append(e.windows, [2]uint64{w.tramp.patch.Site, w.tramp.patch.End()})
}

// patchExits patches the exits of item's function with full jumps where
// they fit; those a short jump may fit are kept in e.short, the others
// left for breakpoints.
func (t *tracer) patchExits(e *exitPatching, item int, exits []instr.Exit, inEntry map[uint64]bool) {
	ip, text := t.inproc, e.p.text
	f := &t.plan.Funcs[item]
	lo, hi := f.Low+e.p.bias, f.High+e.p.bias
	if f.Frame != datafile.FrameSP || text.b == nil || lo < text.start || hi > text.start+uint64(len(text.b)) {
		e.left[item] = exits
		return
	}
	pad := instr.PaddingAfter(t.arch, text.b[hi-text.start:], hi)
	plans, err := t.arch.PlanExits(text.b[lo-text.start:hi-text.start+uint64(pad)], lo, hi, false)
	if err != nil {
		e.left[item] = exits
		return
	}
	var mine [][2]uint64 // this function's exit patches: windows of others are elsewhere
	for _, p := range plans {
		if p.Exit.Indirect {
			continue
		}
		if inEntry[p.Exit.PC] {
			ip.exitsPatched++
			continue
		}
		w, err := t.exitTrampoline(item, &p, e.taken, mine, e.p.area.next)
		if err != nil {
			// (A short jump's window is smaller: it may fit where a
			// branch lands in a full jump's.)
			if back, _ := t.arch.ShortReach(); back > 0 && (errors.Is(err, instr.ErrTooShort) || errors.Is(err, instr.ErrBranchInto)) {
				e.short = append(e.short, shortExit{item: item, fn: text.b[lo-text.start : hi-text.start+uint64(pad)], lo: lo, hi: hi, exit: p.Exit})
				continue
			}
			t.exitLeft(e.left, item, p.Exit, err, e.taken)
			continue
		}
		t.addExit(e, w)
		mine = append(mine, [2]uint64{p.Patch.Site, p.Patch.End()})
	}
}

// shortExits patches the exits of e.short with short jumps to hops in the
// padding, which the exits' full patches take first.
func (t *tracer) shortExits(e *exitPatching) {
	if len(e.short) == 0 {
		return
	}
	hops := t.padding(e.p)
	for _, w := range e.windows {
		hops.remove(w[0], w[1])
	}
	for _, s := range e.short {
		w, err := t.shortExit(s, e.taken, e.claimed, hops, e.p.area.next)
		if err != nil {
			t.exitLeft(e.left, s.item, s.exit, err, e.taken)
			continue
		}
		t.addExit(e, w)
		e.claimed = append(e.claimed, [2]uint64{w.addr, w.addr + uint64(len(w.jump))}, [2]uint64{w.hop, w.hop + uint64(len(w.hopCode))})
	}
}

// returnSitesOf leaves the functions whose exits could not all be patched
// where their calls return, when every call of theirs in the module can be
// patched there: their exits then keep no breakpoint.
func (t *tracer) returnSitesOf(e *exitPatching) {
	ip, bias := t.inproc, e.p.bias
	callers := t.callers(bias)
	budget := returnSites
	for _, item := range slices.Sorted(maps.Keys(e.left)) {
		f := &t.plan.Funcs[item]
		rets := t.returns[f.Entry+bias]
		if f.Frame != datafile.FrameSP || len(rets) == 0 || len(rets) > budget {
			continue
		}
		// Planned first, all of them, where they would go; built again
		// one after the other at their places.
		mark := len(e.claimed)
		ok := true
		for n, r := range rets {
			w, err := t.returnSite(item, r, callers, e.p.text, e.taken, e.claimed, e.p.area.next+uint64(n)*trampCell)
			if err != nil {
				ok = false
				break
			}
			e.claimed = append(e.claimed, [2]uint64{w.tramp.patch.Site, w.tramp.patch.End()})
		}
		if !ok {
			e.claimed = e.claimed[:mark]
			continue
		}
		for _, r := range rets {
			w, err := t.returnSite(item, r, callers, e.p.text, e.taken, nil, e.p.area.next)
			if err != nil {
				continue // never: planned above
			}
			at := e.p.area.alloc(len(w.code))
			e.p.area.put(at, w.code)
			e.out = append(e.out, w)
			ip.add(w.tramp)
			ip.returnSites++
		}
		budget -= len(rets)
		ip.exitsPatched += len(e.left[item])
		delete(e.left, item)
		ip.exitsLeft = slices.DeleteFunc(ip.exitsLeft, func(fb fallBack) bool { return fb.item == item })
	}
}

// returnSites bounds the return sites a module's exits may take (the area
// is mapped for them before it is known which functions need them).
const returnSites = 4096

// callers returns the extents of the profiled functions of the module
// loaded with bias, sorted: where a return site may be patched.
func (t *tracer) callers(bias uint64) spans {
	var s spans
	for _, f := range t.plan.Funcs {
		if f.Low < f.High && f.Frame == datafile.FrameSP {
			s = append(s, [2]uint64{f.Low + bias, f.High + bias})
		}
	}
	slices.SortFunc(s, func(a, b [2]uint64) int { return cmp.Compare(a[0], b[0]) })
	return s
}

// returnSite patches r, where a call of item returns, with a trampoline at
// cell that records item's exit (instr.ReturnTag) and carries out the
// instructions there: r must be in a profiled function, no jump may land
// there or inside the patch, and the patch must overlap neither taken nor
// claimed.
func (t *tracer) returnSite(item int, r uint64, callers spans, text moduleText, taken, claimed spans, cell uint64) (patchWrite, error) {
	i := sort.Search(len(callers), func(i int) bool { return callers[i][1] > r })
	if i >= len(callers) || callers[i][0] > r {
		return patchWrite{}, errNoExtent
	}
	lo, hi := callers[i][0], callers[i][1]
	if text.b == nil || lo < text.start || hi > text.start+uint64(len(text.b)) {
		return patchWrite{}, errNoCode
	}
	if t.landings.has(r) {
		return patchWrite{}, fmt.Errorf("a jump lands where a call of it returns, at %#x: %w", r, instr.ErrBranchInto)
	}
	if err := t.code.boundary(r); err != nil {
		f := &t.plan.Funcs[item]
		t.cfg.Warn(prf.SiteRefused("return site", r, f.Name, t.plan.Modules[f.Module].Name, err))
		return patchWrite{}, err
	}
	p, err := t.arch.PlanPatch(text.b[lo-text.start:hi-text.start], lo, r)
	if err != nil {
		return patchWrite{}, err
	}
	if p.Site != r || taken.covers(p.Site, p.End()) || overlaps(claimed, p.Site, p.End()) || t.landings.inside(p.Site, p.End()) {
		return patchWrite{}, errOverlap
	}
	rc, _ := t.arch.RecordCode(t.inproc.ring(), instr.ReturnTag(item))
	tr, err := t.arch.Trampoline(&p, cell, rc.Code)
	if err != nil {
		return patchWrite{}, err
	}
	if len(tr.Code) > trampCell {
		return patchWrite{}, fmt.Errorf("trampoline of %d bytes: %w", len(tr.Code), instr.ErrNotRelocatable)
	}
	jump, err := t.arch.PatchJump(&p, cell)
	if err != nil {
		return patchWrite{}, err
	}
	return patchWrite{addr: r, jump: jump, code: tr.Code,
		tramp: &tramp{addr: cell, patch: p, code: tr, regions: []region{recordRegion(0, &rc)}}}, nil
}

// shortExit is an exit too short for a full jump.
type shortExit struct {
	item   int
	fn     []byte // its function's code and padding
	lo, hi uint64 // its function's extent
	exit   instr.Exit
}

// exitLeft notes that item's exit e keeps a breakpoint, for err; but an
// exit inside an entry's patch gets none (its frame closes from the
// stack pointer).
func (t *tracer) exitLeft(left map[int][]instr.Exit, item int, e instr.Exit, err error, taken spans) {
	t.inproc.exitsLeft = append(t.inproc.exitsLeft, fallBack{item: item, err: err, pc: e.PC})
	if !taken.covers(e.PC, e.PC+1) {
		left[item] = append(left[item], e)
	}
}

// shortExit patches exit s with a short jump to a hop taken from hops,
// its trampoline at cell; its patch and hop must overlap neither taken
// nor claimed.
func (t *tracer) shortExit(s shortExit, taken, claimed spans, hops *hopSpace, cell uint64) (patchWrite, error) {
	plans, err := t.arch.PlanExits(s.fn, s.lo, s.hi, true)
	if err != nil {
		return patchWrite{}, err
	}
	i := slices.IndexFunc(plans, func(p instr.ExitPlan) bool { return p.Exit.PC == s.exit.PC })
	if i < 0 {
		return patchWrite{}, fmt.Errorf("exit at %#x: %w", s.exit.PC, instr.ErrTooShort)
	}
	p := &plans[i]
	if p.Err != nil {
		return patchWrite{}, p.Err
	}
	if overlaps(claimed, p.Patch.Site, p.Patch.End()) {
		return patchWrite{}, errOverlap
	}
	w, err := t.exitTrampoline(s.item, p, taken, nil, cell)
	if err != nil {
		return patchWrite{}, err
	}
	back, fwd := t.arch.ShortReach()
	hop, ok := hops.take(p.Patch.Site, back, fwd, hopLen)
	if !ok || overlaps(claimed, hop, hop+hopLen) || taken.covers(hop, hop+hopLen) {
		return patchWrite{}, errNoHop
	}
	if w.hopCode, err = t.arch.Jump(hop, cell); err != nil {
		return patchWrite{}, err
	}
	w.hop = hop
	if w.jump, err = t.arch.PatchJump(&p.Patch, hop); err != nil {
		return patchWrite{}, err
	}
	return w, nil
}

// overlaps reports whether [lo, hi) overlaps one of s, in any order.
func overlaps(s spans, lo, hi uint64) bool {
	return slices.ContainsFunc(s, func(r [2]uint64) bool { return r[0] < hi && lo < r[1] })
}

// errOverlap is why an exit whose window another patch covers keeps a
// breakpoint (or, inside an entry's patch, nothing: its frame closes from
// the stack pointer).
var errOverlap = errors.New("another patch covers the exit's window")

// exitTrampoline builds the trampoline at cell of item's exit p.
func (t *tracer) exitTrampoline(item int, p *instr.ExitPlan, taken spans, mine [][2]uint64, cell uint64) (patchWrite, error) {
	if p.Err != nil {
		return patchWrite{}, p.Err
	}
	lo, hi := p.Patch.Site, p.Patch.End()
	if taken.covers(lo, hi) || slices.ContainsFunc(mine, func(m [2]uint64) bool { return m[0] < hi && lo < m[1] }) {
		return patchWrite{}, errOverlap
	}
	if t.landings.inside(lo, hi) {
		return patchWrite{}, fmt.Errorf("a jump from outside the function lands in the exit's window [%#x, %#x): %w", lo, hi, instr.ErrBranchInto)
	}
	if err := t.code.boundary(lo); err != nil {
		return patchWrite{}, err // (never: the exits are found decoding the function)
	}
	rc, ok := t.arch.RecordCode(t.inproc.ring(), instr.RecordTag(item, true))
	if !ok {
		return patchWrite{}, errNoRoom
	}
	if err := t.scratchAt(&rc, p.Patch.Insts); err != nil {
		return patchWrite{}, err
	}
	tr, err := instr.ExitTrampoline(t.arch, &p.Patch, cell, rc.Code)
	if err != nil {
		return patchWrite{}, err
	}
	if len(tr.Code) > trampCell {
		return patchWrite{}, fmt.Errorf("exit trampoline of %d bytes: %w", len(tr.Code), instr.ErrNotRelocatable)
	}
	var jump []byte
	if !p.Patch.Short { // (a short jump's goes to its hop: shortExit)
		if jump, err = t.arch.PatchJump(&p.Patch, cell); err != nil {
			return patchWrite{}, err
		}
	}
	return patchWrite{addr: lo, jump: jump, code: tr.Code,
		tramp: &tramp{addr: cell, patch: p.Patch, code: tr, regions: []region{recordRegion(tr.At, &rc)}}}, nil
}

// errNotTailCall is why a jump out of a function keeps a breakpoint where
// the record code needs registers free (instr.RecordCode.Scratch).
var errNotTailCall = errors.New("a jump out of the function to no function's entry (its cold part?), where registers may be live")

// scratchAt says why record code rc cannot go before the exit among
// insts (the instructions a patch replaces): a jump out of the function
// that is not a tail call, where rc needs registers that are free only at
// entries and returns. A tail call is told by its target: the start of a
// function of the module's symbol table that is no cold part, or an
// address some call of the module calls.
func (t *tracer) scratchAt(rc *instr.RecordCode, insts []instr.Inst) error {
	if !rc.Scratch {
		return nil
	}
	for _, in := range insts {
		if in.Kind == instr.Jump && !t.entries[in.Target] && len(t.returns[in.Target]) == 0 {
			return fmt.Errorf("%s: %w", in.Text, errNotTailCall)
		}
	}
	return nil
}

// scanCode decodes the code of module mi, at path, loaded with bias,
// mapped as in (scanModule), for what is planted in it: t.code until it
// is planted, and the places its jumps land added to those of the
// modules planted before it (t.landings: a patch covers none, whoever
// jumps there); timing in-process, the returns of its calls and its
// symbol table's function starts too.
func (t *tracer) scanCode(maps []mapping, in instance, mi int, path string, bias uint64) {
	t.code = t.scanModule(maps, in, mi, bias)
	if !t.plan.Method.IsFunction() {
		return
	}
	for _, cm := range t.code {
		t.landings = append(t.landings, cm.Jumps...)
		for target := range cm.Returns {
			t.landings = append(t.landings, target) // a call lands too
		}
	}
	slices.Sort(t.landings)
	t.landings = slices.Compact(t.landings)
	if !t.timeInProcess {
		return
	}
	if t.returns == nil {
		t.returns, t.entries = map[uint64][]uint64{}, map[uint64]bool{}
	}
	for _, cm := range t.code {
		for target, rs := range cm.Returns {
			t.returns[target] = append(t.returns[target], rs...)
		}
	}
	for _, a := range elfid.ReadFuncStarts(path) {
		t.entries[a+bias] = true
	}
}

// forgetExits forgets the landings, returns and function starts in
// [lo, hi): a module unloaded.
func (t *tracer) forgetExits(lo, hi uint64) {
	in := func(a uint64) bool { return a >= lo && a < hi }
	t.landings = slices.DeleteFunc(t.landings, in)
	for target, rs := range t.returns {
		if rs = slices.DeleteFunc(rs, in); in(target) || len(rs) == 0 {
			delete(t.returns, target)
		} else {
			t.returns[target] = rs
		}
	}
	for a := range t.entries {
		if in(a) {
			delete(t.entries, a)
		}
	}
}

// landings are the targets of the direct jumps and calls of a module's
// code, sorted: a patch may start at one but not cover one.
type landings []uint64

// codeMaps are the executable mappings of a module being planted,
// decoded (instr.CodeMap).
type codeMaps []*instr.CodeMap

// scanModule decodes the executable mappings of the module instance in,
// module mi of the plan loaded with bias: each planned function from its
// start to its end, the code between linearly. So are found where its
// jumps land (the jumps of a function's cold part, GCC's f.cold placed
// apart, back into it among them, and those of other functions into
// its first bytes, which decoding the function alone does not see),
// where its calls return, and where its instructions begin. It costs
// some 3 ms for 10,000 small functions on x86-64 (docs/performance.md).
func (t *tracer) scanModule(maps []mapping, in instance, mi int, bias uint64) codeMaps {
	var funcs [][2]uint64
	for i := range t.plan.Funcs {
		if f := &t.plan.Funcs[i]; f.Module == mi && f.Low < f.High {
			funcs = append(funcs, [2]uint64{f.Low + bias, f.High + bias})
		}
	}
	var out codeMaps
	for _, m := range maps {
		if m.Inode != in.first.Inode || m.Path != in.first.Path || m.Start < in.lo || m.End > in.hi ||
			!strings.Contains(m.Perms, "x") || m.End-m.Start > 1<<30 {
			continue
		}
		code := make([]byte, m.End-m.Start)
		if err := t.mem.ReadMem(m.Start, code); err != nil {
			continue
		}
		out = append(out, instr.MapCode(t.arch, code, m.Start, funcs))
	}
	return out
}

// at returns the decoding that holds addr, or nil.
func (c codeMaps) at(addr uint64) *instr.CodeMap {
	for _, cm := range c {
		if cm.Contains(addr) {
			return cm
		}
	}
	return nil
}

// boundary returns nil when a site may be planted at addr (see
// instr.CodeMap.Boundary), else why not.
func (c codeMaps) boundary(addr uint64) error {
	cm := c.at(addr)
	if cm == nil {
		return fmt.Errorf("not in the module's code: %w", instr.ErrNotBoundary)
	}
	return cm.Boundary(addr)
}

// has reports whether a jump lands at addr.
func (l landings) has(addr uint64) bool {
	_, ok := slices.BinarySearch(l, addr)
	return ok
}

// inside reports whether a jump lands in (lo, hi): past the first byte of
// a patch from lo to hi.
func (l landings) inside(lo, hi uint64) bool {
	i := sort.Search(len(l), func(i int) bool { return l[i] > lo })
	return i < len(l) && l[i] < hi
}

// spans are address ranges, sorted and not overlapping.
type spans [][2]uint64

// takenSpans returns the code the entries' patches and hops, and the
// breakpoints, take.
func takenSpans(jumps []patchWrite, sites map[uint64]*site) spans {
	var s spans
	for _, j := range jumps {
		// (A punned jump goes on over the bytes it shares with the code
		// after its patch.)
		s = append(s, [2]uint64{j.addr, j.addr + uint64(len(j.jump)+len(j.tramp.patch.Punned))})
		if j.hopCode != nil {
			s = append(s, [2]uint64{j.hop, j.hop + uint64(len(j.hopCode))})
		}
	}
	for addr, st := range sites {
		s = append(s, [2]uint64{addr, addr + uint64(len(st.orig))})
	}
	slices.SortFunc(s, func(a, b [2]uint64) int { return cmp.Compare(a[0], b[0]) })
	return s
}

// covers reports whether [lo, hi) overlaps a span.
func (s spans) covers(lo, hi uint64) bool {
	i := sort.Search(len(s), func(i int) bool { return s[i][1] > lo })
	return i < len(s) && s[i][0] < hi
}
