package plist

import (
	"bufio"
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
// there alone. The lcov export of one profile is the same sum over one.

// Combined is the coverage of one or more profiles by source file.
type Combined struct {
	// lines is set for line profiles, whose lines are the profiles'; a
	// function profile's lines are its functions' declarations.
	lines    bool
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
	runs   int
}

// fileCoverage is one source file's coverage: its functions, in the
// order they came, and its lines' counts.
type fileCoverage struct {
	funcs  []funcCoverage
	byName map[string]int
	lines  map[int]uint64
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
	c.profiles = append(c.profiles, combinedProfile{path, m.Plan.Method, len(m.Runs)})
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
		f = &fileCoverage{byName: map[string]int{}, lines: map[int]uint64{}}
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
// FNF, FNH) and its lines (DA, LF, LH). Names are the stored ones, which
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

// WriteSummary writes the combination's report: the profiles, then each
// source file's lines and functions, those that ran and their share, by
// path, and the totals (a function profile's lines are its functions',
// and it has the functions' columns alone).
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
		if p.runs == 1 {
			runs = "run"
		}
		fmt.Fprintf(bw, "  %-*s  %s, %d %s\n", width, prf.Printable(p.path), strings.ToLower(p.method.Words()), p.runs, runs)
	}
	bw.WriteString("\n")
	if c.lines {
		bw.WriteString("   Lines      Run    Cover   Functions      Run    Cover  Source file\n")
	} else {
		bw.WriteString("   Functions      Run    Cover  Source file\n")
	}
	var t [4]int
	row := func(lines, linesRun, funcs, funcsRun int, name string) {
		if c.lines {
			fmt.Fprintf(bw, "%8d %8d %7.1f%% %11d %8d %7.1f%%  %s\n", lines, linesRun, percent(float64(linesRun), float64(lines)),
				funcs, funcsRun, percent(float64(funcsRun), float64(funcs)), name)
		} else {
			fmt.Fprintf(bw, "%12d %8d %7.1f%%  %s\n", funcs, funcsRun, percent(float64(funcsRun), float64(funcs)), name)
		}
	}
	for _, name := range slices.Sorted(slices.Values(c.order)) {
		lines, linesRun, funcs, funcsRun := c.files[name].totals()
		row(lines, linesRun, funcs, funcsRun, prf.Printable(name))
		t = [4]int{t[0] + lines, t[1] + linesRun, t[2] + funcs, t[3] + funcsRun}
	}
	files := "files"
	if len(c.order) == 1 {
		files = "file"
	}
	row(t[0], t[1], t[2], t[3], fmt.Sprintf("Total (%d %s)", len(c.order), files))
	return bw.Flush()
}
