package profile

import (
	"fmt"
	"runtime"
	"slices"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/profile/procmaps"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// inlinedPlan is samplingPlan with g inlined into f twice, the first
// copy with f_half inlined into it, and h (of the library) into itself.
func inlinedPlan() *datafile.Plan {
	p := samplingPlan()
	p.Inlined = []datafile.Inlined{
		{Func: 1, Parent: -1, Ranges: []datafile.Range{{Low: 0x1010, High: 0x1030}}},
		{Func: 2, Parent: 0, Ranges: []datafile.Range{{Low: 0x1018, High: 0x1020}}},
		{Func: 3, Parent: -1, Ranges: []datafile.Range{{Low: 0x508, High: 0x50c}}},
		{Func: 1, Parent: -1, Ranges: []datafile.Range{{Low: 0x1040, High: 0x1048}, {Low: 0x1050, High: 0x1058}}},
	}
	return p
}

// TestInlinedAt finds the functions inlined at program counters of a
// program at its link addresses and a library loaded with a bias: the
// innermost first, through the copies that hold one another; none in
// the caller's own code around and between them; none of the library's
// once it is forgotten.
func TestInlinedAt(t *testing.T) {
	plan := inlinedPlan()
	const bias = 0x7f0000000000
	p := (&placeTable{}).with(plan, 0, 0, 0x1000, 0x2000, nil).with(plan, 1, bias, bias, bias+0x1000, nil)
	for _, c := range []struct {
		pc   uint64
		want []int
	}{
		{0x100f, nil}, {0x1010, []int{1}}, {0x1017, []int{1}}, {0x1018, []int{2, 1}}, {0x101f, []int{2, 1}},
		{0x1020, []int{1}}, {0x102f, []int{1}}, {0x1030, nil},
		{0x1044, []int{1}}, {0x104c, nil}, {0x1057, []int{1}}, {0x1058, nil},
		{bias + 0x507, nil}, {bias + 0x508, []int{3}}, {bias + 0x50c, nil}, {0x508, nil},
	} {
		if got := p.inlinedAt(nil, c.pc); !slices.Equal(got, c.want) {
			t.Errorf("at %#x: inlined %v, want %v", c.pc, got, c.want)
		}
	}
	if got := p.without(bias, bias+0x1000, nil).inlinedAt(nil, bias+0x508); got != nil {
		t.Errorf("the library forgotten, at its copy of h: inlined %v", got)
	}
}

// TestInlineSpansUnnested: calls whose ranges do not nest (a plan PREP
// would not write) give spans apart, sorted, without a panic.
func TestInlineSpansUnnested(t *testing.T) {
	plan := samplingPlan()
	plan.Inlined = []datafile.Inlined{
		{Func: 1, Parent: -1, Ranges: []datafile.Range{{Low: 0x1010, High: 0x1030}}},
		{Func: 2, Parent: 0, Ranges: []datafile.Range{{Low: 0x1020, High: 0x1040}}},
		{Func: 2, Parent: -1, Ranges: []datafile.Range{{Low: 0x1010, High: 0x1030}}},
	}
	spans := inlineSpans(plan, 0, 0)
	for i, s := range spans {
		if s.lo >= s.hi || i > 0 && s.lo < spans[i-1].hi {
			t.Errorf("spans %v: %d empty or overlapping", spans, i)
		}
	}
}

// TestStackTallyInlined: a sample in a copy of f_half inlined into a copy
// of g inlined into f is f_half's own, and has the chain f, g, f_half,
// its own time in that chain; f_half and g have it in their time with
// children; a sample in f's own code is f's, with f's chain. A sample in
// the trampoline of f's entry, at an instruction of g's copy that it
// carries, is g's, in its own time and on the stack alike, and on the
// line of the instruction it carries; one in a copy
// outside every function's code (a plan PREP would not write) is outside.
func TestStackTallyInlined(t *testing.T) {
	plan := inlinedPlan()
	plan.Inlined = append(plan.Inlined, datafile.Inlined{Func: 1, Parent: -1, Ranges: []datafile.Range{{Low: 0x1090, High: 0x10a0}}})
	tr := &tramp{addr: 0x9000, patch: instr.Patch{Site: 0x1000}}
	tr.code.Code = make([]byte, 0x30)
	tr.code.PCs = []instr.PCMap{{Tramp: 0x9020, Orig: 0x1000}, {Tramp: 0x9024, Orig: 0x1010}}
	places := (&placeTable{}).with(plan, 0, 0, 0x1000, 0x2000, []*tramp{tr})
	frames := newFrameModules(func() ([]procmaps.Mapping, error) { return nil, nil }, runtime.GOARCH)
	tl, own := newStackTally(frames), newTally(plan)
	for _, s := range []struct {
		pc uint64
		n  uint64
	}{{0x101a, 3}, {0x1034, 2}, {0x9024, 4}, {0x1094, 1}} {
		fn, _ := own.place(places, s.pc, s.n, false)
		tl.take(places, &ptrace.Sample{PC: s.pc}, fn, s.n)
	}
	if want := []uint64{2, 4, 3, 0}; !slices.Equal(own.samples, want) || own.outside != 1 {
		t.Errorf("own samples %v, %d outside; want %v, 1 outside", own.samples, own.outside, want)
	}
	if want := []uint64{7, 2, 0, 0}; !slices.Equal(own.lineSamples, want) { // (lines by address, whoever's code; the copy's its original's)
		t.Errorf("line samples %v, want %v", own.lineSamples, want)
	}
	var st datafile.Stats
	tl.figures(&st, plan, 1)
	if want := []int64{9, 7, 3, 0}; !slices.Equal(st.ChildTime, want) {
		t.Errorf("time with children %v, want %v", st.ChildTime, want)
	}
	var got []string
	for _, s := range st.Stacks {
		got = append(got, fmt.Sprintf("%s:%d/%d", plan.Funcs[s.Func].Name, s.Time, s.ChildTime))
	}
	slices.Sort(got)
	if want := []string{"f:2/9", "f_half:3/3", "g:4/7"}; !slices.Equal(got, want) {
		t.Errorf("stacks (own/with children) %v, want %v", got, want)
	}
}
