package plist

import (
	"html/template"
	"math/rand/v2"
	"strings"
	"testing"
)

// The template's rows and lines as they were before htmlRowsHTML and
// htmlLinesHTML wrote them: the reference for their escaping.
var (
	rowsTemplate = template.Must(template.New("rows").Parse(`{{range .}}<tr{{if .Class}} class="{{.Class}}"{{end}}>{{range .Cells}}<td{{if .Num}} class="n" data-v="{{.V}}"{{end}}{{if .Title}} title="{{.Title}}"{{end}}>{{if .Href}}<a href="{{.Href}}">{{.Text}}</a>{{else}}{{.Text}}{{end}}</td>{{end}}</tr>
{{end}}`))
	linesTemplate = template.Must(template.New("lines").Parse(`{{range .}}<tr{{if .ID}} id="{{.ID}}"{{end}}{{if .Class}} class="{{.Class}}"{{end}}><td class="ln">{{.N}}</td><td class="c">{{if .Href}}<a href="{{.Href}}">{{.Count}}</a>{{else}}{{.Count}}{{end}}</td><td class="p">{{.Pct}}</td><td class="code">{{.Text}}</td></tr>
{{end}}`))
	// linesBranchesTemplate is linesTemplate with the branch column
	// (branch coverage).
	linesBranchesTemplate = template.Must(template.New("lines").Parse(`{{range .}}<tr{{if .ID}} id="{{.ID}}"{{end}}{{if .Class}} class="{{.Class}}"{{end}}><td class="ln">{{.N}}</td><td class="c">{{if .Href}}<a href="{{.Href}}">{{.Count}}</a>{{else}}{{.Count}}{{end}}</td><td class="p">{{.Pct}}</td><td class="br">{{range .Branches}}[{{range .Ways}} <span{{if .Class}} class="{{.Class}}"{{end}}{{if .Title}} title="{{.Title}}"{{end}}>{{.Mark}}</span>{{end}} ]{{end}}</td><td class="code">{{.Text}}</td></tr>
{{end}}`))
)

// TestHTMLRowsAsTemplate: the rows and lines written without the
// template are the template's, byte for byte, for text with every
// character html/template escapes, invalid UTF-8, and the page's links;
// the lines with and without the branch column.
func TestHTMLRowsAsTemplate(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "ab +&<>\"'\x00\t\xff\xfeé€\U0001F600-#./="
	text := func() string {
		var b strings.Builder
		for range rng.IntN(12) {
			r := []rune(alphabet)
			if rng.IntN(4) == 0 {
				b.WriteByte(alphabet[rng.IntN(len(alphabet))]) // maybe a stray byte
			} else {
				b.WriteRune(r[rng.IntN(len(r))])
			}
		}
		return b.String()
	}
	var rows []htmlRow
	var lines []htmlLine
	for i := range 2000 {
		row := htmlRow{Class: text()}
		for range rng.IntN(4) {
			c := htmlCell{Text: text(), V: text(), Title: text(), Num: rng.IntN(2) == 0}
			if rng.IntN(3) == 0 {
				c.Href = "#" + lineAnchor(lineKey{i, rng.IntN(9), rng.IntN(999)})
			}
			row.Cells = append(row.Cells, c)
		}
		rows = append(rows, row)
		line := htmlLine{N: i, ID: text(), Class: text(), Count: text(), Pct: text(), Text: text()}
		if rng.IntN(3) == 0 {
			line.Href = "#" + fnAnchor(rng.IntN(99999))
		}
		for range rng.IntN(3) {
			line.Branches = append(line.Branches, htmlBranch{[2]htmlWay{{text(), text(), text()}, {text(), text(), text()}}})
		}
		lines = append(lines, line)
	}
	var want strings.Builder
	if err := rowsTemplate.Execute(&want, rows); err != nil {
		t.Fatal(err)
	}
	if got := string(htmlRowsHTML(rows)); got != want.String() {
		t.Errorf("rows differ from the template's:\n%s", firstDifference(got, want.String()))
	}
	want.Reset()
	if err := linesTemplate.Execute(&want, lines); err != nil {
		t.Fatal(err)
	}
	if got := string(htmlLinesHTML(lines, false)); got != want.String() {
		t.Errorf("lines differ from the template's:\n%s", firstDifference(got, want.String()))
	}
	want.Reset()
	if err := linesBranchesTemplate.Execute(&want, lines); err != nil {
		t.Fatal(err)
	}
	if got := string(htmlLinesHTML(lines, true)); got != want.String() {
		t.Errorf("lines with branches differ from the template's:\n%s", firstDifference(got, want.String()))
	}
}

// firstDifference shows where got and want part.
func firstDifference(got, want string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	lo := max(0, i-60)
	return "got:  " + got[lo:min(len(got), i+60)] + "\nwant: " + want[lo:min(len(want), i+60)]
}

// TestHTMLBreakable: a long name may break after each separator of its
// parts (<wbr>), escaped as any text; a short one is as it is, and the
// text is the same once the breaks are taken out.
func TestHTMLBreakable(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"main.main", "main.main"},
		{"github.com/x/pkg.(*T[go.shape.int]).Method", "github.<wbr>com/<wbr>x/<wbr>pkg.<wbr>(<wbr>*T[<wbr>go.<wbr>shape.<wbr>int]).<wbr>Method"},
		{"std::vector<int, std::allocator<int>>::size", "std:<wbr>:<wbr>vector&lt;<wbr>int,<wbr> std:<wbr>:<wbr>allocator&lt;<wbr>int&gt;&gt;:<wbr>:<wbr>size"},
		{"a_very_long_name_with_underscores/", "a_<wbr>very_<wbr>long_<wbr>name_<wbr>with_<wbr>underscores/"},
	} {
		var b strings.Builder
		htmlBreakable(&b, c.in)
		if b.String() != c.want {
			t.Errorf("%q: %q, want %q", c.in, b.String(), c.want)
		}
		var plain strings.Builder
		htmlText(&plain, c.in)
		if strings.ReplaceAll(b.String(), "<wbr>", "") != plain.String() {
			t.Errorf("%q: %q is not its text with breaks", c.in, b.String())
		}
	}
}
