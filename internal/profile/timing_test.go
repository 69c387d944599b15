package profile

import (
	"fmt"
	"math"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/testutil"
)

// timed is a run of the timing fixture: hits, function times and
// function+child times by name.
type timed struct {
	runOut
	self, all map[string]int64
	stats     datafile.Stats
}

func runTimed(t *testing.T, plan *datafile.Plan, prog string, args ...string) timed {
	t.Helper()
	got := runPlan(t, plan, prog, args...)
	if !got.res.Exited || got.res.ExitCode != 0 {
		t.Fatalf("%s %v: exited %v, status %d, output %q", prog, args, got.res.Exited, got.res.ExitCode, got.stdout)
	}
	s := got.res.Counts.Stats
	out := timed{runOut: got, self: map[string]int64{}, all: map[string]int64{}, stats: s}
	for i, f := range plan.Funcs {
		if s.FuncTime != nil {
			out.self[f.Name], out.all[f.Name] = s.FuncTime[i], s.ChildTime[i]
		}
	}
	return out
}

func checkHits(t *testing.T, got map[string]uint64, want map[string]uint64) {
	t.Helper()
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s hit %d times, want %d", name, got[name], w)
		}
	}
}

// TestTimingKnownWork: the function times of functions that do 1, 2 and 3
// units of the same work, one of them nested, are in those ratios, and the
// total time is the program's native time (testutil.Accuracy: on a
// machine running nothing else; elsewhere the times are only ordered).
func TestTimingKnownWork(t *testing.T) {
	testutil.MustHavePtrace(t)
	for _, build := range []string{"O0-pie", "O2-nopie"} {
		t.Run(build, func(t *testing.T) {
			prog := testutil.BuildC(t, "timing", fixtureFlags[build]...)
			plan := planFor(t, prog, datafile.FuncTiming, "main", "top", "one", "two", "four")
			const n = 10
			args := []string{"work", "10", strconv.Itoa(timingUnit())}
			got := runTimed(t, plan, prog, args...)
			checkHits(t, got.hits, map[string]uint64{"main": 1, "top": n, "one": n, "two": n, "four": n})

			if got.stats.CallDepth != 4 {
				t.Errorf("call depth %d, want 4", got.stats.CallDepth)
			}
			inside := got.stats.TotalTime - got.stats.OutsideTime
			if inside <= 0 {
				t.Fatalf("no time inside functions: total %d, outside %d", got.stats.TotalTime, got.stats.OutsideTime)
			}
			// Shares of the time inside profiled functions, known by
			// construction: 6 units in all per call of top.
			share := func(ns int64) float64 { return float64(ns) / float64(inside) }
			t.Logf("shares: one %.2f%%, two %.2f%%, four %.2f%% (four+child %.2f%%), top %.2f%%, main %.2f%%",
				100*share(got.self["one"]), 100*share(got.self["two"]), 100*share(got.self["four"]),
				100*share(got.all["four"]), 100*share(got.self["top"]), 100*share(got.self["main"]))
			if s1, s2, s3 := got.self["one"], got.self["two"], got.self["four"]; !(0 < s1 && s1 < s2 && s2 < s3 && s3 < got.all["four"]) {
				t.Errorf("function times one %d, two %d, four %d, four+child %d: want increasing", s1, s2, s3, got.all["four"])
			}
			if !testutil.Accuracy() {
				return
			}
			for _, c := range []struct {
				what string
				got  int64
				want float64
			}{
				{"one's function time", got.self["one"], 1.0 / 6},
				{"two's function time", got.self["two"], 2.0 / 6},
				{"four's function time", got.self["four"], 3.0 / 6},
				{"four's function+child time", got.all["four"], 4.0 / 6},
				{"top's function+child time", got.all["top"], 1},
				{"main's function+child time", got.all["main"], 1},
			} {
				if s := share(c.got); math.Abs(s-c.want) > shareTolerance*c.want {
					t.Errorf("%s is %.2f%% of the time inside functions, want %.2f%% (within %.0f%%)", c.what, 100*s, 100*c.want, 100*shareTolerance)
				}
			}
			// What is left of each stop's cost lands in the functions
			// that only call: microseconds, but milliseconds under the
			// VM's emulation, where a stop costs one or two.
			callsOnly := 0.02
			if testutil.Slow() {
				callsOnly = 0.05
			}
			for _, name := range []string{"main", "top"} {
				if s := share(got.self[name]); s > callsOnly {
					t.Errorf("%s, which only calls, has %.2f%% of the time, want about 0 (at most %.0f%%)", name, 100*s, 100*callsOnly)
				}
			}
			if testutil.Slow() {
				return // in the VM, the ratios only: emulation's timing is its own
			}
			native := nativeTime(t, prog, args...)
			t.Logf("total time %v, native run %v: %.3fx", time.Duration(got.stats.TotalTime), native, float64(got.stats.TotalTime)/float64(native))
			if r := float64(got.stats.TotalTime) / float64(native); math.Abs(r-1) > 0.10 {
				t.Errorf("total time %v, native run %v: ratio %.3f, want within 10%%",
					time.Duration(got.stats.TotalTime), native, r)
			}
		})
	}
}

// ringFixture builds the timing fixture (build) and plans the timing of
// funcs, where PROFILE times in-process; elsewhere it skips the test,
// whose calls would each stop the program twice.
func ringFixture(t *testing.T, build string, funcs ...string) (string, *datafile.Plan) {
	t.Helper()
	testutil.MustHavePtrace(t)
	if !testutil.TimesInProcess() {
		t.Skip("no rings: timing with breakpoints")
	}
	prog := testutil.BuildC(t, "timing", fixtureFlags[build]...)
	return prog, planFor(t, prog, datafile.FuncTiming, funcs...)
}

// TestReturnSites: unoptimised, wrap() calls work_leaf() and returns, an
// epilogue (nop; pop %rbp; ret after the call) too short for a jump, with
// no padding near for a hop; main calls it three times, each call
// followed by straight-line code: wrap() is timed where those calls
// return, and its exit stops nothing. (x86-64: on arm64 every return
// takes a branch of its own size.)
func TestReturnSites(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("arm64 patches every return in place")
	}
	prog, plan := ringFixture(t, "O0-pie", "main", "wrap", "work_leaf")
	got := runTimed(t, plan, prog, "returns", "2000")
	checkHits(t, got.hits, map[string]uint64{"main": 1, "wrap": 3, "work_leaf": 3})
	// (main's own exit may keep a breakpoint: a branch lands in its
	// epilogue.)
	if got.res.ReturnSites != 3 || got.res.Hits > 1 {
		t.Errorf("%d return sites patched and %d breakpoint stops, want 3 and at most 1", got.res.ReturnSites, got.res.Hits)
	}
	if got.stats.CallDepth != 3 {
		t.Errorf("call depth %d, want 3", got.stats.CallDepth)
	}
	// work_leaf() works a unit of 2 ms; wrap() only calls it.
	for _, c := range []struct {
		what     string
		ns, want int64
	}{
		{"work_leaf's function time", got.self["work_leaf"], 6e6},
		{"wrap's function+child time", got.all["wrap"], 6e6},
	} {
		// (Beside other test processes the work takes longer: the
		// bound above is held where the machine runs nothing else.)
		if c.ns < c.want || (testutil.Accuracy() && c.ns > c.want*3/2) {
			t.Errorf("%s %v, want %v and a little more", c.what, time.Duration(c.ns), time.Duration(c.want))
		}
	}
	if self := got.self["wrap"]; self < 0 || self > 1e6 {
		t.Errorf("wrap's function time %v, want next to none", time.Duration(self))
	}
}

// TestTimingShortCalls: a million calls of a function of some 50 ns
// beside one function that runs as long as all of them, timed in-process:
// each share of the time is the one the program measures itself when it
// runs natively, within 10 % (testutil.Accuracy; elsewhere, the short
// function's time is only required to be there). What is at stake is the
// records' cost, taken out of every call: two records cost about half of
// such a call.
func TestTimingShortCalls(t *testing.T) {
	prog, plan := ringFixture(t, "O2-pie", "main", "tiny", "slow")
	// Three profiled runs and three native ones, alternating; the
	// medians. The truth is the program's own measure of its native runs.
	var shares, natives []float64
	var got timed
	for range 3 {
		got = runTimed(t, plan, prog, "short")
		checkHits(t, got.hits, map[string]uint64{"main": 1, "tiny": 1000000, "slow": 1})
		if got.res.Hits != 0 {
			t.Errorf("%d breakpoint hits: an entry or an exit was not patched", got.res.Hits)
		}
		if got.self["tiny"] <= 0 || got.self["slow"] <= 0 {
			t.Fatalf("function times: tiny %d ns, slow %d ns", got.self["tiny"], got.self["slow"])
		}
		shares = append(shares, float64(got.self["tiny"])/float64(got.self["tiny"]+got.self["slow"]))
		out, err := exec.Command(prog, "short").Output()
		var tiny, slow int64
		if _, serr := fmt.Sscanf(string(out), "tiny %d ns, slow %d ns", &tiny, &slow); err != nil || serr != nil {
			t.Fatalf("native run: %v %v: %q", err, serr, out)
		}
		natives = append(natives, float64(tiny)/float64(tiny+slow))
	}
	slices.Sort(shares)
	slices.Sort(natives)
	share, want := shares[1], natives[1]
	t.Logf("tiny's share %.2f%% (runs: %.2f), native %.2f%% (runs: %.2f); overhead per record %d ns",
		100*share, shares, 100*want, natives, got.res.Counts.Overhead)
	// (Under the arm64 VM's emulation a record costs some 180 ns, more
	// than three of tiny's calls, and what it costs in place varies with
	// the emulator's translation: the figures are only logged there.)
	if testutil.Accuracy() && !testutil.Slow() && math.Abs(share-want) > 0.10*want {
		t.Errorf("tiny has %.2f%% of the time, natively %.2f%%: want within 10%%", 100*share, 100*want)
	}
}

// TestFullRings: with rings of 16 records, a thread that calls a
// function 20,000 times finds its ring full again and again; each time it
// stops until PROFILE has read it, and goes on. No call is lost, and the
// stops are not the program's time: the short function's time is still
// about its native 1 ms.
func TestFullRings(t *testing.T) {
	defer func(n int) { ringRecords = n }(ringRecords)
	ringRecords = 16
	prog, plan := ringFixture(t, "O2-pie", "main", "tiny", "slow")
	const n = 20000
	got := runTimed(t, plan, prog, "short", strconv.Itoa(n), "1000")
	checkHits(t, got.hits, map[string]uint64{"main": 1, "tiny": n, "slow": 1})
	if got.res.FullRings < 2*n/16/2 {
		t.Errorf("%d stops for a full ring, want about %d", got.res.FullRings, 2*n/16)
	}
	var tiny, slow int64
	if _, err := fmt.Sscanf(got.stdout, "tiny %d ns, slow %d ns", &tiny, &slow); err != nil {
		t.Fatalf("output %q: %v", got.stdout, err)
	}
	// The program's own measure includes the stops; PROFILE's does not.
	// Twenty thousand calls of 50 ns are 1 ms; the stops, some 100 ms.
	// (Beside other test processes the thread may wait for a CPU.)
	t.Logf("%d stops for a full ring; tiny %.2f ms in all (the program saw %.2f ms, stops included), slow %.2f ms",
		got.res.FullRings, float64(got.self["tiny"])/1e6, float64(tiny)/1e6, float64(got.self["slow"])/1e6)
	// Under the arm64 VM's emulation each of the 2,600 stops leaves a few
	// microseconds behind (seen: 12.7 ms in all, against 1,417 ms of
	// stops the program saw).
	high := 10.0
	switch {
	case testutil.Slow():
		high = 40
	case testutil.Accuracy():
		high = 2
	}
	if ms := float64(got.self["tiny"]) / 1e6; ms < 0.5 || ms > high {
		t.Errorf("tiny's time %.2f ms, want about 1 ms (at most %.0f)", ms, high)
	}
}

// TestAlternateSignalStack: a signal handler on an alternate signal stack
// makes 40,000 records, more than a ring holds, then main as many. On
// x86-64 they go into the thread's ring, found through GS, and every call
// counts. On arm64 the ring is found from the stack pointer, and a stack
// no thread owns has the discard area's: the handler's calls are dropped
// (docs/linux.md, "Timing"), and the thread, which fills the discard
// ring again and again, goes on each time (it once waited forever: PROFILE
// emptied the thread's own ring, not the one it was writing to).
func TestAlternateSignalStack(t *testing.T) {
	prog, plan := ringFixture(t, "O2-pie", "main", "tiny")
	const n = 20000
	got := runTimed(t, plan, prog, "altstack", strconv.Itoa(n))
	want := uint64(2 * n)
	if runtime.GOARCH == "arm64" {
		want = n
	}
	checkHits(t, got.hits, map[string]uint64{"main": 1, "tiny": want})
	if !strings.Contains(got.stdout, "timing altstack done") {
		t.Errorf("output %q", got.stdout)
	}
	t.Logf("%d stops for a full ring", got.res.FullRings)
}

// timingUnit is the timing fixture's unit of work in microseconds: 5 ms,
// 50 ms where breakpoints are slow (a stop costs a millisecond or more in
// the emulated VM).
func timingUnit() int {
	if testutil.Slow() {
		return 50000
	}
	return 5000
}

// shareTolerance is how far a function's measured share of the time may
// be from its true share, relatively. Timing with breakpoints reads the
// time of each stop when PROFILE sees it, which may be later than the
// stop by a scheduling delay: 10 %. (The 5 % is the in-process
// timing's target.)
const shareTolerance = 0.10

// nativeTime is the median wall time of three runs of the program.
func nativeTime(t *testing.T, prog string, args ...string) time.Duration {
	t.Helper()
	var runs []time.Duration
	for range 3 {
		began := time.Now()
		if err := exec.Command(prog, args...).Run(); err != nil {
			t.Fatalf("run %s natively: %v", prog, err)
		}
		runs = append(runs, time.Since(began))
	}
	slices.Sort(runs)
	return runs[len(runs)/2]
}

// TestStartFunction: with /SF only the calls made while the start function
// runs count, as the original's sf.c goldens show; a start function asked
// for and not found counts nothing.
func TestStartFunction(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "timing", fixtureFlags["O2-pie"]...)
	for _, method := range []datafile.Method{datafile.FuncCounting, datafile.FuncTiming} {
		plan := planFor(t, prog, method, "main", "pre", "run", "inner", "post")
		plan.StartFunc, plan.StartIndex = "run", 2
		got := runTimed(t, plan, prog, "sf")
		checkHits(t, got.hits, map[string]uint64{"main": 0, "pre": 0, "run": 2, "inner": 10, "post": 0})
		if got.stats.CallDepth != 2 {
			t.Errorf("%v: call depth %d, want 2", method, got.stats.CallDepth)
		}
		if method.IsTiming() && (got.stats.OutsideTime > got.stats.TotalTime || got.stats.TotalTime <= 0) {
			t.Errorf("%v: outside %d of total %d", method, got.stats.OutsideTime, got.stats.TotalTime)
		}

		plan.StartIndex = -1 // not found
		got = runTimed(t, plan, prog, "sf")
		checkHits(t, got.hits, map[string]uint64{"main": 0, "pre": 0, "run": 0, "inner": 0, "post": 0})
	}
}

// TestAttribution: two callers of one function, and a recursion, give the
// stacks of their call trees, told apart by /STACK levels.
func TestAttribution(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "timing", fixtureFlags["O0-nopie"]...)
	names := []string{"main", "caller_a", "caller_b", "leaf", "rec"}
	const (
		base  = -1
		fMain = iota - 1
		fA
		fB
		fLeaf
		fRec
	)
	type stack struct {
		fn      int
		callers string
		hits    uint64
	}
	key := func(callers []int) string {
		var b strings.Builder
		for _, c := range callers {
			b.WriteString(map[int]string{base: "<base>", fMain: "main", fA: "a", fB: "b", fLeaf: "leaf", fRec: "rec"}[c] + " ")
		}
		return strings.TrimSpace(b.String())
	}
	for _, c := range []struct {
		levels int
		want   []stack
	}{
		{1, []stack{
			{fMain, "<base>", 1}, {fA, "main", 1}, {fLeaf, "a", 3}, {fB, "main", 2}, {fLeaf, "b", 4},
			{fRec, "main", 1}, {fRec, "rec", 4},
		}},
		{2, []stack{
			{fMain, "<base>", 1}, {fA, "<base> main", 1}, {fLeaf, "main a", 3}, {fB, "<base> main", 2},
			{fLeaf, "main b", 4}, {fRec, "<base> main", 1}, {fRec, "main rec", 1}, {fRec, "rec rec", 3},
		}},
		{0, []stack{ // every level: each depth of rec its own stack
			{fMain, "<base>", 1}, {fA, "<base> main", 1}, {fLeaf, "main a", 3}, {fB, "<base> main", 2},
			{fLeaf, "main b", 4}, {fRec, "<base> main", 1}, {fRec, "main rec", 1}, {fRec, "rec rec", 1},
			{fRec, "rec rec", 1}, {fRec, "rec rec", 1},
		}},
	} {
		for _, method := range []datafile.Method{datafile.FuncCounting, datafile.FuncTiming} {
			plan := planFor(t, prog, method, names...)
			plan.Attribution, plan.StackDepth = true, c.levels
			got := runTimed(t, plan, prog, "at")
			checkHits(t, got.hits, map[string]uint64{"main": 1, "caller_a": 1, "caller_b": 2, "leaf": 7, "rec": 5})
			if got.stats.CallDepth != 6 {
				t.Errorf("/STACK %d %v: call depth %d, want 6", c.levels, method, got.stats.CallDepth)
			}
			var stacks []stack
			for _, s := range got.stats.Stacks {
				stacks = append(stacks, stack{s.Func, key(s.Callers), s.Hits})
			}
			if !slices.Equal(stacks, c.want) {
				t.Errorf("/STACK %d %v: stacks\n%v\nwant\n%v", c.levels, method, stacks, c.want)
			}
			if method.IsTiming() {
				for _, s := range got.stats.Stacks {
					if s.Time < 0 || s.ChildTime < s.Time {
						t.Errorf("/STACK %d: stack %+v: function time %d, function+child %d", c.levels, s, s.Time, s.ChildTime)
					}
				}
			}
		}
	}
}

// TestTimingUnseenReturns: frames a longjmp leaves are closed at the next
// event, and the books stay right: exact counts, the depth of the deepest
// chain, no time lost or invented.
func TestTimingUnseenReturns(t *testing.T) {
	testutil.MustHavePtrace(t)
	for _, build := range []string{"O0-pie", "O2-nopie"} {
		t.Run(build, func(t *testing.T) {
			prog := testutil.BuildC(t, "timing", fixtureFlags[build]...)
			plan := planFor(t, prog, datafile.FuncTiming, "main", "jumper", "deep1", "deep2", "after")
			got := runTimed(t, plan, prog, "jump")
			checkHits(t, got.hits, map[string]uint64{"main": 1, "jumper": 1, "deep1": 3, "deep2": 3, "after": 1})
			if got.stats.CallDepth != 4 {
				t.Errorf("call depth %d, want 4", got.stats.CallDepth)
			}
			inside := got.stats.TotalTime - got.stats.OutsideTime
			if all := got.all["main"]; all != inside {
				t.Errorf("main's function+child time %d, time inside functions %d: want equal", all, inside)
			}
			var sum int64
			for _, v := range got.self {
				sum += v
			}
			if sum != inside {
				t.Errorf("function times sum to %d, time inside functions is %d", sum, inside)
			}
		})
	}
}

// TestTimingThreads: each thread has its own stack of calls; four threads
// running the same known work give function times in its ratio.
func TestTimingThreads(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "timing", append(fixtureFlags["O2-pie"], "-pthread")...)
	plan := planFor(t, prog, datafile.FuncTiming, "one", "two")
	got := runTimed(t, plan, prog, "threads", strconv.Itoa(timingUnit()))
	checkHits(t, got.hits, map[string]uint64{"one": 12, "two": 12})
	if got.stats.CallDepth != 1 {
		t.Errorf("call depth %d, want 1", got.stats.CallDepth)
	}
	for _, name := range []string{"one", "two"} {
		if got.self[name] <= 0 || got.all[name] != got.self[name] {
			t.Errorf("%s: function time %d, function+child time %d; want equal and positive", name, got.self[name], got.all[name])
		}
	}
	// Not checked: that two's time is twice one's. Four threads that
	// work at once on fewer CPUs queue for the tracer, and with
	// breakpoints the time a stop waits for it counts as the program's;
	// in-process timing has no such wait (docs/linux.md, "Timing").
	t.Logf("two's time / one's: %.3f (2 by construction)", float64(got.self["two"])/float64(got.self["one"]))
}

// TestTimingWaysOut: mutual recursion, a thread that ends inside a
// profiled function, and a signal handler that runs profiled functions in
// the middle of another keep the books right: exact counts and depth,
// every call's time within its caller's, no time lost or invented.
func TestTimingWaysOut(t *testing.T) {
	testutil.MustHavePtrace(t)
	for _, build := range []string{"O0-pie", "O2-nopie"} {
		t.Run(build, func(t *testing.T) {
			prog := testutil.BuildC(t, "timing", append(fixtureFlags[build], "-pthread")...)
			plan := planFor(t, prog, datafile.FuncTiming, "main", "is_even", "is_odd", "starter", "quitter", "interrupted", "leaf")
			got := runTimed(t, plan, prog, "ways")
			checkHits(t, got.hits, map[string]uint64{"main": 1, "is_even": 6, "is_odd": 5, "starter": 1,
				"quitter": 1, "interrupted": 1, "leaf": 2})
			if got.stats.CallDepth != 12 {
				t.Errorf("call depth %d, want 12 (main, is_even(10) down to is_even(0))", got.stats.CallDepth)
			}
			var self int64
			for name, v := range got.self {
				self += v
				if v < 0 || got.all[name] < v {
					t.Errorf("%s: function time %d, function+child time %d", name, v, got.all[name])
				}
			}
			// The time inside functions is main's and the thread's
			// starter's, and every function time is part of it.
			inside := got.stats.TotalTime - got.stats.OutsideTime
			if want := got.all["main"] + got.all["starter"]; inside != want || self != inside {
				t.Errorf("time inside functions %d; main's and starter's function+child times %d; function times sum to %d: want all equal",
					inside, want, self)
			}
			if got.all["interrupted"] < got.all["leaf"] {
				t.Errorf("interrupted's function+child time %d is less than the leaf calls its handler made, %d",
					got.all["interrupted"], got.all["leaf"])
			}
		})
	}
}
