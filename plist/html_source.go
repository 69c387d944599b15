package plist

import (
	"bufio"
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sourceprofiler/sprof/datafile"
)

// The HTML report's line table and annotated source.

// lineKey identifies a source line of a module.
type lineKey struct{ mod, file, line int }

// htmlSources fills the annotated source: per module, each source file
// with counted lines, in the module's file order, each line with its
// count (count(i) of Plan.Lines[i], those of one line added) and its
// share of whole (the module's hits for line profiles, as the listing).
// With marked, profiled lines that never ran are marked.
func (r htmlExport) htmlSources(pg *htmlPage, count func(int) uint64, whole uint64, marked bool) {
	a := &htmlAnnotation{counts: map[lineKey]uint64{}, marked: marked, coverage: r.plan.Method.IsCoverage(),
		branches: r.htmlLineBranches()}
	byFile := a.count(r.plan.Lines, count)
	if !a.coverage {
		a.hot = hotCount(a.counts)
	}
	pg.lineClass = a.class
	pg.found = map[[2]int]bool{}
	if len(pg.viewed) > 0 {
		a.links = map[lineKey]string{}
		for i := range r.plan.Lines {
			l := &r.plan.Lines[i]
			if fn := r.lineFunc(l); pg.viewed[fn] {
				a.links[lineKey{l.Module, l.File, l.Line}] = "#" + fnAnchor(fn)
			}
		}
	}
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
			pg.Sources = append(pg.Sources, r.htmlSource(pg, a, mod, file, name, lines, modWhole))
		}
	}
}

// htmlAnnotation is what the annotated source shows of the lines: their
// counts, those of one line added; the count a hot line has at least (0:
// none); whether profiled lines that never ran are marked; whether the
// profile is of coverage.
type htmlAnnotation struct {
	counts   map[lineKey]uint64
	hot      uint64
	marked   bool
	coverage bool
	// links are the lines whose function has a view of its callers and
	// callees: its address (#fn-N).
	links map[lineKey]string
	// branches are the counts of the branches of each line, in block
	// order (branch coverage; nil otherwise).
	branches map[lineKey][][2]branchCount
}

// count adds up the counts of the plan's lines, count(i) of lines[i], and
// returns the profiled lines of each file of each module. Without marked
// a line that did not run is left out.
func (a *htmlAnnotation) count(lines []datafile.Line, count func(int) uint64) (byFile map[[2]int][]int) {
	byFile = map[[2]int][]int{}
	for i := range lines {
		l := &lines[i]
		k := lineKey{l.Module, l.File, l.Line}
		c := count(i)
		if !a.marked && c == 0 {
			continue // (a sampling profile counts no line)
		}
		if _, seen := a.counts[k]; !seen {
			byFile[[2]int{k.mod, k.file}] = append(byFile[[2]int{k.mod, k.file}], k.line)
		}
		a.counts[k] += c
	}
	return byFile
}

// hotCount returns the count a hot line has at least: that of the
// hotLines-th highest count, 0 when no line ran.
func hotCount(counts map[lineKey]uint64) uint64 {
	all := make([]uint64, 0, len(counts))
	for _, c := range counts {
		if c > 0 {
			all = append(all, c)
		}
	}
	slices.SortFunc(all, func(a, b uint64) int { return cmp.Compare(b, a) })
	if len(all) == 0 {
		return 0
	}
	return all[min(hotLines, len(all))-1]
}

// class is a line's class: "hot", "run", "never" or "".
func (a *htmlAnnotation) class(k lineKey) string {
	c, ok := a.counts[k]
	switch {
	case !ok:
		return ""
	case a.hot > 0 && c >= a.hot:
		return "hot"
	case c > 0:
		return "run"
	case a.marked:
		return "never"
	}
	return ""
}

// line is line k of the annotated source, of the given text, with its
// count and share of whole when it has one, and the marks of its
// branches: a line that ran and missed a way of one is "partial" too.
func (a *htmlAnnotation) line(k lineKey, text string, whole uint64) htmlLine {
	hl := htmlLine{N: k.line, Text: text, Class: a.class(k)}
	if counts := a.branches[k]; len(counts) > 0 {
		var partial bool
		hl.Branches, partial = htmlBranches(counts)
		if partial && hl.Class != "never" {
			hl.Class = strings.TrimSpace(hl.Class + " partial")
		}
	}
	if c, ok := a.counts[k]; ok {
		hl.ID, hl.Href = lineAnchor(k), a.links[k]
		if a.coverage {
			hl.Count = "\u2717"
			if c > 0 {
				hl.Count = "\u2713"
			}
		} else {
			hl.Count = strconv.FormatUint(c, 10)
			hl.Pct = fixed(percent(float64(c), float64(whole)), 1)
		}
	}
	return hl
}

// htmlSource returns the annotated source of file of module mod, its
// profiled lines lines (sorted), read where it is found, or empty when it
// is found nowhere; whole is what the lines' shares are of.
func (r htmlExport) htmlSource(pg *htmlPage, a *htmlAnnotation, mod, file int, name string, lines []int, whole uint64) htmlSource {
	src := htmlSource{Name: name, Module: r.moduleName(mod), ID: fileAnchor(mod, file)}
	f, found := r.openSource(mod, name)
	if f == nil {
		return src
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
		src.Lines = append(src.Lines, a.line(lineKey{mod, file, n}, strings.ToValidUTF8(text, "\uFFFD"), whole))
	}
	f.Close()
	for _, l := range lines {
		if l > n {
			src.Lines = append(src.Lines, a.line(lineKey{mod, file, l}, "(beyond the end of the file: it changed since prep)", whole))
		}
	}
	return src
}

// lineAnchor is the id of a line of the annotated source.
func lineAnchor(k lineKey) string { return fmt.Sprintf("L%d-%d-%d", k.mod, k.file, k.line) }

// htmlLineTable fills the line table of a line profile: every profiled
// line, in source order (or by count with /SC), each linked to its line
// of the annotated source when that was found.
func (r htmlExport) htmlLineTable(pg *htmlPage) {
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
		row := htmlRow{Class: class, Cells: []htmlCell{{Text: r.fileName(l.Module, l.File), Title: name, Wrap: true}, numCell(uint64(l.Line))}}
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
