// The narration of a run's first hits (profile --explain): each item's
// first hit, at its breakpoint, in a record of a ring, or seen in its
// counter, up to the limit, and the rings drained.

package profile

import (
	"fmt"
	"slices"
	"time"

	"github.com/sourceprofiler/sprof/instr"
)

// hitNarrator narrates the first hits as they happen.
type hitNarrator struct {
	*narrator
	// seen marks the items (functions or lines) whose first hit was
	// told, and hitsDone is set once the limit of first hits is reached
	// (the others are counted at the end, from the run's hits); unseen
	// are the in-process counters not yet seen above zero, scanned (scan)
	// while first hits are still told, at most every scanEvery at the
	// stops and while PROFILE waits.
	seen     []bool
	hitsDone bool
	unseen   []int
	scanned  int64
}

// scanEvery is how often, at most, the narrator reads the counters at
// stops and while PROFILE waits (a millisecond).
const scanEvery = 1e6

// firstHit tells the first hit of item, once, while first hits are
// told: an item told is seen; one past the limit is not, and counted at
// the end.
func (x *hitNarrator) firstHit(item int, format string, args ...any) {
	if x.seen[item] || x.hitsDone {
		return
	}
	x.seen[item] = true
	x.tell("hit", format, args...)
	x.hitsDone = x.full("hit")
}

// itemName names an item: "f", "line 12 of counts.c".
func (x *hitNarrator) itemName(item int) string {
	t := x.t
	if t.plan.Method.IsFunction() {
		return t.plan.Funcs[item].Name
	}
	return x.lineNames([]int{item})
}

// hit tells the first hit of a breakpoint site s by thread th (the hit
// counted, or booked).
func (x *hitNarrator) hit(th *thread, s *site) {
	if x == nil || x.hitsDone || th.foreign || s.item < 0 || x.seen[s.item] {
		return
	}
	t := x.t
	n := t.counted.hits[s.item]
	if n == 0 {
		n = 1 // (booked, or covered)
	}
	what := "first hit, at its breakpoint"
	if t.parts.books != nil {
		what = "first entered, at its breakpoint"
	}
	cover := ""
	if t.parts.bp.removeAtHit {
		cover = "; covered, its breakpoint taken out"
	}
	if note := x.startNote(); note != "" {
		x.firstHit(s.item, "%s thread %d: %s %s%s", x.now(), th.tid, x.itemName(s.item), what, note)
		return
	}
	x.firstHit(s.item, "%s thread %d: %s %s (count %d%s)", x.now(), th.tid, x.itemName(s.item), what, n, cover)
	for _, i := range s.more {
		x.firstHit(i, "%s thread %d: %s %s (count %d%s)", x.now(), th.tid, x.itemName(i), what, max(t.counted.hits[i], 1), cover)
	}
}

// record tells the first entry of a timed function, from a record of
// thread tid's ring.
func (x *hitNarrator) record(tid int, rec *instr.Record) {
	if x != nil && !x.hitsDone && !rec.Exit && !x.seen[rec.Item] {
		x.firstRecord(tid, rec)
	}
}

// firstRecord is record's work.
func (x *hitNarrator) firstRecord(tid int, rec *instr.Record) {
	who := fmt.Sprintf("thread %d", tid)
	if rec.G != 0 {
		who += fmt.Sprintf(", goroutine %#x", rec.G)
	}
	x.firstHit(rec.Item, "%s %s: %s first entered, a record of its ring%s", x.at(x.t.clocks.ctr.ns(rec.Time)), who, x.itemName(rec.Item), x.startNote())
}

// startNote is what a first entry's line says of its count: with a start
// function, whether the call counts is the books' to say (the start
// function must be running), and its count is not known yet.
func (x *hitNarrator) startNote() string {
	if x.t.plan.StartFunc != "" {
		return " (counted if the start function is running)"
	}
	return " (count 1)"
}

// drained tells a thread's ring read, with the records it held.
func (x *hitNarrator) drained(tid, n int) {
	if x == nil || n == 0 {
		return
	}
	x.tell("drain", "%s the ring of thread %d drained: %s booked", x.now(), tid, plural(n, "record"))
}

// watching reports whether the narrator reads the in-process counters
// for first hits.
func (x *hitNarrator) watching() bool {
	c := x.t.parts.counters
	return c != nil && !c.layout.Rings && x.started && !x.hitsDone
}

// stop reads the counters at a stop, at most every scanEvery.
func (x *hitNarrator) stop() {
	if x == nil || !x.watching() || x.t.clocks.clock()-x.scanned < scanEvery {
		return
	}
	x.scan()
}

// waiting says whether the narrator reads the counters while PROFILE
// waits for stops: every millisecond it looks whether a scan is due
// (idleHook).
func (x *hitNarrator) waiting() (bool, time.Duration, bool) {
	return x != nil && x.watching(), time.Millisecond, false
}

// idle scans the counters every scanEvery (idleHook).
func (x *hitNarrator) idle() bool {
	if !x.watching() || x.t.clocks.clock()-x.scanned < scanEvery {
		return false
	}
	return x.scan()
}

// threadExiting reads the counters at a thread's exit stop, while its
// block is still its own.
func (x *hitNarrator) threadExiting() {
	if x != nil && x.watching() {
		x.scan()
	}
}

// scan reads the in-process counters, and tells the first hit of each
// counter seen above zero: the thread whose block holds it (where each
// has one), and the count so far. It reports whether it told any.
func (x *hitNarrator) scan() bool {
	t, c := x.t, x.t.parts.counters
	x.scanned = t.clocks.clock()
	lt := t.parts.lines
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
		end := c.layout.Counted(c.next)
		if c.layout.Books {
			end = c.next // (each thread's calls in its own book)
		}
		for b := c.layout.FirstCounted(); b < end; b++ {
			n := c.layout.Entered(mem, b, k)
			if n != 0 && tid == 0 && (c.layout.PerThread() || c.layout.Books || c.layout.Kind == instr.CountInArea) {
				tid = owner[b]
			}
			sum += n
		}
		if l := t.parts.ledgers; l != nil {
			sum += l.gos.entered(k) // (a goroutine's calls in its book)
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
		what := "first hit, seen in its counter"
		switch {
		case t.parts.ledgers != nil && t.parts.ledgers.gos.on:
			what = "first entered, seen in its goroutine's book"
		case c.layout.Books:
			what = "first entered, seen in its thread's book"
		}
		for _, i := range items {
			x.firstHit(i, "%s%s %s %s (count %d so far)", x.now(), who, x.itemName(i), what, sum)
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
