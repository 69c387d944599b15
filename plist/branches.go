package plist

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/sourceprofiler/sprof/datafile"
)

// Branch coverage (line coverage prepared with branches: Plan.Branches,
// Stats.Branches). Each conditional branch of a line's code goes two
// ways, to its target or on to the next instruction; each way's count
// is the runs that went that way. The reports number the branches of
// one source line from 0 in address order (their "block", as lcov
// calls it) and show for each way whether it was taken. A plan made
// before branches were recorded has none, and every report is then as
// it was.

// branchWays are the two ways of a branch, in the order of its counts in
// Stats.Branches and of lcov's branch numbers: to its target, then on.
var branchWays = [2]string{"to its target", "on"}

// branchCount is one way's count: the runs that went that way, and
// whether the branch's code ran at all (lcov's "-" when it did not).
type branchCount struct {
	n       uint64
	reached bool
}

// add adds u as lcov -a adds two counts: "-" and a number is the number,
// "-" and "-" stays "-".
func (c *branchCount) add(u branchCount) {
	c.n += u.n
	c.reached = c.reached || u.reached
}

// lcov is the count as a BRDA record writes it.
func (c branchCount) lcov() string {
	if !c.reached {
		return "-"
	}
	return fmt.Sprint(c.n)
}

// branchView reads a report's branches, for the listing, the page and
// the lcov and JSON exports.
type branchView struct{ *report }

// present reports whether the profile has branch coverage.
func (r branchView) present() bool { return len(r.plan.Branches) > 0 }

// counts returns the two ways' counts of branch i. A branch was
// reached where its line ran, and where it went either way (a count the
// runs made outweighs a line count that says otherwise). A count missing
// from Stats.Branches (a database whose counts are short, which Validate
// refuses) reads as 0.
func (r branchView) counts(i int) [2]branchCount {
	var out [2]branchCount
	reached := false
	if i >= 0 && i < len(r.plan.Branches) {
		reached = r.hits(r.plan.Branches[i].Line) > 0
	}
	for w := range out {
		out[w].n = at(r.m.Stats.Branches, 2*i+w)
		reached = reached || out[w].n > 0
	}
	out[0].reached, out[1].reached = reached, reached
	return out
}

// branchBlocks returns the block number of each branch of the plan: its
// place, from 0, among the branches of the same source line, keyed by
// key of its line (Plan.Lines index), in the plan's order (by address
// within each module). A branch whose line is not in the plan is -1.
func branchBlocks[K comparable](r *report, key func(line int) K) []int {
	blocks := make([]int, len(r.plan.Branches))
	next := map[K]int{}
	for i, b := range r.plan.Branches {
		if b.Line < 0 || b.Line >= len(r.plan.Lines) {
			blocks[i] = -1
			continue
		}
		k := key(b.Line)
		blocks[i] = next[k]
		next[k]++
	}
	return blocks
}

// byLine returns, per source line of the plan (lineKey), the indices of
// its branches in block order.
func (r branchView) byLine() map[lineKey][]int {
	out := map[lineKey][]int{}
	for i, b := range r.plan.Branches {
		if b.Line < 0 || b.Line >= len(r.plan.Lines) {
			continue
		}
		l := &r.plan.Lines[b.Line]
		k := lineKey{l.Module, l.File, l.Line}
		out[k] = append(out[k], i)
	}
	return out
}

// totals returns the ways of every branch of the plan, and those taken
// (a count above 0).
func (r branchView) totals() (ways, taken int) {
	for i := range r.plan.Branches {
		for _, c := range r.counts(i) {
			ways++
			if c.n > 0 {
				taken++
			}
		}
	}
	return ways, taken
}

// branchSection writes, after the listing of a profile with branches,
// the lines whose branches did not all go both ways, by module, file and
// line, each with what its branches missed, then how many of the ways
// were taken:
//
//	Branches Not Taken Both Ways
//	----------------------------
//	    lines.c:14   branch 0 never on, branch 1 never to its target
//	    lines.c:15   never ran (1 branch)
//
//	    6 of 12 branch ways taken (50.0%)
//
// A line of a module other than the program's names its module after
// it, as the page's headings do: "crlf.c:3 (libl.so)".
func (r lineListing) branchSection(p *printer) {
	p.heading = nil // (the table's heading of /SC is not repeated here)
	br := branchView(r)
	byLine := br.byLine()
	var where, what []string
	for mod := range r.plan.Modules {
		seen := map[lineKey]bool{}
		for _, i := range r.linesInOrder(r.lines[mod]) {
			l := &r.plan.Lines[i]
			k := lineKey{l.Module, l.File, l.Line}
			if seen[k] {
				continue
			}
			seen[k] = true
			if missed := br.missed(byLine[k]); missed != "" {
				loc := fmt.Sprintf("%s:%d", r.fileName(mod, l.File), l.Line)
				if mod > 0 {
					loc += " (" + r.moduleName(mod) + ")"
				}
				where, what = append(where, loc), append(what, missed)
			}
		}
	}
	p.blank()
	p.title("Branches Not Taken Both Ways")
	width := 0
	for _, s := range where {
		width = max(width, utf8.RuneCountInString(s))
	}
	for k, s := range where {
		p.text("    " + s + strings.Repeat(" ", width-utf8.RuneCountInString(s)) + "   " + what[k])
	}
	if len(where) == 0 {
		p.text("    Every branch went both ways.")
	}
	ways, taken := br.totals()
	p.blank()
	p.text(fmt.Sprintf("    %d of %d branch %s taken (%s%%)", taken, ways, plural(uint64(ways), "way"),
		fixed(percent(float64(taken), float64(ways)), 1)))
}

// missed says what the branches of one line (their indices, in block
// order) missed: "" when each went both ways, "never ran (N
// branches)" when none was reached, else for each branch that missed a
// way "branch B never to its target", "branch B never on", "branch B
// went neither way" (its line ran, the branch did not) or "branch B
// never ran".
func (r branchView) missed(branches []int) string {
	var parts []string
	reached := false
	for block, i := range branches {
		c := r.counts(i)
		reached = reached || c[0].reached
		var s string
		switch {
		case !c[0].reached:
			s = "never ran"
		case c[0].n == 0 && c[1].n == 0:
			s = "went neither way"
		case c[0].n == 0:
			s = "never " + branchWays[0]
		case c[1].n == 0:
			s = "never " + branchWays[1]
		default:
			continue
		}
		parts = append(parts, fmt.Sprintf("branch %d %s", block, s))
	}
	if len(parts) > 0 && !reached {
		if len(branches) == 1 {
			return "never ran (1 branch)"
		}
		return fmt.Sprintf("never ran (%d branches)", len(branches))
	}
	return strings.Join(parts, ", ")
}

// withoutUnprobed returns m without the branches that no run of it
// counted (datafile.Stats.Unprobed: no jump of PROFILE's fitted at the
// branch, warning PRF4687), whose ways say nothing: m itself where
// there are none. A branch some runs counted keeps the ways of those.
func withoutUnprobed(m *datafile.Merged) *datafile.Merged {
	un, runs := m.Stats.Unprobed, uint64(len(m.Runs))
	if len(un) != len(m.Plan.Branches) || runs == 0 || !slices.ContainsFunc(un, func(n uint64) bool { return n >= runs }) {
		return m
	}
	c := *m
	c.Plan.Branches, c.Stats.Branches, c.Stats.Unprobed = nil, nil, nil
	for i, b := range m.Plan.Branches {
		if un[i] >= runs || 2*i+1 >= len(m.Stats.Branches) {
			continue
		}
		c.Plan.Branches = append(c.Plan.Branches, b)
		c.Stats.Branches = append(c.Stats.Branches, m.Stats.Branches[2*i], m.Stats.Branches[2*i+1])
	}
	return &c
}
