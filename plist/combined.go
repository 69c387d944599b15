package plist

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/prf"
)

// Coverage over many profiles (plist --combine): a test suite is many
// programs, one database each, and their libraries are in several of
// them. Their coverage adds by source file, as lcov -a adds tracefiles:
// a line's count is the sum of its counts in every profile that has it,
// a function's the sum of its calls in every profile, matched by its
// name in its file, and a line or function one profile alone has counts
// there alone. A branch of a line adds by its file, line, block and way,
// as lcov -a adds BRDA records: the counts are summed, a count and "-"
// (the branch's line never ran) is the count, and "-" and "-" stays "-".
// The lcov export of one profile is the same sum over one.

// Combined is the coverage of one or more profiles by source file.
type Combined struct {
	// lines is set for line profiles, whose lines are the profiles'; a
	// function profile's lines are its functions' declarations.
	lines bool
	// branches is set when a profile added has branches (line coverage
	// prepared with them): the summary has their columns.
	branches bool
	profiles []combinedProfile
	// test is the lcov test name (TN): the one profile's last run's
	// program, "" for several.
	test  string
	files map[string]*fileCoverage
	order []string // the files, as they came
}

// combinedProfile is a profile added: its path and type, and its runs.
type combinedProfile struct {
	path   string
	method datafile.Method
	runs   []datafile.Run
}

// fileCoverage is one source file's coverage: its functions, in the
// order they came, its lines' counts and its branches' ways' counts.
type fileCoverage struct {
	funcs    []funcCoverage
	byName   map[string]int
	lines    map[int]uint64
	branches map[branchKey]branchCount
}

// branchKey is a way of a branch of a source file: its line, its block
// (its number among the line's branches) and its way (0 to its target,
// 1 on), as lcov's BRDA record names it.
type branchKey struct{ line, block, way int }

// compareBranchKeys orders branch ways by line, block and way.
func compareBranchKeys(a, b branchKey) int {
	return cmp.Or(cmp.Compare(a.line, b.line), cmp.Compare(a.block, b.block), cmp.Compare(a.way, b.way))
}

// funcCoverage is a function's declaration line, name and calls.
type funcCoverage struct {
	line int
	name string
	hits uint64
}

// NewCombined returns an empty combination.
func NewCombined() *Combined {
	return &Combined{files: map[string]*fileCoverage{}}
}

// Add adds the coverage of profile m, read from path, with o's source
// directories (o.SourceDirs: a source file is named by the path where it
// is found, as the lcov export names it). A function profile does not
// add to line profiles, nor a line profile to function profiles: fatal
// error PRF1485.
func (c *Combined) Add(m *datafile.Merged, path string, o Options) error {
	if m == nil {
		return fmt.Errorf("combine %s: no profile", path)
	}
	lines := !m.Plan.Method.IsFunction()
	if len(c.profiles) > 0 && lines != c.lines {
		first := c.profiles[0]
		return prf.CombineOtherType(first.path, strings.ToLower(first.method.Words()), path, strings.ToLower(m.Plan.Method.Words()))
	}
	c.lines = lines
	c.branches = c.branches || len(m.Plan.Branches) > 0
	c.profiles = append(c.profiles, combinedProfile{path, m.Plan.Method, slices.Clone(m.Runs)})
	r := newReport(m, o)
	c.add(r)
	c.test = ""
	if n := len(m.Runs); n > 0 && len(c.profiles) == 1 {
		c.test = lcovTestName(m.Runs[n-1].CommandLine)
	}
	return nil
}

// file returns the coverage of source file path, new where it is the
// first of its name.
func (c *Combined) file(path string) *fileCoverage {
	f := c.files[path]
	if f == nil {
		f = &fileCoverage{byName: map[string]int{}, lines: map[int]uint64{}, branches: map[branchKey]branchCount{}}
		c.files[path] = f
		c.order = append(c.order, path)
	}
	return f
}

// add adds report r's lines and functions. A line profile has the
// counts of its lines and the calls of its functions, each function's
// those of its first line (lcovFirstLine), where that line is the
// function's alone (one inlined elsewhere is left out). A function
// profile has the calls of its functions and, for each, its declaration
// line with the same count: lcov 1.16 and genhtml refuse a file without
// lines ("no valid records found"). Functions without a source file
// (known from the symbol table, PLT entries) have no place here.
func (c *Combined) add(r *report) {
	x := lcovExport{r}
	funcProfile := r.plan.Method.IsFunction()
	if !funcProfile {
		for i := range r.plan.Lines {
			l := &r.plan.Lines[i]
			c.file(r.exportPath(l.Module, r.lineFile(l))).lines[l.Line] += r.hits(i)
		}
	}
	for i, f := range r.plan.Funcs {
		if f.File == "" {
			continue
		}
		hits := r.hits(i)
		if !funcProfile {
			line := x.lcovFirstLine(i)
			if line < 0 {
				continue // none of its lines is profiled
			}
			hits = r.hits(line)
		}
		fc := c.file(r.exportPath(f.Module, f.File))
		fc.addFunc(funcCoverage{max(f.Line, 1), f.Name, hits})
		if funcProfile {
			fc.lines[max(f.Line, 1)] += hits
		}
	}
	c.addBranches(r)
}

// addBranches adds the ways of report r's branches to their files' lines,
// each branch numbered among those of its source line (its exported path
// and line number) in the plan's order: a header's line compiled into
// two modules has the branches of both, apart.
func (c *Combined) addBranches(r *report) {
	br := branchView{r}
	if !br.present() {
		return
	}
	paths := make([]string, len(r.plan.Lines))
	for i := range r.plan.Lines {
		l := &r.plan.Lines[i]
		paths[i] = r.exportPath(l.Module, r.lineFile(l))
	}
	type pathLine struct {
		path string
		line int
	}
	blocks := branchBlocks(r, func(line int) pathLine { return pathLine{paths[line], r.plan.Lines[line].Line} })
	for i, b := range r.plan.Branches {
		if blocks[i] < 0 {
			continue // (its line is not in the plan)
		}
		f := c.file(paths[b.Line])
		for way, n := range br.counts(i) {
			k := branchKey{r.plan.Lines[b.Line].Line, blocks[i], way}
			sum := f.branches[k]
			sum.add(n)
			f.branches[k] = sum
		}
	}
}

// addFunc adds fn's calls to the function of its name, or adds it.
func (f *fileCoverage) addFunc(fn funcCoverage) {
	if k, ok := f.byName[fn.name]; ok {
		f.funcs[k].hits += fn.hits
		return
	}
	f.byName[fn.name] = len(f.funcs)
	f.funcs = append(f.funcs, fn)
}

// totals returns f's lines and functions, and those that ran.
func (f *fileCoverage) totals() (lines, linesRun, funcs, funcsRun int) {
	for _, n := range f.lines {
		lines++
		if n > 0 {
			linesRun++
		}
	}
	for _, fn := range f.funcs {
		funcs++
		if fn.hits > 0 {
			funcsRun++
		}
	}
	return lines, linesRun, funcs, funcsRun
}

// branchTotals returns f's branch ways, and those taken.
func (f *fileCoverage) branchTotals() (ways, taken int) {
	for _, n := range f.branches {
		ways++
		if n.n > 0 {
			taken++
		}
	}
	return ways, taken
}

// Coverage returns the share of the combination that ran, in percent:
// of the lines of line profiles, of the functions of function profiles;
// 0 of nothing.
func (c *Combined) Coverage() float64 {
	var all, run int
	for _, f := range c.files {
		lines, linesRun, funcs, funcsRun := f.totals()
		if c.lines {
			all, run = all+lines, run+linesRun
		} else {
			all, run = all+funcs, run+funcsRun
		}
	}
	return percent(float64(run), float64(all))
}

// WriteLcov writes the combination as an lcov tracefile (geninfo(1)):
// per source file, in the order they came, its functions (FN, FNDA,
// FNF, FNH), its branches where it has any (BRDA, BRF, BRH), and its
// lines (DA, LF, LH), in geninfo's order. Names are the stored ones, which
// genhtml --demangle-cpp demangles, as gcov's tracefiles have.
func (c *Combined) WriteLcov(w io.Writer) error {
	bw := bufio.NewWriter(w)
	c.writeLcov(bw)
	return bw.Flush()
}

func (c *Combined) writeLcov(w *bufio.Writer) {
	for _, name := range c.order {
		rec := c.files[name]
		fmt.Fprintf(w, "TN:%s\nSF:%s\n", c.test, prf.Printable(name))
		for _, f := range rec.funcs {
			fmt.Fprintf(w, "FN:%d,%s\n", f.line, prf.Printable(f.name))
		}
		for _, f := range rec.funcs {
			fmt.Fprintf(w, "FNDA:%d,%s\n", f.hits, prf.Printable(f.name))
		}
		_, _, funcs, funcsRun := rec.totals()
		if funcs > 0 {
			fmt.Fprintf(w, "FNF:%d\nFNH:%d\n", funcs, funcsRun)
		}
		rec.writeBranches(w)
		if len(rec.lines) > 0 {
			for _, n := range slices.Sorted(maps.Keys(rec.lines)) {
				fmt.Fprintf(w, "DA:%d,%d\n", n, rec.lines[n])
			}
			lines, linesRun, _, _ := rec.totals()
			fmt.Fprintf(w, "LF:%d\nLH:%d\n", lines, linesRun)
		}
		w.WriteString("end_of_record\n")
	}
}

// writeBranches writes f's branches: BRDA:line,block,way,taken for each
// way, by line, block and way, taken "-" for a branch whose line never
// ran, then BRF and BRH; nothing when f has none.
func (f *fileCoverage) writeBranches(w *bufio.Writer) {
	if len(f.branches) == 0 {
		return
	}
	keys := slices.SortedFunc(maps.Keys(f.branches), compareBranchKeys)
	for _, k := range keys {
		fmt.Fprintf(w, "BRDA:%d,%d,%d,%s\n", k.line, k.block, k.way, f.branches[k].lcov())
	}
	ways, taken := f.branchTotals()
	fmt.Fprintf(w, "BRF:%d\nBRH:%d\n", ways, taken)
}

// WriteSummary writes the combination's report: the profiles, then each
// source file's lines and functions, those that ran and their share, by
// path, and the totals (a function profile's lines are its functions',
// and it has the functions' columns alone). Where a profile has
// branches, the branches' columns follow: the ways of the file's
// branches (lcov's "branches"), those taken and their share.
func (c *Combined) WriteSummary(w io.Writer) error {
	bw := bufio.NewWriter(w)
	kind := "line"
	if !c.lines {
		kind = "function"
	}
	profiles := "profiles"
	if len(c.profiles) == 1 {
		profiles = "profile"
	}
	fmt.Fprintf(bw, "Combined coverage of %d %s %s\n\n", len(c.profiles), kind, profiles)
	width := 0
	for _, p := range c.profiles {
		width = max(width, len(prf.Printable(p.path)))
	}
	for _, p := range c.profiles {
		runs := "runs"
		if len(p.runs) == 1 {
			runs = "run"
		}
		fmt.Fprintf(bw, "  %-*s  %s, %d %s\n", width, prf.Printable(p.path), strings.ToLower(p.method.Words()), len(p.runs), runs)
	}
	bw.WriteString("\n")
	c.writeTable(bw)
	return bw.Flush()
}

// writeTable writes the summary's table: its heading, a row per source
// file by path, and the totals.
func (c *Combined) writeTable(bw *bufio.Writer) {
	switch {
	case !c.lines:
		bw.WriteString("   Functions      Run    Cover  Source file\n")
	case c.branches:
		bw.WriteString("   Lines      Run    Cover   Functions      Run    Cover   Branches    Taken    Cover  Source file\n")
	default:
		bw.WriteString("   Lines      Run    Cover   Functions      Run    Cover  Source file\n")
	}
	share := func(part, whole int) float64 { return percent(float64(part), float64(whole)) }
	var t [6]int
	row := func(n [6]int, name string) {
		lines, linesRun, funcs, funcsRun, ways, taken := n[0], n[1], n[2], n[3], n[4], n[5]
		if !c.lines {
			fmt.Fprintf(bw, "%12d %8d %7.1f%%  %s\n", funcs, funcsRun, share(funcsRun, funcs), name)
			return
		}
		fmt.Fprintf(bw, "%8d %8d %7.1f%% %11d %8d %7.1f%%", lines, linesRun, share(linesRun, lines), funcs, funcsRun, share(funcsRun, funcs))
		if c.branches {
			fmt.Fprintf(bw, " %10d %8d %7.1f%%", ways, taken, share(taken, ways))
		}
		fmt.Fprintf(bw, "  %s\n", name)
	}
	for _, name := range slices.Sorted(slices.Values(c.order)) {
		f := c.files[name]
		var n [6]int
		n[0], n[1], n[2], n[3] = f.totals()
		n[4], n[5] = f.branchTotals()
		row(n, prf.Printable(name))
		for k := range t {
			t[k] += n[k]
		}
	}
	files := "files"
	if len(c.order) == 1 {
		files = "file"
	}
	row(t, fmt.Sprintf("Total (%d %s)", len(c.order), files))
}
