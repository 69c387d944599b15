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

// funcRanges finds the function of a module whose code [Low, High) holds
// an address: funcs[mi] are module mi's functions, of plan; byLow has
// those of known code range by their lowest address, and reach[mi][k]
// the highest end of byLow[mi][:k+1], built at the first use.
type funcRanges struct {
	plan  *datafile.Plan
	funcs [][]int
	byLow [][]int
	reach [][]uint64
}

// build makes byLow and reach, once.
func (x *funcRanges) build() {
	if x.byLow != nil {
		return
	}
	x.byLow, x.reach = make([][]int, len(x.plan.Modules)), make([][]uint64, len(x.plan.Modules))
	for mi, fs := range x.funcs {
		if mi >= len(x.byLow) {
			break
		}
		var low []int
		for _, i := range fs {
			if f := &x.plan.Funcs[i]; f.Low < f.High {
				low = append(low, i)
			}
		}
		slices.SortStableFunc(low, func(a, b int) int { return cmp.Compare(x.plan.Funcs[a].Low, x.plan.Funcs[b].Low) })
		reach := make([]uint64, len(low))
		for k, i := range low {
			reach[k] = x.plan.Funcs[i].High
			if k > 0 {
				reach[k] = max(reach[k], reach[k-1])
			}
		}
		x.byLow[mi], x.reach[mi] = low, reach
	}
}

// starting returns module mod's functions by lowest address and how many
// of them start at or below addr.
func (x *funcRanges) starting(mod int, addr uint64) ([]int, int) {
	x.build()
	funcs := at(x.byLow, mod)
	k, found := slices.BinarySearchFunc(funcs, addr, func(i int, a uint64) int { return cmp.Compare(x.plan.Funcs[i].Low, a) })
	for found && k < len(funcs) && x.plan.Funcs[funcs[k]].Low == addr {
		k++ // (all those that start at addr)
	}
	return funcs, k
}

// first returns the function of module mod whose code holds addr, the
// first in the plan's order where several do (folded code, whose ranges
// are the same), or -1: the functions that start at or below addr, from
// the last back while one of them may still reach past it.
func (x *funcRanges) first(mod int, addr uint64) int {
	funcs, k := x.starting(mod, addr)
	reach := at(x.reach, mod)
	best := -1
	for j := k - 1; j >= 0 && reach[j] > addr; j-- {
		if i := funcs[j]; addr < x.plan.Funcs[i].High && (best < 0 || i < best) {
			best = i
		}
	}
	return best
}

// funcAt returns the function of module mod whose code [Low, High) holds
// addr, or -1.
func (r *report) funcAt(mod int, addr uint64) int {
	// The last function starting at or below addr (of those starting at
	// addr, the first).
	funcs, k := r.ranges.starting(mod, addr)
	if k--; k < 0 {
		return -1
	}
	for k > 0 && r.plan.Funcs[funcs[k]].Low == addr && r.plan.Funcs[funcs[k-1]].Low == addr {
		k--
	}
	if f := &r.plan.Funcs[funcs[k]]; addr < f.High {
		return funcs[k]
	}
	return -1
}
