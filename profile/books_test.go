package profile

import (
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/profile/books"
	"github.com/sourceprofiler/sprof/profile/procmaps"
)

// Function indices of the test plans.
const (
	bMain = iota
	bF
	bG
	bH
)

// testBooks returns the books of a plan of main, f, g and h, timed, with
// start function start (-1: none), attribution and levels (/STACK).
func testBooks(start int, startName string, attribution bool, levels int) *books.Books {
	p := &datafile.Plan{Method: datafile.FuncTiming, StartIndex: start, StartFunc: startName,
		Attribution: attribution, StackDepth: levels,
		Funcs: []datafile.Func{{Name: "main"}, {Name: "f"}, {Name: "g"}, {Name: "h"}}}
	return books.New(p)
}

// TestEventCost: the overhead taken out at each stop is the calibrated
// one, /CB's when forced, and never more than the lower quartile of the
// run's gaps between stops once a window of them is known.
func TestEventCost(t *testing.T) {
	tr := &tracer{clocks: clocks{overhead: 30000}}
	for range 15 {
		tr.clocks.gaps.add(1000)
	}
	if got := tr.clocks.eventCost(); got != 30000 {
		t.Errorf("before 16 gaps: %d, want the calibration 30000", got)
	}
	tr.clocks.gaps.add(1000)
	if got := tr.clocks.eventCost(); got != 1000 {
		t.Errorf("after 16 gaps of 1 µs: %d, want 1000", got)
	}
	tr = &tracer{clocks: clocks{overhead: 30000}}
	for i := range gapWindow {
		tr.clocks.gaps.add(int64(10000 + 100*i)) // 10 µs to 35.5 µs
	}
	if got, want := tr.clocks.eventCost(), int64(10000+100*gapWindow/4); got != want {
		t.Errorf("after gaps of 10-35.5 µs: %d, want their lower quartile %d", got, want)
	}
	tr.clocks.forced = true
	if got := tr.clocks.eventCost(); got != 30000 {
		t.Errorf("/CB: %d, want 30000 as imposed", got)
	}
	tr = &tracer{clocks: clocks{overhead: 5000}}
	for range gapWindow {
		tr.clocks.gaps.add(1_000_000) // calls that all work a millisecond
	}
	if got := tr.clocks.eventCost(); got != 5000 {
		t.Errorf("long gaps: %d, want the calibration 5000", got)
	}
}

// TestStopsTakenOut: a stopped thread's time is not the program's. The
// tracer's clock for a thread (and for the goroutine its event was booked
// to) leaves out each stop, from the moment PROFILE saw it to the moment
// it let the thread go, and the overhead of each event: between two stops
// a thread is given the time it ran, from its release to the next stop
// seen, less the overhead. A goroutine keeps the time of another's
// stops. Times known by construction: the end-to-end timing tests cannot
// tell a stop from the program's own time where the machine is busy.
func TestStopsTakenOut(t *testing.T) {
	const tid, overhead = 7, 10000
	tr := &tracer{clocks: clocks{overhead: overhead, forced: true, stolen: map[books.Key]int64{}}, threads: map[int]*thread{tid: {tid: tid}}}
	th := tr.threads[tid]
	k := threadLedger(tid)
	g, other := books.Key{Goroutine: true, ID: 0xc000001000}, books.Key{Goroutine: true, ID: 0xc000002000}
	// Three stops, seen at 1, 3 and 3.3 ms and let go 50 and 200 µs
	// later; the first two booked to goroutine g.
	type stop struct{ seen, let int64 }
	var times, gTimes, otherTimes []int64
	for i, s := range []stop{{1e6, 1.05e6}, {3e6, 3.2e6}, {3.3e6, 3.31e6}} {
		tr.clocks.waited = s.seen
		times = append(times, tr.clocks.now(th, k, tr.parts.rings))
		gTimes = append(gTimes, tr.clocks.now(th, g, tr.parts.rings))
		otherTimes = append(otherTimes, tr.clocks.now(th, other, tr.parts.rings))
		if i < 2 {
			tr.clocks.charged = g
		}
		tr.clocks.resumed = s.let
		tr.clocks.charge(tr.threads[tid], tr.parts.rings)
	}
	for _, c := range []struct {
		what string
		got  []int64
		want []int64 // between one stop and the next
	}{
		{"thread", times, []int64{3e6 - 1.05e6 - overhead, 3.3e6 - 3.2e6 - overhead}},
		{"goroutine", gTimes, []int64{3e6 - 1.05e6 - overhead, 3.3e6 - 3.2e6 - overhead}},
		{"another goroutine", otherTimes, []int64{3e6 - 1e6, 3.3e6 - 3e6}},
	} {
		for i, w := range c.want {
			if d := c.got[i+1] - c.got[i]; d != w {
				t.Errorf("%s: %d ns between stops %d and %d, want %d", c.what, d, i+1, i+2, w)
			}
		}
	}
}

// TestRingDebt: what a record costs the program (rings.cost, calibrated)
// is taken from the time between it and its thread's next event, never
// more than that time.
func TestRingDebt(t *testing.T) {
	r := &rings{cost: 15}
	th := &thread{events: 1, lastRaw: 1000}
	for _, c := range []struct {
		raw  int64
		want float64
	}{{1100, 15}, {1005, 5}, {990, 0}} {
		if got := r.debt(th, c.raw); got != c.want {
			t.Errorf("record at %d, the last at 1000: debt %g, want %g", c.raw, got, c.want)
		}
	}
	if got := r.debt(&thread{}, 1000); got != 0 {
		t.Errorf("before any record: debt %g, want 0", got)
	}
}

// BenchmarkBooks measures what PROFILE spends on one event read from a
// ring: a call tree of main calling f, which calls g and h, in a loop, as
// entries and exits with their stack pointers. In-process timing needs
// the books to keep up with a program making an event every few
// nanoseconds.
func BenchmarkBooks(b *testing.B) {
	p := &datafile.Plan{Funcs: make([]datafile.Func, 4), StackDepth: 0}
	bk := books.New(p)
	// The stack the events are on, as the tracer's memory map tells.
	bk.Where = &stackMaps{read: func() ([]procmaps.Mapping, error) { return []procmaps.Mapping{{Start: 0, End: 1 << 20}}, nil }}
	k := threadLedger(1)
	const main, f, g, h = 0, 1, 2, 3
	bk.Enter(k, main, 1000, 0)
	l := bk.Ledger(k) // as rings.drain does, once per ring
	now := int64(1)
	b.ResetTimer()
	for i := 0; i < b.N; i += 6 {
		bk.EnterLedger(l, f, 992, now)
		bk.EnterLedger(l, g, 984, now+1)
		bk.ExitLedger(l, g, 984, now+2)
		bk.EnterLedger(l, h, 984, now+3)
		bk.ExitLedger(l, h, 984, now+4)
		bk.ExitLedger(l, f, 992, now+5)
		now += 6
	}
}

// TestStopCostBounded: a calibration made while the machine was busy can
// find a stop's unseen cost far above what later stops cost (4 ms was
// seen, for stops some 30 µs apart). Before the run has gaps enough to
// bound it, each stop takes out no more than the time since the thread
// was let go: the thread's clock never goes back, and its lifetime is
// what it ran.
func TestStopCostBounded(t *testing.T) {
	const tid, overhead = 7, 4e6
	tr := &tracer{clocks: clocks{overhead: overhead, stolen: map[books.Key]int64{}}, threads: map[int]*thread{tid: {tid: tid, lifespan: lifespan{born: 1e6}}}}
	th := tr.threads[tid]
	k := threadLedger(tid)
	// Ten stops, 30 µs of the program's each, each stop lasting 5 µs as
	// PROFILE sees it.
	at := int64(1e6)
	var times []int64
	for range 10 {
		at += 30e3
		tr.clocks.waited = at
		times = append(times, tr.clocks.now(th, k, tr.parts.rings))
		at += 5e3
		tr.clocks.resumed = at
		tr.clocks.charge(tr.threads[tid], tr.parts.rings)
	}
	for i := 1; i < len(times); i++ {
		if d := times[i] - times[i-1]; d < 0 || d > 30e3 {
			t.Errorf("%d ns between stops %d and %d on the thread's clock, want 0 to 30 µs", d, i, i+1)
		}
	}
	tr.clocks.waited = at // it ends as it is let go
	if end := tr.clocks.now(th, k, tr.parts.rings); end < th.born || end > th.born+300e3 {
		t.Errorf("the thread's clock ends at %d, want between its birth at %d and 300 µs later", end, th.born)
	}
}
