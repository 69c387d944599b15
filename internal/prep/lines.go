package prep

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/dwarf"
	"github.com/sourceprofiler/sprof/internal/instr"
	"github.com/sourceprofiler/sprof/internal/prf"
)

// Line sites (docs/linux.md, "Debugging information"): the lines of the
// selected functions, from the DWARF line tables' statement rows.
//
//   - Line counting (/LC) counts how often a line began, as the original
//     did: one site per line and function, at the lowest address of the
//     line's statement rows in that function (a for header counts its
//     initialisation, not each test). A line compiled into several
//     functions (inlined, instantiated) sums its sites.
//   - Line coverage (/LV) asks whether a line ran: every statement row's
//     address is a one-shot site, in any function (with optimisation the
//     lowest address is often on a path not taken while the rest of the
//     line ran).
//
// Every row takes part, also where several share an address (an inlined
// call's line and its callee's first line). A row whose address is not on
// an instruction boundary, decoding its function's code from the start, is
// dropped with warning PRF4624: a breakpoint there would corrupt the
// program.

// selected is a function the selection kept, with what DWARF says of it.
type selected struct {
	f  datafile.Func
	fn *dwarf.Func
}

// planLines returns the line items of the selected functions sel (in
// module, then entry order) for method, and each module's source files in
// listing order. A module with selected functions and no line table is
// fatal (PRF1621).
func planLines(mods []*openModule, sel []selected, method datafile.Method, warn func(*prf.Diagnostic)) ([]datafile.Line, [][]string, error) {
	files := make([][]string, len(mods))
	var lines []datafile.Line
	for mi, m := range mods {
		var fns []*dwarf.Func
		for _, s := range sel {
			if s.f.Module == mi {
				fns = append(fns, s.fn)
			}
		}
		if len(fns) == 0 {
			continue
		}
		rows, err := m.file.StatementRows()
		if errors.Is(err, dwarf.ErrNoDWARF) || (err == nil && len(rows) == 0) {
			return nil, nil, prf.NoDebugInfo(m.module.Path)
		}
		if err != nil {
			return nil, nil, err
		}
		ml, mf := moduleLines(m, rows, fns, method, warn)
		for i := range ml {
			ml[i].Module = mi
		}
		lines = append(lines, ml...)
		files[mi] = mf
	}
	return lines, files, nil
}

// lineKey names a line of a module: its file's index in the module's
// listing order, and its number.
type lineKey struct{ file, line int }

// moduleLines returns the line items of the functions fns of module m,
// whose statement rows are rows (sorted by address), in file and line
// order, and the module's source files in listing order: the units in the
// reverse of their order (the original listed the object given last to
// the linker first: original.md §5.6.6), each unit's files in the order
// its rows first name them.
func moduleLines(m *openModule, rows []dwarf.LineRow, fns []*dwarf.Func, method datafile.Method, warn func(*prf.Diagnostic)) ([]datafile.Line, []string) {
	// The rows of the selected functions, on instruction boundaries.
	type site struct {
		row dwarf.LineRow
		fn  int
	}
	var sites []site
	for i, fn := range fns {
		for _, r := range fn.Ranges {
			lo, _ := slices.BinarySearchFunc(rows, r.Low, func(x dwarf.LineRow, a uint64) int { return cmp.Compare(x.Addr, a) })
			hi, _ := slices.BinarySearchFunc(rows, r.High, func(x dwarf.LineRow, a uint64) int { return cmp.Compare(x.Addr, a) })
			if lo == hi {
				continue
			}
			code, err := m.file.Code(r.Low, int(r.High-r.Low))
			var bounds []uint64
			if err == nil {
				// (A decoding error leaves the boundaries before it.)
				bounds, _ = instr.Boundaries(m.arch, code, r.Low)
			}
			for _, row := range rows[lo:hi] {
				if !instr.OnBoundary(bounds, row.Addr) {
					why := fmt.Errorf("address %#x of function %s is not on an instruction boundary", row.Addr, fn.Name)
					if err != nil {
						why = err
					}
					warn(prf.CannotProfileLine(row.Line, row.File, m.module.Path, why))
					continue
				}
				sites = append(sites, site{row, i})
			}
		}
	}
	// The files in listing order.
	named := map[string]bool{}
	for _, s := range sites {
		named[s.row.File] = true
	}
	byUnit := map[int][]string{}
	seen := map[[2]any]bool{}
	for _, r := range rows {
		if k := [2]any{r.Unit, r.File}; named[r.File] && !seen[k] {
			seen[k] = true
			byUnit[r.Unit] = append(byUnit[r.Unit], r.File)
		}
	}
	units := slices.Sorted(maps.Keys(byUnit))
	order := map[string]int{}
	var files []string
	for _, u := range slices.Backward(units) {
		for _, f := range byUnit[u] {
			if _, ok := order[f]; !ok {
				order[f] = len(files)
				files = append(files, f)
			}
		}
	}
	// The addresses of each line: per function its lowest (counting), or
	// every one (coverage).
	addrs := map[lineKey][]uint64{}
	lowest := map[[3]int]int{} // (file, line, function) -> index in addrs[key]
	for _, s := range sites {
		k := lineKey{order[s.row.File], s.row.Line}
		if method == datafile.LineCounting {
			fk := [3]int{k.file, k.line, s.fn}
			if i, ok := lowest[fk]; ok {
				addrs[k][i] = min(addrs[k][i], s.row.Addr)
				continue
			}
			lowest[fk] = len(addrs[k])
		}
		addrs[k] = append(addrs[k], s.row.Addr)
	}
	lines := make([]datafile.Line, 0, len(addrs))
	for k, a := range addrs {
		slices.Sort(a)
		lines = append(lines, datafile.Line{File: k.file, Line: k.line, Addrs: slices.Compact(a)})
	}
	slices.SortFunc(lines, func(a, b datafile.Line) int { return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line)) })
	return lines, files
}
