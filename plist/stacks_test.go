package plist

import (
	"fmt"
	"slices"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
)

// recursion is a timing profile with /AT of main calling rec, which
// recurses twice below itself, the innermost call calling leaf; times
// in nanoseconds: main's own 5, each rec's own 1, leaf's 10. The stacks
// are as PROFILE records them with /STACK unlimited: each linked to its
// caller's by its key.
func recursion() *datafile.Merged {
	m := &datafile.Merged{
		Plan: datafile.Plan{Method: datafile.FuncTiming, StartIndex: -1, Attribution: true,
			Modules: []datafile.Module{{Name: "prog"}},
			Funcs:   []datafile.Func{{Name: "main"}, {Name: "rec"}, {Name: "leaf"}}},
		Runs:      []datafile.Run{{Time: 1795600000, CommandLine: "prog"}},
		Overheads: []int64{0},
		Stats: datafile.Stats{Hits: []uint64{1, 3, 1}, FuncTime: []int64{5, 3, 10}, ChildTime: []int64{18, 13, 10},
			TotalTime: 18, CallDepth: 5,
			Stacks: []datafile.Stack{
				{Func: 0, Callers: []int{-1}, Key: 10, Hits: 1, Time: 5, ChildTime: 18},
				{Func: 1, Callers: []int{-1, 0}, Key: 11, CallerKey: 10, Hits: 1, Time: 1, ChildTime: 13},
				{Func: 1, Callers: []int{0, 1}, Key: 12, CallerKey: 11, Hits: 1, Time: 1, ChildTime: 12},
				{Func: 1, Callers: []int{1, 1}, Key: 13, CallerKey: 12, Hits: 1, Time: 1, ChildTime: 11},
				{Func: 2, Callers: []int{1, 1}, Key: 14, CallerKey: 13, Hits: 1, Time: 10, ChildTime: 10},
			}},
	}
	m.Plan.ID = datafile.PlanID(&m.Plan)
	return m
}

// chains renders callStacks as "f;g;h hits time whole".
func chains(r *report) []string {
	var out []string
	for _, c := range r.callStacks() {
		s := ""
		for k, f := range c.funcs {
			if k > 0 {
				s += ";"
			}
			s += r.names[f]
		}
		out = append(out, fmt.Sprintf("%s %d %d %v", s, c.hits, c.time, c.whole))
	}
	return out
}

// TestCallStacks: the stacks as whole chains of calls, from the stack
// base, by the keys of their caller stacks; with /STACK n, n callers;
// without keys (a profile of format 5), the two callers shown, chains
// that come out the same added up; a damaged link that loops stops.
func TestCallStacks(t *testing.T) {
	m := recursion()
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	whole := []string{"main 1 5 true", "main;rec 1 1 true", "main;rec;rec 1 1 true", "main;rec;rec;rec 1 1 true", "main;rec;rec;rec;leaf 1 10 true"}
	if got := chains(newReport(m, DefaultOptions())); !slices.Equal(got, whole) {
		t.Errorf("chains %q, want %q", got, whole)
	}
	m.Plan.StackDepth = 2
	cut := []string{"main 1 5 true", "main;rec 1 1 true", "main;rec;rec 1 1 true", "rec;rec;rec 1 1 false", "rec;rec;leaf 1 10 false"}
	if got := chains(newReport(m, DefaultOptions())); !slices.Equal(got, cut) {
		t.Errorf("/STACK 2: chains %q, want %q", got, cut)
	}
	m.Plan.StackDepth = 0
	old := recursion()
	for i := range old.Stats.Stacks {
		old.Stats.Stacks[i].CallerKey = 0
	}
	// Two stacks of rec that show the same callers (rec, rec): one chain.
	old.Stats.Stacks = append(old.Stats.Stacks, datafile.Stack{Func: 1, Callers: []int{1, 1}, Key: 15, Hits: 4, Time: 2, ChildTime: 2})
	shown := []string{"main 1 5 true", "main;rec 1 1 true", "main;rec;rec 1 1 false", "rec;rec;rec 5 3 false", "rec;rec;leaf 1 10 false"}
	if got := chains(newReport(old, DefaultOptions())); !slices.Equal(got, shown) {
		t.Errorf("without caller keys: chains %q, want %q", got, shown)
	}
	loop := recursion()
	loop.Stats.Stacks[2].CallerKey = 12 // its own key
	looped := []string{"main 1 5 true", "main;rec 1 1 true", "rec;rec 1 1 false", "rec;rec;rec 1 1 false", "rec;rec;rec;leaf 1 10 false"}
	if got := chains(newReport(loop, DefaultOptions())); !slices.Equal(got, looped) {
		t.Errorf("a link that loops: chains %q, want %q (each stack passed once)", got, looped)
	}
}

// TestCallgrindRecursion: a call to a function already on its chain
// carries its calls and no time, so that the inclusive costs of the calls
// to a function add up to its time with children; where /STACK hides a
// recursion (a and b calling each other, told apart by one caller), the
// calls to a function that add up to more than that are scaled down to
// it.
func TestCallgrindRecursion(t *testing.T) {
	r := newReport(recursion(), DefaultOptions())
	calls := callgrindExport{r}.callgrindCalls()
	want := map[int][]callgrindCall{
		0: {{callee: 1, hits: 1, inclusive: 13}},
		1: {{callee: 1, hits: 2, inclusive: 0}, {callee: 2, hits: 1, inclusive: 10}},
	}
	if fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Errorf("calls %v, want %v", calls, want)
	}

	// main calls a, which calls b, which calls a, which calls b: a's time
	// with children is 20, b's 18; /STACK 1 keeps the inner a's stack
	// apart from the outer one's by b alone.
	m := &datafile.Merged{
		Plan: datafile.Plan{Method: datafile.FuncTiming, StartIndex: -1, Attribution: true, StackDepth: 1,
			Modules: []datafile.Module{{Name: "prog"}},
			Funcs:   []datafile.Func{{Name: "main"}, {Name: "a"}, {Name: "b"}}},
		Stats: datafile.Stats{Hits: []uint64{1, 2, 2}, FuncTime: []int64{1, 7, 13}, ChildTime: []int64{21, 20, 18},
			TotalTime: 21, CallDepth: 5,
			Stacks: []datafile.Stack{
				{Func: 0, Callers: []int{-1}, Key: 10, Hits: 1, Time: 1, ChildTime: 21},
				{Func: 1, Callers: []int{0}, Key: 11, CallerKey: 10, Hits: 1, Time: 2, ChildTime: 20},
				{Func: 2, Callers: []int{1}, Key: 12, CallerKey: 11, Hits: 2, Time: 13, ChildTime: 28},
				{Func: 1, Callers: []int{2}, Key: 13, CallerKey: 12, Hits: 1, Time: 5, ChildTime: 15},
			}},
	}
	r = newReport(m, DefaultOptions())
	into := map[int]int64{}
	for _, list := range (callgrindExport{r}).callgrindCalls() {
		for _, c := range list {
			into[c.callee] += c.inclusive
		}
	}
	for fn, most := range map[int]int64{1: 20, 2: 18} {
		if into[fn] > most || into[fn] < most-2 {
			t.Errorf("%s: calls to it of %d ns with children, want %d (less rounding)", r.names[fn], into[fn], most)
		}
	}
}
