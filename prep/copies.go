package prep

import (
	"cmp"
	"maps"
	"slices"

	"github.com/sourceprofiler/sprof/dwarf"
)

// The copies of a line in a function (sites.go): the function's own code
// and each call inlined into it, from the DWARF's inlined calls.

// inlineIndex finds the inlined call that holds an address.
type inlineIndex struct {
	calls []dwarf.Inlined
	depth []int    // of each call: 0 for one in a function's own code
	segs  []inlSeg // every range of every call, by start
}

// inlSeg is a range of an inlined call.
type inlSeg struct {
	low, high uint64
	call      int
}

// newInlineIndex indexes calls, a module's inlined calls (each after its
// parent).
func newInlineIndex(calls []dwarf.Inlined) *inlineIndex {
	x := &inlineIndex{calls: calls, depth: make([]int, len(calls))}
	for i, c := range calls {
		if p := c.Parent; p >= 0 && p < i {
			x.depth[i] = x.depth[p] + 1
		}
		for _, r := range c.Ranges {
			x.segs = append(x.segs, inlSeg{r.Low, r.High, i})
		}
	}
	slices.SortFunc(x.segs, func(a, b inlSeg) int { return cmp.Compare(a.low, b.low) })
	return x
}

// copies returns the copy of each of rows (sorted by address), the rows
// of a function whose code is ranges: the innermost inlined call whose
// code holds the row, or -1 for the function's own code. A row in a gap
// of a call's code (between two of its ranges: an instruction of the
// caller's among the callee's) whose line the call's code has too is the
// call's. A location view (view[i]) of a line that has no instruction in
// its copy marks the end of a statement of the copy of the line's
// instructions before it (gcc's views where an inlined call's code
// starts or ends: the statements that end there, the caller's or the
// callee's), and is that copy's. A row of the line that makes an
// inlined call (the caller's line, at the start of the callee's code and
// among it) belongs to the code around the call.
func (x *inlineIndex) copies(rows []dwarf.LineRow, view []bool, ranges []dwarf.Range) []int {
	out := make([]int, len(rows))
	for i := range out {
		out[i] = -1
	}
	if x == nil || len(x.segs) == 0 {
		return out
	}
	at := func(a uint64) int {
		i, _ := slices.BinarySearchFunc(rows, a, func(r dwarf.LineRow, a uint64) int { return cmp.Compare(r.Addr, a) })
		return i
	}
	hulls := map[int]dwarf.Range{} // of the calls in the function
	for _, r := range ranges {
		lo, _ := slices.BinarySearchFunc(x.segs, r.Low, func(s inlSeg, a uint64) int { return cmp.Compare(s.low, a) })
		for _, s := range x.segs[lo:] {
			if s.low >= r.High {
				break
			}
			h, ok := hulls[s.call]
			if !ok {
				h = dwarf.Range{Low: s.low, High: s.high}
			}
			hulls[s.call] = dwarf.Range{Low: min(h.Low, s.low), High: max(h.High, s.high)}
			for i := at(s.low); i < len(rows) && rows[i].Addr < s.high; i++ {
				if c := out[i]; c < 0 || x.depth[s.call] > x.depth[c] {
					out[i] = s.call
				}
			}
		}
	}
	x.fillGaps(rows, out, hulls, at)
	settleViews(rows, view, out)
	for i, c := range out {
		for c >= 0 && x.calls[c].CallLine == rows[i].Line && x.calls[c].CallFile == rows[i].File {
			c = x.calls[c].Parent
		}
		out[i] = c
	}
	return out
}

// fillGaps gives the rows in the gaps of the calls of hulls (each call's
// code from its lowest address to its highest) the deepest of those calls
// whose code has a row of the same line.
func (x *inlineIndex) fillGaps(rows []dwarf.LineRow, out []int, hulls map[int]dwarf.Range, at func(uint64) int) {
	type lineKey struct {
		file string
		line int
	}
	has := map[int]map[lineKey]bool{}
	for i, c := range out {
		if c >= 0 {
			if has[c] == nil {
				has[c] = map[lineKey]bool{}
			}
			has[c][lineKey{rows[i].File, rows[i].Line}] = true
		}
	}
	gap := make([]int, len(out))
	copy(gap, out)
	for _, c := range slices.Sorted(maps.Keys(hulls)) { // (in one order, for one plan)
		h := hulls[c]
		for i := at(h.Low); i < len(rows) && rows[i].Addr < h.High; i++ {
			if g := gap[i]; (g < 0 || x.depth[c] > x.depth[g]) && has[c][lineKey{rows[i].File, rows[i].Line}] {
				gap[i] = c
			}
		}
	}
	copy(out, gap)
}

// settleViews gives each location view (view[i]) of rows whose line has
// no row but views in the copy out[i] gives it the copy of the nearest row
// of its line before it that is no view, if any.
func settleViews(rows []dwarf.LineRow, view []bool, out []int) {
	real := map[copyKey]bool{}
	for i, c := range out {
		if !view[i] {
			real[copyKey{rows[i].File, rows[i].Line, c}] = true
		}
	}
	type lineKey struct {
		file string
		line int
	}
	last := map[lineKey]int{} // the copy of each line's last row no view
	for i, r := range rows {
		k := lineKey{r.File, r.Line}
		if !view[i] {
			last[k] = out[i]
			continue
		}
		if c, ok := last[k]; ok && !real[copyKey{r.File, r.Line, out[i]}] {
			out[i] = c
		}
	}
}
