package prep

import (
	"math/bits"
	"path"
	"strings"
)

// lineSelector applies a line profile's specifications line by line, as
// the original's line profiles were selected: by a source file with line
// ranges (a bare file name matches no line; file names match whatever
// their case, as they did on Windows), an object module or a library. Any
// other specification selects the lines of the functions it selects in a
// function profile, whose code holds them: a function's name, a Go
// package, a Rust crate. So one rule leaves the same code out of both
// kinds of profile, profiler.ini's defaults among them (the Go runtime's
// lines were all kept: 32,000 sites in gofmt). The original's line
// profiles ignored a function's name (lcount/sel13: /EXCALL /INC _square
// left no line, PRF1622); here it selects square's lines.
//
// The specifications in order leave a line selected unless the last of
// those that match it, or a /EXCALL after them, leaves it out. Those that
// match a line are the union of those that match one of its functions and
// the source files with ranges that hold it: each function's set is found
// once, and each file's when a row of lines of it begins, as sets of bits.
// A million lines under the default specifications (some 200 of them) took
// seconds of globbing otherwise, and the go command's lines, many of them
// in several functions (inlined copies), a third of a second more.
type lineSelector struct {
	patterns []pattern
	cands    []candidate
	words    int // of a set: one bit per specification
	// fnSets[f*words:] is the set of specifications matching cands[f],
	// once known[f].
	fnSets []uint64
	known  []bool
	// file is the file of the last line, named those of its source
	// specifications with ranges that name it.
	file  string
	named []int
	// all is /EXCALL's set; matched, the specifications that selected a
	// line (marked), and line a line's set, reused.
	all, matched, line []uint64
	// matchedOut is told of matched at the end (done).
	matchedOut []bool
}

// newLineSelector returns the selector of patterns over the functions
// cands, reporting the specifications that matched lines into matched.
func newLineSelector(patterns []pattern, cands []candidate, matched []bool) *lineSelector {
	words := (len(patterns) + 63) / 64
	s := &lineSelector{
		patterns:   patterns,
		cands:      cands,
		words:      words,
		fnSets:     make([]uint64, words*len(cands)),
		known:      make([]bool, len(cands)),
		all:        make([]uint64, words),
		matched:    make([]uint64, words),
		line:       make([]uint64, words),
		matchedOut: matched,
	}
	for pi := range patterns {
		if patterns[pi].op == ExcludeAll {
			s.all[pi/64] |= 1 << (pi % 64)
		}
	}
	return s
}

// selects reports whether the specifications leave line l selected;
// mark records which matched it.
func (s *lineSelector) selects(l fileLine, mark bool) bool {
	if l.file != s.file || s.file == "" {
		s.fileAnswers(l.file)
	}
	set := s.line
	clear(set)
	for _, f := range l.fns {
		for w, b := range s.fnSet(f) {
			set[w] |= b
		}
	}
	for _, pi := range s.named {
		if inRanges(s.patterns[pi].ranges, l.line) {
			set[pi/64] |= 1 << (pi % 64)
		}
	}
	if mark {
		for w, b := range set {
			s.matched[w] |= b
		}
	}
	// The last specification that matches, or the last /EXCALL.
	for w := s.words - 1; w >= 0; w-- {
		if d := set[w] | s.all[w]; d != 0 {
			pi := w*64 + 63 - bits.LeadingZeros64(d)
			return s.patterns[pi].op == Include
		}
	}
	return true
}

// done reports the specifications that matched a line marked into the
// matched given to newLineSelector.
func (s *lineSelector) done() {
	for pi := range s.patterns {
		if s.matched[pi/64]&(1<<(pi%64)) != 0 {
			s.matchedOut[pi] = true
		}
	}
}

// fileAnswers finds which source specifications with ranges name file.
func (s *lineSelector) fileAnswers(file string) {
	s.file = file
	s.named = s.named[:0]
	low := strings.ToLower(file)
	for pi := range s.patterns {
		p := &s.patterns[pi]
		if p.op != ExcludeAll && p.kind == kindSource && p.lined && matchPath(strings.ToLower(p.glob), path.Base(low), low) {
			s.named = append(s.named, pi)
		}
	}
}

// fnSet returns the set of the function specifications (all but source
// files) that match function f.
func (s *lineSelector) fnSet(f int) []uint64 {
	set := s.fnSets[f*s.words : (f+1)*s.words]
	if !s.known[f] {
		s.known[f] = true
		for pi := range s.patterns {
			if p := &s.patterns[pi]; p.op != ExcludeAll && p.kind != kindSource && p.matches(&s.cands[f]) {
				set[pi/64] |= 1 << (pi % 64)
			}
		}
	}
	return set
}
