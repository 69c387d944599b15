package plist

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
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
	htmlHeader
	Stats []htmlStats
	htmlTable
	// Flame is the flame graph; FlameNote says why there is none, when the
	// profile type could have one.
	Flame     *htmlFlame
	FlameNote string
	// CallData is the data of the views of the callers and callees of
	// the functions of the recorded stacks (htmlCalls); viewed has those
	// functions.
	CallData template.JS
	viewed   map[int]bool
	// Sources are the annotated source files, Unit what their counts
	// count ("hits" or "samples"), HotLines how many lines "hot" takes.
	Sources []htmlSource
	// Files is the line profile's summary by directory and file.
	Files    []htmlFileRow
	Unit     string
	UnitHead string
	HotLines int
	Coverage bool
	// Branches is set for branch coverage: the annotated source has a
	// column of branch marks, the Files summary the branches' columns.
	Branches bool
	Footer   string

	// lineClass is a line's class in the annotated source and the line
	// table ("hot", "run", "never" or ""); found has the files of the
	// annotated source that were found, by module and file index.
	lineClass func(lineKey) string
	found     map[[2]int]bool
}

// htmlHeader is the page's header: its program (the first module's
// name, which a source file's heading names when it is of another
// module), its profile type and what it is. A combination of profiles
// (plist --combine: Combined.WriteHTML) has a Heading in place of the
// program's name, and lists its Profiles.
type htmlHeader struct {
	Program, Profile, About string
	Heading                 string
	Profiles                []htmlStat
}

// htmlTable is the page's table of functions or lines: TableID is its
// section ("functions" or "lines"), TableTitle its heading, Omitted what
// /C left out.
type htmlTable struct {
	TableID, TableTitle, Omitted string
	Columns                      []htmlColumn
	Rows                         []htmlRow
	RowsHTML                     template.HTML // Rows, written (htmlRowsHTML)
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
// numeric columns), and a link into the source. Wrap lets a long name
// break after its separators (htmlBreakable).
type htmlCell struct {
	Text, V, Href, Title string
	Num, Wrap            bool
}

// htmlSource is a source file of the annotated source.
type htmlSource struct {
	// Name is its recorded path, Found where it was found ("" when it was
	// not), Module its module, ID its anchor (fileAnchor).
	Name, Found, Module, ID string
	Lines                   []htmlLine
	LinesHTML               template.HTML // Lines, written (htmlLinesHTML)
}

// htmlLine is a line of an annotated source file.
type htmlLine struct {
	N                     int
	ID, Class, Count, Pct string
	Text                  string
	Href                  string // its count's link: its function's callers and callees
	// Branches are the marks of its branches (branch coverage).
	Branches []htmlBranch
}

// hotLines is how many lines the annotated source marks hot: the lines
// with the most hits (or samples), and those tied with the last of them.
const hotLines = 10

// htmlExport writes the HTML report.
type htmlExport struct{ *report }

// writeHTML writes the HTML report.
func (r htmlExport) writeHTML(w io.Writer) error {
	return htmlTemplate.Execute(w, r.page())
}

// page returns the HTML report's page.
func (r htmlExport) page() *htmlPage {
	var ok bool
	r.sort, ok = resolveSort(r.plan.Method, r.o.Sort)
	if !ok {
		r.warn(prf.SortMismatch(r.o.Path))
	}
	m := r.plan.Method
	pg := &htmlPage{htmlHeader: htmlHeader{Program: r.moduleName(0), Profile: m.Words()}, HotLines: hotLines, Coverage: m.IsCoverage(),
		Branches: branchView(r).present(), Footer: "Written by plist (sprof " + r.version() + ")"}
	if len(r.plan.Modules) == 0 {
		pg.Program = "profile"
	}
	if r.o.Path != "" {
		pg.Footer += " from " + filepath.Base(r.o.Path)
	}
	pg.About = m.Words() + " profile"
	switch {
	case r.plan.Attribution:
		pg.About += ", with callers (/AT)"
	case r.m.SampledStacks():
		pg.About += ", with sampled call stacks"
	}
	pg.Stats = r.htmlStatistics()
	if m.IsFunction() {
		pg.CallData, pg.viewed = r.htmlCalls()
		r.htmlFunctionTable(pg)
		if m.HasTimes() {
			opt := map[bool]string{true: "/FS", false: "/FT"}[m.IsSampling()]
			if r.m.HasStacks() {
				pg.Flame = r.flameGraph(r.foldedStacks(), pg.viewed)
				if pg.Flame == nil {
					pg.FlameNote = "No flame graph: the recorded stacks took no time."
				}
			} else if m.IsSampling() {
				pg.FlameNote = "No flame graph: the samples took no call stacks (profile --no-stacks, or the kernel's " +
					"samples could not have them), and the profile was not prepared with /AT (prep " + opt + " /AT program)."
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
		if r.o.Sort == SortDefault && !m.IsCoverage() {
			r.sort = SortCount // (the page opens on the hottest lines)
		}
		total, _ := r.totals(r.allItems())
		r.htmlSources(pg, r.hits, total, true)
		r.htmlFiles(pg, total)
		r.htmlLineTable(pg)
	}
	pg.RowsHTML = htmlRowsHTML(pg.Rows)
	for i := range pg.Sources {
		pg.Sources[i].LinesHTML = htmlLinesHTML(pg.Sources[i].Lines, pg.Branches)
	}
	return pg
}

// htmlStatistics returns the listing's statistics blocks, the program's
// and each module's, read back from the lines the listing prints: the
// same figures, worded the same.
func (r htmlExport) htmlStatistics() []htmlStats {
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
		out = append(out, capture(funcListing(r).programStatistics))
		for mod := range r.plan.Modules {
			out = append(out, capture(func(p *printer) { funcListing(r).moduleStatistics(p, mod) }))
		}
	} else {
		out = append(out, capture(lineListing(r).lineProgramStatistics))
		for mod := range r.plan.Modules {
			out = append(out, capture(func(p *printer) { lineListing(r).lineModuleStatistics(p, mod) }))
		}
	}
	return out
}

// sortKey is the column of the table the report's sort switch orders
// it by, and that order's aria-sort; "" for source order.
func (r htmlExport) sortKey() (key, order string) {
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
func (r htmlExport) setSort(cols []htmlColumn) {
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
func (r htmlExport) htmlFunctionTable(pg *htmlPage) {
	m := r.plan.Method
	multi := len(r.plan.Modules) > 1
	pg.TableID, pg.TableTitle = "functions", "Functions"
	cols := r.functionColumns(multi)
	r.setSort(cols)
	pg.Columns = cols
	var all []int
	for _, funcs := range r.funcs {
		all = append(all, funcs...)
	}
	total, _ := r.totals(r.allItems())
	left := 0
	for _, i := range r.sortFuncs(all, r.sort) {
		h := r.hits(i)
		if !m.IsCoverage() && !r.listed(funcListing(r).keptBy(i)) { // (as the listing keeps it)
			left++
			continue
		}
		f := &r.plan.Funcs[i]
		name := htmlCell{Text: r.names[i], Wrap: true}
		if f.Name != r.names[i] {
			name.Title = f.Name
		}
		if pg.viewed[i] {
			name.Href = "#" + fnAnchor(i) // (its callers and callees)
		}
		row := htmlRow{Cells: []htmlCell{name, {Text: f.Source, Wrap: true}}}
		if multi {
			row.Cells = append(row.Cells, htmlCell{Text: r.moduleName(f.Module)})
		}
		switch {
		case m.IsCoverage():
			row.Cells = append(row.Cells, coveredCell(h > 0))
		case m.HasTimes():
			row.Cells = append(row.Cells, r.timeCells(i)...)
		default:
			row.Cells = append(row.Cells, numCell(h), shareCell(int64(h), int64(total)))
		}
		if h == 0 && (!m.HasTimes() || r.childTime(i) == 0) { // (a function that ran only inlined has time)
			row.Class = "never"
		}
		pg.Rows = append(pg.Rows, row)
	}
	if left > 0 {
		pg.Omitted = fmt.Sprintf("%d %s with fewer than %d %s not listed (plist /C 0 lists every function).",
			left, plural(uint64(left), "function"), r.o.MinCount, plural(uint64(r.o.MinCount), "hit"))
	}
}

// functionColumns are the function table's columns: the name, source and
// module where there are several, then the profile type's.
func (r htmlExport) functionColumns(multi bool) []htmlColumn {
	m := r.plan.Method
	cols := []htmlColumn{{Key: "name", Label: "Function"}, {Key: "source", Label: "Source", Title: "object module, package or library"}}
	if multi {
		cols = append(cols, htmlColumn{Key: "module", Label: "Module"})
	}
	switch {
	case m.IsCoverage():
		cols = append(cols, htmlColumn{Key: "covered", Label: "Covered", Num: true})
	case m.HasTimes():
		of := "of the time inside profiled functions"
		if r.m.SampledStacks() {
			of = "of all the samples' time" // (shareBase)
		}
		cols = append(cols,
			htmlColumn{Key: "time", Label: "Func time (ms)", Title: "time in the function itself", Num: true},
			htmlColumn{Key: "time-pct", Label: "%", Title: of, Num: true},
			htmlColumn{Key: "child", Label: "Func+Child (ms)", Title: "time in the function and the functions it called", Num: true},
			htmlColumn{Key: "child-pct", Label: "%", Title: of, Num: true},
			htmlColumn{Key: "hits", Label: "Hits", Title: "calls", Num: true})
		if m.IsSampling() {
			cols = append(cols, htmlColumn{Key: "samples", Label: "Samples", Num: true})
		}
		if r.m.Stats.Sampling.KernelSampled() {
			cols = append(cols,
				htmlColumn{Key: "kernel", Label: "Kernel (ms)", Title: "of the function's own time, the kernel's: its system calls and faults", Num: true},
				htmlColumn{Key: "kernel-child", Label: "Kernel+Child (ms)", Title: "of its time with children, the kernel's", Num: true})
		}
	default:
		cols = append(cols,
			htmlColumn{Key: "hits", Label: "Hits", Title: "calls", Num: true},
			htmlColumn{Key: "hits-pct", Label: "%", Title: "of all the hits", Num: true})
	}
	return cols
}

// timeCells are the cells of function i's times: its own and with
// children, each with its share, its hits, and of a sampling profile its
// samples and where the kernel was sampled the kernel's part of its
// times.
func (r htmlExport) timeCells(i int) []htmlCell {
	inside := shareBase(r.m)
	ft, ct := r.funcTime(i), r.childTime(i)
	own := msCell(ft)
	if r.uncertain(i) {
		own.Text += uncertainMark
		own.Title = fmt.Sprintf("its own time a call is below the uncertainty of the profiler's cost taken out of each call, %d ns: not measured exactly", r.m.Stats.CostUncertainty)
	}
	cells := []htmlCell{own, shareCell(ft, inside), msCell(ct), shareCell(ct, inside), numCell(r.hits(i))}
	if r.plan.Method.IsSampling() {
		cells = append(cells, numCell(r.samples(i)))
	}
	if sm := &r.m.Stats.Sampling; sm.KernelSampled() {
		cells = append(cells, msCell(int64(at(sm.KernelSamples, i))*sm.Interval), msCell(int64(at(sm.KernelChildSamples, i))*sm.Interval))
	}
	return cells
}
