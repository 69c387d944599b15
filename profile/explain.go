// Narration (profile --explain): PROFILE tells what it does as it does
// it, in plain words, for a student reading along: the plan it read; the
// program started and stopped before its first instruction; for each
// module, where the counters and the trampolines go; for each site, its
// function and address, the bytes before and after the patch and the
// trampoline's code, disassembled, or why it keeps a breakpoint; the first
// hits of each site as they happen; each ring drained, each library loaded
// or unloaded, each signal passed on; the end.
//
// The narrator is an observer of the run's events (events.go): the loop
// and the parts note what they do, and know no more of who listens. It
// is made of one part for each moment it narrates: the plan and the start
// (explain_plan.go), the sites of each module planted (explain_sites.go),
// the run as it goes (explain_run.go) and its first hits
// (explain_hits.go), the end (explain_end.go). A run without --explain
// has none of them, and every method of a part that is nil is a no-op:
// nothing changes then, in cost or in output. A limit
// (Config.ExplainLimit) keeps big programs readable: so many sites are
// described in full, so many first hits, ring drains, threads and
// signals told, and the rest counted and summarised.

package profile

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// DefaultExplainLimit is how many sites profile --explain describes in
// full, and how many first hits (and ring drains, threads, signals) it
// tells, when no other limit is given.
const DefaultExplainLimit = 10

// explainer narrates one run (profile --explain), each of its parts a
// moment of the run: it observes the run's events (observe), and each
// goes to the part that narrates it.
type explainer struct {
	*planNarrator
	*siteNarrator
	*runNarrator
	*hitNarrator
	*endNarrator
}

// newExplainer returns the narrator of t's run: nil when the run is not
// narrated.
func newExplainer(t *tracer) *explainer {
	if t.cfg.Explain == nil {
		return nil
	}
	n := &narrator{t: t, w: t.cfg.Explain, limit: max(t.cfg.ExplainLimit, 0), told: map[string]int{}, untold: map[string]int{}}
	hits := &hitNarrator{narrator: n, seen: make([]bool, t.plan.NumItems())}
	return &explainer{
		planNarrator: &planNarrator{n},
		siteNarrator: &siteNarrator{narrator: n},
		runNarrator:  &runNarrator{n},
		hitNarrator:  hits,
		endNarrator:  &endNarrator{narrator: n, hits: hits},
	}
}

// observe tells event e, each to the part that narrates it.
func (x *explainer) observe(e event) {
	switch e := e.(type) {
	case planReadEvent:
		x.plan()
	case startedEvent:
		x.startedAt()
	case calibratedEvent:
		x.calibrated()
	case runningEvent:
		x.running()
	case endedEvent:
		x.ended(e.res)
	case mechanismsEvent:
		x.mechanism()
		x.clockChecked()
	case plantingEvent:
		x.planting(e.p)
	case sharersEvent:
		x.sharers(e.pids)
	case seccompEvent:
		x.seccomp(e.tid, e.st)
	case stopEvent:
		x.stop()
	case threadEvent:
		x.thread(e.tid)
	case threadExitingEvent:
		x.threadExiting()
	case childEvent:
		x.child(e.tid, e.vfork)
	case execEvent:
		x.exec()
	case rendezvousEvent:
		x.rendezvous(e.r, e.interp)
	case libraryEvent:
		x.library(e.l, e.loaded)
	case signalEvent:
		x.signal(e.th, e.sig)
	case steppedOutEvent:
		x.steppedOut(e.th, e.sig, e.from, e.to, e.steps)
	case forwardedEvent:
		x.forwarded(e.sig)
	case requeuedEvent:
		x.requeued(e.tid, e.sig)
	case sweptEvent:
		x.swept(e.n, e.threads, e.took)
	case frameSettledEvent:
		x.frameSettled(e.tid, e.pc, e.orig, e.moved)
	case hitEvent:
		x.hit(e.th, e.s)
	case recordEvent:
		x.record(e.tid, &e.rec)
	case drainedEvent:
		x.drained(e.tid, e.n)
	}
}

// narrator is what the parts of the narration share: the writer, the
// limit and the tallies of what was told, and the times.
type narrator struct {
	t     *tracer
	limit int // 0: no limit
	// mu guards the writer and the tallies: PROFILE's signals are passed
	// on from a goroutine of their own (forwardSignals).
	mu     sync.Mutex
	w      io.Writer
	told   map[string]int
	untold map[string]int
	// start is the clock when the program started: narration's times are
	// from there; started is set once the program runs (runNarrator).
	start   int64
	started bool
}

// say writes one line of narration.
func (x *narrator) say(format string, args ...any) {
	x.mu.Lock()
	defer x.mu.Unlock()
	fmt.Fprintf(x.w, format+"\n", args...)
}

// tell writes one line of narration of kind (a first hit, a ring
// drained...), unless the limit of its kind is reached: it is counted
// then, and summarised at the end.
func (x *narrator) tell(kind, format string, args ...any) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.limit > 0 && x.told[kind] >= x.limit {
		x.untold[kind]++
		return
	}
	x.told[kind]++
	fmt.Fprintf(x.w, format+"\n", args...)
}

// full reports whether the limit of kind is reached.
func (x *narrator) full(kind string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.limit > 0 && x.told[kind] >= x.limit
}

// now is the time since the program started, for narration: "[1.234 ms]".
func (x *narrator) now() string { return x.at(x.t.clocks.clock()) }

// at is clock time ns as narration shows it.
func (x *narrator) at(ns int64) string {
	return fmt.Sprintf("[%.3f ms]", float64(ns-x.start)/1e6)
}

// lineNames names lines of the plan: "line 12 of counts.c", "lines 12,
// 13 of counts.c".
func (x *narrator) lineNames(lines []int) string {
	t := x.t
	if len(lines) == 0 {
		return "a line site"
	}
	file := lineFile(t.plan, &t.plan.Lines[lines[0]])
	var nums []string
	for _, i := range lines {
		l := &t.plan.Lines[i]
		nums = append(nums, strconv.Itoa(l.Line))
		if f := lineFile(t.plan, l); f != file {
			file = ""
		}
	}
	word := "line "
	if len(nums) > 1 {
		word = "lines "
	}
	if file == "" {
		return word + strings.Join(nums, ", ")
	}
	return word + strings.Join(nums, ", ") + " of " + filepath.Base(file)
}

// bytesWords says a size: "96 bytes", "4 KiB", "32.5 MiB".
func bytesWords(n uint64) string {
	unit := func(n, u uint64, name string) string {
		if n%u == 0 {
			return fmt.Sprintf("%d %s", n/u, name)
		}
		return fmt.Sprintf("%.1f %s", float64(n)/float64(u), name)
	}
	switch {
	case n >= 1<<20:
		return unit(n, 1<<20, "MiB")
	case n >= 1<<12:
		return unit(n, 1<<10, "KiB")
	}
	return plural(int(n), "byte")
}

// verb is one or many's form of a verb, for n subjects.
func verb(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// plural says n things: "1 function", "7 functions".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}
