package prep

import (
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"testing"
)

// TestLineSelectorAsPlain: the selector, with what it keeps per file and
// per function, gives every line the answer and marks the matched
// specifications as applying the specifications line by line without
// keeping anything does, for random lines and random sets of
// specifications of every kind (up to 200, as profiler.ini's defaults),
// asked in runs of one file and out of order, marking or not.
func TestLineSelectorAsPlain(t *testing.T) {
	cands := testCandidates()
	texts := []string{"main", "fib", "Counter::*", "*.o", "util.o", "prog.c(10-25)", "/SRC/PROG.C(30-45)", "util.cpp(1-5)",
		"foo.c(1-9)", "prog.c", "libfoo.so", "libfoo.so.*", "*", "foo_*", "stl_vector.h(980-990)"}
	files := []string{"/src/prog.c", "/src/lib/util.cpp", "/src/foo.c", "/usr/include/c++/12/bits/stl_vector.h", ""}
	rng := rand.New(rand.NewPCG(7, 36))
	for round := range 300 {
		var patterns []pattern
		n := 1 + rng.IntN(6)
		if round%5 == 0 {
			n = 60 + rng.IntN(140) // (sets of several words)
		}
		for range n {
			s := Spec{Op: SpecOp(rng.IntN(3)), Text: texts[rng.IntN(len(texts))]}
			if rng.IntN(8) != 0 && s.Op == ExcludeAll {
				s.Op = Include
			}
			p, err := parseSpec(s)
			if err != nil {
				t.Fatal(err)
			}
			patterns = append(patterns, p)
		}
		gotMatched, wantMatched := make([]bool, len(patterns)), make([]bool, len(patterns))
		sel := newLineSelector(patterns, cands, gotMatched)
		file := files[rng.IntN(len(files))]
		for range 20 + rng.IntN(40) {
			if rng.IntN(10) == 0 {
				file = files[rng.IntN(len(files))]
			}
			l := fileLine{file: file, line: 1 + rng.IntN(60), fns: []int{rng.IntN(len(cands))}}
			if rng.IntN(6) == 0 {
				l.fns = append(l.fns, rng.IntN(len(cands)))
			}
			mark := rng.IntN(2) != 0
			want := plainSelects(patterns, cands, l, mark, wantMatched)
			if got := sel.selects(l, mark); got != want {
				t.Fatalf("round %d: line %+v of %q: selected %v, want %v", round, l, specTexts(patterns), got, want)
			}
		}
		sel.done()
		if !slices.Equal(gotMatched, wantMatched) {
			t.Fatalf("round %d: %q matched %v, want %v", round, specTexts(patterns), gotMatched, wantMatched)
		}
	}
}

// plainSelects applies patterns to line l as the original rule says,
// keeping nothing: the reference.
func plainSelects(patterns []pattern, cands []candidate, l fileLine, mark bool, matched []bool) bool {
	in := true
	for pi, p := range patterns {
		var hit bool
		switch {
		case p.op == ExcludeAll:
			in = false
			continue
		case p.kind == kindSource:
			low := strings.ToLower(l.file)
			hit = p.lined && matchPath(strings.ToLower(p.glob), path.Base(low), low) && inRanges(p.ranges, l.line)
		default:
			hit = slices.ContainsFunc(l.fns, func(f int) bool { return p.matches(&cands[f]) })
		}
		if hit {
			matched[pi] = matched[pi] || mark
			in = p.op == Include
		}
	}
	return in
}

func specTexts(patterns []pattern) []string {
	var s []string
	for _, p := range patterns {
		s = append(s, p.op.String()+" "+p.shown)
	}
	return s
}
