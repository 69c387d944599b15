package plist

import (
	"regexp"
	"strings"

	"github.com/ianlancetaylor/demangle"
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
