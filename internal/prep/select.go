package prep

import (
	"path"

	"github.com/ianlancetaylor/demangle"

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
