// The narration of a run (profile --explain) as the program runs: the
// calibration, first hits, rings drained, threads, signals, libraries
// and the end.

package profile

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
)

// calibrated tells what a stop, and a record, cost the program (timing).
func (x *explainer) calibrated() {
	if x == nil || x.t.books == nil || !x.t.plan.Method.IsTiming() {
		return
	}
	t := x.t
	when, where := "at the exec stop", "at its first instruction"
	if t.attach != nil {
		when, where = "before the window", "where PROFILE stopped it"
	}
	if t.rings != nil {
		x.say("PROFILE measured what a record costs the program: %d ns, taken out of the times (%s, the main thread timed a block of work with records and without).", t.calculated, when)
		return
	}
	x.say("PROFILE measured what a stop costs the program beyond what its clock sees: %d ns (the overhead), taken out of the times (the thread hit a breakpoint %s %d times).", t.calculated, where, calibrationRounds)
	if t.forced {
		x.say("The plan imposes %d ns instead (prep /CB).", t.overhead)
	}
}

// running tells that the program runs now.
func (x *explainer) running() {
	if x == nil {
		return
	}
	t := x.t
	x.started = true
	line := "PROFILE lets the program run. Only a thread that hits a breakpoint stops: PROFILE handles the stop and lets it go on."
	if t.counters != nil && !t.counters.layout.rings {
		line += " The trampolines count without stopping it: PROFILE reads their counters, in the memory it shares with the program, while it waits."
	}
	if t.rings != nil {
		line += " The trampolines record without stopping it: PROFILE reads the rings while it waits."
	}
	x.say("%s %s", x.now(), line)
	if s := t.sampling; s != nil {
		how := "the kernel's clock event of each thread (perf), which writes the samples into a ring PROFILE reads"
		if s.kind == datafile.PtraceSampler {
			how = "PROFILE interrupting each thread and reading its program counter (the kernel refused its clock events)"
		}
		x.say("%s PROFILE samples every %v of each thread's CPU time, by %s.", x.now(), s.interval, how)
	}
}

// firstHit tells the first hit of item, once, while first hits are
// told: an item told is seen; one past the limit is not, and counted at
// the end.
func (x *explainer) firstHit(item int, format string, args ...any) {
	if x.seen[item] || x.hitsDone {
		return
	}
	x.seen[item] = true
	x.tell("hit", format, args...)
	x.hitsDone = x.full("hit")
}

// itemName names an item: "f", "line 12 of counts.c".
func (x *explainer) itemName(item int) string {
	t := x.t
	if t.plan.Method.IsFunction() {
		return t.plan.Funcs[item].Name
	}
	return x.lineNames([]int{item})
}

// hit tells the first hit of a breakpoint site s by thread th (the hit
// counted, or booked).
func (x *explainer) hit(th *thread, s *site) {
	if x == nil || x.hitsDone || th.foreign || s.item < 0 || x.seen[s.item] {
		return
	}
	t := x.t
	n := t.hits[s.item]
	if n == 0 {
		n = 1 // (booked, or covered)
	}
	what := "first hit, at its breakpoint"
	if t.books != nil {
		what = "first entered, at its breakpoint"
	}
	cover := ""
	if t.bp.removeAtHit {
		cover = "; covered, its breakpoint taken out"
	}
	if note := x.startNote(); note != "" {
		x.firstHit(s.item, "%s thread %d: %s %s%s", x.now(), th.tid, x.itemName(s.item), what, note)
		return
	}
	x.firstHit(s.item, "%s thread %d: %s %s (count %d%s)", x.now(), th.tid, x.itemName(s.item), what, n, cover)
	for _, i := range s.more {
		x.firstHit(i, "%s thread %d: %s %s (count %d%s)", x.now(), th.tid, x.itemName(i), what, max(t.hits[i], 1), cover)
	}
}

// booksFor says what the books of an untimed run are kept for.
func (x *explainer) booksFor() string {
	p := x.t.plan
	switch {
	case p.StartFunc != "" && p.Attribution:
		return "the start function (/SF) and the callers (/AT)"
	case p.StartFunc != "":
		return "the start function (/SF): only the calls made while it runs count"
	}
	return "the callers of each call (/AT)"
}

// record tells the first entry of a timed function, from a record of
// thread tid's ring.
func (x *explainer) record(tid int, rec *instr.Record) {
	if x != nil && !x.hitsDone && !rec.Exit && !x.seen[rec.Item] {
		x.firstRecord(tid, rec)
	}
}

// firstRecord is record's work.
func (x *explainer) firstRecord(tid int, rec *instr.Record) {
	who := fmt.Sprintf("thread %d", tid)
	if rec.G != 0 {
		who += fmt.Sprintf(", goroutine %#x", rec.G)
	}
	x.firstHit(rec.Item, "%s %s: %s first entered, a record of its ring%s", x.at(x.t.ctr.ns(rec.Time)), who, x.itemName(rec.Item), x.startNote())
}

// startNote is what a first entry's line says of its count: with a start
// function, whether the call counts is the books' to say (the start
// function must be running), and its count is not known yet.
func (x *explainer) startNote() string {
	if x.t.plan.StartFunc != "" {
		return " (counted if the start function is running)"
	}
	return " (count 1)"
}

// drained tells a thread's ring read, with the records it held.
func (x *explainer) drained(tid, n int) {
	if x == nil || n == 0 {
		return
	}
	x.tell("drain", "%s the ring of thread %d drained: %s booked", x.now(), tid, plural(n, "record"))
}

// watching reports whether the narrator reads the in-process counters
// for first hits.
func (x *explainer) watching() bool {
	c := x.t.counters
	return c != nil && !c.layout.rings && x.started && !x.hitsDone
}

// stop reads the counters at a stop, at most every scanEvery.
func (x *explainer) stop() {
	if x == nil || !x.watching() || x.t.clock()-x.scanned < scanEvery {
		return
	}
	x.scan()
}

// idle returns what PROFILE does while it waits, when the narrator reads
// the counters (nil when it does not): a scan every scanEvery.
func (x *explainer) idle() func() bool {
	if x == nil || !x.watching() {
		return nil
	}
	return func() bool {
		if !x.watching() || x.t.clock()-x.scanned < scanEvery {
			return false
		}
		return x.scan()
	}
}

// threadExiting reads the counters at a thread's exit stop, while its
// block is still its own.
func (x *explainer) threadExiting() {
	if x != nil && x.watching() {
		x.scan()
	}
}

// scan reads the in-process counters, and tells the first hit of each
// counter seen above zero: the thread whose block holds it (where each
// has one), and the count so far. It reports whether it told any.
func (x *explainer) scan() bool {
	t, c := x.t, x.t.counters
	x.scanned = t.clock()
	lt := t.lines
	if x.unseen == nil {
		n := t.plan.NumItems()
		if lt != nil {
			n = len(lt.lines)
		}
		x.unseen = make([]int, n)
		for k := range x.unseen {
			x.unseen[k] = k
		}
	}
	var sharers map[int][]int // a counter, the sites that share its count
	if lt != nil && len(lt.alias) > 0 {
		sharers = map[int][]int{}
		for b, a := range lt.alias {
			sharers[a] = append(sharers[a], b)
		}
	}
	owner := map[int]int{}
	for tid, b := range c.blockOf {
		owner[b] = tid
	}
	mem := c.shared.Bytes()
	told := false
	left := x.unseen[:0]
	for _, k := range x.unseen {
		if lt != nil && hasKey(lt.alias, k) {
			continue // (never counted: it shares another's count)
		}
		sum, tid := uint64(0), 0
		for b := 1; b < c.layout.counted(c.next); b++ {
			n := c.layout.count(mem, b, k)
			if n != 0 && tid == 0 && c.layout.perThread() {
				tid = owner[b]
			}
			sum += n
		}
		if sum == 0 {
			left = append(left, k)
			continue
		}
		told = true
		who := ""
		if tid != 0 {
			who = fmt.Sprintf(" thread %d:", tid)
		}
		items := []int{k}
		if lt != nil {
			items = slices.Clone(lt.lines[k])
			for _, b := range sharers[k] {
				items = append(items, lt.lines[b]...)
			}
		}
		for _, i := range items {
			x.firstHit(i, "%s%s %s first hit, seen in its counter (count %d so far)", x.now(), who, x.itemName(i), sum)
		}
	}
	x.unseen = left
	return told
}

// hasKey reports whether m has key k.
func hasKey(m map[int]int, k int) bool {
	_, ok := m[k]
	return ok
}

// rendezvous tells the dynamic linker's breakpoint planted, which
// brings the libraries of the plan.
func (x *explainer) rendezvous(r rendezvous, interp string) {
	if x == nil {
		return
	}
	x.say("PROFILE plants the plan's libraries (%s) when the dynamic linker loads them: it keeps a breakpoint at _dl_debug_state, at %#x in %s, which the dynamic linker calls after each change to its list of libraries.",
		x.t.libNames(), r.brk, filepath.Base(interp))
}

// library tells a library of the plan loaded (before it is planted) or
// unloaded.
func (x *explainer) library(l *loaded, loaded bool) {
	if x == nil {
		return
	}
	name := x.t.plan.Modules[l.mi].Name
	switch {
	case loaded && x.t.rendezvousThread == 0:
		// (Attached: a library the process had loaded already.)
		x.tell("library", "%s %s is loaded already, at %#x: PROFILE plants it now.", x.now(), name, l.lo)
		return
	case loaded:
		x.tell("library", "%s the dynamic linker loaded %s at %#x: PROFILE plants it now, borrowing the thread stopped at the rendezvous for the system calls.", x.now(), name, l.lo)
		return
	}
	x.tell("library", "%s %s at %#x was unloaded (dlclose): PROFILE forgets its sites and unmaps the areas it mapped beside it; its counts stay.", x.now(), name, l.lo)
}

// signal tells a signal of the program passed on to thread th.
func (x *explainer) signal(th *thread, sig syscall.Signal) {
	if x == nil {
		return
	}
	x.tell("signal", "%s thread %d received %s: PROFILE passes it on unchanged.", x.now(), th.tid, describeSignal(sig))
}

// steppedOut tells a signal that found thread th in PROFILE's code, at
// from, delivered where it is back in the program's, at to, steps
// instructions later (deliverOutside).
func (x *explainer) steppedOut(th *thread, sig syscall.Signal, from, to uint64, steps int) {
	if x == nil {
		return
	}
	x.tell("signal", "%s the signal found thread %d in PROFILE's code at %#x: PROFILE holds %s, single-steps the thread back into the program's code (%d instructions, to %#x), and delivers it there.",
		x.now(), th.tid, from, signalName(sig), steps, to)
}

// forwarded tells a signal PROFILE received passed on to the program
// (from forwardSignals' goroutine).
func (x *explainer) forwarded(sig syscall.Signal) {
	if x == nil {
		return
	}
	x.tell("signal", "%s PROFILE received %s: it passes it on to the program.", x.now(), signalName(sig))
}

// thread tells a new thread of the program taken in.
func (x *explainer) thread(tid int) {
	if x == nil {
		return
	}
	if c := x.t.counters; c != nil && c.layout.perThread() && hasKey(c.blockOf, tid) {
		b, what := c.blockOf[tid], "counters"
		if c.layout.rings {
			what = "counters, with its ring of records"
		}
		x.tell("thread", "%s new thread %d: PROFILE traces it, and gives it its own block of %s, block %d at %#x.", x.now(), tid, what, b, c.layout.blockAddr(b))
		return
	}
	x.tell("thread", "%s new thread %d: PROFILE traces it as the others.", x.now(), tid)
}

// child tells a child process taken in (vfork) or let go (fork).
func (x *explainer) child(tid int, vfork bool) {
	if x == nil {
		return
	}
	if vfork {
		x.tell("thread", "%s vfork child %d shares the program's memory until it calls exec: PROFILE traces it, and counts nothing of it.", x.now(), tid)
		return
	}
	x.tell("thread", "%s child process %d has its own copy of the memory: PROFILE takes its patches and breakpoints out and lets it go, unprofiled.", x.now(), tid)
}

// exec tells the program's exec: its image is gone.
func (x *explainer) exec() {
	if x == nil {
		return
	}
	x.say("%s the program called exec: its image, and PROFILE's work in it, are gone. Profiling ends here; what was counted is kept.", x.now())
}

// swept tells line coverage's jumps taken out, once covered.
func (x *explainer) swept(n int) {
	if x == nil || n == 0 {
		return
	}
	x.tell("sweep", "%s PROFILE interrupted the program and wrote back the original bytes of %s whose lines are all covered: they run at native speed now.", x.now(), plural(n, "jump"))
}

// ended tells the program's end, and what the limit left untold.
func (x *explainer) ended(res *Result) {
	if x == nil {
		return
	}
	switch {
	case x.t.attach != nil && x.t.attach.detached:
		x.say("%s the window ended: PROFILE wrote the program's code back as it was and let each thread go; process %d runs on, untraced.", x.now(), x.t.pid)
	case res.Exited:
		x.say("%s the program exited with status %d.", x.now(), res.ExitCode)
	default:
		x.say("%s the program was killed by %s.", x.now(), describeSignal(res.Signal))
	}
	untold := 0
	if res.Counts != nil {
		for i, n := range res.Counts.Stats.Hits {
			if n != 0 && i < len(x.seen) && !x.seen[i] {
				untold++
			}
		}
	}
	hit := 0
	if res.Counts != nil {
		for _, n := range res.Counts.Stats.Hits {
			if n != 0 {
				hit++
			}
		}
	}
	what := "functions"
	if !x.t.plan.Method.IsFunction() {
		what = "lines"
	}
	ran := "ran"
	if x.t.plan.StartFunc != "" {
		ran = "were counted, called while the start function ran"
	}
	x.say("PROFILE collected the counts: %d of %d %s %s; threads stopped %s at PROFILE's breakpoints.", hit, x.t.plan.NumItems(), what, ran, plural(int(x.t.bp.hits), "time"))
	x.mu.Lock()
	x.untold["hit"] = untold
	var more []string
	for _, k := range []struct{ kind, words string }{
		{"hit", "first hit"}, {"drain", "ring drain"}, {"thread", "new task"}, {"signal", "signal"},
		{"library", "library event"}, {"sweep", "sweep"},
	} {
		if n := x.untold[k.kind]; n > 0 {
			more = append(more, plural(n, "more "+k.words))
		}
	}
	x.mu.Unlock()
	if len(more) > 0 {
		x.say("... and %s, not told (the limit is %d; --explain-limit=0 tells everything).", strings.Join(more, ", "), x.limit)
	}
}

// ExplainSaved tells, for profile --explain, the run written to path.
func ExplainSaved(w io.Writer, path string, c *datafile.Counts) {
	what := "complete"
	if c.Run.Incomplete {
		what = "incomplete (" + c.Run.Reason + ")"
	}
	fmt.Fprintf(w, "PROFILE wrote the run to %s: its counts, %s. prep /M adds it into the database, for PLIST.\n", path, what)
}
