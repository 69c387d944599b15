package plist

import (
	"html/template"
	"strconv"
	"strings"
)

// The page's two long parts, the table's rows and the annotated source's
// lines, are written here rather than by the template: html/template
// walks a row's fields through reflection, which took 35 s for the
// 1,100,000 lines of a generated program's line profile. They are
// written as the template wrote them, escaped as it escaped them
// (TestHTMLRowsAsTemplate holds the two to the same bytes).

// htmlEscaper escapes text as html/template does in element content and
// quoted attribute values: its table has '+' too.
var htmlEscaper = strings.NewReplacer(
	"\x00", "\uFFFD", `"`, "&#34;", "&", "&amp;", "'", "&#39;", "+", "&#43;", "<", "&lt;", ">", "&gt;")

// htmlText appends s escaped.
func htmlText(b *strings.Builder, s string) {
	if strings.ContainsAny(s, "\x00\"&'+<>") {
		htmlEscaper.WriteString(b, s)
		return
	}
	b.WriteString(s)
}

// htmlAttr appends ` name="value"`, the value escaped, when value is not
// empty.
func htmlAttr(b *strings.Builder, name, value string) {
	if value == "" {
		return
	}
	b.WriteString(" " + name + `="`)
	htmlText(b, value)
	b.WriteByte('"')
}

// fragmentSafe reports whether href is a link within the page that
// html/template's URL normalizer leaves as it is: '#' and letters, digits,
// '-', '_', '.'.
func fragmentSafe(href string) bool {
	if !strings.HasPrefix(href, "#") {
		return false
	}
	for _, c := range []byte(href[1:]) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// wrapAfter is how long a name is before it may break (htmlBreakable).
const wrapAfter = 24

// htmlBreakable appends s escaped, and where it is longer than
// wrapAfter bytes a <wbr> after each separator of its parts ("/", ".",
// ":", "(", "[", ",", "<", "_" and "-"): a long Go or C++ name wraps in
// its cell there, as the browser wraps words. (CSS's overflow-wrap on
// the table's cells did the same, and took a page of 10,000 rows from
// 0.8 s to 3.8 s to lay out: the browser measured every cell's narrowest
// width.)
func htmlBreakable(b *strings.Builder, s string) {
	if len(s) <= wrapAfter {
		htmlText(b, s)
		return
	}
	start := 0
	for i := 0; i < len(s); i++ {
		if strings.IndexByte("/.:([,<_-", s[i]) >= 0 && i+1 < len(s) {
			htmlText(b, s[start:i+1])
			b.WriteString("<wbr>")
			start = i + 1
		}
	}
	htmlText(b, s[start:])
}

// htmlLinked appends s, written by text, inside a link to href where
// href is one of the page's own anchors (fragmentSafe); any other link
// is left out rather than escaped as a URL.
func htmlLinked(b *strings.Builder, href, s string, text func(*strings.Builder, string)) {
	if !fragmentSafe(href) {
		text(b, s)
		return
	}
	b.WriteString(`<a href="` + href + `">`)
	text(b, s)
	b.WriteString("</a>")
}

// htmlRowsHTML writes the table's rows.
func htmlRowsHTML(rows []htmlRow) template.HTML {
	var b strings.Builder
	for _, row := range rows {
		b.WriteString("<tr")
		htmlAttr(&b, "class", row.Class)
		b.WriteByte('>')
		for _, c := range row.Cells {
			b.WriteString("<td")
			if c.Num {
				b.WriteString(` class="n" data-v="`)
				htmlText(&b, c.V)
				b.WriteByte('"')
			}
			htmlAttr(&b, "title", c.Title)
			b.WriteByte('>')
			text := htmlText
			if c.Wrap {
				text = htmlBreakable
			}
			htmlLinked(&b, c.Href, c.Text, text)
			b.WriteString("</td>")
		}
		b.WriteString("</tr>\n")
	}
	return template.HTML(b.String())
}

// htmlLinesHTML writes an annotated source file's lines, with the
// branch column where the page has one (branches).
func htmlLinesHTML(lines []htmlLine, branches bool) template.HTML {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("<tr")
		htmlAttr(&b, "id", l.ID)
		htmlAttr(&b, "class", l.Class)
		b.WriteString(`><td class="ln">`)
		b.WriteString(strconv.Itoa(l.N))
		b.WriteString(`</td><td class="c">`)
		htmlLinked(&b, l.Href, l.Count, htmlText)
		b.WriteString(`</td><td class="p">`)
		htmlText(&b, l.Pct)
		b.WriteString(`</td>`)
		if branches {
			htmlBranchCell(&b, l.Branches)
		}
		b.WriteString(`<td class="code">`)
		htmlText(&b, l.Text)
		b.WriteString("</td></tr>\n")
	}
	return template.HTML(b.String())
}
