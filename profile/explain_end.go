// The narration of a run's end (profile --explain): how the program
// ended, or the window; what was collected; what the limit left untold.

package profile

import (
	"fmt"
	"io"
	"strings"

	"github.com/sourceprofiler/sprof/datafile"
)

// endNarrator narrates the end of the run, and at the end of an attached
// window the signal frames moved out of PROFILE's code (frames.go).
type endNarrator struct {
	*narrator
	hits *hitNarrator // (what was told of the hits)
}

// ended tells the program's end, and what the limit left untold.
func (x *endNarrator) ended(res *Result) {
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
	if lt := x.t.parts.lines; lt != nil && res.Counts != nil {
		// (A site counted by flow has no probe to see run: its first
		// hit is known at the end, when its count is derived.)
		hits := res.Counts.Stats.Hits
		for _, i := range lt.derivedLines() {
			if i < len(hits) && hits[i] != 0 && i < len(x.hits.seen) {
				x.hits.firstHit(i, "%s %s first hit, derived by flow from the probed sites' counters at the end (count %d)", x.now(), x.hits.itemName(i), hits[i])
			}
		}
	}
	untold := 0
	if res.Counts != nil {
		for i, n := range res.Counts.Stats.Hits {
			if n != 0 && i < len(x.hits.seen) && !x.hits.seen[i] {
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
	books := ""
	if res.Books {
		books = fmt.Sprintf(", and %s at the books' code (an event it left to PROFILE: a call it could not book itself, a goroutine new to its thread)", plural(int(res.BookStops), "time"))
		if res.ClockStops > 0 {
			books += fmt.Sprintf(", %s for a thread back on its CPU (its wait measured)", plural(int(res.ClockStops), "time"))
		}
	}
	x.say("PROFILE collected the counts: %d of %d %s %s; threads stopped %s at PROFILE's breakpoints%s.", hit, x.t.plan.NumItems(), what, ran, plural(int(x.t.parts.bp.hits), "time"), books)
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

// frameSettled tells a signal frame of thread tid that returned into
// PROFILE's code at pc: moved to the program's orig, or left there.
func (x *endNarrator) frameSettled(tid int, pc, orig uint64, moved bool) {
	if x == nil {
		return
	}
	if moved {
		x.say("%s Thread %d is in a signal handler that returns to %#x, in PROFILE's code: PROFILE moves the return to %#x, where the program's own code does the same.", x.now(), tid, pc, orig)
		return
	}
	x.say("%s Thread %d is in a signal handler that returns to %#x, in PROFILE's code, which has no exact place in the program's: the thread keeps PROFILE's thread base, which that code reads, and finishes it there.", x.now(), tid, pc)
}
