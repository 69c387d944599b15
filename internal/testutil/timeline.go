package testutil

import (
	"bufio"
	"fmt"
	"hash/fnv"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The layout of WriteSVG, in pixels.
const (
	svgPad    = 12
	svgAxis   = 58 // the time axis's baseline
	svgHeader = 20 // a track's name
	svgRow    = 20 // one level of nesting
	svgGap    = 10 // between tracks
	svgChar   = 6.7
)

// svgColors are the slices' fills, chosen by the hash of their name so that
// a function has one color everywhere.
var svgColors = []string{"#8ecae6", "#ffca6b", "#a7d38a", "#f4a98a", "#cdb4db", "#ffafcc", "#a8dadc", "#e9c46a", "#b5c7f2", "#f28d8d"}

var svgEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")

// svgText is s escaped for XML text and attributes, with the control
// characters XML 1.0 forbids (and invalid UTF-8) as U+FFFD.
func svgText(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' && r != '\n' || r == 0xfffe || r == 0xffff {
			return utf8.RuneError
		}
		return r
	}, strings.ToValidUTF8(s, "\ufffd"))
	return svgEscaper.Replace(s)
}

// SVGOptions are the picture WriteSVG draws.
type SVGOptions struct {
	Title string
	Width int // pixels
	// From and To bound the time shown, in nanoseconds; To 0 shows all
	// from the first slice's start to the last one's end.
	From, To int64
}

// WriteSVG draws c's slices as a timeline, as Perfetto's UI lays one out:
// a track per thread, in sort order, headed by its name; each slice a box
// at its start, as wide as its duration (a pixel at least), one row lower
// per level of nesting, named when the name fits. The axis counts from
// the start of the time shown; slices outside it are left out, those
// across its edges cut there. A slice whose args say "unfinished" has a
// dashed outline; each box's tooltip gives its name, duration and args.
func (c *Chrome) WriteSVG(w io.Writer, o SVGOptions) error {
	t0, t1 := c.svgSpan(o)
	p := &svgPlot{t0: t0, t1: t1, span: max(t1-t0, 1), plot: float64(o.Width - 2*svgPad)}
	height, drawn := c.svgHeight(p)

	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="11">`+"\n", o.Width, height, o.Width, height)
	fmt.Fprintf(bw, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", o.Width, height)
	fmt.Fprintf(bw, `<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", svgPad, svgText(o.Title))
	fmt.Fprintf(bw, `<text x="%d" y="36" fill="#555555">%s, %s in %s</text>`+"\n", svgPad, plural(len(c.Threads), "track"), plural(drawn, "slice"), svgDuration(p.span))
	p.axis(bw, height)

	y := svgAxis + 8
	for _, th := range c.Threads {
		fmt.Fprintf(bw, `<text x="%d" y="%d" font-weight="bold">%s (tid %d)</text>`+"\n", svgPad, y+14, svgText(th.Name), th.TID)
		y += svgHeader
		depth := 0
		for i := range th.Slices {
			s := &th.Slices[i]
			if !p.shown(s) {
				continue
			}
			depth = max(depth, s.Depth+1)
			p.slice(bw, s, y+s.Depth*svgRow)
		}
		y += depth*svgRow + svgGap
	}
	bw.WriteString("</svg>\n")
	return bw.Flush()
}

// svgSpan returns the time o shows: From to To, or with To 0 from the
// first slice's start to the last one's end.
func (c *Chrome) svgSpan(o SVGOptions) (t0, t1 int64) {
	t0, t1 = o.From, o.To
	if t1 != 0 {
		return t0, t1
	}
	first := true
	for _, th := range c.Threads {
		for i := range th.Slices {
			s := &th.Slices[i]
			if first || s.Start < t0 {
				t0 = s.Start
			}
			if first || s.End() > t1 {
				t1 = s.End()
			}
			first = false
		}
	}
	return t0, t1
}

// svgHeight returns the picture's height and the number of slices it
// shows.
func (c *Chrome) svgHeight(p *svgPlot) (height, drawn int) {
	height = svgAxis + 8
	for _, th := range c.Threads {
		depth := 0
		for i := range th.Slices {
			if s := &th.Slices[i]; p.shown(s) {
				depth = max(depth, s.Depth+1)
				drawn++
			}
		}
		height += svgHeader + depth*svgRow + svgGap
	}
	return height, drawn
}

// svgPlot places times on WriteSVG's picture: the time shown, t0 to t1
// (span nanoseconds, at least 1), over plot pixels.
type svgPlot struct {
	t0, t1, span int64
	plot         float64
}

// shown reports whether any of s is in the time shown.
func (p *svgPlot) shown(s *ChromeSlice) bool { return s.End() >= p.t0 && s.Start <= p.t1 }

// x is the abscissa of time t, cut to the time shown.
func (p *svgPlot) x(t int64) float64 {
	return svgPad + float64(min(max(t, p.t0), p.t1)-p.t0)*p.plot/float64(p.span)
}

// svgNum formats a coordinate.
func svgNum(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// axis draws the time axis: about 8 ticks, at 1, 2 or 5 times a power of
// ten, their lines down to height.
func (p *svgPlot) axis(bw *bufio.Writer, height int) {
	step := int64(1)
	for i := 0; step*8 < p.span; i++ {
		step = []int64{1, 2, 5}[(i+1)%3] * pow10((i+1)/3)
	}
	for tick := int64(0); tick <= p.span; tick += step {
		tx := svgNum(p.x(p.t0 + tick))
		fmt.Fprintf(bw, `<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="#dddddd"/>`+"\n", tx, svgAxis, tx, height-4)
		anchor := "middle"
		if tick == 0 {
			anchor = "start"
		}
		fmt.Fprintf(bw, `<text x="%s" y="%d" text-anchor="%s" fill="#555555">%s</text>`+"\n", tx, svgAxis-4, anchor, svgTick(tick, step))
	}
}

// slice draws s as a box at ordinate sy, with its tooltip and, when it
// fits, its name.
func (p *svgPlot) slice(bw *bufio.Writer, s *ChromeSlice, sy int) {
	sx, sw := p.x(s.Start), max(p.x(s.End())-p.x(s.Start), 1)
	h := fnv.New32a()
	h.Write([]byte(s.Name))
	outline := `stroke="#ffffff" stroke-width="0.5"`
	if s.Args["unfinished"] == true {
		outline = `stroke="#333333" stroke-width="1" stroke-dasharray="3 2"`
	}
	var args []string
	for _, k := range sortedKeys(s.Args) {
		args = append(args, fmt.Sprintf("%s %v", k, s.Args[k]))
	}
	fmt.Fprintf(bw, `<g><title>%s: %s at %s (%s)</title>`, svgText(s.Name), svgDuration(s.Dur), svgDuration(s.Start-p.t0), svgText(strings.Join(args, ", ")))
	fmt.Fprintf(bw, `<rect x="%s" y="%d" width="%s" height="%d" fill="%s" %s/>`, svgNum(sx), sy, svgNum(sw), svgRow-2, svgColors[h.Sum32()%uint32(len(svgColors))], outline)
	if label := svgFit(s.Name, sw-6); label != "" {
		fmt.Fprintf(bw, `<text x="%s" y="%d">%s</text>`, svgNum(sx+3), sy+13, svgText(label))
	}
	bw.WriteString("</g>\n")
}

// svgFit returns name, or its start and an ellipsis, in room pixels; ""
// when not even two letters fit.
func svgFit(name string, room float64) string {
	n := int(room / svgChar)
	r := []rune(name)
	switch {
	case len(r) <= n:
		return name
	case n < 3:
		return ""
	}
	return string(r[:n-1]) + "…"
}

// svgDuration writes ns in the largest unit that keeps it at least 1.
func svgDuration(ns int64) string {
	sign := ""
	if ns < 0 {
		sign, ns = "-", -ns
	}
	switch {
	case ns == 0:
		return "0"
	case ns%1000000 == 0 || ns >= 10000000:
		return sign + strconv.FormatFloat(float64(ns)/1e6, 'f', -1, 64) + " ms"
	case ns%1000 == 0 || ns >= 10000:
		return sign + strconv.FormatFloat(float64(ns)/1e3, 'f', -1, 64) + " µs"
	}
	return sign + strconv.FormatInt(ns, 10) + " ns"
}

// svgTick writes a tick of the axis in the unit of its step.
func svgTick(ns, step int64) string {
	switch {
	case ns == 0:
		return "0"
	case step >= 1000000:
		return strconv.FormatFloat(float64(ns)/1e6, 'f', -1, 64) + " ms"
	case step >= 1000:
		return strconv.FormatFloat(float64(ns)/1e3, 'f', -1, 64) + " µs"
	}
	return strconv.FormatInt(ns, 10) + " ns"
}

// plural writes n things.
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}

func pow10(n int) int64 {
	p := int64(1)
	for range n {
		p *= 10
	}
	return p
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
