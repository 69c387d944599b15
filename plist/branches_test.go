package plist

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/internal/testutil"
)

// branchCoverage is line coverage of lprog (linePlan) prepared with
// branches, of two runs that each ran every line but line 15 of lines.c:
// the loop's test on line 12 went both ways; line 14's two branches
// went one way each, the first never on, the second never to its
// target; line 15's never ran; util.c's line 3 ran and its branch went
// neither way; crlf.c's line 3, in the library, went both ways. 6 of
// the 12 ways were taken.
func branchCoverage() *datafile.Merged {
	p := linePlan(datafile.LineCoverage)
	p.Branches = []datafile.Branch{
		{Line: 5, Addr: 0x1010, Target: 0x1008},  // lines.c:12
		{Line: 7, Addr: 0x1020, Target: 0x1030},  // lines.c:14, block 0
		{Line: 7, Addr: 0x1024, Target: 0x1034},  // lines.c:14, block 1
		{Line: 8, Addr: 0x1028, Target: 0x1038},  // lines.c:15
		{Line: 14, Addr: 0x1040, Target: 0x1048}, // util.c:3
		{Line: 17, Addr: 0x400, Target: 0x408},   // crlf.c:3
	}
	return seal(&datafile.Merged{Plan: p, Runs: []datafile.Run{at0907(0, "lprog"), at0907(30, "lprog -n")},
		Stats: datafile.Stats{Hits: scaled(lineHits(true), 2), Branches: []uint64{2, 2, 2, 0, 0, 2, 0, 0, 0, 0, 2, 1}}})
}

// branchProfile is a line coverage profile of program name, of runs
// runs, with branches: its module's files, its functions (their code the
// 16 bytes from their entry), its lines' counts, its branches and their
// ways' counts.
func branchProfile(t *testing.T, name string, runs int, files []string, funcs []datafile.Func, lines []datafile.Line, hits []uint64,
	branches []datafile.Branch, ways []uint64) *datafile.Merged {
	t.Helper()
	m := &datafile.Merged{
		Plan: datafile.Plan{Method: datafile.LineCoverage, StartIndex: -1, Modules: []datafile.Module{{Name: name, Files: files}},
			Funcs: funcs, Lines: lines, Branches: branches},
		Stats: datafile.Stats{Hits: hits, Branches: ways},
	}
	for k := range runs {
		m.Runs = append(m.Runs, datafile.Run{Time: 1795600000 + int64(k), CommandLine: name + " --test"})
		m.Overheads = append(m.Overheads, 0)
	}
	m.Plan.ID = datafile.PlanID(&m.Plan)
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	return m
}

// branchTests are the branch coverage of two test programs that share
// a library's source (/src/lib.c), as twoTests without branches.
// test_a, one run: lib.c's line 3 has two branches, the first only to
// its target, the second only on; lines 8 and 9 never ran, a branch
// each; a.c's line 2 went both ways. test_b, three runs: lib.c's line 3
// ran in all three, its first branch to its target in 2 and on in 1,
// its second neither way; line 8 ran once, its branch to its target;
// line 9 never ran; b.c's line 6 never ran.
func branchTests(t *testing.T) (a, b *datafile.Merged) {
	fn := func(name, file string, line int, at uint64) datafile.Func {
		return datafile.Func{Name: name, Entry: at, Low: at, High: at + 16, File: file, Line: line}
	}
	a = branchProfile(t, "test_a", 1, []string{"/src/lib.c", "/src/a.c"},
		[]datafile.Func{fn("lib_add", "/src/lib.c", 3, 0x100), fn("lib_sub", "/src/lib.c", 8, 0x110), fn("main", "/src/a.c", 2, 0x120)},
		[]datafile.Line{
			{File: 0, Line: 3, Addrs: []uint64{0x100}}, {File: 0, Line: 4, Addrs: []uint64{0x108}},
			{File: 0, Line: 8, Addrs: []uint64{0x110}}, {File: 0, Line: 9, Addrs: []uint64{0x118}},
			{File: 1, Line: 2, Addrs: []uint64{0x120}},
		},
		[]uint64{1, 1, 0, 0, 1},
		[]datafile.Branch{{Line: 0, Addr: 0x104, Target: 0x10c}, {Line: 0, Addr: 0x106, Target: 0x10c},
			{Line: 2, Addr: 0x114, Target: 0x11c}, {Line: 3, Addr: 0x11c, Target: 0x110}, {Line: 4, Addr: 0x124, Target: 0x120}},
		[]uint64{1, 0, 0, 1, 0, 0, 0, 0, 1, 1})
	b = branchProfile(t, "test_b", 3, []string{"/src/b.c", "/src/lib.c"},
		[]datafile.Func{fn("main", "/src/b.c", 5, 0x200), fn("lib_add", "/src/lib.c", 3, 0x210), fn("lib_sub", "/src/lib.c", 8, 0x220)},
		[]datafile.Line{
			{File: 0, Line: 5, Addrs: []uint64{0x200}}, {File: 0, Line: 6, Addrs: []uint64{0x208}},
			{File: 1, Line: 3, Addrs: []uint64{0x210}}, {File: 1, Line: 4, Addrs: []uint64{0x218}},
			{File: 1, Line: 8, Addrs: []uint64{0x220}}, {File: 1, Line: 9, Addrs: []uint64{0x228}},
		},
		[]uint64{3, 0, 3, 0, 1, 0},
		[]datafile.Branch{{Line: 1, Addr: 0x20a, Target: 0x200}, {Line: 2, Addr: 0x214, Target: 0x21c},
			{Line: 2, Addr: 0x216, Target: 0x21c}, {Line: 4, Addr: 0x224, Target: 0x22c}, {Line: 5, Addr: 0x22c, Target: 0x220}},
		[]uint64{0, 0, 2, 1, 0, 0, 1, 0, 0, 0})
	return a, b
}

// TestCombinedBranches adds the branches of branchTests as lcov -a adds
// them, by file, line, block and way: lib.c's line 3, block 0, 1 + 2 to
// its target and 0 + 1 on; block 1, 0 + 0 and 1 + 0; line 8's "-" (its
// line never ran in test_a) and test_b's 1 and 0 are 1 and 0; line 9's
// "-" and "-" stay "-". 4 of lib.c's 8 ways were taken, both of a.c's,
// neither of b.c's (its line 6 never ran): 6 of 12. The records come
// after the functions' and before the lines', as geninfo writes them.
func TestCombinedBranches(t *testing.T) {
	a, b := branchTests(t)
	c := combineAll(t, DefaultOptions(), a, b)
	var buf bytes.Buffer
	if err := c.WriteLcov(&buf); err != nil {
		t.Fatal(err)
	}
	want := `TN:
SF:/src/lib.c
FN:3,lib_add
FN:8,lib_sub
FNDA:4,lib_add
FNDA:1,lib_sub
FNF:2
FNH:2
BRDA:3,0,0,3
BRDA:3,0,1,1
BRDA:3,1,0,0
BRDA:3,1,1,1
BRDA:8,0,0,1
BRDA:8,0,1,0
BRDA:9,0,0,-
BRDA:9,0,1,-
BRF:8
BRH:4
DA:3,4
DA:4,1
DA:8,1
DA:9,0
LF:4
LH:3
end_of_record
TN:
SF:/src/a.c
FN:2,main
FNDA:1,main
FNF:1
FNH:1
BRDA:2,0,0,1
BRDA:2,0,1,1
BRF:2
BRH:2
DA:2,1
LF:1
LH:1
end_of_record
TN:
SF:/src/b.c
FN:5,main
FNDA:3,main
FNF:1
FNH:1
BRDA:6,0,0,-
BRDA:6,0,1,-
BRF:2
BRH:0
DA:5,3
DA:6,0
LF:2
LH:1
end_of_record
`
	if got := buf.String(); got != want {
		t.Errorf("lcov:\n%s\nwant:\n%s", got, want)
	}
	buf.Reset()
	if err := c.WriteSummary(&buf); err != nil {
		t.Fatal(err)
	}
	wantSummary := `Combined coverage of 2 line profiles

  test_a.pbt  line coverage, 1 run
  test_b.pbt  line coverage, 3 runs

   Lines      Run    Cover   Functions      Run    Cover   Branches    Taken    Cover  Source file
       1        1   100.0%           1        1   100.0%          2        2   100.0%  /src/a.c
       2        1    50.0%           1        1   100.0%          2        0     0.0%  /src/b.c
       4        3    75.0%           2        2   100.0%          8        4    50.0%  /src/lib.c
       7        5    71.4%           4        4   100.0%         12        6    50.0%  Total (3 files)
`
	if got := buf.String(); got != wantSummary {
		t.Errorf("summary:\n%s\nwant:\n%s", got, wantSummary)
	}
	// Added to a profile without branches, the branches are test_b's
	// alone, and the summary has their columns.
	plain, _ := twoTests(t)
	c = combineAll(t, DefaultOptions(), plain, b)
	buf.Reset()
	if err := c.WriteLcov(&buf); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); !strings.Contains(got, "FNH:2\nBRDA:3,0,0,2\nBRDA:3,0,1,1\nBRDA:3,1,0,0\nBRDA:3,1,1,0\nBRDA:8,0,0,1\nBRDA:8,0,1,0\nBRDA:9,0,0,-\nBRDA:9,0,1,-\nBRF:8\nBRH:3\nDA:3,4\n") ||
		!strings.Contains(got, "SF:/src/a.c\nFN:2,main\nFNDA:1,main\nFNF:1\nFNH:1\nDA:2,1\n") {
		t.Errorf("lcov of a profile without branches and one with:\n%s", got)
	}
	buf.Reset()
	if err := c.WriteSummary(&buf); err != nil {
		t.Fatal(err)
	}
	if want := "       7        5    71.4%           4        4   100.0%         10        3    30.0%  Total (3 files)\n"; !strings.HasSuffix(buf.String(), want) {
		t.Errorf("summary of a profile without branches and one with:\n%s\nwant it to end\n%s", buf.String(), want)
	}
}

// TestLcovBranches: the lcov export of one profile. A header's line
// compiled into two modules has the branches of both, numbered on
// across them (blocks 0 and 1, not two blocks 0 added up); a branch
// whose line has no count but that went a way is counted, not "-"; a
// branch of a line not in the plan is left out, not a panic.
func TestLcovBranches(t *testing.T) {
	m := &datafile.Merged{
		Plan: datafile.Plan{Method: datafile.LineCoverage, StartIndex: -1,
			Modules: []datafile.Module{{Name: "prog", Files: []string{"/src/h.h"}}, {Name: "lib.so", Files: []string{"/src/h.h"}}},
			Lines: []datafile.Line{{File: 0, Line: 5, Addrs: []uint64{0x100}}, {File: 0, Line: 6, Addrs: []uint64{0x110}},
				{Module: 1, File: 0, Line: 5, Addrs: []uint64{0x300}}},
			Branches: []datafile.Branch{{Line: 0, Addr: 0x104, Target: 0x100}, {Line: 1, Addr: 0x114, Target: 0x100},
				{Line: 2, Addr: 0x304, Target: 0x300}}},
		Runs:      []datafile.Run{{Time: 1795600000, CommandLine: "prog"}},
		Overheads: []int64{0},
		Stats:     datafile.Stats{Hits: []uint64{1, 0, 1}, Branches: []uint64{1, 0, 0, 1, 0, 1}},
	}
	m.Plan.ID = datafile.PlanID(&m.Plan)
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.Format = FormatLcov
	var buf bytes.Buffer
	if err := Generate(&buf, m, o); err != nil {
		t.Fatal(err)
	}
	want := "TN:prog\nSF:/src/h.h\nBRDA:5,0,0,1\nBRDA:5,0,1,0\nBRDA:5,1,0,0\nBRDA:5,1,1,1\nBRDA:6,0,0,0\nBRDA:6,0,1,1\nBRF:6\nBRH:3\n" +
		"DA:5,2\nDA:6,0\nLF:2\nLH:1\nend_of_record\n"
	if got := buf.String(); got != want {
		t.Errorf("lcov:\n%s\nwant:\n%s", got, want)
	}
	// Out of range: the line of branch 1, and its counts (short).
	m.Plan.Branches[1].Line = 7
	m.Stats.Branches = m.Stats.Branches[:3]
	buf.Reset()
	if err := Generate(&buf, m, o); err != nil {
		t.Fatal(err)
	}
	if want := "BRDA:5,0,0,1\nBRDA:5,0,1,0\nBRDA:5,1,0,0\nBRDA:5,1,1,0\nBRF:4\nBRH:1\n"; !strings.Contains(buf.String(), want) {
		t.Errorf("lcov of a bad profile:\n%s\nwant it to hold\n%s", buf.String(), want)
	}
}

// TestLcovBranchConsumers has lcov and genhtml read the branches, where
// they are installed: lcov --summary finds 6 of the 12 ways of
// branchTests' combination taken, and so it does of the two profiles'
// own tracefiles added by lcov -a, as plist --combine adds them; genhtml
// with branch coverage makes lib.c's page with its marks: line 3's
// "+ + - +", and "#" for line 9's, which never ran.
func TestLcovBranchConsumers(t *testing.T) {
	testutil.MustHaveTool(t, "lcov")
	rc := "lcov_branch_coverage=1" // (lcov 1.x; 2.x calls it branch_coverage)
	if out, err := exec.Command("lcov", "--version").CombinedOutput(); err == nil {
		if m := regexp.MustCompile(`version (\d+)\.`).FindSubmatch(out); m != nil {
			if major, _ := strconv.Atoi(string(m[1])); major >= 2 {
				rc = "branch_coverage=1"
			}
		}
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"lib.c", "a.c", "b.c"} {
		text := strings.Repeat("\tx++;\n", 10) // (10 lines: every profiled line is in the file)
		if err := os.WriteFile(filepath.Join(src, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a, b := branchTests(t)
	// The files are where the profiles say, under dir.
	for _, m := range []*datafile.Merged{a, b} {
		for i, f := range m.Plan.Modules[0].Files {
			m.Plan.Modules[0].Files[i] = filepath.Join(dir, f)
		}
		for i := range m.Plan.Funcs {
			m.Plan.Funcs[i].File = filepath.Join(dir, m.Plan.Funcs[i].File)
		}
	}
	write := func(name string, w func(*bytes.Buffer) error) string {
		var buf bytes.Buffer
		if err := w(&buf); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	c := combineAll(t, DefaultOptions(), a, b)
	combined := write("combined.info", func(buf *bytes.Buffer) error { return c.WriteLcov(buf) })
	o := DefaultOptions()
	o.Format = FormatLcov
	ta := write("a.info", func(buf *bytes.Buffer) error { return Generate(buf, a, o) })
	tb := write("b.info", func(buf *bytes.Buffer) error { return Generate(buf, b, o) })
	run := func(name string, args ...string) string {
		t.Helper()
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("lcov", "--rc", rc, "-a", ta, "-a", tb, "-o", filepath.Join(dir, "added.info"))
	for _, info := range []string{combined, filepath.Join(dir, "added.info")} {
		out := run("lcov", "--rc", rc, "--summary", info)
		if !strings.Contains(out, "branches...: 50.0% (6 of 12 branches)") || !strings.Contains(out, "lines......: 71.4% (5 of 7 lines)") {
			t.Errorf("lcov --summary %s: want 6 of 12 branches and 5 of 7 lines\n%s", filepath.Base(info), out)
		}
	}
	if !testutil.HaveTool("genhtml") {
		t.Skip("genhtml is not installed")
	}
	html := filepath.Join(dir, "html")
	run("genhtml", "-q", "--rc", rc, "--branch-coverage", "-o", html, combined)
	var page []byte
	filepath.WalkDir(html, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "lib.c.gcov.html" {
			page, err = os.ReadFile(path)
		}
		return err
	})
	if page == nil {
		t.Fatal("genhtml made no page of lib.c")
	}
	marks := func(line int) string {
		row := regexp.MustCompile(`(?m)<span class="lineNum">\s+` + strconv.Itoa(line) + ` </span>(.*)$`).FindSubmatch(page)
		if row == nil {
			return ""
		}
		var s []string
		for _, m := range regexp.MustCompile(`<span class="branch\w+" title="[^"]*"> ([-+#]) </span>`).FindAllSubmatch(row[1], -1) {
			s = append(s, string(m[1]))
		}
		return strings.Join(s, " ")
	}
	if got3, got9 := marks(3), marks(9); got3 != "+ + - +" || got9 != "# #" {
		t.Errorf("genhtml's marks: line 3 %q, want \"+ + - +\"; line 9 %q, want \"# #\"", got3, got9)
	}
}

// TestBranchSection: the listing's section of the branches not taken
// both ways (its layout is pinned by testdata/branchcov.*.golden). A
// line of the library names its module; where every branch went both
// ways the section says so; a profile without branches has no section.
func TestBranchSection(t *testing.T) {
	listing := func(m *datafile.Merged) string {
		t.Helper()
		o := DefaultOptions()
		o.Warn = func(*prf.Diagnostic) {}
		var buf bytes.Buffer
		if err := Generate(&buf, m, o); err != nil {
			t.Fatal(err)
		}
		got := buf.String()
		if i := strings.Index(got, "Branches Not Taken Both Ways"); i >= 0 {
			return got[i:]
		}
		return ""
	}
	m := branchCoverage()
	m.Stats.Branches[11] = 0 // (crlf.c's line 3: never on)
	want := "Branches Not Taken Both Ways\n" +
		"----------------------------\n" +
		"    lines.c:14           branch 0 never on, branch 1 never to its target\n" +
		"    lines.c:15           never ran (1 branch)\n" +
		"    util.c:3             branch 0 went neither way\n" +
		"    crlf.c:3 (libl.so)   branch 0 never on\n" +
		"\n" +
		"    5 of 12 branch ways taken (41.7%)\n"
	if got := listing(m); got != want {
		t.Errorf("section:\n%s\nwant:\n%s", got, want)
	}
	for i := range m.Stats.Branches {
		m.Stats.Branches[i] = 1
	}
	want = "Branches Not Taken Both Ways\n" +
		"----------------------------\n" +
		"    Every branch went both ways.\n" +
		"\n" +
		"    12 of 12 branch ways taken (100.0%)\n"
	if got := listing(m); got != want {
		t.Errorf("section:\n%s\nwant:\n%s", got, want)
	}
	if got := listing(readInput(t, "linecov")); got != "" {
		t.Errorf("a section in a profile without branches:\n%s", got)
	}
}

// TestJSONBranches: each line's branches in the JSON, numbered in the
// line, with the runs that went each way (branchCoverage); lines
// without branches have none.
func TestJSONBranches(t *testing.T) {
	o := DefaultOptions()
	o.Format = FormatJSON
	var buf bytes.Buffer
	if err := Generate(&buf, branchCoverage(), o); err != nil {
		t.Fatal(err)
	}
	var got struct{ Lines []jsonLine }
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	branches := map[string][]jsonBranch{}
	for _, l := range got.Lines {
		if l.Branches != nil {
			branches[fmt.Sprintf("%s:%d", filepath.Base(l.File), l.Line)] = l.Branches
		}
	}
	want := map[string][]jsonBranch{
		"lines.c:12": {{0, 2, 2}},
		"lines.c:14": {{0, 2, 0}, {1, 0, 2}},
		"lines.c:15": {{0, 0, 0}},
		"util.c:3":   {{0, 0, 0}},
		"crlf.c:3":   {{0, 2, 1}},
	}
	if !reflect.DeepEqual(branches, want) {
		t.Errorf("branches %v, want %v", branches, want)
	}
	if !strings.Contains(buf.String(), `"branches": [
        {
          "block": 0,
          "taken": 2,
          "notTaken": 0
        },`) {
		t.Errorf("no branches of the schema in the JSON:\n%s", buf.String())
	}
}

// TestWithoutUnprobed: a branch no run counted (Stats.Unprobed equal to
// the runs) is left out of the reports, one some runs counted stays
// with their ways, and a profile without unprobed branches is itself.
func TestWithoutUnprobed(t *testing.T) {
	m := &datafile.Merged{
		Plan: datafile.Plan{Method: datafile.LineCoverage, Lines: []datafile.Line{{Line: 3}, {Line: 4}},
			Branches: []datafile.Branch{{Line: 0, Addr: 0x10}, {Line: 1, Addr: 0x20}, {Line: 1, Addr: 0x28}}},
		Runs:  []datafile.Run{{}, {}},
		Stats: datafile.Stats{Branches: []uint64{1, 2, 0, 0, 1, 0}, Unprobed: []uint64{0, 2, 1}},
	}
	got := withoutUnprobed(m)
	if len(got.Plan.Branches) != 2 || got.Plan.Branches[1].Addr != 0x28 || fmt.Sprint(got.Stats.Branches) != "[1 2 1 0]" {
		t.Errorf("branches %v, ways %v: want those at 0x10 and 0x28, ways [1 2 1 0]", got.Plan.Branches, got.Stats.Branches)
	}
	if len(m.Plan.Branches) != 3 {
		t.Errorf("the profile itself changed: %v", m.Plan.Branches)
	}
	m.Stats.Unprobed = []uint64{0, 1, 1}
	if withoutUnprobed(m) != m {
		t.Errorf("a profile whose branches some run counted was copied")
	}
}
