package plist

import (
	"bufio"
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The HTML report's line table and annotated source.

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
