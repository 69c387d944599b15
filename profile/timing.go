package profile

import (
	"cmp"
	"slices"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/profile/books"
	"github.com/sourceprofiler/sprof/profile/ptrace"
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

// clocks are timing's clocks: PROFILE's own, and each thread's and
// goroutine's, which leave out the time PROFILE held it (the stops, the
// overhead of each, its waits for a thread PROFILE held: waits.go), and
// the counter's, which the rings' records read (clock.go). They own the
// time taken out; what they read of the run (its threads, the books, the
// rings, the stopped thread's registers) is handed to each method.
type clocks struct {
	// epoch is the origin of clock; waited is the clock when the stop
	// being handled was seen, resumed when it was let go (noteRelease),
	// and charged the ledger its event was booked to.
	epoch   time.Time
	waited  int64
	resumed int64
	charged books.Key
	// stolen has the time taken from each thread and goroutine by its
	// stops; carried, by thread, the goroutine of its last Go event
	// (carrier).
	stolen  map[books.Key]int64
	carried map[int]uint64
	// started is when the first thread was born, ended when the last
	// ended, longest the longest life of a thread on its own clock,
	// held the time PROFILE held any of them, and debt the cost of the
	// records of the thread that made the most: the run's total time
	// (elapsed).
	started int64
	ended   int64
	longest int64
	held    heldTime
	debt    float64
	lives   lives
	// overhead is what one event costs beyond what PROFILE's clock sees,
	// and calculated its calibrated value; forced is set when /CB
	// imposes it; gaps are the gaps between stops, which bound it
	// otherwise (eventCost).
	overhead   int64
	calculated int64
	forced     bool
	gaps       gaps
	// yielding is set when the tracer waits for stops with
	// ptrace.WaitYielding (see yieldWindow), for a yield window after
	// each stop at a breakpoint it books, booked the last time.
	yielding bool
	booked   int64
	// ctr turns the rings' times into the clock's (clock.go).
	ctr counterClock
	// waits are the threads' waits PROFILE reads (waits.go).
	waits waits
}

// clock returns PROFILE's monotonic time in nanoseconds.
func (c *clocks) clock() int64 { return int64(time.Since(c.epoch)) }

// noteRelease notes the moment the tracer lets a stopped thread go: the
// end of the time the stop takes from it (timing). It is taken before the
// ptrace request, which may wake the thread on the tracer's own CPU and
// leave the tracer waiting there while the thread runs.
func (c *clocks) noteRelease() { c.resumed = c.clock() }

// keepsBooks reports whether the plan needs the books: function timing,
// a start function, attribution.
func keepsBooks(p *datafile.Plan) bool {
	return p.Method.IsFunction() && (p.Method.IsTiming() || p.StartFunc != "" || p.Attribution)
}

func threadLedger(tid int) books.Key { return books.Key{ID: uint64(tid)} }

// booking is what a breakpoint's event is booked with: the books, the
// plan's functions, the rings when timing in-process (a goroutine's
// clock is theirs), and the stopped thread's registers and memory, which
// tell its frame (frameKey).
type booking struct {
	books   *books.Books
	funcs   []datafile.Func
	rings   *rings
	ledgers *ledgers
	arch    instr.Arch
	regs    *ptrace.Regs
	mem     instr.Memory
}

// book hands the hit of site s by thread th (whose registers are in
// b.regs) to the books, as an entry or an exit, and notes which goroutine
// the stop is to be charged to.
func (c *clocks) book(th *thread, s *site, b booking) {
	c.booked = c.waited
	if b.ledgers != nil {
		// (Booked in the thread's book in the program: ledger.go.)
		b.ledgers.book(th, s)
		return
	}
	if s.item >= 0 {
		k, sp := c.bookKey(th, s.item, &b)
		b.books.Enter(k, s.item, sp, c.eventTime(th, k, b.rings))
		c.charged = k
	}
	if s.exit >= 0 {
		// (An entry that is also an exit, a function that is one ret or
		// one jump, enters and leaves at once.)
		k, sp := c.bookKey(th, s.exit, &b)
		b.books.Exit(k, s.exit, sp, c.eventTime(th, k, b.rings))
		c.charged = k
	}
}

// bookKey returns whose stack an event of item at a stop of thread th
// belongs to, and its frame's key (frameKey): a C function's call made
// for a goroutine (carrier) is the goroutine's.
func (c *clocks) bookKey(th *thread, item int, b *booking) (books.Key, uint64) {
	k, sp := b.frameKey(th, &b.funcs[item])
	if k.Goroutine {
		c.carried[th.tid] = k.ID
	} else if g := c.carrier(b.books, th.tid, item); g != 0 {
		k = books.Key{Goroutine: true, ID: g}
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
func (c *clocks) carrier(b *books.Books, tid, item int) uint64 {
	if !b.CarriedByGoroutine(item) {
		return 0
	}
	return c.carried[tid]
}

// eventTime is the time of the event of thread th at the stop being
// handled, on the clock of k: timing in-process (r, the rings, not nil),
// a goroutine's records in the rings come first, and its clock is the
// rings' (goroutines.go).
func (c *clocks) eventTime(th *thread, k books.Key, r *rings) int64 {
	if !k.Goroutine || r == nil {
		return c.now(th, k, r)
	}
	r.goStop(k.ID)
	return r.goNow(th, k.ID)
}

// now is the time of the stop being handled on the clock of k, thread
// th's or the goroutine's it runs, or of th's exit stop once it passed
// it: its stops and, for a thread, its records in the rings r (nil when
// there are none) taken out. The stop came before PROFILE saw it
// (stopped). (Between two stops the half-overheads cancel; between a
// record of a thread's ring and a stop, they do not: a function whose
// entry is a record and whose exit is a breakpoint would be charged the
// trap's latency.)
func (c *clocks) now(th *thread, k books.Key, r *rings) int64 {
	now := c.stopped(th) - c.stolen[k]
	if !k.Goroutine {
		now -= int64(r.debt(th, now))
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
func (b *booking) frameKey(th *thread, f *datafile.Func) (books.Key, uint64) {
	sp := b.arch.SP(b.regs)
	if !goFrames(f) {
		return threadLedger(th.tid), sp
	}
	g := b.arch.Goroutine(b.regs)
	hi, ok := goStackTop(b.mem, g, sp)
	if !ok {
		return threadLedger(th.tid), sp
	}
	return books.Key{Goroutine: true, ID: g}, 1<<63 - (hi - sp)
}

// charge takes the time thread th (nil for none) spent in its last
// stop, and the overhead, from the thread and from the goroutine its
// event was booked to (r: the rings, nil when there are none).
func (c *clocks) charge(th *thread, r *rings) {
	if th == nil || th.foreign || th.born > c.waited {
		c.charged = books.Key{}
		return
	}
	if th.fullAt != 0 {
		// Stopped with its ring full: the stop is taken out from when
		// it began to the thread's next record (rings.drain).
		th.let = max(c.resumed, c.waited)
		c.charged = books.Key{}
		return
	}
	end := c.resumed
	if end < c.waited {
		end = c.clock() // (a stop the tracer did not end: a thread that went on as it was)
	}
	cost := c.stopCost(th)
	if th.ended != 0 {
		// (Past its exit stop, where its life ended (stopped): the hold
		// is taken out of no clock. A thread that joins it waits for it
		// all the same: the kernel wakes a join after the exit stop.)
		th.heldTotal += max(end-(c.waited-cost), 0)
		th.let = end
		c.charged = books.Key{}
		return
	}
	if th.let > 0 {
		c.gaps.add(c.waited - th.let)
	}
	from := c.waited - cost
	if h := th.bookHold; h.seen == c.waited && h.seen != 0 {
		// (The books in the program held this stop from the event it
		// stopped at, which their code timed, where the cost is a
		// guess: its life takes out the hold its calls do. A hold of
		// another stop, let go with no charge, is not this one's.)
		from = max(h.from, th.let, th.born)
	}
	th.bookHold = bookHold{}
	th.let = end
	c.steal(th, from, end)
	if c.charged.Goroutine && r == nil {
		// (In-process, a goroutine's clock takes out its threads'
		// stops: goClock.)
		c.stolen[c.charged] += end - from
	}
	c.charged = books.Key{}
}

// steal takes the time from..to, when PROFILE held thread th, from the
// thread's clock and from the run's (held).
func (c *clocks) steal(th *thread, from, to int64) {
	if to <= from {
		return
	}
	c.stolen[threadLedger(th.tid)] += to - from
	c.held.add(from, to)
	th.heldTotal += to - from
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
func (c *clocks) eventCost() int64 {
	if c.forced || c.gaps.low == 0 {
		return c.overhead
	}
	return min(c.gaps.low, c.overhead)
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
func (c *clocks) stopCost(th *thread) int64 {
	cost := c.eventCost()
	if c.forced {
		return cost
	}
	since := th.let
	if since == 0 {
		since = th.born
	}
	return min(cost, max(c.waited-since, 0))
}

// stopped is when thread th's stop being handled began, on the tracer's
// clock: half its cost (stopCost, at most the calibrated overhead, the
// time from letting a thread go to seeing its next stop) before PROFILE
// saw it. For a thread past its exit stop, when that one began, as it
// was then (lifespan.ended): a thread's life ends at its exit stop. No
// code of the program's runs after it, the thread's time on a CPU and
// its waits are read there (the kernel shows them no more once the
// thread is gone), and PROFILE's time after it, its end check and the
// thread's wait to be reaped, is no one's.
func (c *clocks) stopped(th *thread) int64 {
	if th.ended != 0 {
		return th.ended
	}
	return c.waited - c.stopCost(th)/2
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

// openThreadBooks starts the clock of thread th, which is about to run,
// when the books b are kept.
func (c *clocks) openThreadBooks(th *thread, b *books.Books) {
	if b != nil && !th.foreign {
		th.born = c.clock()
		if c.started == 0 || th.born < c.started {
			c.started = th.born
		}
		c.lives.cpu.open(th)
	}
}

// closeThreadBooks ends thread th at the time of its last stop: its frames
// close in the books b, and the run lasts at least until then, on its
// clock. Its ring's records, if r holds it, are read first; threads are
// the run's, whose waits may be for th (waitEnded).
func (c *clocks) closeThreadBooks(th *thread, threads map[int]*thread, b *books.Books, r *rings) {
	if b == nil || th.foreign {
		return
	}
	if r != nil {
		r.stopSeen(th)
	}
	c.settleWait(th)
	th.closeWait()
	c.waitEnded(th, threads)
	delete(c.carried, th.tid)
	k := threadLedger(th.tid)
	end := c.now(th, k, r)
	b.End(k, end)
	last := c.waited
	if th.ended != 0 {
		last = th.ended // (its life ended at its exit stop: stopped)
	}
	c.ended = max(c.ended, last)
	if th.debt >= c.debt {
		c.debt, c.lives.debtMade = th.debt, th.made
	}
	if end-th.born >= c.longest {
		c.longest, c.lives.longestMade = end-th.born, th.made
	}
	c.lives.sum += max(end-th.born, 0)
	c.lives.n++
	c.lives.made += th.made
	delete(c.stolen, k)
}

// timingStats completes the run's statistics of plan from the books b,
// the threads left closed first, and the rings r read to their end.
func (c *clocks) timingStats(s *datafile.Stats, plan *datafile.Plan, threads map[int]*thread, b *books.Books, r *rings) {
	if r != nil {
		r.drainEnd()
	}
	for _, th := range threads {
		// (A thread still there: its time on a CPU read now.)
		c.lives.cpu.close(th)
		c.closeThreadBooks(th, threads, b, r)
	}
	b.Finish()
	f := b.Figures()
	s.Hits = f.Hits
	s.CallDepth = f.Depth
	if plan.Method.IsSampling() && !keepsBooks(plan) {
		// (Books kept for a trace alone: sampling reports no call
		// depth, with /TRACE or without.)
		s.CallDepth = 0
	}
	s.Stacks = f.Stacks
	if !plan.Method.IsTiming() {
		return
	}
	s.FuncTime, s.ChildTime = f.Self, f.All
	s.TotalTime = c.total(r, f)
	s.OutsideTime = s.TotalTime - f.Inside
	s.CPUTime = c.lives.cpu.sum
	if s.Waits = f.Waits; s.Waits != nil {
		// (Within the time outside, as the code's cost taken out of the
		// total may leave less than was waited there.)
		s.Waits.InsideWait = min(s.Waits.InsideWait, s.TotalTime-s.OutsideTime)
		s.Waits.OutsideWait = min(s.Waits.OutsideWait, s.OutsideTime)
	}
}

// findExits decodes the code of items' functions (of funcs, their module
// loaded with bias in mem) and returns their exits by item, with run-time
// addresses; a function whose extent is unknown or whose code does not
// decode has none (its frames close from the stack pointer).
func findExits(arch instr.Arch, mem instr.Memory, funcs []datafile.Func, items []int, bias uint64) (map[int][]instr.Exit, int) {
	exits := map[int][]instr.Exit{}
	n := 0
	for _, item := range items {
		f := &funcs[item]
		if f.Low >= f.High || f.High-f.Low > 1<<24 {
			continue
		}
		code := make([]byte, f.High-f.Low)
		if err := mem.ReadMem(f.Low+bias, code); err != nil {
			continue
		}
		es, err := instr.FindExits(arch, code, f.Low+bias, f.High+bias)
		if err != nil {
			continue
		}
		exits[item] = es
		n += len(es)
	}
	return exits, n
}
