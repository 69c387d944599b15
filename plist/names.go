package plist

import (
	"regexp"
	"strings"

	"github.com/ianlancetaylor/demangle"

	"github.com/sourceprofiler/sprof/datafile"
)

// demangleLimit bounds a demangled name to 2^16 characters; a longer one is
// shown mangled.
var demangleLimit = demangle.MaxLength(16)

// rustHash is the "::h" + 16 hexadecimal digits that legacy Rust symbols
// end with.
var rustHash = regexp.MustCompile(`::h[0-9a-f]{16}$`)

// defaultDemangle is the display form of a stored name: C++ (Itanium ABI)
// names undecorated without their return type, as the original's
// undecorator printed them (twice(int), max<int>(int, int)); Rust names,
// legacy and v0, without their hash; C and Go names, and anything the
// demangler does not understand, as they are. Names come from the input
// file, so a failure of the demangler, even a panic, leaves the name as
// it is.
func defaultDemangle(name string) (shown string) {
	defer func() {
		if recover() != nil {
			shown = name
		}
	}()
	switch {
	case strings.HasPrefix(name, "_R"):
		return demangle.Filter(name, demangleLimit)
	case strings.HasPrefix(name, "_Z"):
		s, err := demangle.ToString(name, demangleLimit)
		if err != nil {
			return name
		}
		if a, err := demangle.ToAST(name, demangleLimit); err == nil {
			if b, ok := withoutReturnType(a); ok {
				s = demangle.ASTToString(b, demangleLimit)
			}
		}
		return rustHash.ReplaceAllString(s, "")
	}
	return name
}

// withoutReturnType returns a function's AST without its return type (the
// Itanium ABI encodes one for template functions), or false when a has
// none.
func withoutReturnType(a demangle.AST) (demangle.AST, bool) {
	switch a := a.(type) {
	case *demangle.Clone:
		b, ok := withoutReturnType(a.Base)
		if !ok {
			return nil, false
		}
		c := *a
		c.Base = b
		return &c, true
	case *demangle.Typed:
		ft, ok := a.Type.(*demangle.FunctionType)
		if !ok || ft.Return == nil {
			return nil, false
		}
		f := *ft
		f.Return = nil
		t := *a
		t.Type = &f
		return &t, true
	}
	return nil, false
}

// fileNames returns the names the reports give the source files of mods,
// by module and file: each file's shortest path suffix, of whole
// components, that no other file of the profile ends with, which is its
// base name where that is unique, as the original named every file; a
// path that another ends with is named whole. The same path in two modules
// is one file (a header both include) and has one name. Two files of one
// base name (asm_linux_amd64.s of several Go packages) were one file in
// the records and the listings.
func fileNames(mods []datafile.Module) [][]string {
	ends := map[string]int{} // how many distinct paths end with each suffix
	seen := map[string]bool{}
	for _, m := range mods {
		for _, p := range m.Files {
			if seen[p] {
				continue
			}
			seen[p] = true
			for i := len(p); i >= 0; i-- {
				if i == 0 || p[i-1] == '/' {
					if i < len(p) {
						ends[p[i:]]++
					}
				}
			}
		}
	}
	names := make([][]string, len(mods))
	for mi, m := range mods {
		names[mi] = make([]string, len(m.Files))
		for fi, p := range m.Files {
			names[mi][fi] = p
			for i := len(p); i > 0; i-- {
				if p[i-1] == '/' && i < len(p) && ends[p[i:]] == 1 {
					names[mi][fi] = p[i:]
					break
				}
			}
		}
	}
	return names
}
