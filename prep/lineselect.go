package prep

import (
	"path"
	"strings"
)

// lineSelector applies a line profile's specifications line by line
// (lineMatches) and keeps what a line's answer is made of, since a
// program's lines share a few files and functions: whether a source
// specification names a file is found once per file in a row of lines of
// that file; the answer for a line of one function, in a file no source
// specification names, once per function; and where a line's answer is
// more than its function's, whether a specification matches a function
// once per pair. A million lines under the default specifications (some
// 200 of them) took otherwise seconds of globbing.
type lineSelector struct {
	patterns []pattern
	cands    []candidate
	// fn[f][pi] is whether patterns[pi] matches cands[f], for the
	// functions asked of: 0 not yet known, 1 yes, 2 no.
	fn map[int][]uint8
	// file is the file whose answers byFile holds: byFile[pi] is whether
	// source specification pi names it.
	file   string
	byFile []bool
	// named is whether any source specification names file; when none
	// does, the answer for a line of one function is the function's:
	// whole[f] keeps it (0 not known, 1 in, 2 out; 4 added once the
	// specifications that matched are marked).
	named bool
	whole []uint8
	// matched is whether each specification selected a line.
	matched []bool
}

// newLineSelector returns the selector of patterns over the functions
// cands, reporting matches into matched.
func newLineSelector(patterns []pattern, cands []candidate, matched []bool) *lineSelector {
	return &lineSelector{
		patterns: patterns,
		cands:    cands,
		fn:       map[int][]uint8{},
		byFile:   make([]bool, len(patterns)),
		whole:    make([]uint8, len(cands)),
		matched:  matched,
	}
}

// selects reports whether the specifications, in order, leave line l
// selected; mark records which matched it.
func (s *lineSelector) selects(l fileLine, mark bool) bool {
	if l.file != s.file || s.file == "" {
		s.fileAnswers(l.file)
	}
	if s.named || len(l.fns) != 1 {
		return s.apply(l, mark, true)
	}
	f := l.fns[0]
	w := s.whole[f]
	if w == 0 || (mark && w&4 == 0) {
		w = 2
		if s.apply(l, mark, false) {
			w = 1
		}
		if mark {
			w |= 4
		}
		s.whole[f] = w
	}
	return w&3 == 1
}

// apply applies the specifications in order to line l, keeping each
// function's matches when memo is set.
func (s *lineSelector) apply(l fileLine, mark, memo bool) bool {
	in := true
	for pi := range s.patterns {
		p := &s.patterns[pi]
		switch {
		case p.op == ExcludeAll:
			in = false
		case s.lineMatches(pi, l, memo):
			s.matched[pi] = s.matched[pi] || mark
			in = p.op == Include
		}
	}
	return in
}

// fileAnswers finds which source specifications name file.
func (s *lineSelector) fileAnswers(file string) {
	s.file = file
	s.named = false
	low := strings.ToLower(file)
	for pi := range s.patterns {
		p := &s.patterns[pi]
		s.byFile[pi] = p.kind == kindSource && p.lined && matchPath(strings.ToLower(p.glob), path.Base(low), low)
		s.named = s.named || s.byFile[pi]
	}
}

// lineMatches reports whether specification pi selects line l, as the original's line profiles were selected: by a source
// file with line ranges (a bare file name matches no line; file names
// match whatever their case, as they did on Windows), an object module or
// a library. Any other specification selects the lines of the functions
// it selects in a function profile, whose code holds them: a function's
// name, a Go package, a Rust crate. So one rule leaves the same code out
// of both kinds of profile, profiler.ini's defaults among them (the Go
// runtime's lines were all kept: 32,000 sites in gofmt). The original's
// line profiles ignored a function's name (lcount/sel13: /EXCALL /INC
// _square left no line, PRF1622); here it selects square's lines.
func (s *lineSelector) lineMatches(pi int, l fileLine, memo bool) bool {
	p := &s.patterns[pi]
	if p.kind == kindSource {
		return s.byFile[pi] && inRanges(p.ranges, l.line)
	}
	for _, f := range l.fns {
		if (memo && s.fnMatches(pi, f)) || (!memo && p.matches(&s.cands[f])) {
			return true
		}
	}
	return false
}

// fnMatches reports whether specification pi matches function f, from
// the memo when it was asked before.
func (s *lineSelector) fnMatches(pi, f int) bool {
	known := s.fn[f]
	if known == nil {
		known = make([]uint8, len(s.patterns))
		s.fn[f] = known
	}
	switch known[pi] {
	case 1:
		return true
	case 2:
		return false
	}
	m := s.patterns[pi].matches(&s.cands[f])
	known[pi] = 2
	if m {
		known[pi] = 1
	}
	return m
}
