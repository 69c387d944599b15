package plist

import (
	"bufio"
	"cmp"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sourceprofiler/sprof/internal/prf"
)

// foldedStack is one line of folded stacks: the functions of a call stack
// (indices of Plan.Funcs), outermost first and the function itself last,
// and its value.
type foldedStack struct {
	frames []int
	value  int64
}

// foldedStacks returns the profile's call stacks as flame graphs take
// them: with /AT one per recorded stack (its profiled callers as deep as
// the profile recorded them, the stack base left out, then its function),
// its value the stack's hits, or for timing and sampling its function's
// own time in it; each function that no stack records alone, with
// mainValue's figure. Function profiles only. It is the one reading of
// the recorded stacks that the flame graph (FormatHTML) and the folded
// stacks (FormatFolded) share.
func (r *report) foldedStacks() []foldedStack {
	var out []foldedStack
	withStacks := make([]bool, len(r.plan.Funcs))
	for _, c := range r.callStacks() {
		withStacks[c.funcs[len(c.funcs)-1]] = true
		v := int64(c.hits)
		if r.hasTimes() {
			v = c.time
		}
		out = append(out, foldedStack{c.funcs, v})
	}
	for i := range r.plan.Funcs {
		if !withStacks[i] {
			out = append(out, foldedStack{[]int{i}, r.mainValue(i)})
		}
	}
	return out
}

// flameNode is a frame of a flame graph: a function reached through the
// frames below it, and the value of the stacks that pass through it.
type flameNode struct {
	fn       int // -1 for the root, "all"
	value    int64
	children []*flameNode
	// index finds a child by function once there are many (the root of
	// a large program has one per function).
	index map[int]*flameNode
}

// flameIndexAfter is how many children a node scans before it indexes
// them.
const flameIndexAfter = 16

// child returns n's child for function fn, made at its first use.
func (n *flameNode) child(fn int) *flameNode {
	if n.index != nil {
		if c := n.index[fn]; c != nil {
			return c
		}
	} else {
		for _, c := range n.children {
			if c.fn == fn {
				return c
			}
		}
	}
	c := &flameNode{fn: fn}
	n.children = append(n.children, c)
	switch {
	case n.index != nil:
		n.index[fn] = c
	case len(n.children) > flameIndexAfter:
		n.index = make(map[int]*flameNode, 2*len(n.children))
		for _, c := range n.children {
			n.index[c.fn] = c
		}
	}
	return c
}

// The flame graph's geometry, in the SVG's user units (pixels at its
// natural size): frames of flameRow height, laid out on flameWidth, each
// label in a monospace font of flameCharWidth a character.
const (
	flameWidth     = 1200
	flameRow       = 18
	flameMargin    = 4
	flameCharWidth = 7.2
	// flameMinWidth is the narrowest frame drawn: narrower ones (and the
	// frames above them) are left out, and counted.
	flameMinWidth = 0.5
)

// htmlFlame is a flame graph laid out for the page.
type htmlFlame struct {
	Width, Height int
	Frames        []htmlFrame
	// Total is the value of the root, all the stacks' ("12.345 ms").
	Total string
	// Hidden is the number of frames too narrow to draw.
	Hidden int
}

// htmlFrame is a rectangle of the flame graph with its label and tooltip.
type htmlFrame struct {
	Name, Title, Label, Fill string
	X, Y, W, TX, TY          string
	Href                     string // its function's callers and callees, where it has them
}

// flameGraph lays out the flame graph of the folded stacks: the root
// ("all") at the bottom, each frame above its caller, as wide as the
// share of the value of the stacks through it; siblings from left to
// right by name. Values are nanoseconds. A function's frames link to its
// callers and callees where linked has it. It returns nil when the
// stacks add up to nothing.
func (r htmlExport) flameGraph(stacks []foldedStack, linked map[int]bool) *htmlFlame {
	root := &flameNode{fn: -1}
	depth := 0
	for _, s := range stacks {
		if s.value <= 0 {
			continue
		}
		root.value += s.value
		n := root
		for _, fn := range s.frames {
			n = n.child(fn)
			n.value += s.value
		}
		depth = max(depth, len(s.frames))
	}
	if root.value <= 0 {
		return nil
	}
	g := &htmlFlame{Width: flameWidth, Height: (depth+1)*flameRow + 2*flameMargin,
		Total: fixed(millis(root.value), 3) + " ms"}
	scale := float64(flameWidth-2*flameMargin) / float64(root.value)
	names := map[int]string{-1: "all"} // each function's, made once
	nameOf := func(fn int) string {
		s, ok := names[fn]
		if !ok {
			s = r.exportName(fn)
			names[fn] = s
		}
		return s
	}
	var draw func(n *flameNode, x float64, level int)
	draw = func(n *flameNode, x float64, level int) {
		w := float64(n.value) * scale
		if w < flameMinWidth {
			g.Hidden += n.count()
			return
		}
		name := nameOf(n.fn)
		y := float64(g.Height - flameMargin - (level+1)*flameRow)
		share := fixed(percent(float64(n.value), float64(root.value)), 1)
		f := htmlFrame{Name: name, Fill: flameColour(name, n.fn < 0),
			Title: fmt.Sprintf("%s\n%s ms, %s%% of the stacks' time", name, fixed(millis(n.value), 3), share),
			X:     coord(x), Y: coord(y + 0.5), W: coord(w - 0.5), TX: coord(x + 3), TY: coord(y + flameRow - 5.5),
			Label: flameLabel(name, w)}
		if n.fn < 0 {
			f.Title = fmt.Sprintf("all\n%s ms in the recorded stacks", fixed(millis(n.value), 3))
		} else if linked[n.fn] {
			f.Href = "#" + fnAnchor(n.fn)
		}
		g.Frames = append(g.Frames, f)
		kids := slices.Clone(n.children)
		slices.SortStableFunc(kids, func(a, b *flameNode) int {
			return cmp.Or(cmp.Compare(nameOf(a.fn), nameOf(b.fn)), cmp.Compare(a.fn, b.fn))
		})
		for _, c := range kids {
			draw(c, x, level+1)
			x += float64(c.value) * scale
		}
	}
	draw(root, flameMargin, 0)
	return g
}

// count is the number of frames of the subtree at n.
func (n *flameNode) count() int {
	c := 1
	for _, k := range n.children {
		c += k.count()
	}
	return c
}

// coord formats a coordinate with at most two decimals.
func coord(v float64) string { return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) }

// flameLabel is the part of name that fits a frame w units wide: the
// whole name, or its start and "..", or nothing when fewer than three
// characters fit.
func flameLabel(name string, w float64) string {
	fit := int((w - 6) / flameCharWidth)
	if fit < 3 {
		return ""
	}
	if utf8.RuneCountInString(name) <= fit {
		return name
	}
	return cutRunes(name, fit-2) + ".."
}

// flameColour is a frame's fill: warm colours, the same for the same
// name in every graph; the root grey.
func flameColour(name string, root bool) string {
	if root {
		return "#c8ccd4"
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	v := h.Sum32()
	// Hues from red to yellow, as flame graphs have them.
	red := 205 + v%50
	green := 90 + (v>>8)%130
	blue := 40 + (v>>16)%50
	return fmt.Sprintf("#%02x%02x%02x", red, green, blue)
}

// foldedExport writes the folded stacks.
type foldedExport struct{ *report }

// writeFolded writes folded stacks, one line each, as flame graph tools
// read them ("caller;callee value"): with /AT each distinct chain of calls
// (callStacks), outermost first, as deep as /STACK tells stacks apart,
// else each function alone; the value is the hits, or for timing and
// sampling the function's own time in nanoseconds. Line profiles give
// "module;file:line hits". Names are the displayed ones, [prf.Printable],
// with ';' replaced.
func (r foldedExport) writeFolded(w *bufio.Writer) {
	semicolon := strings.NewReplacer(";", ":")
	clean := func(s string) string { return semicolon.Replace(prf.Printable(s)) }
	if !r.plan.Method.IsFunction() {
		for i := range r.plan.Lines {
			l := &r.plan.Lines[i]
			fmt.Fprintf(w, "%s;%s:%d %d\n", clean(r.moduleName(l.Module)), clean(r.lineFile(l)), l.Line, r.hits(i))
		}
		return
	}
	for _, st := range r.foldedStacks() {
		for k, f := range st.frames {
			if k > 0 {
				w.WriteByte(';')
			}
			w.WriteString(clean(r.exportName(f)))
		}
		fmt.Fprintf(w, " %d\n", st.value)
	}
}
