package plist

import (
	"bufio"
	"cmp"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/sourceprofiler/sprof/internal/prf"
)

// The headings of the line listings (original.md §5.6.6-§5.6.8).
var (
	lineCountingHeading = []string{
		"        Hit",
		"  Line Count   %    Source",
		"--------------------------",
	}
	lineCoverageHeading = []string{
		"  Line Covered  Source",
		"----------------------",
	}
	// lineSamplingHeading heads the source listings of function
	// sampling (a port's addition): the samples of each line.
	lineSamplingHeading = []string{
		"      Sample",
		"  Line Count   %    Source",
		"--------------------------",
	}
	lineSortedHeading = []string{
		" Hit",
		"Count    %   Line",
		"-----------------",
	}
)

// writeLines writes the listing of a line profile: the program statistics,
// then per module its statistics and its source listings, or with /SC its
// table of lines by count.
func (r *report) writeLines(p *printer, straySwitch bool) {
	if r.sort == SortCount {
		p.heading = lineSortedHeading // source listings repeat nothing
	}
	r.lineProgramStatistics(p)
	for mod := range r.plan.Modules {
		p.blank()
		r.lineModuleStatistics(p, mod)
		p.blank()
		if r.sort == SortCount {
			r.lineCountTable(p, mod)
			continue
		}
		if straySwitch {
			// The original printed this heading after a sort switch that
			// does not fit a line profile (§5.4).
			printHeading(p, lineCoverageHeading)
		}
		r.sourceListings(p, mod)
	}
}

// coverageLayout reports whether source listings show '*' and '.' instead
// of counts: for line coverage, and for /SLS.
func (r *report) coverageLayout() bool {
	return r.plan.Method.IsCoverage() || r.sort == SortLineSummary
}

// lineProgramStatistics writes the Program Statistics of a line profile.
func (r *report) lineProgramStatistics(p *printer) {
	p.title("Program Statistics")
	r.runLines(p)
	hits, hit := r.totals(r.allItems())
	p.text(fmt.Sprintf("    Total lines: %d", len(r.plan.Lines)))
	if !r.plan.Method.IsCoverage() {
		p.text(fmt.Sprintf("    Total hits: %d", hits))
	}
	p.text(fmt.Sprintf("    Line coverage: %s%%", fixed(percent(float64(hit), float64(len(r.plan.Lines))), 1)))
}

// lineModuleStatistics writes a module's statistics block.
func (r *report) lineModuleStatistics(p *printer, mod int) {
	lines := r.lines[mod]
	hits, hit := r.totals(lines)
	p.title("Module Statistics for " + r.plan.Modules[mod].Name)
	p.text(fmt.Sprintf("    Lines in module: %d", len(lines)))
	if !r.plan.Method.IsCoverage() {
		p.text(fmt.Sprintf("    Hits in module: %d", hits))
	}
	p.text(fmt.Sprintf("    Module line coverage: %s%%", fixed(percent(float64(hit), float64(len(lines))), 1)))
}

// printHeading prints a table heading, its dash line unchecked.
func printHeading(p *printer, heading []string) {
	for _, s := range heading {
		if strings.HasPrefix(s, "-") {
			p.underline(len(s))
		} else {
			p.text(s)
		}
	}
}

// lineCountTable writes "%5d %5.1f (%s:%d)" for every line of the module,
// highest count first, then in file and line order; % is of the
// program's hits.
func (r *report) lineCountTable(p *printer, mod int) {
	printHeading(p, lineSortedHeading)
	total, _ := r.totals(r.allItems())
	lines := r.plan.Lines
	idx := r.linesInOrder(r.lines[mod])
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(r.hits(b), r.hits(a)) })
	for _, i := range idx {
		l := &lines[i]
		h := r.hits(i)
		p.text(fmt.Sprintf("%5d %s (%s:%d)", h, fixedWidth(percent(float64(h), float64(total)), 5, 1),
			r.fileName(mod, l.File), l.Line))
	}
}

// linesInOrder returns the line indices sorted by file, then line number.
func (r *report) linesInOrder(idx []int) []int {
	idx = slices.Clone(idx)
	lines := r.plan.Lines
	slices.SortStableFunc(idx, func(a, b int) int {
		return cmp.Or(cmp.Compare(lines[a].File, lines[b].File), cmp.Compare(lines[a].Line, lines[b].Line))
	})
	return idx
}

// sourceListings lists every source file of the module that has profiled
// lines, in the module's file order.
func (r *report) sourceListings(p *printer, mod int) {
	modHits, _ := r.totals(r.lines[mod])
	byFile := make(map[int]map[int]uint64)
	for _, i := range r.lines[mod] {
		l := &r.plan.Lines[i]
		if byFile[l.File] == nil {
			byFile[l.File] = make(map[int]uint64)
		}
		byFile[l.File][l.Line] += r.hits(i)
	}
	for file := range r.plan.Modules[mod].Files {
		if counts := byFile[file]; counts != nil {
			r.sourceListing(p, mod, file, counts, modHits)
		}
	}
}

// warnSourcesLeftOut warns, once, of the source files whose listings the
// report leaves out because it cannot find them (PRF4487), each with the
// number of the profile's lines it holds: those of a line profile, which
// count in its statistics, or the sampled lines of function sampling.
// The listing itself says "Unable to open source file" in place of each,
// as the original's did.
func (r *report) warnSourcesLeftOut() {
	sampled := r.plan.Method.IsSampling()
	var files []string
	total := 0
	for mod, m := range r.plan.Modules {
		n := make(map[int]int)
		for _, i := range r.lines[mod] {
			if !sampled || r.lineSamples(i) > 0 {
				n[r.plan.Lines[i].File]++
			}
		}
		for file, name := range m.Files {
			if n[file] > 0 && r.findSource(mod, name) == "" {
				files = append(files, fmt.Sprintf("%s (%d %s)", r.fileName(mod, file), n[file], plural(uint64(n[file]), "line")))
				total += n[file]
			}
		}
	}
	if len(files) > 0 {
		r.warn(prf.SourcesLeftOut(files, total))
	}
}

// sourceListing prints source file file of module mod with the counts of
// its profiled lines (line number to hits, or to samples), each with its
// share of modHits, or says it cannot be opened.
func (r *report) sourceListing(p *printer, mod, file int, counts map[int]uint64, modHits uint64) {
	p.blank()
	f, found := r.openSource(mod, r.plan.Modules[mod].Files[file])
	if f == nil {
		p.text("Unable to open source file " + r.fileName(mod, file))
		return
	}
	defer f.Close()
	p.text("Source file: " + found)
	p.blank()
	row := r.countRow
	switch {
	case r.plan.Method.IsSampling():
		printHeading(p, lineSamplingHeading)
	case r.coverageLayout():
		printHeading(p, lineCoverageHeading)
		row = coverageRow
	default:
		printHeading(p, lineCountingHeading)
	}
	br := bufio.NewReader(f)
	n := 0
	for {
		text, err := br.ReadString('\n')
		if text == "" && err != nil {
			break // a read error ends the listing as the end of the file does
		}
		n++
		text = strings.TrimSuffix(strings.TrimSuffix(text, "\n"), "\r")
		hits, profiled := counts[n]
		p.text(row(n, profiled, hits, modHits, text))
	}
	// Profiled lines beyond the end of the file (the file changed since).
	var beyond []int
	for line := range counts {
		if line > n {
			beyond = append(beyond, line)
		}
	}
	slices.Sort(beyond)
	for _, line := range beyond {
		p.text(strings.Replace(row(line, true, counts[line], modHits, ""), "\t", " ", 1))
	}
}

// countRow is a line of a counting listing: "%5d: %5d %5.1f\t%s" for a
// profiled line (% of the module's hits), "%5d:    %s \t%s" with six
// spaces for another, so that the text starts in column 21.
func (r *report) countRow(n int, profiled bool, hits, modHits uint64, text string) string {
	if !profiled {
		return fmt.Sprintf("%5d:    %s \t%s", n, "      ", text)
	}
	return fmt.Sprintf("%5d: %5d %s\t%s", n, hits, fixedWidth(percent(float64(hits), float64(modHits)), 5, 1), text)
}

// coverageRow is a line of a coverage listing: "%5d:    %c \t%s" with '*'
// for an executed line and '.' for another profiled one, "%5d:    %s \t%s"
// with one space for the rest; the text starts in column 17.
func coverageRow(n int, profiled bool, hits, _ uint64, text string) string {
	mark := ' '
	switch {
	case profiled && hits > 0:
		mark = '*'
	case profiled:
		mark = '.'
	}
	return fmt.Sprintf("%5d:    %c \t%s", n, mark, text)
}

// openSource opens a module's source file where findSource finds it, and
// returns it with that path, or nil.
func (r *report) openSource(mod int, name string) (*os.File, string) {
	found := r.findSource(mod, name)
	if found == "" {
		return nil, ""
	}
	f, err := os.Open(found)
	if err != nil {
		return nil, ""
	}
	return f, found
}
