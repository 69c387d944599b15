package profile

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"syscall"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
)

// Function timing, the start function and attribution with breakpoints.
//
// Each function's entry and each of its exits (returns and tail calls,
// instr.FindExits) is a breakpoint; at each hit the tracer reads the stack
// pointer and hands an entry or an exit to the books (books.go), with the
// time of the stop. A stopped thread does not run the program: the time it
// spends stopped is not the program's. The tracer keeps, for every thread
// and goroutine, the time taken from it so far (from the moment PROFILE
// sees the stop to the moment it lets the thread go, plus the calibrated
// cost of the trap itself, which PROFILE cannot see: the overhead), and
// gives the books a clock that stops with the thread.
//
// The overhead is measured before the program starts: a breakpoint at the
// program's first instruction is hit again and again, and the median time
// from letting the thread go (just before the ptrace request) to seeing
// its next stop is the cost of one event that no clock of PROFILE's
// covers. /CB n imposes n instead.

// exitStops is how many times, timing in-process, an exit that keeps a
// breakpoint is hit before it is taken out: from then on the frames of
// its function close from the stack pointer at their thread's next event
// (books.go), which charges the function what its caller runs until that
// event. A breakpoint gives a rarely called function its exact time
// (a function left long before its caller's next profiled call), but a
// hot one pays a stop (50 µs) per call, with the variation of a stop's
// cost in its time.
const exitStops = 100

// calibrationRounds is how many breakpoint hits measure the overhead.
const calibrationRounds = 101

// yieldWindow is how long the tracer polls for the next stop, yielding
// its CPU, before it sleeps (ptrace.WaitYielding), when timing: stops
// closer than that are seen at once, as in the calibration; a function
// that runs longer between two stops has a wake-up's error, some
// hundred microseconds, which is small beside it.
const yieldWindow = 20 * time.Millisecond

// clock returns PROFILE's monotonic time in nanoseconds.
func (t *tracer) clock() int64 { return int64(time.Since(t.epoch)) }

// keepsBooks reports whether the plan needs the books: function timing,
// a start function, attribution.
func keepsBooks(p *datafile.Plan) bool {
	return p.Method.IsFunction() && (p.Method.IsTiming() || p.StartFunc != "" || p.Attribution)
}

func threadLedger(tid int) ledgerKey { return ledgerKey{id: uint64(tid)} }

// book hands the hit of site s by thread th (whose registers are in
// t.regs) to the books, as an entry or an exit, and notes which goroutine
// the stop is to be charged to.
func (t *tracer) book(th *thread, s *site) {
	if s.item >= 0 {
		k, sp := t.bookKey(th, s.item)
		t.books.enter(k, s.item, sp, t.eventTime(th, k))
		t.charged = k
	}
	if s.exit >= 0 {
		// (An entry that is also an exit, a function that is one ret or
		// one jump, enters and leaves at once.)
		k, sp := t.bookKey(th, s.exit)
		t.books.exit(k, s.exit, sp, t.eventTime(th, k))
		t.charged = k
	}
}

// bookKey returns whose stack an event of item at a stop of thread th
// belongs to, and its frame's key (frameKey): a C function's call made
// for a goroutine (carrier) is the goroutine's.
func (t *tracer) bookKey(th *thread, item int) (ledgerKey, uint64) {
	k, sp := t.frameKey(th, &t.plan.Funcs[item])
	if k.goroutine {
		t.carried[th.tid] = k.id
	} else if g := t.carrier(th.tid, item); g != 0 {
		k = ledgerKey{goroutine: true, id: g}
	}
	return k, sp
}

// carrier returns the goroutine thread tid runs a call of C function
// item for, 0 for none: in a program with Go functions, the goroutine of
// the last of Go's events the thread made (a record of its ring, or a
// stop). A cgo call runs its C function on the thread that runs the
// goroutine, which stays there until the call returns, its callbacks
// included; cgo's wrapper, a Go function, comes first (main._Cfunc_f,
// which PREP profiles with the program's own functions). So the C call
// is the goroutine's, nested in its Go frames, and the Go calls it makes
// back in it (books.runFloor). A thread that ran no goroutine's profiled
// call yet (a thread C code started) keeps its C calls.
func (t *tracer) carrier(tid, item int) uint64 {
	if b := t.books; b.noSP == nil || b.noSP[item] {
		return 0
	}
	return t.carried[tid]
}

// eventTime is the time of the event of thread th at the stop being
// handled, on the clock of k: timing in-process, a goroutine's records in
// the rings come first, and its clock is the rings' (goroutines.go).
func (t *tracer) eventTime(th *thread, k ledgerKey) int64 {
	if !k.goroutine || t.rings == nil {
		return t.now(th, k)
	}
	t.rings.goStop(k.id)
	return t.rings.goNow(th, k.id)
}

// now is the time of the stop being handled on the clock of k, thread
// th's or the goroutine's it runs: its stops and, for a thread, its
// records taken out. The stop came before PROFILE saw it: by half the
// calibrated overhead, which is the time from letting a thread go to
// seeing its next stop. (Between two stops the half-overheads cancel;
// between a record of a thread's ring and a stop, they do not: a function
// whose entry is a record and whose exit is a breakpoint would be charged
// the trap's latency.)
func (t *tracer) now(th *thread, k ledgerKey) int64 {
	now := t.waited - t.stolen[k] - t.stopCost(th)/2
	if !k.goroutine {
		now -= int64(t.rings.debt(th, now))
	}
	return now
}

// frameKey returns whose stack a call of f belongs to and its frame's key:
// the thread and the stack pointer, or for a Go function the goroutine and
// its distance from the goroutine's stack top (which survives the copying
// of goroutine stacks), turned so that deeper is smaller. A Go function
// whose goroutine register holds no goroutine whose stack holds the stack
// pointer (runtime code that runs without one) is the thread's, as the
// record code's goroutine form makes it.
func (t *tracer) frameKey(th *thread, f *datafile.Func) (ledgerKey, uint64) {
	sp := t.arch.SP(&t.regs)
	if !goFrames(f) {
		return threadLedger(th.tid), sp
	}
	g := t.arch.Goroutine(&t.regs)
	var b [16]byte
	// g.stack is the first two words of g (runtime/runtime2.go: type g
	// struct { stack stack; ...}, type stack struct { lo, hi uintptr }).
	if g == 0 || t.mem.ReadMem(g, b[:]) != nil {
		return threadLedger(th.tid), sp
	}
	lo, hi := binary.LittleEndian.Uint64(b[:]), binary.LittleEndian.Uint64(b[8:])
	if sp < lo || hi < sp || hi-sp > 1<<40 {
		return threadLedger(th.tid), sp
	}
	return ledgerKey{goroutine: true, id: g}, 1<<63 - (hi - sp)
}

// charge takes the time thread tid spent in its last stop, and the
// overhead, from the thread and from the goroutine its event was booked
// to.
func (t *tracer) charge(tid int) {
	th := t.threads[tid]
	if th == nil || th.foreign || th.born > t.waited {
		t.charged = ledgerKey{}
		return
	}
	if th.fullAt != 0 {
		// Stopped with its ring full: the stop is taken out from when
		// it began to the thread's next record (rings.drain).
		th.let = max(t.resumed, t.waited)
		t.charged = ledgerKey{}
		return
	}
	end := t.resumed
	if end < t.waited {
		end = t.clock() // (a stop the tracer did not end: a thread that went on as it was)
	}
	cost := t.stopCost(th)
	if th.let > 0 {
		t.gaps.add(t.waited - th.let)
	}
	th.let = end
	t.steal(tid, t.waited-cost, end)
	if t.charged.goroutine && t.rings == nil {
		// (In-process, a goroutine's clock takes out its threads'
		// stops: goClock.)
		t.stolen[t.charged] += end - t.waited + cost
	}
	t.charged = ledgerKey{}
}

// steal takes the time from..to, when PROFILE held thread tid, from the
// thread's clock and from the run's (held).
func (t *tracer) steal(tid int, from, to int64) {
	if to <= from {
		return
	}
	t.stolen[threadLedger(tid)] += to - from
	t.held.add(from, to)
	if th := t.threads[tid]; th != nil {
		th.heldTotal += to - from
	}
}

// heldTime is the time during which PROFILE held at least one thread of
// the program: the union of the intervals of its stops. They come nearly
// in the order they began, but not quite: a stop for a full ring ends at
// the thread's next record, read later, and threads stop side by side.
// So they are kept, and merged (sorted, and the overlapping ones made
// one) when there are many; all but the latest of the merged ones are
// then added up and forgotten: a stop is known within the reading of the
// rings after it ended, long before heldKept more have come.
type heldTime struct {
	total int64      // of the intervals forgotten
	spans [][2]int64 // the others
}

// heldKept is how many intervals are kept before they are merged, and
// heldLatest how many of the merged ones are kept after.
const heldKept, heldLatest = 1 << 14, 256

func (h *heldTime) add(from, to int64) {
	h.spans = append(h.spans, [2]int64{from, to})
	if len(h.spans) >= heldKept {
		h.merge()
		if n := len(h.spans) - heldLatest; n > 0 {
			for _, s := range h.spans[:n] {
				h.total += s[1] - s[0]
			}
			h.spans = append(h.spans[:0], h.spans[n:]...)
		}
	}
}

// merge sorts the intervals and makes the overlapping ones one.
func (h *heldTime) merge() {
	slices.SortFunc(h.spans, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	out := h.spans[:0]
	for _, s := range h.spans {
		if n := len(out); n > 0 && s[0] <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], s[1])
			continue
		}
		out = append(out, s)
	}
	h.spans = out
}

// sum is the time held so far.
func (h *heldTime) sum() int64 {
	h.merge()
	sum := h.total
	for _, s := range h.spans {
		sum += s[1] - s[0]
	}
	return sum
}

// eventCost is the overhead taken out at each stop: /CB's, or the
// calibrated one, but no more than the run's own gaps show. The
// calibration measures a stop's unseen cost on the machine as it was at
// start-up; during the run the tracer and the program may sit on other
// CPUs, with other caches, and the cost differs, by a factor of two or
// three on this project's virtual machines. A thread's gap between its
// release and its next stop is that unseen cost plus the program's own
// work between the two stops, often next to none (a call right after a
// return): where the gaps' lower quartile is below the calibration, the
// calibration is too much, and taking it out at every stop would take the
// program's own time too, down to no time at all in a run of many short
// calls. (Times of calls shorter than the stops' variation, some ten
// microseconds, cannot be measured with breakpoints.)
func (t *tracer) eventCost() int64 {
	if t.forced || t.gaps.low == 0 {
		return t.overhead
	}
	return min(t.gaps.low, t.overhead)
}

// stopCost is what is taken out, for thread th's stop being handled, of
// the time no clock of PROFILE's sees: eventCost, but never more than the
// time since PROFILE last let the thread go (or since it was born), which
// holds that time and the program's own work before the stop. The
// calibration of a busy machine may find a stop a thousand times dearer
// than later stops are (4 ms has been seen); until the run has gaps
// enough to bound it (eventCost), it would otherwise take out more than
// the stop took, and move the thread's clock back past its start. /CB's
// value is taken out as it is.
func (t *tracer) stopCost(th *thread) int64 {
	c := t.eventCost()
	if t.forced {
		return c
	}
	since := th.let
	if since == 0 {
		since = th.born
	}
	return min(c, max(t.waited-since, 0))
}

// gapWindow is how many gaps between stops make one estimate.
const gapWindow = 256

// gaps keeps the gaps between a thread's release and its next stop, and
// their lower quartile: over the first 16, 32, 64 and 128 gaps while the
// run is young (a short run has few stops), then over the last full
// window; 0 before 16.
type gaps struct {
	window [gapWindow]int64
	n      int
	full   bool
	low    int64
}

func (g *gaps) add(d int64) {
	g.window[g.n] = d
	g.n++
	if g.n == gapWindow || (!g.full && g.n >= 16 && g.n&(g.n-1) == 0) {
		sorted := slices.Clone(g.window[:g.n])
		slices.Sort(sorted)
		g.low = max(sorted[len(sorted)/4], 1)
	}
	if g.n == gapWindow {
		g.n, g.full = 0, true
	}
}

// openThreadBooks starts the clock of thread th, which is about to run.
func (t *tracer) openThreadBooks(th *thread) {
	if t.books != nil && !th.foreign {
		th.born = t.clock()
		if t.started == 0 || th.born < t.started {
			t.started = th.born
		}
	}
}

// closeThreadBooks ends thread th at the time of its last stop: its frames
// close, and the run lasts at least until then, on its clock.
func (t *tracer) closeThreadBooks(th *thread) {
	if t.books == nil || th.foreign {
		return
	}
	if t.rings != nil {
		t.rings.stopped(th)
	}
	t.settleWait(th)
	th.closeWait()
	t.waitEnded(th)
	delete(t.carried, th.tid)
	k := threadLedger(th.tid)
	end := t.now(th, k)
	t.books.end(k, end)
	t.ended = max(t.ended, t.waited)
	t.debt = max(t.debt, th.debt)
	t.longest = max(t.longest, end-th.born)
	delete(t.stolen, k)
}

// elapsed is the run's total time: from its first thread's start to its
// last thread's end, less the time PROFILE held any thread (the union of
// the stops), and less the cost of the records of the thread or
// goroutine that made the most (the threads that ran side by side paid
// theirs at the same time; the goroutines that ran one after the other
// paid more, which is left in: a record costs some ten nanoseconds); but
// never less than the longest life of a thread on its own clock, from its
// start to its end less its own stops and records. The union counts every
// stop as one the whole run waited for; where threads run side by side,
// a thread held while the others go on delays the run by less, and a
// thread that waits for the others (main in pthread_join) lives through
// the run: its time, and its functions', are within the total.
func (t *tracer) elapsed() int64 {
	debt := t.debt
	if t.rings != nil {
		for _, g := range t.rings.goroutines {
			debt = max(debt, g.clock.debt)
		}
	}
	return max(t.ended-t.started-t.held.sum()-int64(debt), t.longest, 0)
}

// timingStats completes the run's statistics from the books.
func (t *tracer) timingStats(s *datafile.Stats) {
	b := t.books
	if t.rings != nil {
		t.rings.drainEnd()
	}
	for _, th := range t.threads {
		t.closeThreadBooks(th)
	}
	b.finish()
	s.Hits = b.hits
	s.CallDepth = b.depth
	if t.plan.Method.IsSampling() && !keepsBooks(t.plan) {
		// (Books kept for a trace alone: sampling reports no call
		// depth, with /TRACE or without.)
		s.CallDepth = 0
	}
	if b.attribution {
		s.Stacks = slices.Clone(b.stacks)
	}
	if !t.plan.Method.IsTiming() {
		return
	}
	s.FuncTime, s.ChildTime = b.self, b.all
	s.TotalTime = t.elapsed()
	s.OutsideTime = max(s.TotalTime-b.inside, 0)
}

// calibrate measures the overhead of one event at the exec stop, before
// the program runs: the thread hits a breakpoint at its first instruction
// calibrationRounds times, and the lower quartile of the round trips is
// the stop's cost. Where other work shares the CPUs, a round trip often
// waits for one, and the median was seen at 4 ms for stops of some 30 µs:
// taken out of every later stop, it took most of the program's own time.
// Its registers and code are restored.
func (t *tracer) calibrate() (int64, error) {
	saved, restore, err := t.calls.borrow(t.pid, t.arch.Breakpoint())
	if err != nil {
		return 0, err
	}
	defer restore()
	samples := make([]int64, 0, calibrationRounds)
	regs := t.borrowed(saved)
	for range calibrationRounds {
		if err := t.proc.setRegs(t.pid, &regs); err != nil {
			return 0, err
		}
		let := t.clock()
		if err := t.proc.cont(t.pid, 0); err != nil {
			return 0, err
		}
		tid, ws, err := t.proc.wait(yieldWait(yieldWindow))
		if err != nil {
			return 0, err
		}
		if tid != t.pid || !ws.Stopped() || ws.StopSignal() != syscall.SIGTRAP {
			return 0, errors.New("program did not stop at the calibration breakpoint")
		}
		samples = append(samples, t.clock()-let)
	}
	slices.Sort(samples)
	return samples[len(samples)/4], nil
}

// calibrateAll measures, for a timed run, what a breakpoint's stop and a
// ring's record cost the program (calibrate, calibrateRing), on the main
// thread where PROFILE stopped it, or takes /CALIBRATION's figure.
func (t *tracer) calibrateAll() error {
	if !t.timed {
		return nil
	}
	var err error
	if t.calculated, err = t.calibrate(); err != nil {
		return fmt.Errorf("calibrate the overhead: %w", err)
	}
	t.overhead = t.calculated
	t.yielding = true
	if t.rings != nil {
		counts, err := t.calibrateRing()
		if err != nil {
			return fmt.Errorf("calibrate the cost of a record: %w", err)
		}
		t.refineCounter()
		t.rings.cost = counts * t.ctr.scale
		t.calculated = int64(math.Round(t.rings.cost))
	}
	if c := t.plan.Calibration; c >= 0 {
		t.overhead, t.forced = c, true
		if t.rings != nil {
			t.rings.cost = float64(c)
		}
	}
	return nil
}

// findExits decodes the code of items' functions (module loaded with
// bias) and returns their exits by item, with run-time addresses; a
// function whose extent is unknown or whose code does not decode has
// none (its frames close from the stack pointer).
func (t *tracer) findExits(items []int, bias uint64) (map[int][]instr.Exit, int) {
	exits := map[int][]instr.Exit{}
	n := 0
	for _, item := range items {
		f := &t.plan.Funcs[item]
		if f.Low >= f.High || f.High-f.Low > 1<<24 {
			continue
		}
		code := make([]byte, f.High-f.Low)
		if err := t.mem.ReadMem(f.Low+bias, code); err != nil {
			continue
		}
		es, err := instr.FindExits(t.arch, code, f.Low+bias, f.High+bias)
		if err != nil {
			continue
		}
		exits[item] = es
		n += len(es)
	}
	return exits, n
}
