package plist

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/sourceprofiler/sprof/datafile"
)

// The listing of a function sampling profile is the timing listing, its
// times estimated from the samples (samples x interval), with two
// additions of the port's: the sampling figures in the program's
// statistics, and after each module's table the source listings of its
// sampled lines.

// samplingLines writes the figures of a sampling profile after its times:
// the interval and the sampler, the samples taken, those in the kernel
// where the runs sampled it, and, when there are any, the samples in
// PROFILE's own code (its counting, which the times leave out), the
// samples the kernel lost and the kernel time that no sample saw (of
// runs that sampled user space alone). A database that no run was merged into has no
// interval, and no line for it.
func (r funcListing) samplingLines(p *printer) {
	s := &r.m.Stats.Sampling
	if s.Interval > 0 {
		line := fmt.Sprintf("    Sampled every %s millisecond of CPU time", fixed(millis(s.Interval), 3))
		if s.Sampler != datafile.NoSampler {
			line += " (" + s.Sampler.String() + ")"
		}
		p.text(line)
	}
	total := r.insideSamples() + s.Outside
	p.text(fmt.Sprintf("    Total samples: %d", total))
	if line := r.kernelLine(total + s.Overhead); line != "" {
		p.text(line)
	}
	if s.Overhead > 0 {
		// (PROFILE's counting: no function's time, nor the total's.)
		p.text(fmt.Sprintf("    Samples in the profiler's code (not in the times): %d, %s%% of all",
			s.Overhead, fixed(100*float64(s.Overhead)/float64(total+s.Overhead), 1)))
	}
	if s.Lost > 0 {
		p.text(fmt.Sprintf("    Samples lost: %d", s.Lost))
	}
	if s.Stacks > 0 {
		// (Their unwinding stopped early: the outermost function found
		// stands at the stack base.)
		p.text(fmt.Sprintf("    Call stacks sampled: %d, not unwound to their end: %d (%s%%)",
			s.Stacks, s.StacksCut, fixed(100*float64(s.StacksCut)/float64(s.Stacks), 1)))
	}
	if s.KernelTime > 0 {
		p.text(fmt.Sprintf("    Kernel time (not sampled): %s millisecond", fixed(millis(s.KernelTime), 3)))
	}
}

// uncountedLine says, in the program's statistics, that a sampling run
// counted no call (prep --no-call-counts): the hit counts are zeros,
// and nothing says which functions ran but the samples.
const uncountedLine = "    Calls not counted (prep --no-call-counts): the hit counts are 0"

// samples returns function i's samples.
func (r *report) samples(i int) uint64 { return at(r.m.Stats.Sampling.Samples, i) }

// lineSamples returns the samples of Plan.Lines[i].
func (r *report) lineSamples(i int) uint64 { return at(r.m.Stats.Sampling.LineSamples, i) }

// insideSamples is the number of samples in profiled functions: the
// denominator of the source listings' percentages, as the time inside
// functions is the function tables'.
func (r *report) insideSamples() uint64 {
	var n uint64
	for i := range r.plan.Funcs {
		n += r.samples(i)
	}
	return n
}

// sampledSources lists the source files of module mod that have sampled
// lines, in the module's file order, with the samples of each line and
// their share of the samples inside functions. Lines without samples are
// shown as the lines that are not code.
func (r funcListing) sampledSources(p *printer, mod int) {
	byFile := make(map[int]map[int]uint64)
	for _, i := range r.lines[mod] {
		n := r.lineSamples(i)
		if n == 0 {
			continue
		}
		l := &r.plan.Lines[i]
		if byFile[l.File] == nil {
			byFile[l.File] = make(map[int]uint64)
		}
		byFile[l.File][l.Line] += n
	}
	inside := r.insideSamples()
	for file := range r.plan.Modules[mod].Files {
		if counts := byFile[file]; counts != nil {
			lineListing(r).sourceListing(p, mod, file, counts, inside)
		}
	}
}

// placed is a number of samples of function fn put at one address of the
// program: the start of line (an index of Plan.Lines), or with line -1
// the function's entry.
type placed struct {
	fn, line int
	addr     uint64
	n        uint64
}

// placeSamples gives each function's samples a place in its code, for the
// formats that locate them (gmon.out's histogram, pprof's lines): each
// line's samples go to the first of its addresses whose function still
// has samples to place, and what a function has left after its lines goes
// to its entry. A function's placed samples are thus exactly its samples,
// whatever the lines say (a line whose code is in several functions has
// one count for them all).
func (r *report) placeSamples() []placed {
	left := make([]uint64, len(r.plan.Funcs))
	for i := range left {
		left[i] = r.samples(i)
	}
	var out []placed
	for li := range r.plan.Lines {
		l := &r.plan.Lines[li]
		n := r.lineSamples(li)
		for _, a := range l.Addrs {
			if n == 0 {
				break
			}
			fn := r.funcAt(l.Module, a)
			if fn < 0 || left[fn] == 0 {
				continue
			}
			k := min(n, left[fn])
			out = append(out, placed{fn: fn, line: li, addr: a, n: k})
			left[fn] -= k
			n -= k
		}
	}
	for i, n := range left {
		if n > 0 {
			out = append(out, placed{fn: i, line: -1, addr: r.plan.Funcs[i].Entry, n: n})
		}
	}
	return out
}

// funcRanges is, per module, its functions of known code range by their
// lowest address (byLow), and whether two of them overlap (folded code).
type funcRanges struct {
	byLow    [][]int
	overlaps []bool
}

// newFuncRanges returns the ranges of the functions of plan, funcs[mi]
// being module mi's.
func newFuncRanges(plan *datafile.Plan, funcs [][]int) *funcRanges {
	x := &funcRanges{byLow: make([][]int, len(plan.Modules)), overlaps: make([]bool, len(plan.Modules))}
	for mi, fs := range funcs {
		if mi >= len(x.byLow) {
			break
		}
		for _, i := range fs {
			if f := &plan.Funcs[i]; f.Low < f.High {
				x.byLow[mi] = append(x.byLow[mi], i)
			}
		}
		low := x.byLow[mi]
		slices.SortStableFunc(low, func(a, b int) int { return cmp.Compare(plan.Funcs[a].Low, plan.Funcs[b].Low) })
		for k := 1; k < len(low); k++ {
			if plan.Funcs[low[k]].Low < plan.Funcs[low[k-1]].High {
				x.overlaps[mi] = true
			}
		}
	}
	return x
}

// funcAt returns the function of module mod whose code [Low, High) holds
// addr, or -1.
func (r *report) funcAt(mod int, addr uint64) int {
	if r.ranges == nil {
		r.ranges = newFuncRanges(r.plan, r.funcs)
	}
	funcs := at(r.ranges.byLow, mod)
	// The last function starting at or below addr.
	k, found := slices.BinarySearchFunc(funcs, addr, func(i int, a uint64) int {
		return cmp.Compare(r.plan.Funcs[i].Low, a)
	})
	if !found {
		k--
	}
	if k < 0 {
		return -1
	}
	if f := &r.plan.Funcs[funcs[k]]; f.Low <= addr && addr < f.High {
		return funcs[k]
	}
	return -1
}
