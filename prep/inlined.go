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

// planInlined returns the inlined calls, in the planted code of the
// selected functions sel of mods (each one's range that holds its entry,
// datafile.Func.Low to High), of selected functions of the same module,
// each after its parent (the nearest call around it that is kept), its
// code cut to the planted code.
func planInlined(mods []*openModule, sel []selected) ([]datafile.Inlined, error) {
	var out []datafile.Inlined
	for mi, m := range mods {
		if !m.file.HasDWARF {
			continue
		}
		x := newSelectedCode(sel, mi, m.file.Units)
		if len(x.byName) == 0 {
			continue
		}
		calls, err := m.file.InlinedCallsIn(x.overlaps)
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
			if fn := x.origin(c, sel); fn >= 0 {
				if code := x.clip(c.Ranges); len(code) > 0 {
					kept[i] = len(out)
					out = append(out, datafile.Inlined{Func: fn, Parent: parent, Ranges: code})
				}
			}
		}
	}
	return out, nil
}

// selectedCode is what the selected functions of one module are: the
// plan's indexes of each name, their planted code (sorted, apart), and
// their units' languages.
type selectedCode struct {
	byName map[string][]int
	code   []datafile.Range
	units  []dwarf.Unit
}

func newSelectedCode(sel []selected, mi int, units []dwarf.Unit) *selectedCode {
	x := &selectedCode{byName: map[string][]int{}, units: units}
	for i := range sel {
		s := &sel[i]
		if s.f.Module != mi || s.fn == nil || s.fn.Unit < 0 || s.f.Low >= s.f.High {
			continue // (a function of the symbol table alone, an import, has no DWARF to inline it)
		}
		x.byName[s.fn.Name] = append(x.byName[s.fn.Name], i)
		x.code = append(x.code, datafile.Range{Low: s.f.Low, High: s.f.High})
	}
	slices.SortFunc(x.code, func(a, b datafile.Range) int { return cmp.Compare(a.Low, b.Low) })
	x.code = joinRanges(x.code)
	return x
}

// origin returns the selected function that call c inlined, or -1: the
// one of its name, of the call's own unit where the function is a static
// C or C++ one (another unit's static function of the same name is
// another function).
func (x *selectedCode) origin(c dwarf.Inlined, sel []selected) int {
	for _, f := range x.byName[c.Origin] {
		fn := sel[f].fn
		if fn.Unit == c.Unit || fn.External || !x.unitLocal(fn.Unit) {
			return f
		}
	}
	return -1
}

// unitLocal reports whether a function of unit u that is not external is
// its unit's own: C's and C++'s static functions (a Go or Rust function's
// name says its package or crate).
func (x *selectedCode) unitLocal(u int) bool {
	if u < 0 || u >= len(x.units) {
		return true
	}
	lang := x.units[u].Language
	return lang == "c" || lang == "c++" || lang == "asm" || lang == ""
}

// overlaps reports whether any of [low, high) is planted code.
func (x *selectedCode) overlaps(low, high uint64) bool {
	i, _ := slices.BinarySearchFunc(x.code, low, func(c datafile.Range, a uint64) int { return cmp.Compare(c.High, a+1) })
	return i < len(x.code) && x.code[i].Low < high
}

// clip returns the parts of rs (sorted by start) in the planted code.
func (x *selectedCode) clip(rs []dwarf.Range) []datafile.Range {
	var out []datafile.Range
	for _, r := range rs {
		i, _ := slices.BinarySearchFunc(x.code, r.Low, func(c datafile.Range, a uint64) int { return cmp.Compare(c.High, a+1) })
		for ; i < len(x.code) && x.code[i].Low < r.High; i++ {
			if lo, hi := max(r.Low, x.code[i].Low), min(r.High, x.code[i].High); lo < hi {
				out = append(out, datafile.Range{Low: lo, High: hi})
			}
		}
	}
	slices.SortFunc(out, func(a, b datafile.Range) int { return cmp.Compare(a.Low, b.Low) })
	return joinRanges(out)
}

// joinRanges returns rs (sorted by start) with the ranges that overlap
// or touch made one.
func joinRanges(rs []datafile.Range) []datafile.Range {
	var out []datafile.Range
	for _, r := range rs {
		if n := len(out); n > 0 && r.Low <= out[n-1].High {
			out[n-1].High = max(out[n-1].High, r.High)
			continue
		}
		out = append(out, r)
	}
	return out
}
