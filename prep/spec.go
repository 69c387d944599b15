package prep

import (
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sourceprofiler/sprof/internal/prf"
)

// SpecOp is what a selection specification does to the set of profiled
// functions.
type SpecOp int

// The selection operations: /INC, /EXC and /EXCALL (include: and exclude: in
// profiler.ini and tools.ini).
const (
	// Include adds the functions the specification matches.
	Include SpecOp = iota
	// Exclude removes the functions the specification matches.
	Exclude
	// ExcludeAll removes every function; its Text is ignored.
	ExcludeAll
)

func (op SpecOp) String() string {
	switch op {
	case Include:
		return "include"
	case Exclude:
		return "exclude"
	case ExcludeAll:
		return "excludeall"
	}
	return "specop(" + strconv.Itoa(int(op)) + ")"
}

// Spec is one selection specification, applied in order after the defaults.
type Spec struct {
	Op SpecOp
	// Text is the specification as written: a shared library, a static
	// archive, an object module, a source file with optional line ranges, or
	// a function name; see the package documentation for how its shape
	// decides which.
	Text string
	// Default marks a specification of profiler.ini. That file lists more
	// names than any one program holds, so one that matches nothing is not
	// reported (warning PRF4106 is for the user's own specifications).
	Default bool
}

// specKind is what a specification names, decided by its shape.
type specKind int

const (
	kindFunction specKind = iota // a function name; also a Go package or Rust crate
	kindSource                   // a source file, optionally with line ranges
	kindObject                   // an object module (parse.o)
	kindArchive                  // a static archive (libc.a)
	kindLibrary                  // a shared library (libfoo.so.1)
)

// lineRange is an inclusive range of source lines; lo > hi selects nothing.
type lineRange struct{ lo, hi int }

// pattern is a parsed specification.
type pattern struct {
	op   SpecOp
	kind specKind
	// glob is the name part, with * and ? wildcards.
	glob string
	// ranges restrict a source specification to declaration lines; nil (no
	// parentheses, or a 0-0 range) means every line.
	ranges []lineRange
	// lined is set for a source specification written with line ranges
	// (0-0 included): in a line profile a bare source file matches nothing,
	// as in the original.
	lined bool
	// shown is the text PRF4106 prints: the specification without ranges.
	shown string
	quiet bool
}

// maxLine is the largest line number a range may hold: the original parsed
// them as 16-bit values (%hu).
const maxLine = 65535

// Extensions that give a specification its kind (case-sensitive, as Linux
// file names are).
var (
	objectExts  = setOf("o", "obj")
	archiveExts = setOf("a")
	sourceExts  = setOf(
		"c", "h", "i", "cc", "cp", "cpp", "cxx", "c++", "C", "CPP", "hh", "hpp",
		"hxx", "h++", "H", "inl", "ipp", "tcc", "ii", "go", "rs", "s", "S", "sx",
		"asm", "m", "mm", "f", "for", "f77", "f90", "f95", "f03", "f08", "F",
		"FOR", "F90", "y", "l", "yy", "ll", "cu", "cuh", "zig",
	)
)

func setOf(s ...string) map[string]bool {
	m := make(map[string]bool, len(s))
	for _, x := range s {
		m[x] = true
	}
	return m
}

// parseSpec parses a specification. Its only error is the fatal PRF1422.
func parseSpec(s Spec) (pattern, error) {
	p := pattern{op: s.Op, quiet: s.Default, shown: s.Text}
	if s.Op == ExcludeAll {
		return p, nil
	}
	text := s.Text
	if open := strings.IndexByte(text, '('); open >= 0 && isSourceWithRanges(text[:open], text[open+1:]) {
		name := text[:open]
		ranges, ok := parseRanges(text[open+1:])
		if !ok || name == "" {
			shown := name
			if shown == "" {
				shown = text
			}
			return p, prf.SpecSyntax(shown)
		}
		p.kind, p.glob, p.ranges, p.shown, p.lined = kindSource, name, ranges, name, true
		return p, nil
	}
	if text == "" {
		return p, prf.SpecSyntax(text)
	}
	p.kind, p.glob = classify(text), text
	if strings.ContainsAny(text, "()") {
		// A parenthesis that opens no line ranges belongs to a function's
		// parameters or to a Go method's receiver (main.(*T).c).
		p.kind = kindFunction
	}
	return p, nil
}

// isSourceWithRanges decides whether text with a parenthesis, split at the
// first one, is a source file with line ranges rather than a function name
// with its parameters (Counter::bump(int), main.(*T).M). It is when the name
// has a source extension, is empty, or when what follows the parenthesis can
// only be an attempt at a range list (digits, '-', ',', blanks) and the name
// is not a qualified C++ name.
func isSourceWithRanges(name, rest string) bool {
	if name == "" || sourceExts[extension(name)] {
		return true
	}
	if strings.Contains(name, "::") {
		return false
	}
	digits := false
	for _, c := range rest {
		switch {
		case c >= '0' && c <= '9':
			digits = true
		case c == '-' || c == ',' || c == ' ' || c == '\t' || c == ')':
		default:
			return false
		}
	}
	return digits
}

// parseRanges parses "3-41,50-67)", "21)" or "0-0)": comma-separated ranges
// of decimal line numbers, closed by the last character. A 0-0 range means
// every line and gives nil.
func parseRanges(s string) ([]lineRange, bool) {
	body, ok := strings.CutSuffix(s, ")")
	if !ok || body == "" {
		return nil, false
	}
	var ranges []lineRange
	all := false
	for part := range strings.SplitSeq(body, ",") {
		loText, hiText, isRange := strings.Cut(part, "-")
		lo, ok1 := parseLine(loText)
		hi, ok2 := lo, true
		if isRange {
			hi, ok2 = parseLine(hiText)
		}
		if !ok1 || !ok2 {
			return nil, false
		}
		if lo == 0 && hi == 0 {
			all = true
		}
		ranges = append(ranges, lineRange{lo, hi})
	}
	if all {
		return nil, true
	}
	return ranges, true
}

// parseLine parses one line number: decimal digits, at most maxLine.
func parseLine(s string) (int, bool) {
	if s == "" || len(s) > 5 {
		return 0, false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n > maxLine {
		return 0, false
	}
	return n, true
}

// classify decides the kind of a specification without parentheses from its
// last path element's extension.
func classify(text string) specKind {
	if isSharedLibrary(path.Base(text)) {
		return kindLibrary
	}
	ext := extension(text)
	switch {
	case objectExts[ext]:
		return kindObject
	case archiveExts[ext]:
		return kindArchive
	case sourceExts[ext]:
		return kindSource
	}
	return kindFunction
}

// extension returns what follows the last dot of the last path element, or
// "" when there is none.
func extension(name string) string {
	base := name[strings.LastIndexByte(name, '/')+1:]
	if i := strings.LastIndexByte(base, '.'); i > 0 {
		return base[i+1:]
	}
	return ""
}

// isSharedLibrary reports whether a file name ends in ".so" or in ".so"
// followed by version numbers (".so.6", ".so.1.2.3", ".so.*").
func isSharedLibrary(name string) bool {
	i := strings.LastIndex(name, ".so")
	if i <= 0 {
		return false
	}
	rest := name[i+len(".so"):]
	if rest == "" {
		return true
	}
	if rest[0] != '.' && rest[0] != '*' {
		return false
	}
	return strings.Trim(rest, ".0123456789*?") == ""
}

// stripVersion removes the version numbers of a shared library's file name:
// libc.so.6 gives libc.so.
func stripVersion(name string) string {
	if i := strings.LastIndex(name, ".so."); i > 0 && strings.Trim(name[i+4:], ".0123456789") == "" {
		return name[:i+3]
	}
	return name
}

// glob reports whether name matches pattern, where * matches any run of
// characters (slashes and colons included) and ? any one character. Every
// other character matches itself: there is no escape, so a * in a name
// (operator*) is matched by the wildcard too.
func glob(pattern, name string) bool {
	// The classic linear wildcard match: remember the last star and the
	// name position it was tried at, and backtrack there on a mismatch.
	p, n := 0, 0
	star, mark := -1, 0
	for n < len(name) {
		if p < len(pattern) {
			switch c := pattern[p]; c {
			case '*':
				if p == len(pattern)-1 {
					return true // (a last star matches the rest, whatever it is: /INC '*')
				}
				star, mark = p, n
				p++
				continue
			case '?':
				_, size := utf8.DecodeRuneInString(name[n:])
				p, n = p+1, n+size
				continue
			default:
				if c == name[n] {
					p, n = p+1, n+1
					continue
				}
			}
		}
		if star < 0 {
			return false
		}
		_, size := utf8.DecodeRuneInString(name[mark:])
		mark += size
		p, n = star+1, mark
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// matchPath matches a file-name pattern: against the base name when the
// pattern has no slash, else against the whole path or any of its trailing
// parts that start after a slash (src/parse.c matches /home/u/src/parse.c).
func matchPath(pattern, base, full string) bool {
	if !strings.Contains(pattern, "/") {
		return glob(pattern, base)
	}
	if glob(pattern, full) {
		return true
	}
	for i := 0; i < len(full); i++ {
		if full[i] == '/' && glob(pattern, full[i+1:]) {
			return true
		}
	}
	return false
}

// inRanges reports whether line falls in one of ranges; nil ranges hold
// every line.
func inRanges(ranges []lineRange, line int) bool {
	if ranges == nil {
		return true
	}
	for _, r := range ranges {
		if r.lo <= line && line <= r.hi {
			return true
		}
	}
	return false
}
