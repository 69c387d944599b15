package prep

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/dwarf"
	"github.com/sourceprofiler/sprof/internal/prf"
)

// siteRow is a line site found in a function: its line (its file an
// index of its part's files, then of its module's) and the function (an
// index of the functions asked for) at an address.
type siteRow struct {
	file int32
	fn   int32
	line int // (as the DWARF says it, whatever its size)
	addr uint64
}

// sitePart is the sites a part of the functions has, and their files.
type sitePart struct {
	files []string
	sites []siteRow
	// branches are the conditional branches of the functions' code (line
	// coverage: branches.go).
	branches []branchLine
}

// functionSites returns the sites of the functions fns of module m, whose
// rows are rows (see moduleLines), by function in order, in parts, and gives the
// warnings of their rows to warn, in the same order. Each function's
// sites are its own work (its code decoded, its rows checked, its flow
// graphed), so the functions are shared out among the CPUs in parts of
// partFuncs, and what each part found is put back in order: the plan
// and the warnings are the same as one function after another gives.
func functionSites(m *openModule, rows []dwarf.LineRow, fns []*dwarf.Func, method datafile.Method, calls *inlineIndex, warn func(dwarf.LineRow, int, *prf.Diagnostic)) []sitePart {
	type rowWarning struct {
		row dwarf.LineRow
		fn  int
		d   *prf.Diagnostic
	}
	type part struct {
		sitePart
		lo, hi int
		warns  []rowWarning
	}
	parts := make([]part, (len(fns)+partFuncs-1)/partFuncs)
	for k := range parts {
		parts[k].lo, parts[k].hi = k*partFuncs, min(len(fns), (k+1)*partFuncs)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(parts)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var code []decoded // (one function's at a time: its room reused)
			for k := int(next.Add(1)) - 1; k < len(parts); k = int(next.Add(1)) - 1 {
				p := &parts[k]
				fileID := map[string]int32{}
				for i := p.lo; i < p.hi; i++ {
					fnWarn := func(row dwarf.LineRow, d *prf.Diagnostic) { p.warns = append(p.warns, rowWarning{row, i, d}) }
					var fnRows []dwarf.LineRow
					fnRows, code = functionRows(m, rows, fns[i], fnWarn, code[:0])
					switch method {
					case datafile.LineCounting:
						fnRows = countingSites(m, fns[i], code, fnRows, calls)
					case datafile.LineCoverage:
						p.branches = append(p.branches, functionBranches(m, fns[i], code, fnRows)...)
						fnRows = coverageSites(fns[i], code, fnRows, calls)
					}
					for _, r := range fnRows {
						id, ok := fileID[r.File]
						if !ok {
							id = int32(len(p.files))
							fileID[r.File] = id
							p.files = append(p.files, r.File)
						}
						p.sites = append(p.sites, siteRow{file: id, line: r.Line, fn: int32(i), addr: r.Addr})
					}
				}
			}
		}()
	}
	wg.Wait()
	out := make([]sitePart, len(parts))
	for k := range parts {
		for _, w := range parts[k].warns {
			warn(w.row, w.fn, w.d)
		}
		out[k] = parts[k].sitePart
	}
	return out
}

// partFuncs is how many functions make a part of functionSites' work
// (a variable for the tests).
var partFuncs = 128
