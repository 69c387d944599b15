package prep

// The inlined calls of a function sampling plan (datafile.Plan.Inlined):
// a copy of a profiled function that the compiler placed in the code of
// another profiled function is that function on a sampled stack, as perf
// names inlined frames from the DWARF. A function whose code was only
// ever inlined has no code of its own to select: its copies are not
// planned, and their samples are their callers' alone.

import (
	"cmp"
	"slices"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/dwarf"
)

// planInlined returns the inlined calls, in the code of the selected
// functions sel of mods, of selected functions of the same module, each
// after its parent (the nearest call around it that is kept).
func planInlined(mods []*openModule, sel []selected) ([]datafile.Inlined, error) {
	var out []datafile.Inlined
	for mi, m := range mods {
		if !m.file.HasDWARF {
			continue
		}
		x := newSelectedCode(sel, mi)
		if len(x.byName) == 0 {
			continue
		}
		calls, err := m.file.InlinedCalls()
		if err != nil {
			return nil, debugInfoError(m.module.Path, err)
		}
		kept := make([]int, len(calls)) // the nearest call kept, around or at each, or -1
		for i, c := range calls {
			parent := -1
			if c.Parent >= 0 && c.Parent < i {
				parent = kept[c.Parent]
			}
			kept[i] = parent
			if fn := x.origin(c, sel); fn >= 0 && x.holds(c.Ranges[0].Low) {
				kept[i] = len(out)
				out = append(out, datafile.Inlined{Func: fn, Parent: parent, Ranges: joinRanges(c.Ranges)})
			}
		}
	}
	return out, nil
}

// selectedCode is what the selected functions of one module are: the
// plan's indexes of each name, and their code, sorted.
type selectedCode struct {
	byName map[string][]int
	code   []codeRange
}

// codeRange is a range of a selected function's code.
type codeRange struct{ low, high uint64 }

func newSelectedCode(sel []selected, mi int) *selectedCode {
	x := &selectedCode{byName: map[string][]int{}}
	for i := range sel {
		s := &sel[i]
		if s.f.Module != mi || s.fn == nil {
			continue
		}
		x.byName[s.fn.Name] = append(x.byName[s.fn.Name], i)
		for _, r := range s.fn.Ranges {
			x.code = append(x.code, codeRange{r.Low, r.High})
		}
	}
	slices.SortFunc(x.code, func(a, b codeRange) int { return cmp.Compare(a.low, b.low) })
	return x
}

// origin returns the selected function that call c inlined, or -1: the
// one of its name, or of several (static functions of the same name in
// different units) the one of the call's unit.
func (x *selectedCode) origin(c dwarf.Inlined, sel []selected) int {
	fns := x.byName[c.Origin]
	if len(fns) == 1 {
		return fns[0]
	}
	for _, f := range fns {
		if sel[f].fn.Unit == c.Unit {
			return f
		}
	}
	return -1
}

// holds reports whether a selected function's code holds address a.
func (x *selectedCode) holds(a uint64) bool {
	i, found := slices.BinarySearchFunc(x.code, a, func(r codeRange, a uint64) int { return cmp.Compare(r.low, a) })
	if found {
		return true
	}
	return i > 0 && a < x.code[i-1].high
}

// joinRanges returns rs (sorted by start) as the plan holds them: ranges
// that overlap or touch made one.
func joinRanges(rs []dwarf.Range) []datafile.Range {
	var out []datafile.Range
	for _, r := range rs {
		if n := len(out); n > 0 && r.Low <= out[n-1].High {
			out[n-1].High = max(out[n-1].High, r.High)
			continue
		}
		out = append(out, datafile.Range{Low: r.Low, High: r.High})
	}
	return out
}
