package plist

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sourceprofiler/sprof/internal/prf"
)

// The HTML report (FormatHTML) is one self-contained page (docs/exports.md
// "The HTML report"): its CSS and script are inline and it refers to
// nothing outside itself, which its Content-Security-Policy enforces. It
// holds the listing's statistics (the lines the listing prints, read back
// from it), the function or line table, every column sortable in the
// browser, and as the profile type has them the flame graph of the caller
// stacks (timing and sampling with /AT) and the annotated source (line
// profiles, and the sampled lines of function sampling). Every figure is
// the report's; html/template escapes every name and line of source.

// htmlPage is what the page's template shows.
type htmlPage struct {
	Program, Profile, About string
	Stats                   []htmlStats
	// TableID is the table's section ("functions" or "lines"), TableTitle
	// its heading, Omitted what /C left out.
	TableID, TableTitle, Omitted string
	Columns                      []htmlColumn
	Rows                         []htmlRow
	// Flame is the flame graph; FlameNote says why there is none, when the
	// profile type could have one.
	Flame     *htmlFlame
	FlameNote string
	// Sources are the annotated source files, Unit what their counts
	// count ("hits" or "samples"), HotLines how many lines "hot" takes.
	Sources  []htmlSource
	Unit     string
	UnitHead string
	HotLines int
	Coverage bool
	Footer   string

	// lineClass is a line's class in the annotated source and the line
	// table ("hot", "run", "never" or ""); found has the files of the
	// annotated source that were found, by module and file index.
	lineClass func(lineKey) string
	found     map[[2]int]bool
}

// htmlStats is a statistics block: the listing's title and its figures.
type htmlStats struct {
	Title string
	Items []htmlStat
}

type htmlStat struct{ Key, Value string }

// htmlColumn is a column of the table: Key names it in the page's
// address (#sort=KEY-desc), Num sorts it as numbers, Sort is its
// aria-sort in the order the page is written in.
type htmlColumn struct {
	Key, Label, Title, Sort string
	Num                     bool
}

type htmlRow struct {
	Class string
	Cells []htmlCell
}

// htmlCell is a table cell: its text, the number it sorts by (V, for
// numeric columns), and a link into the source.
type htmlCell struct {
	Text, V, Href, Title string
	Num                  bool
}

// htmlSource is a source file of the annotated source.
type htmlSource struct {
	// Name is its recorded path, Found where it was found ("" when it was
	// not), Module its module.
	Name, Found, Module string
	Lines               []htmlLine
}

// htmlLine is a line of an annotated source file.
type htmlLine struct {
	N                     int
	ID, Class, Count, Pct string
	Text                  string
}

// hotLines is how many lines the annotated source marks hot: the lines
// with the most hits (or samples), and those tied with the last of them.
const hotLines = 10

// writeHTML writes the HTML report.
func (r *report) writeHTML(w io.Writer) error {
	var ok bool
	r.sort, ok = resolveSort(r.plan.Method, r.o.Sort)
	if !ok {
		r.warn(prf.SortMismatch(r.o.Path))
	}
	m := r.plan.Method
	pg := &htmlPage{Program: r.moduleName(0), Profile: m.Words(), HotLines: hotLines, Coverage: m.IsCoverage(),
		Footer: "Written by plist (sprof " + r.version() + ")"}
	if len(r.plan.Modules) == 0 {
		pg.Program = "profile"
	}
	if r.o.Path != "" {
		pg.Footer += " from " + filepath.Base(r.o.Path)
	}
	pg.About = m.Words() + " profile"
	if r.plan.Attribution {
		pg.About += ", with callers (/AT)"
	}
	pg.Stats = r.htmlStatistics()
	if m.IsFunction() {
		r.htmlFunctionTable(pg)
		if m.HasTimes() {
			opt := map[bool]string{true: "/FS", false: "/FT"}[m.IsSampling()]
			if r.plan.Attribution {
				pg.Flame = r.flameGraph(r.foldedStacks())
				if pg.Flame == nil {
					pg.FlameNote = "No flame graph: the recorded stacks took no time."
				}
			} else {
				pg.FlameNote = "No flame graph: it is drawn from the callers of each call, which a profile " +
					"prepared with /AT records (prep " + opt + " /AT program)."
			}
		}
		if m.IsSampling() {
			pg.Unit, pg.UnitHead = "samples", "Samples"
			r.htmlSources(pg, r.lineSamples, r.insideSamples(), false)
		}
	} else {
		pg.Unit, pg.UnitHead = "hits", "Hits"
		total, _ := r.totals(r.allItems())
		r.htmlSources(pg, r.hits, total, true)
		r.htmlLineTable(pg)
	}
	return htmlTemplate.Execute(w, pg)
}

// htmlStatistics returns the listing's statistics blocks, the program's
// and each module's, read back from the lines the listing prints: the
// same figures, worded the same.
func (r *report) htmlStatistics() []htmlStats {
	capture := func(write func(*printer)) htmlStats {
		var b bytes.Buffer
		p := newPrinter(&b, Options{}, nil)
		write(p)
		p.flush()
		lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
		st := htmlStats{Title: lines[0]}
		for _, l := range lines[min(2, len(lines)):] {
			l = strings.TrimSpace(l)
			k, v, ok := strings.Cut(l, ": ")
			if !ok {
				// "Overhead Calculated 37": the figure is the last word.
				if i := strings.LastIndexByte(l, ' '); i > 0 {
					k, v = l[:i], l[i+1:]
				}
			}
			st.Items = append(st.Items, htmlStat{k, v})
		}
		return st
	}
	var out []htmlStats
	if r.plan.Method.IsFunction() {
		out = append(out, capture(r.programStatistics))
		for mod := range r.plan.Modules {
			out = append(out, capture(func(p *printer) { r.moduleStatistics(p, mod) }))
		}
	} else {
		out = append(out, capture(r.lineProgramStatistics))
		for mod := range r.plan.Modules {
			out = append(out, capture(func(p *printer) { r.lineModuleStatistics(p, mod) }))
		}
	}
	return out
}

// sortKey is the column of the table the report's sort switch orders
// it by, and that order's aria-sort; "" for source order.
func (r *report) sortKey() (key, order string) {
	switch r.sort {
	case SortCount:
		if r.plan.Method.IsCoverage() {
			return "covered", "descending"
		}
		return "hits", "descending"
	case SortTime:
		return "time", "descending"
	case SortChildTime:
		return "child", "descending"
	case SortName, SortNameSummary:
		return "name", "ascending"
	}
	return "", ""
}

// setSort marks the column the rows are written in the order of.
func (r *report) setSort(cols []htmlColumn) {
	key, order := r.sortKey()
	for i := range cols {
		if cols[i].Key == key {
			cols[i].Sort = order
		}
	}
}

func numCell(v uint64) htmlCell {
	s := strconv.FormatUint(v, 10)
	return htmlCell{Text: s, V: s, Num: true}
}

// shareCell is a percentage, sorted by its part (exact where the
// percentages are rounded).
func shareCell(part, whole int64) htmlCell {
	return htmlCell{Text: fixed(percent(float64(part), float64(whole)), 1), V: strconv.FormatInt(part, 10), Num: true}
}

func msCell(ns int64) htmlCell {
	return htmlCell{Text: fixed(millis(ns), 3), V: strconv.FormatInt(ns, 10), Num: true}
}

func coveredCell(hit bool) htmlCell {
	if hit {
		return htmlCell{Text: "yes", V: "1", Num: true}
	}
	return htmlCell{Text: "no", V: "0", Num: true}
}

// htmlFunctionTable fills the function table: every function of every
// module, /C applied as in the listing (coverage lists them all), in the
// listing's order, with the columns of the profile type.
func (r *report) htmlFunctionTable(pg *htmlPage) {
	m := r.plan.Method
	multi := len(r.plan.Modules) > 1
	pg.TableID, pg.TableTitle = "functions", "Functions"
	cols := []htmlColumn{{Key: "name", Label: "Function"}, {Key: "source", Label: "Source", Title: "object module, package or library"}}
	if multi {
		cols = append(cols, htmlColumn{Key: "module", Label: "Module"})
	}
	switch {
	case m.IsCoverage():
		cols = append(cols, htmlColumn{Key: "covered", Label: "Covered", Num: true})
	case m.HasTimes():
		cols = append(cols,
			htmlColumn{Key: "time", Label: "Func time (ms)", Title: "time in the function itself", Num: true},
			htmlColumn{Key: "time-pct", Label: "%", Title: "of the time inside profiled functions", Num: true},
			htmlColumn{Key: "child", Label: "Func+Child (ms)", Title: "time in the function and the functions it called", Num: true},
			htmlColumn{Key: "child-pct", Label: "%", Title: "of the time inside profiled functions", Num: true},
			htmlColumn{Key: "hits", Label: "Hits", Title: "calls", Num: true})
		if m.IsSampling() {
			cols = append(cols, htmlColumn{Key: "samples", Label: "Samples", Num: true})
		}
	default:
		cols = append(cols,
			htmlColumn{Key: "hits", Label: "Hits", Title: "calls", Num: true},
			htmlColumn{Key: "hits-pct", Label: "%", Title: "of all the hits", Num: true})
	}
	r.setSort(cols)
	pg.Columns = cols
	var all []int
	for _, funcs := range r.funcs {
		all = append(all, funcs...)
	}
	total, _ := r.totals(r.allItems())
	inside := r.insideTime()
	left := 0
	for _, i := range r.sortFuncs(all, r.sort) {
		h := r.hits(i)
		if !m.IsCoverage() && !r.listed(h) {
			left++
			continue
		}
		f := &r.plan.Funcs[i]
		name := htmlCell{Text: r.names[i]}
		if f.Name != r.names[i] {
			name.Title = f.Name
		}
		row := htmlRow{Cells: []htmlCell{name, {Text: f.Source}}}
		if multi {
			row.Cells = append(row.Cells, htmlCell{Text: r.moduleName(f.Module)})
		}
		switch {
		case m.IsCoverage():
			row.Cells = append(row.Cells, coveredCell(h > 0))
		case m.HasTimes():
			ft, ct := r.funcTime(i), r.childTime(i)
			row.Cells = append(row.Cells, msCell(ft), shareCell(ft, inside), msCell(ct), shareCell(ct, inside), numCell(h))
			if m.IsSampling() {
				row.Cells = append(row.Cells, numCell(r.samples(i)))
			}
		default:
			row.Cells = append(row.Cells, numCell(h), shareCell(int64(h), int64(total)))
		}
		if h == 0 {
			row.Class = "never"
		}
		pg.Rows = append(pg.Rows, row)
	}
	if left > 0 {
		pg.Omitted = fmt.Sprintf("%d %s with fewer than %d %s not listed (plist /C 0 lists every function).",
			left, plural(uint64(left), "function"), r.o.MinCount, plural(uint64(r.o.MinCount), "hit"))
	}
}

// lineKey identifies a source line of a module.
type lineKey struct{ mod, file, line int }

// htmlSources fills the annotated source: per module, each source file
// with counted lines, in the module's file order, each line with its
// count (count(i) of Plan.Lines[i], those of one line added) and its
// share of whole (the module's hits for line profiles, as the listing).
// With marked, profiled lines that never ran are marked.
func (r *report) htmlSources(pg *htmlPage, count func(int) uint64, whole uint64, marked bool) {
	counts := map[lineKey]uint64{}
	// byFile are the profiled lines of each file of each module.
	byFile := map[[2]int][]int{}
	for i := range r.plan.Lines {
		l := &r.plan.Lines[i]
		k := lineKey{l.Module, l.File, l.Line}
		c := count(i)
		if !marked && c == 0 {
			continue // (a sampling profile counts no line)
		}
		if _, seen := counts[k]; !seen {
			byFile[[2]int{k.mod, k.file}] = append(byFile[[2]int{k.mod, k.file}], k.line)
		}
		counts[k] += c
	}
	hot := uint64(0) // the count a hot line has at least; 0: none
	if !r.plan.Method.IsCoverage() {
		all := make([]uint64, 0, len(counts))
		for _, c := range counts {
			if c > 0 {
				all = append(all, c)
			}
		}
		slices.SortFunc(all, func(a, b uint64) int { return cmp.Compare(b, a) })
		if len(all) > 0 {
			hot = all[min(hotLines, len(all))-1]
		}
	}
	class := func(k lineKey) string {
		c, ok := counts[k]
		switch {
		case !ok:
			return ""
		case hot > 0 && c >= hot:
			return "hot"
		case c > 0:
			return "run"
		case marked:
			return "never"
		}
		return ""
	}
	pg.lineClass = class
	pg.found = map[[2]int]bool{}
	for mod := range r.plan.Modules {
		modWhole := whole
		if !r.plan.Method.IsFunction() {
			modWhole, _ = r.totals(r.lines[mod])
		}
		for file, name := range r.plan.Modules[mod].Files {
			lines := byFile[[2]int{mod, file}]
			if len(lines) == 0 {
				continue
			}
			slices.Sort(lines)
			src := htmlSource{Name: name, Module: r.moduleName(mod)}
			row := func(n int, text string) htmlLine {
				k := lineKey{mod, file, n}
				hl := htmlLine{N: n, Text: text, Class: class(k)}
				if c, ok := counts[k]; ok {
					hl.ID = lineAnchor(k)
					if r.plan.Method.IsCoverage() {
						hl.Count = "\u2717"
						if c > 0 {
							hl.Count = "\u2713"
						}
					} else {
						hl.Count = strconv.FormatUint(c, 10)
						hl.Pct = fixed(percent(float64(c), float64(modWhole)), 1)
					}
				}
				return hl
			}
			f, found := r.openSource(mod, name)
			if f == nil {
				pg.Sources = append(pg.Sources, src)
				continue
			}
			src.Found = found
			pg.found[[2]int{mod, file}] = true
			br := bufio.NewReader(f)
			n := 0
			for {
				text, err := br.ReadString('\n')
				if text == "" && err != nil {
					break
				}
				n++
				text = strings.TrimSuffix(strings.TrimSuffix(text, "\n"), "\r")
				src.Lines = append(src.Lines, row(n, strings.ToValidUTF8(text, "\uFFFD")))
			}
			f.Close()
			for _, l := range lines {
				if l > n {
					src.Lines = append(src.Lines, row(l, "(beyond the end of the file: it changed since prep)"))
				}
			}
			pg.Sources = append(pg.Sources, src)
		}
	}
}

// lineAnchor is the id of a line of the annotated source.
func lineAnchor(k lineKey) string { return fmt.Sprintf("L%d-%d-%d", k.mod, k.file, k.line) }

// htmlLineTable fills the line table of a line profile: every profiled
// line, in source order (or by count with /SC), each linked to its line
// of the annotated source when that was found.
func (r *report) htmlLineTable(pg *htmlPage) {
	m := r.plan.Method
	multi := len(r.plan.Modules) > 1
	pg.TableID, pg.TableTitle = "lines", "Lines"
	cols := []htmlColumn{{Key: "file", Label: "File"}, {Key: "line", Label: "Line", Num: true}}
	if multi {
		cols = append(cols, htmlColumn{Key: "module", Label: "Module"})
	}
	if m.IsCoverage() {
		cols = append(cols, htmlColumn{Key: "covered", Label: "Covered", Num: true})
	} else {
		cols = append(cols, htmlColumn{Key: "hits", Label: "Hits", Title: "times the line began", Num: true},
			htmlColumn{Key: "hits-pct", Label: "%", Title: "of all the hits", Num: true})
	}
	r.setSort(cols)
	pg.Columns = cols
	var idx []int
	for mod := range r.plan.Modules {
		idx = append(idx, r.linesInOrder(r.lines[mod])...)
	}
	if r.sort == SortCount {
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(r.hits(b), r.hits(a)) })
	}
	total, _ := r.totals(r.allItems())
	for _, i := range idx {
		l := &r.plan.Lines[i]
		k := lineKey{l.Module, l.File, l.Line}
		name := r.lineFile(l)
		class := pg.lineClass(k)
		if class == "run" {
			class = "" // (the table marks the hot lines and those never run)
		}
		row := htmlRow{Class: class, Cells: []htmlCell{{Text: r.fileName(l.Module, l.File), Title: name}, numCell(uint64(l.Line))}}
		if pg.found[[2]int{k.mod, k.file}] {
			row.Cells[1].Href = "#" + lineAnchor(k)
		}
		if multi {
			row.Cells = append(row.Cells, htmlCell{Text: r.moduleName(l.Module)})
		}
		h := r.hits(i)
		if m.IsCoverage() {
			row.Cells = append(row.Cells, coveredCell(h > 0))
		} else {
			row.Cells = append(row.Cells, numCell(h), shareCell(int64(h), int64(total)))
		}
		pg.Rows = append(pg.Rows, row)
	}
}

// htmlTemplate is the page. Its Content-Security-Policy lets it run its
// own inline style and script and fetch nothing.
var htmlTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<title>{{.Program}}: {{.Profile}}</title>
<style>
:root{--fg:#1f2430;--muted:#5d6677;--rule:#dde2ea;--panel:#f4f6fa;--run:#e3f3e6;--never:#fbe3e4;--hot:#ffdcaa;--hotfg:#9a3c00;--link:#1f5fbf}
*{box-sizing:border-box}
body{margin:0 auto;max-width:1260px;padding:20px 28px 40px;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",sans-serif;color:var(--fg);background:#fff}
a{color:var(--link)}
h1{font-size:26px;margin:0}
h2{font-size:19px;margin:30px 0 10px;padding-bottom:4px;border-bottom:2px solid var(--rule)}
h3{font-size:15px;margin:0 0 6px}
.about{margin:2px 0 6px;color:var(--muted)}
nav a{margin-right:14px}
.note,.legend{color:var(--muted);margin:6px 0 10px}
.stats{display:flex;flex-wrap:wrap;gap:14px}
.block{flex:1 1 360px;background:var(--panel);border:1px solid var(--rule);border-radius:8px;padding:10px 16px}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:0}
dt{color:var(--muted)}
dd{margin:0;font-variant-numeric:tabular-nums;overflow-wrap:anywhere}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}
#table{width:100%}
#table th,#table td{padding:4px 10px;border-bottom:1px solid var(--rule);text-align:left}
#table th{position:sticky;top:0;background:var(--panel);white-space:nowrap}
#table th button{all:unset;cursor:pointer;font-weight:600}
#table th button:focus-visible{outline:2px solid var(--link)}
#table th[aria-sort=ascending] button::after{content:" \25B2";font-size:11px}
#table th[aria-sort=descending] button::after{content:" \25BC";font-size:11px}
#table .n{text-align:right;white-space:nowrap}
#table tbody tr:hover td{background:#eef3fb}
#table tr.never td{color:#8a92a0}
#lines #table tr.never td{background:var(--never);color:inherit}
#table tr.hot td{background:var(--hot)}
.flame{display:block;width:100%;height:auto;border:1px solid var(--rule);border-radius:6px;background:#fbfbfc}
.flame text{font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;fill:#1a1a1a;pointer-events:none}
.flame g:hover rect{stroke:#222;stroke-width:1}
.legend span{display:inline-block;padding:1px 8px;margin-right:8px;border-radius:4px;color:var(--fg)}
.run{background:var(--run)}.never{background:var(--never)}.hot{background:var(--hot)}
.file{margin:18px 0 26px}
.missing{background:var(--never);border-radius:6px;padding:8px 12px}
.src{width:100%;font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;border:1px solid var(--rule)}
.src th{background:var(--panel);font-weight:600;text-align:right;padding:2px 8px}
.src th:last-child{text-align:left}
.src td{padding:0 8px;vertical-align:top}
.src td.ln{color:#9aa1ad;text-align:right;user-select:none}
.src td.c,.src td.p{text-align:right;white-space:nowrap}
.src td.code{white-space:pre-wrap;tab-size:4;width:100%}
.src tr.run td.c,.src tr.run td.p{background:var(--run)}
.src tr.never td{background:var(--never)}
.src tr.hot td{background:var(--hot)}
.src tr.hot td.c{color:var(--hotfg);font-weight:700}
.src tr:target td{outline:2px solid var(--link)}
footer{margin-top:36px;color:var(--muted);font-size:13px}
</style>
</head>
<body>
<header>
<h1>{{.Program}}</h1>
<p class="about">{{.About}}</p>
<nav><a href="#statistics">Statistics</a>{{if or .Flame .FlameNote}}<a href="#flame">Flame graph</a>{{end}}<a href="#{{.TableID}}">{{.TableTitle}}</a>{{if .Sources}}<a href="#source">Annotated source</a>{{end}}</nav>
</header>
<section id="statistics">
<h2>Statistics</h2>
<div class="stats">
{{range .Stats}}<div class="block"><h3>{{.Title}}</h3><dl>
{{range .Items}}<dt>{{.Key}}</dt><dd>{{.Value}}</dd>
{{end}}</dl></div>
{{end}}</div>
</section>
{{if or .Flame .FlameNote}}<section id="flame">
<h2>Flame graph</h2>
{{with .Flame}}<p class="note">Each box is a function, called by the box below it, as wide as its share of the time of the call stacks through it ({{.Total}} in all, its own time and its callees'). The stacks are as deep as the profile recorded them: the bottom box of a stack is its outermost recorded caller. Point at a box for its figures.</p>
<svg class="flame" viewBox="0 0 {{.Width}} {{.Height}}" width="{{.Width}}" height="{{.Height}}" role="img" aria-label="flame graph">
{{range .Frames}}<g><title>{{.Title}}</title><rect x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="17" rx="2" fill="{{.Fill}}"/>{{if .Label}}<text x="{{.TX}}" y="{{.TY}}">{{.Label}}</text>{{end}}</g>
{{end}}</svg>
{{if .Hidden}}<p class="note">{{.Hidden}} frames too narrow to draw are left out.</p>{{end}}
{{else}}<p class="note">{{$.FlameNote}}</p>
{{end}}</section>
{{end}}<section id="{{.TableID}}">
<h2>{{.TableTitle}}</h2>
<p class="note">Click a heading to sort by its column, again to reverse the order. The page's address keeps the order, to share it (#sort=hits-desc).</p>
{{if .Omitted}}<p class="note">{{.Omitted}}</p>
{{end}}<table id="table">
<thead><tr>{{range .Columns}}<th data-key="{{.Key}}"{{if .Num}} data-type="num" class="n"{{end}}{{if .Sort}} aria-sort="{{.Sort}}"{{end}}{{if .Title}} title="{{.Title}}"{{end}}><button type="button">{{.Label}}</button></th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr{{if .Class}} class="{{.Class}}"{{end}}>{{range .Cells}}<td{{if .Num}} class="n" data-v="{{.V}}"{{end}}{{if .Title}} title="{{.Title}}"{{end}}>{{if .Href}}<a href="{{.Href}}">{{.Text}}</a>{{else}}{{.Text}}{{end}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
</section>
{{if .Sources}}<section id="source">
<h2>Annotated source</h2>
<p class="legend">{{if .Coverage}}<span class="run">&#x2713; executed</span><span class="never">&#x2717; never executed</span>{{else}}<span class="hot">hot: one of the {{.HotLines}} lines with the most {{.Unit}}, or tied with them</span>{{if eq .Unit "hits"}}<span class="run">executed</span><span class="never">never executed</span>{{else}}<span class="run">sampled</span>{{end}}{{end}} {{if eq .Unit "samples"}}A line without a mark had no sample.{{else}}A line without a mark has no code of its own.{{end}}</p>
{{range .Sources}}<div class="file">
<h3>{{.Name}}{{if ne .Module $.Program}} ({{.Module}}){{end}}</h3>
{{if .Found}}<p class="note">Source file: {{.Found}}</p>
<table class="src">
<thead><tr><th>Line</th><th>{{if $.Coverage}}Covered{{else}}{{$.UnitHead}}{{end}}</th><th>{{if not $.Coverage}}%{{end}}</th><th>Source</th></tr></thead>
<tbody>
{{range .Lines}}<tr{{if .ID}} id="{{.ID}}"{{end}}{{if .Class}} class="{{.Class}}"{{end}}><td class="ln">{{.N}}</td><td class="c">{{.Count}}</td><td class="p">{{.Pct}}</td><td class="code">{{.Text}}</td></tr>
{{end}}</tbody>
</table>
{{else}}<p class="missing">Source file not found: {{.Name}}. plist looked where prep recorded it, in the compilation directories and in the /D directories: give its directory with plist /D DIR.</p>
{{end}}</div>
{{end}}</section>
{{end}}<footer>{{.Footer}}. This page is self-contained: nothing in it is fetched from the network.</footer>
<script>
(function () {
  "use strict";
  var table = document.getElementById("table");
  if (!table) {
    return;
  }
  var heads = table.tHead.rows[0].cells, body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows), keys = [], order = [], i;
  for (i = 0; i < rows.length; i++) {
    order.push(i);
  }
  function key(c) {
    if (!keys[c]) {
      var num = heads[c].getAttribute("data-type") === "num", k = new Array(rows.length);
      for (var r = 0; r < rows.length; r++) {
        var td = rows[r].cells[c];
        k[r] = num ? Number(td.getAttribute("data-v")) : td.textContent;
      }
      keys[c] = k;
    }
    return keys[c];
  }
  function sort(c, desc) {
    var k = key(c), pos = new Array(rows.length), f = document.createDocumentFragment();
    order.forEach(function (r, p) { pos[r] = p; });
    order.sort(function (a, b) {
      var x = k[a], y = k[b];
      if (x < y) {
        return desc ? 1 : -1;
      }
      if (x > y) {
        return desc ? -1 : 1;
      }
      return pos[a] - pos[b];
    });
    order.forEach(function (r) { f.appendChild(rows[r]); });
    body.appendChild(f);
    for (var j = 0; j < heads.length; j++) {
      heads[j].removeAttribute("aria-sort");
    }
    heads[c].setAttribute("aria-sort", desc ? "descending" : "ascending");
  }
  function column(name) {
    for (var j = 0; j < heads.length; j++) {
      if (heads[j].getAttribute("data-key") === name) {
        return j;
      }
    }
    return -1;
  }
  function fromAddress() {
    var parts = location.hash.slice(1).split("&");
    for (var p = 0; p < parts.length; p++) {
      if (parts[p].indexOf("sort=") === 0) {
        var v = parts[p].slice(5), d = v.lastIndexOf("-"), c = column(v.slice(0, d)), dir = v.slice(d + 1);
        if (c >= 0 && (dir === "asc" || dir === "desc")) {
          sort(c, dir === "desc");
        }
      }
    }
  }
  Array.prototype.forEach.call(heads, function (th, c) {
    th.querySelector("button").addEventListener("click", function () {
      var now = th.getAttribute("aria-sort");
      var desc = now ? now === "ascending" : th.getAttribute("data-type") === "num";
      sort(c, desc);
      try {
        history.replaceState(null, "", "#sort=" + th.getAttribute("data-key") + "-" + (desc ? "desc" : "asc"));
      } catch (e) {
      }
    });
  });
  window.addEventListener("hashchange", fromAddress);
  fromAddress();
})();
</script>
</body>
</html>
`))
