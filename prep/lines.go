package prep

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/dwarf"
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

// planLines returns the line items of a line profile of mods, selected by
// patterns line by line (lineSelector), and each module's source files in
// listing order. A module without line tables is fatal (PRF1621); a
// specification that is not a default and matched no line gives warning
// PRF4106, with the names near the one typed.
func planLines(mods []*openModule, patterns []pattern, method datafile.Method, warn func(*prf.Diagnostic)) ([]datafile.Line, [][]string, []datafile.Branch, error) {
	files := make([][]string, len(mods))
	branches := make([][]branchLine, len(mods))
	matched := make([]bool, len(patterns))
	var lines []datafile.Line
	var all []candidate // of every module, for the names near one never matched
	for mi, m := range mods {
		every, err := m.file.Rows()
		if errors.Is(err, dwarf.ErrNoDWARF) || (err == nil && !slices.ContainsFunc(every, func(r dwarf.LineRow) bool { return r.Stmt })) {
			return nil, nil, nil, prf.NoDebugInfo(m.module.Path)
		}
		if err != nil {
			return nil, nil, nil, debugInfoError(m.module.Path, err)
		}
		var fns []*dwarf.Func
		var cands []candidate
		for i := range m.file.Funcs {
			if fn := &m.file.Funcs[i]; fn.Unit >= 0 {
				fns = append(fns, fn)
				cands = append(cands, newCandidate(m, fn))
			}
		}
		all = append(all, cands...)
		sel := newLineSelector(patterns, cands, matched)
		selects := sel.selects
		// (A row that cannot be profiled is warned about when its line
		// would be: not in the code the selection leaves out.)
		rowWarn := func(row dwarf.LineRow, fn int, d *prf.Diagnostic) {
			if selects(fileLine{file: row.File, line: row.Line, fns: []int{fn}}, false) {
				warn(d)
			}
		}
		inl, err := m.file.InlinedCalls()
		if err != nil {
			return nil, nil, nil, debugInfoError(m.module.Path, err)
		}
		found, brs := moduleLines(m, every, fns, method, newInlineIndex(inl), rowWarn)
		branches[mi] = brs
		kept := make([]fileLine, 0, len(found))
		for _, l := range found {
			if selects(l, true) {
				kept = append(kept, l)
			}
		}
		sel.done()
		files[mi], lines = addLines(lines, mi, every, kept)
	}
	if len(lines) == 0 {
		// (The original said only this: no PRF4106 before it.)
		return nil, nil, nil, prf.NoLines(mods[0].module.Path)
	}
	for pi, p := range patterns {
		if !matched[pi] && !p.quiet && p.op != ExcludeAll {
			warn(prf.NeverMatched(p.shown, nearSpec(&p, all)))
		}
	}
	slices.SortStableFunc(lines, func(a, b datafile.Line) int {
		return cmp.Or(cmp.Compare(a.Module, b.Module), cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	return lines, files, planBranches(lines, files, branches), nil
}

// sampledLines returns the lines of the functions sel of a sampling
// profile of mods, each with the start of every statement row of its code,
// for PROFILE to give each sampled program counter its line, and each
// module's source files in listing order. A module without line tables
// has no lines: its samples go to its functions only.
func sampledLines(mods []*openModule, sel []selected) ([]datafile.Line, [][]string, error) {
	files := make([][]string, len(mods))
	var lines []datafile.Line
	for mi, m := range mods {
		var fns []*dwarf.Func
		for _, s := range sel {
			if s.f.Module == mi && s.fn != nil && s.fn.Unit >= 0 {
				fns = append(fns, s.fn)
			}
		}
		if len(fns) == 0 || !m.file.HasDWARF {
			continue
		}
		// One row per address, the last statement row there naming the
		// line, as gdb names a PC's (location views give several).
		rows, err := m.file.Lines()
		if errors.Is(err, dwarf.ErrNoDWARF) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		all, _ := moduleLines(m, rows, fns, datafile.FuncSampling, nil, func(dwarf.LineRow, int, *prf.Diagnostic) {})
		files[mi], lines = addLines(lines, mi, rows, all)
	}
	slices.SortStableFunc(lines, func(a, b datafile.Line) int {
		return cmp.Or(cmp.Compare(a.Module, b.Module), cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	return lines, files, nil
}

// addLines appends kept, lines of module mi whose rows are rows (the
// statement rows among them name the files), to lines
// as the plan's, and returns the module's files in listing order (those of
// kept) with the lines.
func addLines(lines []datafile.Line, mi int, rows []dwarf.LineRow, kept []fileLine) ([]string, []datafile.Line) {
	keep := map[string]bool{}
	for _, l := range kept {
		keep[l.file] = true
	}
	files := fileOrder(rows, keep)
	index := map[string]int{}
	for i, f := range files {
		index[f] = i
	}
	lines = slices.Grow(lines, len(kept))
	for _, l := range kept {
		lines = append(lines, datafile.Line{Module: mi, File: index[l.file], Line: l.line, Addrs: l.addrs})
	}
	return files, lines
}

// fileLine is a line of a source file with its sites and the functions
// (indexes) it was compiled into.
type fileLine struct {
	file  string
	line  int
	addrs []uint64
	fns   []int
}

// moduleLines returns the lines of the functions fns of module m, whose
// rows are rows (sorted by address: for line profiles every row, else the
// statement rows), in file and line order,
// each with its sites: for line counting those of each copy of the line
// (countingSites), for line coverage every place where it begins (its
// rows but the ends of blocks a jump lands after: linePlaces), calls
// being the module's inlined calls; for sampling every row's address. A
// statement row that is not on an instruction boundary is dropped, with
// warning PRF4624 through warn, given the row and its function (an index
// of fns). For line coverage it also returns the branches of the
// functions' code (functionBranches).
func moduleLines(m *openModule, rows []dwarf.LineRow, fns []*dwarf.Func, method datafile.Method, calls *inlineIndex, warn func(dwarf.LineRow, int, *prf.Diagnostic)) ([]fileLine, []branchLine) {
	// Every site is a row of one flat table (its file an index of files),
	// sorted once by file, line and address, and each line's addresses
	// and functions are parts of two flat arrays: a million lines made
	// millions of small objects.
	parts := functionSites(m, rows, fns, method, calls, warn)
	n := 0
	var branches []branchLine
	for _, p := range parts {
		n += len(p.sites)
		branches = append(branches, p.branches...)
	}
	sites := make([]siteRow, 0, n)
	var files []string
	fileID := map[string]int32{}
	for k, p := range parts {
		ids := make([]int32, len(p.files)) // (the part's files' in the module's)
		for i, f := range p.files {
			id, ok := fileID[f]
			if !ok {
				id = int32(len(files))
				fileID[f] = id
				files = append(files, f)
			}
			ids[i] = id
		}
		for _, r := range p.sites {
			r.file = ids[r.file]
			sites = append(sites, r)
		}
		parts[k].sites = nil
	}
	// Files by name: their rank.
	rank := make([]int32, len(files))
	byName := make([]int32, len(files))
	for id := range byName {
		byName[id] = int32(id)
	}
	slices.SortFunc(byName, func(a, b int32) int { return cmp.Compare(files[a], files[b]) })
	for r, id := range byName {
		rank[id] = int32(r)
	}
	slices.SortFunc(sites, func(a, b siteRow) int {
		return cmp.Or(cmp.Compare(rank[a.file], rank[b.file]), cmp.Compare(a.line, b.line), cmp.Compare(a.addr, b.addr), cmp.Compare(a.fn, b.fn))
	})
	addrs := make([]uint64, 0, len(sites))
	owners := make([]int, 0, len(sites))
	n = 0
	for k, s := range sites {
		if k == 0 || s.file != sites[k-1].file || s.line != sites[k-1].line {
			n++
		}
	}
	lines := make([]fileLine, 0, n)
	for k, s := range sites {
		if k == 0 || s.file != sites[k-1].file || s.line != sites[k-1].line {
			lines = append(lines, fileLine{file: files[s.file], line: s.line,
				addrs: addrs[len(addrs):], fns: owners[len(owners):]})
		}
		l := &lines[len(lines)-1]
		if n := len(l.addrs); n == 0 || l.addrs[n-1] != s.addr {
			addrs = append(addrs, s.addr)
			l.addrs = l.addrs[:n+1]
		}
		if !slices.Contains(l.fns, int(s.fn)) {
			owners = append(owners, int(s.fn))
			l.fns = l.fns[:len(l.fns)+1]
		}
	}
	for k := range lines {
		l := &lines[k]
		l.addrs, l.fns = slices.Clip(l.addrs), slices.Clip(l.fns)
		slices.Sort(l.fns)
	}
	return lines, branches
}

// functionRows returns the rows of fn's code, of rows (sorted by
// address), that are on instruction boundaries, decoding each of its
// ranges from its start, sorted by address (those of one address in
// table order), and fn's instructions, appended to code. A statement
// row elsewhere is dropped with warning PRF4624 through warn, given the
// row, another without a word.
func functionRows(m *openModule, rows []dwarf.LineRow, fn *dwarf.Func, warn func(dwarf.LineRow, *prf.Diagnostic), code []decoded) ([]dwarf.LineRow, []decoded) {
	var out []dwarf.LineRow
	for _, r := range fn.Ranges {
		lo, _ := slices.BinarySearchFunc(rows, r.Low, func(x dwarf.LineRow, a uint64) int { return cmp.Compare(x.Addr, a) })
		hi, _ := slices.BinarySearchFunc(rows, r.High, func(x dwarf.LineRow, a uint64) int { return cmp.Compare(x.Addr, a) })
		if lo == hi {
			continue
		}
		// (A decoding error leaves the instructions before it.)
		start := len(code)
		var err error
		code, err = decodeRange(m, r, code)
		insts := code[start:]
		out = slices.Grow(out, hi-lo)
		for _, row := range rows[lo:hi] {
			_, on := slices.BinarySearchFunc(insts, row.Addr, func(d decoded, a uint64) int { return cmp.Compare(d.addr, a) })
			if !on && !row.Stmt {
				continue // (only a statement row may be a site)
			}
			if !on {
				why := fmt.Errorf("address %#x of function %s is not on an instruction boundary", row.Addr, fn.Name)
				if err != nil {
					why = err
				}
				warn(row, prf.CannotProfileLine(row.Line, row.File, m.module.Path, why))
				continue
			}
			out = append(out, row)
		}
	}
	byAddr := func(a, b dwarf.LineRow) int { return cmp.Compare(a.Addr, b.Addr) }
	slices.SortStableFunc(out, byAddr)
	slices.SortFunc(code, func(a, b decoded) int { return cmp.Compare(a.addr, b.addr) })
	return out, code
}

// fileOrder returns the files of keep in listing order: the units in the
// reverse of their order (the original listed the object given last to the
// linker first: original.md §5.6.6), each unit's files in the order its
// statement rows first name them.
func fileOrder(rows []dwarf.LineRow, keep map[string]bool) []string {
	byUnit := map[int][]string{}
	type unitFile struct {
		unit int
		file string
	}
	seen := map[unitFile]bool{}
	for _, r := range rows {
		if k := (unitFile{r.Unit, r.File}); r.Stmt && keep[r.File] && !seen[k] {
			seen[k] = true
			byUnit[r.Unit] = append(byUnit[r.Unit], r.File)
		}
	}
	var files []string
	listed := map[string]bool{}
	for _, u := range slices.Backward(slices.Sorted(maps.Keys(byUnit))) {
		for _, f := range byUnit[u] {
			if !listed[f] {
				listed[f] = true
				files = append(files, f)
			}
		}
	}
	return files
}
