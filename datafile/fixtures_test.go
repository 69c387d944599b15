package datafile

import (
	"bytes"
	"path/filepath"
	"testing"

	goldenfile "github.com/sourceprofiler/sprof/internal/golden"
)

// testModules are two modules: a PIE program and a shared library.
func testModules() []Module {
	return []Module{
		{
			Name:     "prog",
			Path:     "/opt/demo/prog",
			Arch:     "amd64",
			BuildID:  Hex{0x5e, 0x11, 0xa0, 0x4b, 0x9c, 0x02, 0x7d, 0xe3},
			Size:     18432,
			ModTime:  1700000000123456789,
			PIE:      true,
			LinkBase: 0,
			Files:    []string{"main.c", "util.c"},
			CompDirs: []string{"/opt/demo/src"},
		},
		{
			Name:     "libfoo.so.1",
			Path:     "/opt/demo/lib/libfoo.so.1",
			Arch:     "amd64",
			Size:     9216,
			ModTime:  1699999999000000000,
			PIE:      true,
			LinkBase: 0x400000,
			Files:    []string{"foo.c"},
		},
	}
}

// testFuncs are four functions, two in each module.
func testFuncs() []Func {
	return []Func{
		{Module: 0, Name: "main", Source: "main.o", Entry: 0x1139, File: "main.c", Line: 12},
		{Module: 0, Name: "_Z6helperi", Source: "util.o", Entry: 0x11a0, File: "util.c", Line: 3},
		{Module: 1, Name: "foo_init", Source: "foo.o", Entry: 0x401020, File: "foo.c", Line: 8},
		{Module: 1, Name: "foo", Source: "libfoo.so.1", Entry: 0x401080},
	}
}

// testPlan returns a plan of the four functions (and, for a line method,
// four lines) with its ID set.
func testPlan(m Method) *Plan {
	p := &Plan{
		Method:      m,
		StartIndex:  -1,
		Calibration: -1,
		Modules:     testModules(),
		Funcs:       testFuncs(),
	}
	switch {
	case m == FuncTiming:
		p.StartFunc, p.StartIndex = "main", 0
		p.Attribution, p.StackDepth, p.Calibration = true, 16, 120
	case m.IsFunction() && m != FuncSampling:
		p.Attribution = true
		p.LeftOut = []LeftOut{{What: "the Go runtime and standard library", Funcs: 1817, Include: "/INC runtime"}}
	default:
		p.Attribution = m == FuncSampling // (and the lines of its functions)
		p.Lines = []Line{
			{Module: 0, File: 0, Line: 13, Addrs: []uint64{0x1141}},
			{Module: 0, File: 0, Line: 14, Addrs: []uint64{0x1150, 0x1190}},
			{Module: 0, File: 1, Line: 4, Addrs: []uint64{0x11a8}},
			{Module: 1, File: 0, Line: 9, Addrs: []uint64{0x401028}},
		}
		if m == LineCoverage {
			p.Branches = []Branch{{Line: 1, Addr: 0x1158, Target: 0x1190}, {Line: 3, Addr: 0x40102c, Target: 0x401028}}
		}
	}
	p.ID = PlanID(p)
	return p
}

// testCounts returns one run of testPlan(m): main counted 1000 times in
// the first run, 24 in the second, and so on.
func testCounts(m Method, second bool) *Counts {
	c := &Counts{
		PlanID: PlanID(testPlan(m)),
		Method: m,
		Run:    Run{ID: Hex{0x5e, 0xed, 1}, Time: 1700000100, CommandLine: "prog --fast input.txt"},
		Stats:  Stats{Hits: []uint64{1000, 2000, 1, 0}, CallDepth: 5},
	}
	if second {
		c.Run = Run{ID: Hex{0x5e, 0xed, 2}, Time: 1700000200, CommandLine: "prog", Incomplete: true, Reason: "killed by signal SIGSEGV"}
		c.Stats = Stats{Hits: []uint64{24, 48, 0, 7}, CallDepth: 3}
	}
	if m == LineCoverage {
		c.Stats.Branches = []uint64{1, 0, 1, 1}
		if second {
			c.Stats.Branches, c.Stats.Unprobed = []uint64{0, 1, 0, 0}, []uint64{0, 1}
		}
	}
	if !m.IsFunction() {
		return c
	}
	c.Stats.Stacks = []Stack{
		{Func: 1, Callers: []int{-1, 0}, Key: 0x9e37, Hits: c.Stats.Hits[1]},
		{Func: 0, Callers: []int{-1}, Hits: c.Stats.Hits[0]},
	}
	if second {
		// (Its caller's stack, 0x77, was kept apart from the others'.)
		c.Stats.Stacks = append(c.Stats.Stacks, Stack{Func: 3, Callers: []int{0, 2}, Key: 1, CallerKey: 0x77, Hits: 7})
	}
	if m == FuncSampling {
		sampled(c, second)
		return c
	}
	if m != FuncTiming {
		return c
	}
	c.Overhead = 42
	c.Stats.CostUncertainty = 7
	c.Stats.CPUTime = 4000000
	c.Stats.FuncTime = []int64{5000000, 3000000, 100, 0}
	c.Stats.ChildTime = []int64{8000000, 3000000, 100, 0}
	c.Stats.TotalTime = 9000000
	c.Stats.OutsideTime = 1000000
	if second {
		c.Overhead, c.Stats.CostUncertainty, c.Stats.CPUTime = 40, 9, 1500000
		for i, t := range c.Stats.FuncTime {
			c.Stats.FuncTime[i], c.Stats.ChildTime[i] = t/2, c.Stats.ChildTime[i]/2
		}
		c.Stats.TotalTime, c.Stats.OutsideTime = 4500000, 500000
	}
	waited(c, second)
	for i := range c.Stats.Stacks {
		s := &c.Stats.Stacks[i]
		s.Time, s.ChildTime = c.Stats.FuncTime[s.Func], c.Stats.ChildTime[s.Func]
		s.Wait, s.ChildWait = c.Stats.Waits.FuncWait[s.Func], c.Stats.Waits.ChildWait[s.Func]
	}
	return c
}

// waited gives timing counts c the waits of a run that measured each
// call's time on a CPU: main waited 2 of its 5 ms, helper 1 of its 3, in
// the first run, half of that in the second.
func waited(c *Counts, second bool) {
	w := &WaitStats{FuncWait: []int64{2000000, 1000000, 40, 0}, ChildWait: []int64{3000000, 1000000, 40, 0},
		InsideWait: 3000000}
	if second {
		for i := range w.FuncWait {
			w.FuncWait[i], w.ChildWait[i] = w.FuncWait[i]/2, w.ChildWait[i]/2
		}
		w.InsideWait /= 2
	}
	c.Stats.Waits = w
}

// sampled gives sampling counts c the figures of a run of testPlan's
// functions sampled every millisecond.
func sampled(c *Counts, second bool) {
	const interval = 1000000
	sm := SamplingStats{Interval: interval, Sampler: PerfSampler, Samples: []uint64{5, 3, 0, 0},
		LineSamples: []uint64{4, 2, 1, 0}, Outside: 1, KernelTime: 2000000, Overhead: 2, Stacks: 9, StacksCut: 1,
		Kernel: 3, KernelSamples: []uint64{2, 0, 0, 0}, KernelChildSamples: []uint64{3, 2, 0, 0}}
	if second {
		// (A database's runs all sampled the kernel's time, or none
		// did: this one's lists, of no sample in the kernel.)
		sm = SamplingStats{Interval: interval, Sampler: PtraceSampler, Samples: []uint64{2, 1, 0, 1},
			LineSamples: []uint64{1, 1, 0, 1}, Lost: 3, KernelSamples: []uint64{0, 0, 0, 0}, KernelChildSamples: []uint64{0, 0, 0, 0}}
	}
	c.Stats.Sampling = sm
	total := sm.Outside
	for _, n := range sm.Samples {
		c.Stats.FuncTime = append(c.Stats.FuncTime, int64(n)*interval)
		c.Stats.ChildTime = append(c.Stats.ChildTime, int64(n)*interval)
		total += n
	}
	c.Stats.ChildTime[0] += c.Stats.FuncTime[1]
	c.Stats.TotalTime, c.Stats.OutsideTime = int64(total)*interval, int64(sm.Outside)*interval
	for i := range c.Stats.Stacks {
		s := &c.Stats.Stacks[i]
		s.Time, s.ChildTime = c.Stats.FuncTime[s.Func], c.Stats.ChildTime[s.Func]
	}
}

// testMerged returns the database of testPlan(m) after its two runs.
func testMerged(t testing.TB, m Method) *Merged {
	t.Helper()
	db := NewMerged(testPlan(m))
	for _, second := range []bool{false, true} {
		if err := db.Add(testCounts(m, second)); err != nil {
			t.Fatalf("add run: %v", err)
		}
	}
	return db
}

// testValue is a named value of the package's three kinds.
type testValue struct {
	name string
	v    any
}

// testValues are the values of the round-trip and golden tests; their names
// are the golden files' base names.
func testValues(t testing.TB) []testValue {
	return []testValue{
		{"plan-fc", testPlan(FuncCounting)},
		{"plan-ft", testPlan(FuncTiming)},
		{"plan-lc", testPlan(LineCounting)},
		{"counts-ft", testCounts(FuncTiming, false)},
		{"counts-ft-incomplete", testCounts(FuncTiming, true)},
		{"counts-lv", testCounts(LineCoverage, false)},
		{"merged-fc-fresh", NewMerged(testPlan(FuncCounting))},
		{"merged-ft", testMerged(t, FuncTiming)},
		{"merged-lc", testMerged(t, LineCounting)},
		{"merged-fc-rerun", testRerun(t)},
		{"plan-fs", testPlan(FuncSampling)},
		{"counts-fs", testCounts(FuncSampling, false)},
		{"merged-fs", testMerged(t, FuncSampling)},
		{"plan-fs-uncounted", uncountedPlan()},
		{"plan-lv", testPlan(LineCoverage)},
		{"merged-lv", testMerged(t, LineCoverage)},
	}
}

// uncountedPlan is testPlan(FuncSampling) that counts no call (prep
// --no-call-counts).
func uncountedPlan() *Plan {
	p := testPlan(FuncSampling)
	p.Uncounted, p.Attribution = true, false
	p.Inlined = testInlined()
	p.ID = PlanID(p)
	return p
}

// testInlined returns the inlined calls of a function sampling plan
// without /AT: helper inlined twice into main, foo into foo_init, and
// foo_init into that copy of foo.
func testInlined() []Inlined {
	return []Inlined{
		{Func: 1, Parent: -1, Ranges: []Range{{0x1150, 0x1160}, {0x1190, 0x1198}}},
		{Func: 3, Parent: -1, Ranges: []Range{{0x401028, 0x401040}}},
		{Func: 2, Parent: 1, Ranges: []Range{{0x401030, 0x401038}}},
		{Func: 1, Parent: -1, Ranges: []Range{{0x1170, 0x1180}}},
	}
}

// testRerun returns the database phase I writes over testMerged(t,
// FuncCounting) when it prepares the same plan again: empty, with the two
// runs of the old one discarded.
func testRerun(t testing.TB) *Merged {
	t.Helper()
	m := NewMerged(testPlan(FuncCounting))
	m.Supersede(testMerged(t, FuncCounting))
	return m
}

// encode returns the binary form of v.
func encode(t testing.TB, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, v); err != nil {
		t.Fatalf("write: %v", err)
	}
	return b.Bytes()
}

// golden compares got with the file testdata/name, or rewrites it with
// -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name), got)
}
