package prep

import (
	"cmp"
	"iter"
	"path"
	"slices"
	"strings"
)

// maxNear is how many names a hint suggests for a name that matched
// nothing ("did you mean is_prime?").
const maxNear = 3

// nearNames returns the names, of those names yields, nearest to typed, a
// name that matched none of them: at most maxNear, nearest first (then in
// byte order), each within nearLimit(typed) edits of it, none more than
// one edit farther than the nearest. Case is ignored, so that a name typed
// in another case is suggested first.
func nearNames(typed string, names iter.Seq[string]) []string {
	limit := nearLimit(typed)
	want := strings.ToLower(typed)
	type near struct {
		name string
		dist int
	}
	var found []near
	seen := map[string]bool{}
	for n := range names {
		if n == typed || seen[n] || abs(len(n)-len(typed)) > limit {
			continue
		}
		seen[n] = true
		if d := editDistance(want, strings.ToLower(n), limit); d <= limit {
			found = append(found, near{n, d})
		}
	}
	slices.SortFunc(found, func(a, b near) int {
		return cmp.Or(cmp.Compare(a.dist, b.dist), strings.Compare(a.name, b.name))
	})
	var out []string
	for _, f := range found {
		if len(out) == maxNear || f.dist > found[0].dist+1 {
			break
		}
		out = append(out, f.name)
	}
	return out
}

// nearLimit is how many edits a suggestion may be from typed: one for
// names of up to four bytes, one more for every three more, at most four.
func nearLimit(typed string) int {
	return min(4, max(1, (len(typed)+1)/3))
}

// editDistance returns the optimal string alignment distance of a and b:
// the insertions, deletions, substitutions and swaps of two neighbouring
// bytes that turn a into b (a swap is one typing mistake, gdc for gcd). It
// returns limit+1 as soon as the distance is sure to exceed limit.
func editDistance(a, b string, limit int) int {
	// Three rows of the table: i-2, i-1 and i.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		best := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
			best = min(best, cur[j])
		}
		if best > limit {
			return limit + 1
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// hasWildcard reports whether a specification's name has * or ?: a glob
// that matched nothing gets no suggestion.
func hasWildcard(glob string) bool { return strings.ContainsAny(glob, "*?") }

// nearSpec returns the names of cands near the name of p, a specification
// that matched none of them, by what p names: functions (any of their
// forms), object modules, source files (by base name, or path when p has
// a directory), shared libraries. A glob, a static archive, gets none.
func nearSpec(p *pattern, cands []candidate) []string {
	if hasWildcard(p.glob) {
		return nil
	}
	return nearNames(p.glob, func(yield func(string) bool) {
		for i := range cands {
			c := &cands[i]
			var names []string
			switch p.kind {
			case kindFunction:
				names = c.names
			case kindObject:
				names = []string{c.source}
			case kindSource:
				if c.declFile == "" {
					continue
				}
				if strings.Contains(p.glob, "/") {
					names = []string{c.declFile}
				} else {
					names = []string{path.Base(c.declFile)}
				}
			case kindLibrary:
				if !strings.Contains(p.glob, "/") {
					names = []string{c.module}
				} else {
					names = []string{c.modulePath}
				}
			}
			for _, n := range names {
				if !yield(n) {
					return
				}
			}
		}
	})
}
