package dwarf

import (
	"path"
	"strconv"
	"strings"
)

// language maps DW_AT_language (DWARF 5 section 7.12, table 7.17, and the
// codes registered since at dwarfstd.org/languages.html) to the names of
// Unit.Language.
func language(code int64) string {
	switch code {
	case 0x01, 0x02, 0x0c, 0x1d, 0x2c: // C89, C, C99, C11, C17
		return "c"
	case 0x04, 0x19, 0x1a, 0x21, 0x2a, 0x2b: // C++, C++03, C++11, C++14, C++17, C++20
		return "c++"
	case 0x16:
		return "go"
	case 0x1c:
		return "rust"
	case 0x31, 0x8001: // DW_LANG_Assembly, DW_LANG_Mips_Assembler (gcc, clang for .S)
		return "asm"
	}
	return ""
}

// unitSource is the Source of the functions of unit u: the Go package path,
// the Rust crate, or the C and C++ object module ("parse.o" for
// "src/parse.c"). It is "" when the unit does not tell.
func unitSource(u Unit) string {
	switch u.Language {
	case "go":
		return u.Name
	case "rust":
		return rustCrate(u.Name)
	}
	return objectName(u.Name)
}

// objectName turns a source file name into the object module the compiler
// made of it: the base name with its extension replaced by ".o". gcc names
// an LTO unit "<artificial>", which says nothing.
func objectName(name string) string {
	if name == "" || name == "<artificial>" {
		return ""
	}
	base := path.Base(strings.ReplaceAll(name, "\\", "/"))
	if ext := path.Ext(base); ext != "" && ext != base {
		base = strings.TrimSuffix(base, ext)
	}
	return base + ".o"
}

// rustCrate takes the crate from a rustc unit name, "src/main.rs/@/demo.1a2b3c-cgu.0"
// (or the older "demo.1a2b3c-cgu.0"): the codegen unit's name up to its
// first dot.
func rustCrate(name string) string {
	if i := strings.LastIndex(name, "/@/"); i >= 0 {
		name = name[i+len("/@/"):]
	} else if !strings.Contains(name, "-cgu.") {
		return ""
	}
	crate, _, _ := strings.Cut(name, ".")
	return crate
}

// rustCrateOfSymbol takes the crate from a Rust mangled name: the first
// identifier of a legacy name (_ZN4demo4main17h0123456789abcdefE) or the
// crate root of a v0 name (_RNvCs1234_4demo4main).
func rustCrateOfSymbol(sym string) string {
	if rest, ok := strings.CutPrefix(sym, "_ZN"); ok {
		return leadingIdent(rest, false)
	}
	rest, ok := strings.CutPrefix(sym, "_R")
	if !ok {
		return ""
	}
	// <path> = N <namespace> <path> <identifier> | I <path> <generic-args> E
	// | C <identifier> | ...: descend to the crate root.
	for len(rest) >= 2 && (rest[0] == 'N' || rest[0] == 'I') {
		if rest[0] == 'N' {
			rest = rest[2:]
		} else {
			rest = rest[1:]
		}
	}
	rest, ok = strings.CutPrefix(rest, "C")
	if !ok {
		return ""
	}
	if strings.HasPrefix(rest, "s") { // disambiguator s<base62>_
		i := strings.IndexByte(rest, '_')
		if i < 0 {
			return ""
		}
		rest = rest[i+1:]
	}
	rest = strings.TrimPrefix(rest, "u") // punycode marker: keep the raw form
	return leadingIdent(rest, true)
}

// leadingIdent parses <decimal length><bytes>, a Rust identifier; v0
// manglings put a "_" between the length and bytes that start with a digit
// or "_".
func leadingIdent(s string, v0 bool) string {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, err := strconv.Atoi(s[:i])
	if err != nil || n <= 0 {
		return ""
	}
	s = s[i:]
	if v0 && len(s) > n && s[0] == '_' {
		s = s[1:]
	}
	if n > len(s) {
		return ""
	}
	return s[:n]
}
