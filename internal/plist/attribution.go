package plist

import (
	"fmt"
	"strings"
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
func (r *report) attributionListing(p *printer, funcs []int) {
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

// callerNode is a caller in the tree of a function: its hits summed over
// the stacks it appears in, and its own callers.
type callerNode struct {
	fn       int
	hits     uint64
	children []*callerNode
}

// add counts hits for the caller fn among nodes, appending a node at its
// first appearance, and returns it.
func add(nodes *[]*callerNode, fn int, hits uint64) *callerNode {
	for _, n := range *nodes {
		if n.fn == fn {
			n.hits += hits
			return n
		}
	}
	n := &callerNode{fn: fn, hits: hits}
	*nodes = append(*nodes, n)
	return n
}

// callerTree writes the callers of function i, at most two levels: the
// immediate callers, each with its own callers below it. Stacks naming the
// same functions are merged; nodes appear in the order in which the stacks,
// highest hits first, first name them. The stack base is never shown.
func (r *report) callerTree(p *printer, i int) {
	var roots []*callerNode
	for _, k := range r.stacks[i] {
		s := &r.m.Stats.Stacks[k]
		n := len(s.Callers)
		if n == 0 || s.Callers[n-1] < 0 {
			continue
		}
		node := add(&roots, s.Callers[n-1], s.Hits)
		if n >= 2 && s.Callers[n-2] >= 0 {
			add(&node.children, s.Callers[n-2], s.Hits)
		}
	}
	step := max(r.o.TabWidth, 0)
	for _, node := range roots {
		r.callerLine(p, step, node)
		for _, child := range node.children {
			r.callerLine(p, 2*step, child)
		}
	}
}

// callerLine writes "%s (%s) %d time%s" indented.
func (r *report) callerLine(p *printer, indent int, n *callerNode) {
	p.text(fmt.Sprintf("%s%s %d %s", strings.Repeat(" ", indent), r.callerLabel(n.fn), n.hits, plural(n.hits, "time")))
}

// callerLabel is a caller's "name (source)".
func (r *report) callerLabel(fn int) string {
	if fn < 0 || fn >= len(r.names) {
		return stackBase
	}
	return r.names[fn] + r.source(fn)
}

// flatStacks writes the stacks of function i one by one, highest hits
// first: "Stack n; hits (% of the function's hits):" and the callers,
// outermost first, without the stack base.
func (r *report) flatStacks(p *printer, i int, hits uint64) {
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
