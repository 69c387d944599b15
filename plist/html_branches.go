package plist

import (
	"fmt"
	"strings"
)

// The HTML report's branch coverage (a line coverage profile prepared
// with branches): in the annotated source, each line with branches has
// genhtml's branch column, a "[ + - ]" per branch, in block order, its
// way to its target then on; "+" a way taken, "-" a way never taken
// where the line ran, "#" a way of a line that never ran. A line that
// ran and missed a way is marked "partial". The Files summary adds the
// ways, those taken and their share.

// htmlBranch is one branch of a line of the annotated source: its two
// ways, to its target then on.
type htmlBranch struct{ Ways [2]htmlWay }

// htmlWay is a way's mark ("+", "-" or "#"), its class ("taken", "not"
// or "unrun") and its title, which says which way it is and what it did.
type htmlWay struct{ Mark, Class, Title string }

// htmlLineBranches returns the counts of the branches of each source
// line, in block order; nil when the profile has no branches.
func (r htmlExport) htmlLineBranches() map[lineKey][][2]branchCount {
	br := branchView(r)
	if !br.present() {
		return nil
	}
	out := map[lineKey][][2]branchCount{}
	for k, branches := range br.byLine() {
		for _, i := range branches {
			out[k] = append(out[k], br.counts(i))
		}
	}
	return out
}

// htmlBranches returns the marks of a line's branches, and whether one
// of its ways was not taken though the branch was reached.
func htmlBranches(counts [][2]branchCount) (branches []htmlBranch, partial bool) {
	for block, c := range counts {
		var b htmlBranch
		for way, n := range c {
			w := &b.Ways[way]
			what := fmt.Sprintf("Branch %d, %s", block, branchWays[way])
			if way == 1 {
				what += " to the next instruction"
			}
			switch {
			case !n.reached:
				w.Mark, w.Class, w.Title = "#", "unrun", what+": the line never ran"
			case n.n == 0:
				w.Mark, w.Class, w.Title = "-", "not", what+": never taken"
				partial = true
			default:
				w.Mark, w.Class, w.Title = "+", "taken", fmt.Sprintf("%s: taken in %d %s", what, n.n, plural(n.n, "run"))
			}
		}
		branches = append(branches, b)
	}
	return branches, partial
}

// htmlBranchCell appends the branch column's cell of a line: each
// branch as "[ + - ]", each mark a span with its class and title.
func htmlBranchCell(b *strings.Builder, branches []htmlBranch) {
	b.WriteString(`<td class="br">`)
	for _, br := range branches {
		b.WriteString("[")
		for _, w := range br.Ways {
			b.WriteString(" <span")
			htmlAttr(b, "class", w.Class)
			htmlAttr(b, "title", w.Title)
			b.WriteByte('>')
			htmlText(b, w.Mark)
			b.WriteString("</span>")
		}
		b.WriteString(" ]")
	}
	b.WriteString("</td>")
}

// htmlFileBranches adds the ways of each branch to the tally of its
// line's source file (its recorded path, as htmlFiles keys them).
func (r htmlExport) htmlFileBranches(files map[string]*fileTally) {
	br := branchView(r)
	for i, b := range r.plan.Branches {
		if b.Line < 0 || b.Line >= len(r.plan.Lines) {
			continue
		}
		t := files[r.lineFile(&r.plan.Lines[b.Line])]
		if t == nil {
			continue
		}
		for _, c := range br.counts(i) {
			t.ways++
			if c.n > 0 {
				t.taken++
			}
		}
	}
}
