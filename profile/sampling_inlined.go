package profile

// The inlined frames of sampled stacks (sampling_stacks.go): a program
// counter in a copy of a profiled function that the compiler placed in
// another's code (datafile.Plan.Inlined) has that function on its stack,
// inside the function whose code holds the copy, and any function
// inlined into the copy inside it. The sample is the inlined function's
// own time, as the line table puts its code on that function's lines
// (pprof's view, and VTune's; perf's self view gives it to the function
// whose symbol holds the code).

import (
	"cmp"
	"slices"

	"github.com/sourceprofiler/sprof/datafile"
)

// inlineSpan is code [lo, hi) whose innermost inlined call is call (an
// index in Plan.Inlined).
type inlineSpan struct {
	lo, hi uint64
	call   int
}

// inlineSpans returns the code of the inlined calls of module mi, loaded
// with bias, as spans of their innermost calls, sorted and apart: the
// calls' ranges nest, a call's inside its parent's.
func inlineSpans(plan *datafile.Plan, mi int, bias uint64) []inlineSpan {
	type nested struct {
		lo, hi uint64
		call   int
		depth  int
	}
	var rs []nested
	depth := make([]int, len(plan.Inlined))
	for i := range plan.Inlined {
		c := &plan.Inlined[i]
		if c.Parent >= 0 { // (before it: Plan.Validate)
			depth[i] = depth[c.Parent] + 1
		}
		if plan.Funcs[c.Func].Module != mi {
			continue
		}
		for _, r := range c.Ranges {
			rs = append(rs, nested{r.Low + bias, r.High + bias, i, depth[i]})
		}
	}
	slices.SortFunc(rs, func(a, b nested) int {
		return cmp.Or(cmp.Compare(a.lo, b.lo), cmp.Compare(b.hi, a.hi), cmp.Compare(a.depth, b.depth))
	})
	// A sweep over the starts, with the ranges open at each on a stack:
	// the code up to a start, or to the end of the innermost range open,
	// is the innermost's.
	var out []inlineSpan
	var open []nested
	at := uint64(0)
	upTo := func(end uint64) {
		if n := len(open); n > 0 && end > at {
			out = append(out, inlineSpan{at, end, open[n-1].call})
		}
		at = max(at, end)
	}
	for _, r := range rs {
		for n := len(open); n > 0 && open[n-1].hi <= r.lo; n = len(open) {
			upTo(open[n-1].hi)
			open = open[:n-1]
		}
		upTo(r.lo)
		open = append(open, r)
	}
	for n := len(open); n > 0; n = len(open) {
		upTo(open[n-1].hi)
		open = open[:n-1]
	}
	return out
}

// callAt returns the innermost inlined call whose code holds pc (an
// index in Plan.Inlined), or -1.
func (p *placeTable) callAt(pc uint64) int {
	i, found := slices.BinarySearchFunc(p.inlined, pc, func(s inlineSpan, pc uint64) int { return cmp.Compare(s.lo, pc) })
	if !found {
		i--
	}
	if i < 0 || pc >= p.inlined[i].hi {
		return -1
	}
	return p.inlined[i].call
}

// inlinedAt appends to fns the functions inlined where pc is, the
// innermost first: none outside every inlined call.
func (p *placeTable) inlinedAt(fns []int, pc uint64) []int {
	for c, n := p.callAt(pc), 0; c >= 0 && n < maxFrames; c, n = p.calls[c].Parent, n+1 {
		fns = append(fns, p.calls[c].Func)
	}
	return fns
}

// frames appends to fns the profiled functions whose code is at pc, the
// innermost first: those inlined there, then the one whose code holds
// it; none where no profiled function's code does.
func (p *placeTable) frames(fns []int, pc uint64) []int {
	f, _ := p.find(pc)
	if f < 0 {
		return fns
	}
	return append(p.inlinedAt(fns, pc), f)
}

// innermost returns the function whose code pc is in, fn's code holding
// it: the innermost inlined there, or fn.
func (p *placeTable) innermost(fn int, pc uint64) int {
	if c := p.callAt(pc); c >= 0 {
		return p.calls[c].Func
	}
	return fn
}
