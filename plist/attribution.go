package plist

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/sourceprofiler/sprof/datafile"
)

// callerDataTitle heads the attribution listings of function counting and
// coverage (original.md §5.7).
const callerDataTitle = " Functions with Caller Data"

// callerDataHeading is callerDataTitle underlined.
var callerDataHeading = []string{callerDataTitle, strings.Repeat("-", len(callerDataTitle))}

// attributionListing writes a module's caller listing, which replaces its
// counting table in a profile made with /AT: per function, in the report's
// order and filtered by /C, its line, then its callers as a tree (default)
// or its stacks one by one (/FLAT), then an empty line.
func (r funcListing) attributionListing(p *printer, funcs []int) {
	total, _ := r.totals(r.allItems())
	for _, i := range funcs {
		h := r.hits(i)
		if !r.listed(h) {
			continue
		}
		p.text(fmt.Sprintf("%s%s %8d %s (%s%%):", r.names[i], r.source(i), h, plural(h, "hit"),
			fixedWidth(percent(float64(h), float64(total)), 5, 1)))
		if r.o.Flat {
			r.flatStacks(p, i, h)
		} else {
			r.callerTree(p, i)
		}
		p.blank()
	}
}

// callerNode is a caller in the tree of a function: its hits and times
// summed over the stacks it appears in, and its own callers.
type callerNode struct {
	fn         int
	hits       uint64
	time, kids int64
	children   []*callerNode
}

// add counts stack s for the caller fn among nodes, appending a node at
// its first appearance, and returns it.
func add(nodes *[]*callerNode, fn int, s *datafile.Stack) *callerNode {
	var n *callerNode
	for _, have := range *nodes {
		if have.fn == fn {
			n = have
			break
		}
	}
	if n == nil {
		n = &callerNode{fn: fn}
		*nodes = append(*nodes, n)
	}
	n.hits += s.Hits
	n.time += s.Time
	n.kids += s.ChildTime
	return n
}

// callerNodes builds the callers of function i, at most two levels: the
// immediate callers, each with its own callers below it. Stacks naming the
// same functions are merged; nodes appear in the order in which the
// stacks, in the listing's order, first name them. The stack base is
// never shown.
func (r funcListing) callerNodes(i int) []*callerNode {
	var roots []*callerNode
	for _, k := range r.listingStacks(i) {
		s := &r.m.Stats.Stacks[k]
		n := len(s.Callers)
		if n == 0 || s.Callers[n-1] < 0 {
			continue
		}
		node := add(&roots, s.Callers[n-1], s)
		if n >= 2 && s.Callers[n-2] >= 0 {
			add(&node.children, s.Callers[n-2], s)
		}
	}
	return roots
}

// listingStacks returns the stacks of function i in the order of the
// listing's sort: most hits first for counting and coverage; for timing
// most function time (/ST, /SN), function+child time (/STC) or hits (/SC).
// Stacks of equal keys keep their recorded order (the original's order
// among them came from its C library's qsort; original.md §5.7.1).
func (r funcListing) listingStacks(i int) []int {
	if !r.hasTimes() || r.sort == SortTime || r.sort == SortName {
		return r.stacks[i] // already in that order
	}
	all := r.m.Stats.Stacks
	ks := slices.Clone(r.stacks[i])
	slices.SortStableFunc(ks, func(a, b int) int {
		if r.sort == SortChildTime {
			return cmp.Compare(all[b].ChildTime, all[a].ChildTime)
		}
		return cmp.Compare(all[b].Hits, all[a].Hits)
	})
	return ks
}

// callerTree writes the callers of function i as a tree, in the counting
// listing's layout.
func (r funcListing) callerTree(p *printer, i int) {
	step := max(r.o.TabWidth, 0)
	for _, node := range r.callerNodes(i) {
		r.callerLine(p, step, node)
		for _, child := range node.children {
			r.callerLine(p, 2*step, child)
		}
	}
}

// callerLine writes "%s (%s) %d time%s" indented.
func (r funcListing) callerLine(p *printer, indent int, n *callerNode) {
	p.text(fmt.Sprintf("%s%s %d %s", strings.Repeat(" ", indent), r.callerLabel(n.fn), n.hits, plural(n.hits, "time")))
}

// callerLabel is a caller's "name (source)".
func (r funcListing) callerLabel(fn int) string {
	if fn < 0 || fn >= len(r.names) {
		return stackBase
	}
	return r.names[fn] + r.source(fn)
}

// flatStacks writes the stacks of function i one by one, highest hits
// first: "Stack n; hits (% of the function's hits):" and the callers,
// outermost first, without the stack base.
func (r funcListing) flatStacks(p *printer, i int, hits uint64) {
	step := max(r.o.TabWidth, 0)
	stacks := r.stacks[i]
	p.text(fmt.Sprintf("%d %s:", len(stacks), plural(uint64(len(stacks)), "stack")))
	for n, k := range stacks {
		s := &r.m.Stats.Stacks[k]
		p.text(fmt.Sprintf("%sStack %d; %d %s (%s%%):", strings.Repeat(" ", step), n+1, s.Hits,
			plural(s.Hits, "hit"), fixedWidth(percent(float64(s.Hits), float64(hits)), 5, 1)))
		for _, c := range s.Callers {
			if c >= 0 {
				p.text(strings.Repeat(" ", 2*step) + r.callerLabel(c))
			}
		}
	}
}

// plural returns word, with an "s" unless n is 1.
func plural(n uint64, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// The two-column table of a timing profile made with /AT (original.md
// §5.7.3): names on the left, figures on the right of a bar.
const (
	timingCallersTitle = " Functions and Callers"
	timingCallersFunc  = "    Func      Func+Child        Hit"
	timingCallersTime  = "    Time   %     Time     %     Count"
	// timingCallersLeft is the left column's width without /PW.
	timingCallersLeft = 35
)

// twoColumns lays out the rows of the timing callers table: the left
// column is L characters, the right R (unlimited without /PW), each cell
// cut with a "*" when it does not fit.
type twoColumns struct {
	left, right int
}

func (r funcListing) twoColumns() twoColumns {
	if !r.o.PageWidthGiven {
		return twoColumns{left: timingCallersLeft, right: -1}
	}
	w := max(r.o.PageWidth, 0)
	return twoColumns{left: w/2 - 1, right: w / 2}
}

// row is one line of the table: the left cell, padded to L when its text
// is shorter than L-1 characters, else its first L-1 characters and "*";
// the bar; the right cell, whole when it has at most R-1 characters, else
// its first R-1 and "*". measure is the text whose length decides the
// right cell's cut (the heading's format string, see timingCallersHeading).
func (c twoColumns) row(left, right string) string {
	return c.leftCell(left) + "|" + c.rightCell(right, right)
}

func (c twoColumns) leftCell(s string) string {
	n := utf8.RuneCountInString(s)
	if n < c.left-1 {
		return s + strings.Repeat(" ", c.left-n)
	}
	return cutRunes(s, max(c.left-1, 0)) + "*"
}

func (c twoColumns) rightCell(s, measure string) string {
	if c.right < 0 || utf8.RuneCountInString(measure) <= c.right-1 {
		return s
	}
	cut := cutRunes(measure, max(c.right-1, 0))
	return strings.ReplaceAll(cut, "%%", "%") + "*"
}

// timingCallersHeading is the table's heading and the empty line after it.
// The second line's cut is decided and made on its printf format, in which
// each "%" is "%%" (so the line is cut one or two characters earlier than
// its text would be), as the original did.
func (r funcListing) timingCallersHeading() []string {
	c := r.twoColumns()
	format := strings.ReplaceAll(timingCallersTime, "%", "%%")
	return []string{
		c.row("", timingCallersFunc),
		c.leftCell(timingCallersTitle) + "|" + c.rightCell(timingCallersTime, format),
		"",
	}
}

// timingCallerListing writes a timing profile's callers table, which
// replaces its timing table with /AT or sampled stacks: per function, in
// the report's order and filtered by /C, its row (the timing table's
// figures), then its callers as a tree (default) or its stacks one by
// one (/FLAT), then an empty line. A caller's figures are the part of
// the function's times and hits under that caller, its percentages those
// of the function's own times.
func (r funcListing) timingCallerListing(p *printer, funcs []int) {
	c := r.twoColumns()
	inside := float64(shareBase(r.m))
	step := max(r.o.TabWidth, 0)
	for _, i := range funcs {
		h := r.hits(i)
		if !r.listed(r.keptBy(i)) {
			continue
		}
		ft, ct := r.funcTime(i), r.childTime(i)
		p.text(c.row(r.names[i]+r.source(i), timingFigures(ft, ct, h, float64(ft), float64(ct), inside)))
		if r.o.Flat {
			stacks := r.listingStacks(i)
			p.text(c.row(fmt.Sprintf("%d %s:", len(stacks), plural(uint64(len(stacks)), "stack")), ""))
			for n, k := range stacks {
				s := &r.m.Stats.Stacks[k]
				p.text(c.row(fmt.Sprintf("%sStack %d", strings.Repeat(" ", step), n+1),
					r.stackFigures(s.Time, s.ChildTime, s.Hits, float64(ft), float64(ct))))
				for _, caller := range s.Callers {
					if caller >= 0 {
						p.text(c.row(strings.Repeat(" ", 2*step)+r.callerLabel(caller), ""))
					}
				}
			}
		} else {
			for _, node := range r.callerNodes(i) {
				p.text(c.row(strings.Repeat(" ", step)+r.callerLabel(node.fn),
					r.stackFigures(node.time, node.kids, node.hits, float64(ft), float64(ct))))
				for _, child := range node.children {
					p.text(c.row(strings.Repeat(" ", 2*step)+r.callerLabel(child.fn),
						r.stackFigures(child.time, child.kids, child.hits, float64(ft), float64(ct))))
				}
			}
		}
		p.blank()
	}
}

// stackFigures is timingFigures of a caller stack's row, its shares of
// its function's times; sampled stacks count no calls: their rows have
// no hits.
func (r funcListing) stackFigures(t, kids int64, hits uint64, ofTime, ofKids float64) string {
	f := timingFigures(t, kids, hits, ofTime, ofKids, -1)
	if r.m.SampledStacks() {
		f = strings.TrimRight(f[:len(f)-5], " ")
	}
	return f
}

// timingFigures is the right cell "%8.3f %5.1f %8.3f %5.1f %5d": function
// time and function+child time with their percentages, of inside (the
// time inside profiled functions) when it is not negative, else of ofTime
// and ofKids, and hits.
func timingFigures(t, kids int64, hits uint64, ofTime, ofKids, inside float64) string {
	if inside >= 0 {
		ofTime, ofKids = inside, inside
	}
	return fmt.Sprintf("%s %s %s %s %5d",
		fixedWidth(millis(t), 8, 3), fixedWidth(percent(float64(t), ofTime), 5, 1),
		fixedWidth(millis(kids), 8, 3), fixedWidth(percent(float64(kids), ofKids), 5, 1), hits)
}
