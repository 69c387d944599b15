package datafile

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNewMerged(t *testing.T) {
	tests := []struct {
		method      Method
		hits, times int
	}{
		{FuncCounting, 4, 0},
		{FuncTiming, 4, 4},
		{FuncSampling, 4, 4},
		{LineCoverage, 4, 0},
	}
	for _, tt := range tests {
		t.Run(tt.method.Words(), func(t *testing.T) {
			p := testPlan(tt.method)
			m := NewMerged(p)
			if err := m.Validate(); err != nil {
				t.Fatal(err)
			}
			s := m.Stats
			if len(s.Hits) != tt.hits || len(s.FuncTime) != tt.times || len(s.ChildTime) != tt.times {
				t.Errorf("%d hits, %d and %d times; want %d hits and %d times",
					len(s.Hits), len(s.FuncTime), len(s.ChildTime), tt.hits, tt.times)
			}
			if len(m.Runs) != 0 || len(m.Overheads) != 0 {
				t.Errorf("a fresh database has %d runs", len(m.Runs))
			}
		})
	}
}

// TestMergeSums adds the two runs of the function timing fixture and checks
// every figure.
func TestMergeSums(t *testing.T) {
	first, second := testCounts(FuncTiming, false), testCounts(FuncTiming, true)
	got := testMerged(t, FuncTiming)
	want := Merged{
		Plan:      *testPlan(FuncTiming),
		Runs:      []Run{first.Run, second.Run},
		Overheads: []int64{42, 40},
		Stats: Stats{
			Hits:        []uint64{1024, 2048, 1, 7},
			FuncTime:    []int64{7500000, 4500000, 150, 0},
			ChildTime:   []int64{12000000, 4500000, 150, 0},
			CallDepth:   5,
			TotalTime:   13500000,
			OutsideTime: 1500000,
			// The most of the two runs'.
			CostUncertainty: 9,
			// The sum of the two runs', as the total time's.
			CPUTime: 5500000,
			// Both runs measured their waits: the sums.
			Waits: &WaitStats{FuncWait: []int64{3000000, 1500000, 60, 0}, ChildWait: []int64{4500000, 1500000, 60, 0},
				InsideWait: 4500000},
			// Sorted by function, callers and key; main's and helper's
			// stacks of both runs added up.
			Stacks: []Stack{
				{Func: 0, Callers: []int{-1}, Hits: 1024, Time: 7500000, ChildTime: 12000000, Wait: 3000000, ChildWait: 4500000},
				{Func: 1, Callers: []int{-1, 0}, Key: 0x9e37, Hits: 2048, Time: 4500000, ChildTime: 4500000, Wait: 1500000, ChildWait: 1500000},
				{Func: 3, Callers: []int{0, 2}, Key: 1, CallerKey: 0x77, Hits: 7},
			},
		},
	}
	if d := cmp.Diff(&want, got); d != "" {
		t.Errorf("merged database differs (-want +got):\n%s", d)
	}
}

// TestMergeStackKeys checks that stacks merge only when function, callers
// and key are all equal.
func TestMergeStackKeys(t *testing.T) {
	stack := func(fn int, callers []int, key, hits uint64) Stack {
		return Stack{Func: fn, Callers: callers, Key: key, Hits: hits}
	}
	counts := func(stacks ...Stack) *Counts {
		c := anotherRun(testCounts(FuncCounting, false))
		c.Stats.Stacks = stacks
		return c
	}
	m := NewMerged(testPlan(FuncCounting))
	for _, c := range []*Counts{
		counts(stack(2, []int{0, 1}, 5, 1), stack(2, []int{0, 1}, 5, 2), stack(2, []int{0}, 5, 4)),
		counts(stack(2, []int{0, 1}, 6, 8), stack(2, []int{1, 1}, 5, 16), stack(1, []int{0, 1}, 5, 32), stack(2, []int{0, 1}, 5, 64)),
	} {
		if err := m.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	want := []Stack{
		stack(1, []int{0, 1}, 5, 32),
		stack(2, []int{0}, 5, 4),
		stack(2, []int{0, 1}, 5, 67),
		stack(2, []int{0, 1}, 6, 8),
		stack(2, []int{1, 1}, 5, 16),
	}
	if d := cmp.Diff(want, m.Stats.Stacks); d != "" {
		t.Errorf("stacks differ (-want +got):\n%s", d)
	}
}

// TestMergeCallerKeys: stacks that merge keep the smaller known key of
// their caller stacks (0 is none known), whatever the order of the runs.
func TestMergeCallerKeys(t *testing.T) {
	stack := func(callerKey uint64) Stack {
		return Stack{Func: 2, Callers: []int{0, 1}, Key: 5, CallerKey: callerKey, Hits: 1}
	}
	for _, keys := range [][]uint64{{0, 9, 7}, {7, 0, 9}, {9, 7, 0}, {0, 0, 7}} {
		m := NewMerged(testPlan(FuncCounting))
		for _, k := range keys {
			c := anotherRun(testCounts(FuncCounting, false))
			c.Stats.Stacks = []Stack{stack(k)}
			if err := m.Add(c); err != nil {
				t.Fatal(err)
			}
		}
		if got := m.Stats.Stacks; len(got) != 1 || got[0].CallerKey != 7 || got[0].Hits != 3 {
			t.Errorf("runs with caller keys %v: %+v, want one stack of 3 hits, caller key 7", keys, got)
		}
	}
}

// TestMergeCounting checks the original's example: two runs of 1000 and 24
// calls give 1024, and merging the same counts twice counts them twice.
func TestMergeCounting(t *testing.T) {
	p := testPlan(FuncCounting)
	run := func(hits uint64, depth int) *Counts {
		return &Counts{PlanID: p.ID, Method: FuncCounting, Stats: Stats{Hits: []uint64{hits, 0, 0, 0}, CallDepth: depth}}
	}
	m := NewMerged(p)
	for _, c := range []*Counts{run(1000, 5), run(24, 3)} {
		if err := m.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	if m.Stats.Hits[0] != 1024 || m.Stats.CallDepth != 5 || len(m.Runs) != 2 {
		t.Errorf("hits %d, depth %d, %d runs; want 1024, 5 and 2", m.Stats.Hits[0], m.Stats.CallDepth, len(m.Runs))
	}
	if err := m.Add(run(24, 7)); err != nil {
		t.Fatal(err)
	}
	if m.Stats.Hits[0] != 1048 || m.Stats.CallDepth != 7 || len(m.Runs) != 3 {
		t.Errorf("after the same run again: hits %d, depth %d, %d runs; want 1048, 7 and 3", m.Stats.Hits[0], m.Stats.CallDepth, len(m.Runs))
	}
}

// TestMergeOrder checks that the figures do not depend on the order of the
// runs, only the run records do.
func TestMergeOrder(t *testing.T) {
	ab := testMerged(t, FuncTiming)
	ba := NewMerged(testPlan(FuncTiming))
	for _, second := range []bool{true, false} {
		if err := ba.Add(testCounts(FuncTiming, second)); err != nil {
			t.Fatal(err)
		}
	}
	if d := cmp.Diff(ab.Stats, ba.Stats); d != "" {
		t.Errorf("statistics depend on the order (-ab +ba):\n%s", d)
	}
	if !cmp.Equal(ab.Runs[0], ba.Runs[1]) || !cmp.Equal(ab.Runs[1], ba.Runs[0]) || ab.Overheads[0] != ba.Overheads[1] {
		t.Errorf("runs are not in call order: %v and %v", ab.Runs, ba.Runs)
	}
}

// TestMergeTimesAllocated checks that a timing database read without times
// gets them from the first run.
func TestMergeTimesAllocated(t *testing.T) {
	m := NewMerged(testPlan(FuncTiming))
	m.Stats.FuncTime, m.Stats.ChildTime = nil, nil
	c := testCounts(FuncTiming, false)
	if err := m.Add(c); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(c.Stats.FuncTime, m.Stats.FuncTime); d != "" {
		t.Errorf("function times (-want +got):\n%s", d)
	}
}

func TestMergeRefused(t *testing.T) {
	tests := []struct {
		name   string
		method Method // of the database
		counts func() *Counts
		want   error
		text   string
	}{
		{
			name: "another program", method: FuncCounting,
			counts: func() *Counts {
				p := testPlan(FuncCounting)
				p.Modules[0].BuildID = Hex{1}
				c := testCounts(FuncCounting, false)
				c.PlanID = PlanID(p)
				return c
			},
			want: ErrNotSamePlan,
		},
		{
			// original.md §10: function counting .pbo, .pbt re-prepared
			// for function coverage.
			name: "counting into coverage", method: FuncCoverage,
			counts: func() *Counts { return testCounts(FuncCounting, false) },
			want:   ErrConflict,
		},
		{
			// ... and re-prepared for function timing.
			name: "counting into timing", method: FuncTiming,
			counts: func() *Counts { return testCounts(FuncCounting, false) },
			want:   ErrNotSamePlan,
		},
		{
			name: "timing into counting", method: FuncCounting,
			counts: func() *Counts { return testCounts(FuncTiming, false) },
			want:   ErrNotSamePlan,
		},
		{
			name: "line counts of the same id", method: FuncCounting,
			counts: func() *Counts {
				c := testCounts(FuncCounting, false)
				c.Stats.Hits = append(c.Stats.Hits, 1)
				c.Stats.Stacks = nil
				return c
			},
			want: ErrNotSamePlan, text: "counts of 5 items, database of 4",
		},
		{
			// Accepted: original.md §10, same type and image.
			name: "coverage into coverage re-prepared", method: FuncCoverage,
			counts: func() *Counts { return testCounts(FuncCoverage, false) },
		},
		{
			name: "invalid counts", method: FuncCounting,
			counts: func() *Counts {
				c := testCounts(FuncCounting, false)
				c.Stats.CallDepth = -1
				return c
			},
			text: "merge: invalid counts: negative call depth -1",
		},
		{
			name: "hit overflow", method: FuncCounting,
			counts: func() *Counts {
				c := testCounts(FuncCounting, false)
				c.Stats.Hits[2] = math.MaxUint64
				c.Stats.Stacks = nil
				return c
			},
			want: ErrOverflow, text: "hits of item 2: sum overflows",
		},
		{
			name: "time overflow", method: FuncTiming,
			counts: func() *Counts {
				c := testCounts(FuncTiming, false)
				c.Stats.ChildTime[0] = math.MaxInt64
				return c
			},
			want: ErrOverflow, text: "child time of function 0",
		},
		{
			name: "CPU time overflow", method: FuncTiming,
			counts: func() *Counts {
				c := testCounts(FuncTiming, false)
				c.Stats.CPUTime = math.MaxInt64
				return c
			},
			want: ErrOverflow, text: "CPU time: sum overflows",
		},
		{
			name: "stack overflow", method: FuncCounting,
			counts: func() *Counts {
				c := testCounts(FuncCounting, false)
				c.Stats.Stacks[0].Hits = math.MaxUint64
				return c
			},
			want: ErrOverflow, text: "stack of function 1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := testMerged(t, tt.method)
			before := encode(t, m)
			err := m.Add(anotherRun(tt.counts()))
			if tt.want == nil && tt.text == "" {
				if err != nil {
					t.Errorf("add: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("add: no error")
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("add: error %v, want %v", err, tt.want)
			}
			if !bytes.Equal(encode(t, m), before) {
				t.Error("a failed add changed the database")
			}
			if !strings.Contains(err.Error(), tt.text) {
				t.Errorf("add: %q, want it to contain %q", err, tt.text)
			}
		})
	}
}

// TestMergeNoAttribution checks PRF1304 for stacks in a plan made without
// /AT.
func TestMergeNoAttribution(t *testing.T) {
	p := testPlan(FuncCounting)
	p.Attribution = false
	m := NewMerged(p)
	err := m.Add(testCounts(FuncCounting, false))
	if !errors.Is(err, ErrConflict) {
		t.Errorf("error %v, want ErrConflict", err)
	}
	if len(m.Runs) != 0 || m.Stats.Hits[0] != 0 {
		t.Error("a failed add changed the database")
	}
}

// anotherRun gives c a run ID of its own, so that it can be added to a
// database that holds the run it was copied from.
func anotherRun(c *Counts) *Counts {
	c.Run.ID = NewRunID()
	return c
}

// TestMergeDuplicateRun checks that a run is merged once: the same counts
// again are refused and leave the database as it was; counts without a run
// ID (files of before IDs) are never taken for a duplicate.
func TestMergeDuplicateRun(t *testing.T) {
	m := testMerged(t, FuncCounting)
	before := encode(t, m)
	err := m.Add(testCounts(FuncCounting, true))
	if !errors.Is(err, ErrDuplicateRun) {
		t.Errorf("second add of run 2: %v, want ErrDuplicateRun", err)
	}
	if !bytes.Equal(encode(t, m), before) {
		t.Error("a refused run changed the database")
	}
	if !m.HasRun(Hex{0x5e, 0xed, 2}) || m.HasRun(Hex{0x5e, 0xed, 3}) || m.HasRun(nil) {
		t.Error("HasRun does not find exactly the runs added")
	}
	for i := range 2 {
		c := testCounts(FuncCounting, false)
		c.Run.ID = nil
		if err := m.Add(c); err != nil {
			t.Fatalf("add of a run without ID, %d: %v", i+1, err)
		}
	}
	if len(m.Runs) != 4 || m.Stats.Hits[0] != 3*1000+24 {
		t.Errorf("%d runs, main hit %d times; want 4 runs and 3024", len(m.Runs), m.Stats.Hits[0])
	}
}

// TestSupersede checks what a database phase I writes over another keeps:
// the IDs of the old one's runs, and of those it had discarded, when the
// plan is the same; nothing for another plan.
func TestSupersede(t *testing.T) {
	run1, run2 := Hex{0x5e, 0xed, 1}, Hex{0x5e, 0xed, 2}
	m := testRerun(t)
	if d := cmp.Diff([]Hex{run1, run2}, m.Discarded); d != "" {
		t.Errorf("discarded (-want +got):\n%s", d)
	}
	if len(m.Runs) != 0 || m.Stats.Hits[0] != 0 {
		t.Errorf("the new database holds %d runs, main %d hits", len(m.Runs), m.Stats.Hits[0])
	}
	// A run of the new database, then phase I again: the runs discarded
	// before and the new one, each once.
	c := anotherRun(testCounts(FuncCounting, false))
	if err := m.Add(c); err != nil {
		t.Fatal(err)
	}
	again := NewMerged(testPlan(FuncCounting))
	again.Supersede(m)
	again.Supersede(m)
	if d := cmp.Diff([]Hex{run1, run2, c.Run.ID}, again.Discarded); d != "" {
		t.Errorf("discarded after a second phase I (-want +got):\n%s", d)
	}
	// Coverage of the same program: the same plan ID, runs passed on.
	cover := NewMerged(testPlan(FuncCoverage))
	cover.Supersede(m)
	if len(cover.Discarded) != 3 {
		t.Errorf("coverage over counting of the same plan: %d discarded, want 3", len(cover.Discarded))
	}
	// Timing (another plan ID) and another program: nothing passed on.
	for _, p := range []*Plan{testPlan(FuncTiming), otherProgram()} {
		n := NewMerged(p)
		n.Supersede(m)
		n.Supersede(nil)
		if n.Discarded != nil {
			t.Errorf("%s of another plan: discarded %v", p.Method.Words(), n.Discarded)
		}
	}
	// Runs without an ID are not remembered.
	old := NewMerged(testPlan(FuncCounting))
	noID := testCounts(FuncCounting, false)
	noID.Run.ID = nil
	if err := old.Add(noID); err != nil {
		t.Fatal(err)
	}
	n := NewMerged(testPlan(FuncCounting))
	n.Supersede(old)
	if n.Discarded != nil {
		t.Errorf("a run without ID was remembered: %v", n.Discarded)
	}
	if err := n.Validate(); err != nil {
		t.Error(err)
	}
}

// otherProgram returns the function counting plan of another build of
// the program.
func otherProgram() *Plan {
	p := testPlan(FuncCounting)
	p.Modules[0].BuildID = Hex{1}
	p.ID = PlanID(p)
	return p
}

// TestPending checks which runs a database counts as pending: of its plan
// and type, with an ID, neither merged nor discarded.
func TestPending(t *testing.T) {
	m := testRerun(t)
	held := anotherRun(testCounts(FuncCounting, false))
	if err := m.Add(held); err != nil {
		t.Fatal(err)
	}
	fresh := func(edit func(c *Counts)) *Counts {
		c := anotherRun(testCounts(FuncCounting, false))
		if edit != nil {
			edit(c)
		}
		return c
	}
	tests := []struct {
		name      string
		c         *Counts
		pending   bool
		hasMerged bool
	}{
		{"a new run", fresh(nil), true, false},
		{"a run it holds", held, false, true},
		{"a run merged into the database phase I replaced", testCounts(FuncCounting, true), false, true},
		{"a run without ID", fresh(func(c *Counts) { c.Run.ID = nil }), false, false},
		{"a run of another plan", fresh(func(c *Counts) { c.PlanID = otherProgram().ID }), false, false},
		{"a run of another type", fresh(func(c *Counts) { c.Method = FuncCoverage }), false, false},
	}
	for _, tt := range tests {
		if got := m.Pending(tt.c); got != tt.pending {
			t.Errorf("%s: pending %v, want %v", tt.name, got, tt.pending)
		}
		if got := m.HasMerged(tt.c.Run.ID); got != tt.hasMerged {
			t.Errorf("%s: has merged %v, want %v", tt.name, got, tt.hasMerged)
		}
	}
	// A discarded run can still be added on purpose (prep /IT /IO /OT, as
	// the original allowed): it is then held.
	c := testCounts(FuncCounting, true)
	if err := m.Add(c); err != nil {
		t.Errorf("add of a discarded run: %v", err)
	}
	if !m.HasRun(c.Run.ID) {
		t.Error("the discarded run added is not held")
	}
}

// TestMergeSampling checks that sampling runs add up (the kernel's
// samples too), and that a run sampled at another interval, or without
// the kernel's time where the database's runs sampled it, or without
// samples of every function and line, is refused and leaves the database
// as it was (PRF1463, PRF1304).
func TestMergeSampling(t *testing.T) {
	m := testMerged(t, FuncSampling)
	sm := m.Stats.Sampling
	if sm.Interval != 1000000 || sm.Sampler != MixedSamplers || sm.Outside != 1 || sm.Lost != 3 || sm.KernelTime != 2000000 {
		t.Errorf("merged figures %+v", sm)
	}
	if d := cmp.Diff([]uint64{7, 4, 0, 1}, sm.Samples); d != "" {
		t.Errorf("samples (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]uint64{5, 3, 1, 1}, sm.LineSamples); d != "" {
		t.Errorf("line samples (-want +got):\n%s", d)
	}
	if sm.Kernel != 3 || cmp.Diff([]uint64{2, 0, 0, 0}, sm.KernelSamples) != "" || cmp.Diff([]uint64{3, 2, 0, 0}, sm.KernelChildSamples) != "" {
		t.Errorf("kernel samples %d, %v, with children %v; want 3, [2 0 0 0], [3 2 0 0]", sm.Kernel, sm.KernelSamples, sm.KernelChildSamples)
	}
	third := testCounts(FuncSampling, false)
	third.Run.ID = NewRunID()
	if err := m.Add(third); err != nil {
		t.Fatal(err)
	}
	sm = m.Stats.Sampling
	if sm.Kernel != 6 || cmp.Diff([]uint64{4, 0, 0, 0}, sm.KernelSamples) != "" || cmp.Diff([]uint64{6, 4, 0, 0}, sm.KernelChildSamples) != "" {
		t.Errorf("kernel samples of a third run: %d, %v, with children %v", sm.Kernel, sm.KernelSamples, sm.KernelChildSamples)
	}
	for _, tt := range []struct {
		name string
		edit func(c *Counts)
		want error
	}{
		{"another interval", func(c *Counts) { c.Stats.Sampling.Interval = 250000 }, ErrInterval},
		{"no interval", func(c *Counts) { c.Stats.Sampling.Interval = 0 }, ErrConflict},
		{"a line short", func(c *Counts) { c.Stats.Sampling.LineSamples = c.Stats.Sampling.LineSamples[:3] }, ErrNotSamePlan},
		{"too many samples", func(c *Counts) { c.Stats.Sampling.Samples[0] = math.MaxUint64 }, ErrOverflow},
		{"the kernel not sampled", func(c *Counts) {
			c.Stats.Sampling.KernelSamples, c.Stats.Sampling.KernelChildSamples = nil, nil
		}, ErrConflict},
		{"too many kernel samples", func(c *Counts) {
			sm := &c.Stats.Sampling
			sm.Kernel, sm.KernelSamples, sm.KernelChildSamples = math.MaxUint64, []uint64{0, 0, 0, 0}, []uint64{math.MaxUint64, 0, 0, 0}
		}, ErrOverflow},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db := NewMerged(testPlan(FuncSampling))
			if err := db.Add(testCounts(FuncSampling, false)); err != nil {
				t.Fatal(err)
			}
			before := encode(t, db)
			c := testCounts(FuncSampling, true)
			tt.edit(c)
			if err := db.Add(c); !errors.Is(err, tt.want) {
				t.Errorf("error %v, want %v", err, tt.want)
			}
			if !bytes.Equal(before, encode(t, db)) {
				t.Error("the refused run changed the database")
			}
		})
	}
}

// TestMergeBranches adds two runs' branch ways and unprobed counts
// (testCounts of line coverage: ways 1 0 1 1 and 0 1 0 0; the second
// run did not count branch 1), and refuses counts whose ways are not
// the database's, leaving it unchanged.
func TestMergeBranches(t *testing.T) {
	m := testMerged(t, LineCoverage)
	if got, want := fmt.Sprint(m.Stats.Branches, m.Stats.Unprobed), "[1 1 1 1] [0 1]"; got != want {
		t.Errorf("ways, unprobed %s, want %s", got, want)
	}
	c := testCounts(LineCoverage, false)
	c.Run.ID = Hex{0x5e, 0xed, 3}
	c.Stats.Branches = c.Stats.Branches[:2]
	if err := m.Add(c); !errors.Is(err, ErrNotSamePlan) {
		t.Errorf("ways of one branch: %v, want %v", err, ErrNotSamePlan)
	}
	if len(m.Runs) != 2 || fmt.Sprint(m.Stats.Branches) != "[1 1 1 1]" {
		t.Errorf("the refused run changed the database: %d runs, ways %v", len(m.Runs), m.Stats.Branches)
	}
}
