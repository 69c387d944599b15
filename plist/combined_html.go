package plist

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/prf"
)

// The HTML page of a combination (plist --combine --format=html): the
// page of one line profile (FormatHTML), drawn from a profile the
// combination makes of itself (Combined.merged), one module, "suite",
// whose source files are the combination's and whose counts are its
// sums. Nothing in it is an address: the lines and branches of that
// profile have none, and the page of a line profile shows none.

// suiteModule is the name of the combination's one module.
const suiteModule = "suite"

// WriteHTML writes the combination as the HTML page of a line profile
// (FormatHTML, docs/exports.md "The HTML report"): its Files summary,
// its lines and the annotated source of its files, each line with its
// count summed over the profiles and its branches' marks from their
// ways' sums, under a header that names the profiles combined. o's
// source directories, sort switch, names and version apply as to the
// page of one profile; o.Warn has a sort switch that does not fit
// (PRF1481), named by the first profile. The counts of line counting
// are shown where no profile has branches; with branches (line
// coverage, prep /LV) the page is of line coverage, each line covered
// or not. Function profiles combined have no page: usage error PRF1102.
func (c *Combined) WriteHTML(w io.Writer, o Options) error {
	if len(c.profiles) > 0 && !c.lines {
		d := prf.InvalidOption("--format=html")
		d.Hint = "--combine's page is of line profiles (prep /LC, /LV): function profiles combine into the summary, or into one lcov tracefile with --format=lcov"
		return d
	}
	m, err := c.merged()
	if err != nil {
		return fmt.Errorf("write combined page: %w", err)
	}
	o.Format, o.Tab, o.Path = FormatHTML, false, ""
	if len(c.profiles) > 0 {
		o.Path = c.profiles[0].path // (PRF1481's name)
	}
	r := newReport(m, o)
	pg := htmlExport{r}.page()
	c.suiteHeader(pg, r.version())
	bw := bufio.NewWriter(w)
	if err := htmlTemplate.Execute(bw, pg); err != nil {
		return fmt.Errorf("write combined page: %w", err)
	}
	return bw.Flush()
}

// suiteHeader makes page pg, drawn from the combination's profile, the
// page of the combination: its heading says how many profiles it adds,
// and the header lists them, each with its type and runs; the statistics
// are the suite's, its one module's block (the same figures) left out;
// the footer says the page is of the profiles.
func (c *Combined) suiteHeader(pg *htmlPage, version string) {
	profiles := plural(uint64(len(c.profiles)), "profile")
	pg.Heading = fmt.Sprintf("Combined coverage of %d %s", len(c.profiles), profiles)
	pg.About = pg.Profile + " of a suite: the coverage of the profiles below added by source file and line, as lcov -a adds tracefiles (plist --combine)"
	if pg.Coverage && slices.ContainsFunc(c.profiles, func(p combinedProfile) bool { return p.method == datafile.LineCounting }) {
		pg.About += "; the branches are line coverage's, so that line counting's lines are shown covered or not"
	}
	for _, p := range c.profiles {
		runs := plural(uint64(len(p.runs)), "run")
		pg.Profiles = append(pg.Profiles, htmlStat{prf.Printable(p.path), fmt.Sprintf("%s, %d %s", strings.ToLower(p.method.Words()), len(p.runs), runs)})
	}
	if len(pg.Stats) > 0 {
		pg.Stats = pg.Stats[:1]
		pg.Stats[0].Title = "Suite Statistics"
	}
	pg.Footer = fmt.Sprintf("Written by plist (sprof %s) from %d %s", version, len(c.profiles), profiles)
}

// merged returns the combination as a line profile: one module, whose
// files are the combination's source files (by directory, then name, as
// the Files summary orders them), one line for each line of each file
// with its sum in Stats.Hits, one branch for each block of each line
// with its two ways' sums in Stats.Branches (a branch whose line never
// ran and that went neither way is "#" on the page, as lcov's "-"), the
// files' functions, and every profile's runs. Its type is line coverage
// where a profile has branches, which only line coverage has, else line
// counting where a profile counts, else line coverage.
func (c *Combined) merged() (*datafile.Merged, error) {
	paths := slices.SortedFunc(slices.Values(c.order), func(a, b string) int {
		return cmp.Or(cmp.Compare(filepath.Dir(a), filepath.Dir(b)), cmp.Compare(filepath.Base(a), filepath.Base(b)), cmp.Compare(a, b))
	})
	m := &datafile.Merged{Plan: datafile.Plan{Method: c.method(), StartIndex: -1, Calibration: -1,
		Modules: []datafile.Module{{Name: suiteModule, Files: paths}}}}
	p, s := &m.Plan, &m.Stats
	for file, path := range paths {
		f := c.files[path]
		index := map[int]int{} // (line number: index in p.Lines)
		for _, n := range slices.Sorted(maps.Keys(f.lines)) {
			index[n] = len(p.Lines)
			p.Lines = append(p.Lines, datafile.Line{File: file, Line: n})
			s.Hits = append(s.Hits, f.lines[n])
		}
		for _, k := range slices.SortedFunc(maps.Keys(f.branches), compareBranchKeys) {
			line, ok := index[k.line]
			if k.way != 0 || !ok {
				continue // (a branch's way on comes with its way to its target; its line is always counted)
			}
			p.Branches = append(p.Branches, datafile.Branch{Line: line})
			s.Branches = append(s.Branches, f.branches[k].n, f.branches[branchKey{k.line, k.block, 1}].n)
		}
		for _, fn := range f.funcs {
			p.Funcs = append(p.Funcs, datafile.Func{Name: fn.name, File: path, Line: fn.line})
		}
	}
	for _, cp := range c.profiles {
		m.Runs = append(m.Runs, cp.runs...)
	}
	m.Overheads = make([]int64, len(m.Runs)) // (line profiles measure none)
	p.ID = datafile.PlanID(p)
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// method is the type of the combination's profile (merged).
func (c *Combined) method() datafile.Method {
	if !c.branches && slices.ContainsFunc(c.profiles, func(p combinedProfile) bool { return p.method == datafile.LineCounting }) {
		return datafile.LineCounting
	}
	return datafile.LineCoverage
}
