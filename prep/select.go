package prep

import (
	"cmp"
	"path"
	"slices"

	"github.com/ianlancetaylor/demangle"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/dwarf"
	"github.com/sourceprofiler/sprof/internal/prf"
)

// candidate is a function PREP may profile, with everything a specification
// can match.
type candidate struct {
	// module is the module's file name (libfoo.so.1) and modulePath its
	// absolute path.
	module     string
	modulePath string
	// names are the stored name first, then its aliases (other symbols at the
	// same entry) and the demangled forms of all of them.
	names []string
	// source is the unit: object module, Go package path, Rust crate, or the
	// module's file name for a symbol-table function.
	source string
	// unitIsPackage is set when source is a Go package or a Rust crate, which
	// bare names match as well as function names.
	unitIsPackage bool
	// imported marks a PLT entry, whose source is the library that
	// defines it: a library specification matches it too.
	imported bool
	// noDebug is set for a function known only from the symbol table of a
	// module that has DWARF: code from static archives, the C run-time's
	// startup objects, assembly.
	noDebug bool
	// declFile and declLine locate the declaration ("" and 0 when unknown).
	declFile string
	declLine int
	// lang is the language of the function's unit ("go", "c++"...), ""
	// when it has none.
	lang string
}

// demangleLimit bounds the demangler's output on hostile names.
var demangleLimit = demangle.MaxLength(16)

// matchNames returns name and the forms a specification may use for it:
// demangled with parameters (Counter::bump(int)), without them
// (Counter::bump) and without template arguments (std::vector::size). Rust
// names come without their hash. Names that are not mangled (C, Go) have no
// other form.
func matchNames(name string) []string {
	names := []string{name}
	add := func(s string, err error) {
		if err != nil || s == "" {
			return
		}
		for _, n := range names {
			if n == s {
				return
			}
		}
		names = append(names, s)
	}
	full, err := demangle.ToString(name, demangleLimit)
	if err != nil {
		return names
	}
	add(full, nil)
	add(demangle.ToString(name, demangle.NoParams, demangleLimit))
	add(demangle.ToString(name, demangle.NoParams, demangle.NoTemplateParams, demangleLimit))
	return names
}

// matches reports whether pattern p selects candidate c. ExcludeAll selects
// everything.
func (p *pattern) matches(c *candidate) bool {
	switch p.kind {
	case kindLibrary:
		if c.imported && (glob(p.glob, c.source) || glob(p.glob, stripVersion(c.source))) {
			return true
		}
		return matchPath(p.glob, c.module, c.modulePath) ||
			matchPath(p.glob, stripVersion(c.module), stripVersion(c.modulePath))
	case kindArchive:
		return c.noDebug
	case kindObject:
		return glob(p.glob, c.source)
	case kindSource:
		if c.declFile == "" || !matchPath(p.glob, path.Base(c.declFile), c.declFile) {
			return false
		}
		return p.ranges == nil || (c.declLine > 0 && inRanges(p.ranges, c.declLine))
	}
	for _, n := range c.names {
		if glob(p.glob, n) {
			return true
		}
	}
	return c.unitIsPackage && glob(p.glob, c.source)
}

// applySpecs applies the specifications in order to the candidates, all of
// which start selected, and returns which are selected at the end. A
// specification that is not a default and matched no candidate gives
// warning PRF4106, with the names near the one typed.
func applySpecs(cands []candidate, specs []pattern, warn func(*prf.Diagnostic)) []bool {
	selected := make([]bool, len(cands))
	for i := range selected {
		selected[i] = true
	}
	for i := range specs {
		p := &specs[i]
		if p.op == ExcludeAll {
			clear(selected)
			continue
		}
		matched := false
		for j := range cands {
			if p.matches(&cands[j]) {
				matched = true
				selected[j] = p.op == Include
			}
		}
		if !matched && !p.quiet {
			warn(prf.NeverMatched(p.shown, nearSpec(p, cands)))
		}
	}
	return selected
}

// leftOutGroups are the code of the languages whose run-time or standard
// library is compiled into the program, with debugging information, that
// profiler.ini leaves out: what a report's header says of it, and the
// option that brings some back, as an example.
var leftOutGroups = []struct{ lang, what, include string }{
	{"go", "the Go runtime and standard library", "/INC runtime, /INC 'fmt.*'"},
	{"rust", "Rust's standard library", "/INC 'std::*'"},
	{"c++", "the C++ standard library", "/INC 'std::*'"},
}

// leftOut counts, by leftOutGroups, the candidates that are not selected
// because a default specification (profiler.ini's) was the last to
// match them: what the default selection left out of the profile that
// a reader may look for. A candidate the user excluded is not counted.
func leftOut(cands []candidate, specs []pattern, selected []bool) []datafile.LeftOut {
	n := make([]int, len(leftOutGroups))
	for j := range cands {
		c := &cands[j]
		g := slices.IndexFunc(leftOutGroups, func(g struct{ lang, what, include string }) bool { return g.lang == c.lang })
		if selected[j] || g < 0 || c.noDebug {
			continue
		}
		for i := len(specs) - 1; i >= 0; i-- {
			if p := &specs[i]; p.op == ExcludeAll || p.matches(c) {
				if p.quiet && p.op == Exclude {
					n[g]++
				}
				break
			}
		}
	}
	var out []datafile.LeftOut
	for g, k := range n {
		if k > 0 {
			out = append(out, datafile.LeftOut{What: leftOutGroups[g].what, Funcs: k, Include: leftOutGroups[g].include})
		}
	}
	return out
}

// selectFunctions applies the specifications to the functions of all
// modules, checks the entries of those selected, and returns them in module
// order, then by entry.
func selectFunctions(mods []*openModule, patterns []pattern, warn func(*prf.Diagnostic)) ([]selected, []datafile.LeftOut) {
	type origin struct {
		mod int
		fn  *dwarf.Func
	}
	var cands []candidate
	var origins []origin
	exports := exportCache{}
	for mi, m := range mods {
		for fi := range m.file.Funcs {
			fn := &m.file.Funcs[fi]
			cands = append(cands, newCandidate(m, fn))
			origins = append(origins, origin{mi, fn})
		}
		imports := importFuncs(mods, m, exports)
		for fi := range imports {
			fn := &imports[fi]
			c := newCandidate(m, fn)
			c.imported, c.noDebug = true, false
			cands = append(cands, c)
			origins = append(origins, origin{mi, fn})
		}
	}
	var funcs []selected
	chosen := applySpecs(cands, patterns, warn)
	for i, ok := range chosen {
		if !ok {
			continue
		}
		m, fn := mods[origins[i].mod], origins[i].fn
		site := entrySite(m, fn)
		if err := checkSite(m, fn, site); err != nil {
			warn(prf.CannotProfileFunction(fn.Name, m.module.Path, err))
			continue
		}
		low, high := entryRange(fn)
		funcs = append(funcs, selected{f: datafile.Func{
			Module: origins[i].mod,
			Name:   fn.Name,
			Source: fn.Source,
			Entry:  site,
			Low:    low,
			High:   high,
			Frame:  frameKey(m, fn, site),
			File:   fn.DeclFile,
			Line:   fn.DeclLine,
		}, fn: fn})
	}
	slices.SortStableFunc(funcs, func(a, b selected) int {
		return cmp.Or(cmp.Compare(a.f.Module, b.f.Module), cmp.Compare(a.f.Entry, b.f.Entry))
	})
	return funcs, leftOut(cands, patterns, chosen)
}

// newCandidate describes fn of module m for the selection.
func newCandidate(m *openModule, fn *dwarf.Func) candidate {
	c := candidate{
		module:     m.module.Name,
		modulePath: m.module.Path,
		names:      matchNames(fn.Name),
		source:     fn.Source,
		noDebug:    fn.Unit < 0 && m.file.HasDWARF,
		declFile:   fn.DeclFile,
		declLine:   fn.DeclLine,
	}
	if fn.Unit >= 0 && fn.Unit < len(m.file.Units) {
		c.lang = m.file.Units[fn.Unit].Language
		c.unitIsPackage = c.lang == "go" || c.lang == "rust"
	}
	return c
}
