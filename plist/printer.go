package plist

import (
	"bufio"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/sourceprofiler/sprof/internal/prf"
)

// printer is the output engine of every listing (original.md §5.5): it
// expands TABs to 4-column stops, cuts lines at the page width, and breaks
// pages. Widths and columns count characters (runes), so a UTF-8 name is
// never cut inside a character.
type printer struct {
	w *bufio.Writer
	// cut and width are /PW.
	cut   bool
	width int
	// pageLen is /PL, 0 for no paging.
	pageLen int
	// header is the page header; heading the table's column heading,
	// repeated after the page header of every further page (nil in source
	// listings, which repeat nothing).
	header  []string
	heading []string
	// lines counts the lines on the current page, its header included.
	lines int
}

// minPageLength is the smallest page length: /PL 0 to 16 all act as 16.
const minPageLength = 16

// tabStop is the TAB expansion of every report line (/TAB does not change it).
const tabStop = 4

func newPrinter(w io.Writer, o Options, header []string) *printer {
	p := &printer{w: bufio.NewWriter(w), cut: o.PageWidthGiven, width: max(o.PageWidth, 0), header: header}
	if o.PageLength > 0 {
		p.pageLen = max(o.PageLength, minPageLength)
	}
	for _, s := range header {
		p.emit(s)
	}
	return p
}

// text prints a line that may start a new page: PLIST checks the page
// length before every line except empty and underline ones.
func (p *printer) text(s string) {
	if p.pageLen > 0 && p.lines >= p.pageLen {
		p.newPage()
	}
	p.emit(s)
}

// blank prints an empty line, never checked for a page break.
func (p *printer) blank() { p.emit("") }

// underline prints n dashes, never checked for a page break.
func (p *printer) underline(n int) { p.emit(strings.Repeat("-", n)) }

// title prints s underlined with dashes of its length as printed.
func (p *printer) title(s string) {
	p.text(s)
	p.underline(utf8.RuneCountInString(expandTabs(prf.PrintableTabs(s))))
}

// newPage writes a form feed, the page header and the table heading.
func (p *printer) newPage() {
	p.w.WriteByte('\f')
	p.lines = 0
	for _, s := range p.header {
		p.emit(s)
	}
	for _, s := range p.heading {
		p.emit(s)
	}
}

// emit writes one line: its other control characters escaped
// ([prf.PrintableTabs]: a name or a line of source that holds a newline,
// a form feed or a terminal's escape stays one line of the listing), TABs
// expanded, cut at the page width, counted.
func (p *printer) emit(s string) {
	s = expandTabs(prf.PrintableTabs(s))
	if p.cut {
		s = cutRunes(s, p.width)
	}
	p.w.WriteString(s)
	p.w.WriteByte('\n')
	p.lines++
}

// flush writes what is buffered and returns the first write error.
func (p *printer) flush() error { return p.w.Flush() }

// expandTabs replaces each TAB by the spaces up to the next multiple of
// tabStop columns.
func expandTabs(s string) string {
	if !strings.Contains(s, "\t") {
		return s
	}
	var b strings.Builder
	col := 0
	for len(s) > 0 {
		_, size := utf8.DecodeRuneInString(s)
		if s[0] == '\t' {
			n := tabStop - col%tabStop
			b.WriteString(strings.Repeat(" ", n))
			col += n
		} else {
			b.WriteString(s[:size]) // the bytes as they are, valid or not
			col++
		}
		s = s[size:]
	}
	return b.String()
}

// cutRunes returns the first n characters of s.
func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}
