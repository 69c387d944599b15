// The places of function sampling's program counters (sampling.go): the
// function, and the line, whose code holds each.

package profile

import (
	"cmp"
	"slices"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
)

// placeTable says which function, and which line, holds each program
// counter of the modules planted: the functions' code sorted by address,
// and the start of every line's code; and whether it is in PROFILE's own
// code (own: the executable areas PROFILE mapped, as [start, size],
// sorted; owncode.go).
type placeTable struct {
	funcs []codeSpan
	lines []lineStart
	own   [][2]uint64
	// inlined is the code of the inlined calls of the modules planted
	// (sampling_inlined.go), calls the plan's list of them.
	inlined []inlineSpan
	calls   []datafile.Inlined
}

// codeSpan is the code [lo, hi) of function fn (a function's own, or the
// instructions of its entry that a trampoline carries, after the
// trampoline's counting, which is PROFILE's: tally.overhead, with the
// trampoline's map of them to the function's own, pcs).
type codeSpan struct {
	lo, hi uint64
	fn     int
	tramp  bool
	pcs    []instr.PCMap
}

// lineStart is the start of a range of line's code (an index in
// Plan.Lines).
type lineStart struct {
	addr uint64
	line int
}

// span returns the index of the code span holding pc.
func (p *placeTable) span(pc uint64) (int, bool) {
	i, _ := slices.BinarySearchFunc(p.funcs, pc, func(c codeSpan, pc uint64) int {
		if pc < c.lo {
			return 1
		}
		if pc >= c.hi {
			return -1
		}
		return 0
	})
	return i, i < len(p.funcs) && pc >= p.funcs[i].lo && pc < p.funcs[i].hi
}

// find returns the function holding pc and its line, or -1; in a
// trampoline, the line of the function's instruction it carries.
func (p *placeTable) find(pc uint64) (fn, line int) {
	i, ok := p.span(pc)
	if !ok {
		return -1, -1
	}
	c := p.funcs[i]
	if c.tramp {
		// A copy's line is its original's (a leaf runs whole in its
		// trampoline: instr.Layout.Leaves).
		if o := p.origin(pc); o != pc {
			if _, line := p.find(o); line >= 0 {
				return c.fn, line
			}
		}
		return c.fn, -1
	}
	j, found := slices.BinarySearchFunc(p.lines, pc, func(l lineStart, pc uint64) int { return cmp.Compare(l.addr, pc) })
	if !found {
		j--
	}
	if j < 0 || p.lines[j].addr < c.lo {
		return c.fn, -1
	}
	return c.fn, p.lines[j].line
}

// origin returns the address in the program's own code of the
// instruction that program counter pc carries out: in a trampoline, the
// function's instruction it carries, whose call frame information is
// the function's (instr.PCMap); elsewhere pc itself.
func (p *placeTable) origin(pc uint64) uint64 {
	i, ok := p.span(pc)
	if !ok || !p.funcs[i].tramp {
		return pc
	}
	pcs := p.funcs[i].pcs
	j, found := slices.BinarySearchFunc(pcs, pc, func(m instr.PCMap, pc uint64) int { return cmp.Compare(m.Tramp, pc) })
	if !found {
		j--
	}
	if j < 0 {
		return pc
	}
	return pcs[j].Orig
}

// with returns a table with the functions and lines of module mi, loaded
// with bias in [lo, hi), added, and the trampolines of their entries.
func (p *placeTable) with(plan *datafile.Plan, mi int, bias, lo, hi uint64, tramps []*tramp) *placeTable {
	q := &placeTable{funcs: slices.Clone(p.funcs), lines: slices.Clone(p.lines), own: p.own, calls: plan.Inlined}
	q.inlined = append(slices.Clone(p.inlined), inlineSpans(plan, mi, bias)...)
	byEntry := map[uint64]int{}
	for i := range plan.Funcs {
		f := &plan.Funcs[i]
		if f.Module != mi {
			continue
		}
		byEntry[f.Entry+bias] = i
		if f.High > f.Low {
			q.funcs = append(q.funcs, codeSpan{lo: f.Low + bias, hi: f.High + bias, fn: i})
		}
	}
	for _, tr := range tramps {
		if fn, ok := byEntry[tr.patch.Site]; ok && tr.patch.Site >= lo && tr.patch.Site < hi && len(tr.code.PCs) > 0 {
			// (The function's instructions the trampoline carries, after
			// its counting: what comes before is PROFILE's own.)
			q.funcs = append(q.funcs, codeSpan{lo: tr.code.PCs[0].Tramp, hi: tr.addr + uint64(len(tr.code.Code)), fn: fn, tramp: true, pcs: tr.code.PCs})
		}
	}
	for i := range plan.Lines {
		if l := &plan.Lines[i]; l.Module == mi {
			for _, a := range l.Addrs {
				q.lines = append(q.lines, lineStart{a + bias, i})
			}
		}
	}
	q.sort()
	return q
}

// without returns a table without the code in [lo, hi), a module's
// instance unmapped (and its trampolines, in the areas next to it).
func (p *placeTable) without(lo, hi uint64, areas [][2]uint64) *placeTable {
	gone := func(a uint64) bool {
		if a >= lo && a < hi {
			return true
		}
		for _, ar := range areas {
			if a >= ar[0] && a < ar[0]+ar[1] {
				return true
			}
		}
		return false
	}
	q := &placeTable{
		funcs:   slices.DeleteFunc(slices.Clone(p.funcs), func(c codeSpan) bool { return gone(c.lo) }),
		lines:   slices.DeleteFunc(slices.Clone(p.lines), func(l lineStart) bool { return gone(l.addr) }),
		own:     slices.DeleteFunc(slices.Clone(p.own), func(a [2]uint64) bool { return gone(a[0]) }),
		inlined: slices.DeleteFunc(slices.Clone(p.inlined), func(s inlineSpan) bool { return gone(s.lo) }),
		calls:   p.calls,
	}
	return q
}

// sort orders the table; of overlapping functions (aliases, or a
// function's code PREP saw twice) the first by address keeps the span.
func (p *placeTable) sort() {
	slices.SortFunc(p.funcs, func(a, b codeSpan) int { return cmp.Or(cmp.Compare(a.lo, b.lo), cmp.Compare(b.hi, a.hi)) })
	out := p.funcs[:0]
	for _, c := range p.funcs {
		if n := len(out); n > 0 && c.lo < out[n-1].hi {
			if c.hi <= out[n-1].hi {
				continue
			}
			c.lo = out[n-1].hi
		}
		out = append(out, c)
	}
	p.funcs = out
	slices.SortStableFunc(p.lines, func(a, b lineStart) int { return cmp.Compare(a.addr, b.addr) })
	slices.SortFunc(p.inlined, func(a, b inlineSpan) int { return cmp.Compare(a.lo, b.lo) })
}
