package plist

import (
	"bufio"
	"cmp"
	"path/filepath"
	"slices"
	"strings"
)

// The lcov tracefile (FormatLcov), for genhtml and lcov.

// lcovExport writes the lcov tracefile.
type lcovExport struct{ *report }

// writeLcov writes the lcov tracefile of the profile (Combined: the
// combination of one profile), its test name (TN) its last run's
// program.
func (r lcovExport) writeLcov(w *bufio.Writer) {
	c := NewCombined()
	c.add(r.report)
	if n := len(r.m.Runs); n > 0 {
		c.test = lcovTestName(r.m.Runs[n-1].CommandLine)
	}
	c.writeLcov(w)
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
		sizes := make([]int, len(r.plan.Modules))
		for li := range r.plan.Lines {
			if l := &r.plan.Lines[li]; l.Module >= 0 && l.Module < len(sizes) {
				sizes[l.Module] += len(l.Addrs)
			}
		}
		for m, n := range sizes {
			r.lineSites[m] = make([]lineSite, 0, n)
		}
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
