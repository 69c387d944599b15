package plist

import (
	"bufio"
	"cmp"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sourceprofiler/sprof/internal/prf"
)

// The lcov tracefile (FormatLcov), for genhtml and lcov.

// lcovExport writes the lcov tracefile.
type lcovExport struct{ *report }

// writeLcov writes an lcov tracefile (geninfo(1)): per source file, its
// functions (FN, FNDA, FNF, FNH) and its lines (DA, LF, LH). A line
// profile has the counts of its lines and the calls of its functions,
// each function's those of its first line (lcovFirstLine), where that
// line is the function's alone (one inlined elsewhere is left out). A function
// profile has the calls of its functions and, for each, its declaration
// line with the same count: lcov 1.16 and genhtml refuse a file without
// lines ("no valid records found"). SF is the path where the source file
// is found (exportPath), which genhtml opens, else the one recorded.
// Functions without a source file (known from the symbol table, PLT
// entries) have no place in it. Names are the stored ones, which genhtml
// --demangle-cpp demangles, as gcov's tracefiles have.
func (r lcovExport) writeLcov(w *bufio.Writer) {
	type function struct {
		line int
		name string
		hits uint64
	}
	type record struct {
		funcs []function
		lines map[int]uint64
	}
	var order []string
	files := map[string]*record{}
	get := func(mod int, name string) *record {
		path := r.exportPath(mod, name)
		if files[path] == nil {
			files[path] = &record{lines: map[int]uint64{}}
			order = append(order, path)
		}
		return files[path]
	}
	funcProfile := r.plan.Method.IsFunction()
	if !funcProfile {
		for i := range r.plan.Lines {
			l := &r.plan.Lines[i]
			get(l.Module, r.lineFile(l)).lines[l.Line] += r.hits(i)
		}
	}
	for i, f := range r.plan.Funcs {
		if f.File == "" {
			continue
		}
		hits := r.hits(i)
		if !funcProfile {
			line := r.lcovFirstLine(i)
			if line < 0 {
				continue // none of its lines is profiled
			}
			hits = r.hits(line)
		}
		rec := get(f.Module, f.File)
		rec.funcs = append(rec.funcs, function{max(f.Line, 1), f.Name, hits})
		if funcProfile {
			rec.lines[max(f.Line, 1)] += hits
		}
	}
	test := ""
	if n := len(r.m.Runs); n > 0 {
		test = lcovTestName(r.m.Runs[n-1].CommandLine)
	}
	for _, name := range order {
		rec := files[name]
		fmt.Fprintf(w, "TN:%s\nSF:%s\n", test, prf.Printable(name))
		for _, f := range rec.funcs {
			fmt.Fprintf(w, "FN:%d,%s\n", f.line, prf.Printable(f.name))
		}
		hit := 0
		for _, f := range rec.funcs {
			fmt.Fprintf(w, "FNDA:%d,%s\n", f.hits, prf.Printable(f.name))
			if f.hits > 0 {
				hit++
			}
		}
		if len(rec.funcs) > 0 {
			fmt.Fprintf(w, "FNF:%d\nFNH:%d\n", len(rec.funcs), hit)
		}
		if len(rec.lines) > 0 {
			lines := slices.Sorted(maps.Keys(rec.lines))
			hit = 0
			for _, n := range lines {
				fmt.Fprintf(w, "DA:%d,%d\n", n, rec.lines[n])
				if rec.lines[n] > 0 {
					hit++
				}
			}
			fmt.Fprintf(w, "LF:%d\nLH:%d\n", len(lines), hit)
		}
		w.WriteString("end_of_record\n")
	}
}

// lcovFirstLine returns the index of function i's first line in a line
// profile: the line of the lowest of its module's line sites in the
// function's code (from its entry when its bounds are not known), the
// line every call begins with, whose count is the function's calls (for
// line coverage, the runs that called it). It returns -1 when no
// profiled line is in the function, and when that line has a site
// outside the function's code too (the function inlined elsewhere, a
// line of a header compiled into several): the line's count adds every
// copy's, which are not calls of the function.
func (r lcovExport) lcovFirstLine(i int) int {
	if r.lineSites == nil {
		r.lineSites = make([][]lineSite, len(r.plan.Modules))
		for li := range r.plan.Lines {
			l := &r.plan.Lines[li]
			if l.Module < 0 || l.Module >= len(r.lineSites) {
				continue
			}
			for _, a := range l.Addrs {
				r.lineSites[l.Module] = append(r.lineSites[l.Module], lineSite{a, li})
			}
		}
		for _, sites := range r.lineSites {
			slices.SortStableFunc(sites, func(a, b lineSite) int { return cmp.Compare(a.addr, b.addr) })
		}
	}
	f := &r.plan.Funcs[i]
	if f.Module < 0 || f.Module >= len(r.lineSites) {
		return -1
	}
	lo, hi := f.Low, f.High
	if lo >= hi {
		lo, hi = f.Entry, f.Entry+1
	}
	sites := r.lineSites[f.Module]
	k, _ := slices.BinarySearchFunc(sites, lo, func(s lineSite, a uint64) int { return cmp.Compare(s.addr, a) })
	if k >= len(sites) || sites[k].addr >= hi {
		return -1
	}
	line := sites[k].line
	for _, a := range r.plan.Lines[line].Addrs {
		if a < lo || a >= hi {
			return -1
		}
	}
	return line
}

// lineSite is a line site's address and the index of its line.
type lineSite struct {
	addr uint64
	line int
}

// lcovTestName is a test name lcov accepts (letters, digits, _): the
// program's base name.
func lcovTestName(commandLine string) string {
	prog, _, _ := strings.Cut(commandLine, " ")
	name := []byte(filepath.Base(prog))
	for i, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			name[i] = '_'
		}
	}
	return string(name)
}
