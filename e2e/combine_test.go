package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/internal/testutil"
)

// suiteFixture is a test suite's program (testdata/progs/c/suite): prog,
// linked with the library both programs share, libsuite.so (suitelib.c).
func suiteFixture(prog string) testutil.Linked {
	return testutil.Linked{
		Prog: []string{"progs/c/suite/" + prog + ".c"},
		Lib:  []string{"progs/c/suite/suitelib.c"},
		Name: "libsuite.so",
		Link: true,
	}
}

// TestCombineSuite profiles a suite of two test programs that share a
// library, each with line counting of itself and the library, in a
// database of its own, and combines them (plist --combine): suitelib.c's
// lines add up across the programs, as lcov -a adds tracefiles: clamp's
// first test ran in all 14 calls (10 of suite_a, 4 of suite_b), its
// three returns 3, 4 and 7 times, each in one program; twice's line 2
// times, in suite_b alone. Each program alone leaves part of the library
// unrun; together they run all of it: --fail-under=100 fails each and
// passes the suite. genhtml reads the combined tracefile; the summary
// lists both profiles and the library's file, all its lines run; the
// combined page (--format=html) has the same counts (checkSuitePage). A
// line profile and a function profile do not combine (PRF1485), and
// function profiles combined have no page (PRF1102); a database
// missing or not one is named, and nothing is written.
func TestCombineSuite(t *testing.T) {
	testutil.MustHavePtrace(t)
	var pbts []string
	for _, name := range []string{"suite_a", "suite_b"} {
		prog, lib := testutil.BuildLinked(t, name, suiteFixture(name))
		dir, _ := linkedWorkflow(t, prog, lib, []string{"/LC"})
		pbts = append(pbts, filepath.Join(dir, name))
		if r := tool(t, dir, "plist", "/nologo", "--fail-under=100", name); r.status != 3 {
			t.Errorf("%s alone, --fail-under=100: status %d, want 3 (part of the library unrun)\n%s", name, r.status, r.stderr)
		}
	}
	dir := t.TempDir()
	must(t, dir, "plist", append([]string{"/nologo", "--combine", "--format=lcov", "-o", "suite.info"}, pbts...)...)
	b, err := os.ReadFile(filepath.Join(dir, "suite.info"))
	if err != nil {
		t.Fatal(err)
	}
	info := string(b)
	lib := regexp.MustCompile(`(?s)SF:[^\n]*/suitelib\.c\n.*?end_of_record\n`).FindString(info)
	if lib == "" || strings.Count(info, "/suitelib.c\n") != 1 {
		t.Fatalf("the tracefile has not one record of suitelib.c:\n%s", info)
	}
	for _, want := range []string{"FNDA:14,clamp\n", "FNDA:2,twice\n", "FNF:2\nFNH:2\n",
		"DA:4,14\n", "DA:5,3\n", "DA:6,11\n", "DA:7,4\n", "DA:8,7\n", "DA:13,2\n"} {
		if !strings.Contains(lib, want) {
			t.Errorf("suitelib.c's record lacks %q:\n%s", strings.TrimSpace(want), lib)
		}
	}
	if regexp.MustCompile(`(?m)^DA:\d+,0$`).MatchString(lib) {
		t.Errorf("a line of suitelib.c unrun in the suite:\n%s", lib)
	}
	for _, prog := range []string{"suite_a.c", "suite_b.c"} {
		if !strings.Contains(info, "/"+prog+"\n") {
			t.Errorf("the tracefile has no record of %s:\n%s", prog, info)
		}
	}
	if out, ok := consumer(t, dir, "lcov", "--summary", "suite.info"); ok && !strings.Contains(out, "functions..: 100.0% (4 of 4 functions)") {
		t.Errorf("lcov --summary:\n%s", out)
	}
	if _, ok := consumer(t, dir, "genhtml", "-q", "-o", "html", "suite.info"); ok {
		if pages, _ := filepath.Glob(filepath.Join(dir, "html", "*", "suitelib.c.gcov.html")); len(pages) != 1 {
			t.Errorf("genhtml made no page of suitelib.c")
		}
	}

	r := must(t, dir, "plist", append([]string{"/nologo", "--combine", "--fail-under=100"}, pbts...)...)
	if !strings.HasPrefix(r.stdout, "Combined coverage of 2 line profiles\n") || !regexp.MustCompile(`(?m)^\s+\d+\s+\d+\s+100\.0%\s+2\s+2\s+100\.0%\s+\S*/suitelib\.c$`).MatchString(r.stdout) {
		t.Errorf("the summary:\n%s", r.stdout)
	}
	checkSuitePage(t, dir, pbts)

	fc, fcLib := testutil.BuildLinked(t, "suite_a", suiteFixture("suite_a"))
	fcDir, _ := linkedWorkflow(t, fc, fcLib, []string{"/FC"})
	wantFail(t, tool(t, dir, "plist", "/nologo", "--combine", pbts[0], filepath.Join(fcDir, "suite_a")), 1, "PRF1485")
	wantFail(t, tool(t, dir, "plist", "/nologo", "--combine", "--format=html", "-o", "fc.html", filepath.Join(fcDir, "suite_a")), 2, "--format=html: invalid option")
	if _, err := os.Stat(filepath.Join(dir, "fc.html")); err == nil {
		t.Error("a page of function profiles combined was written")
	}
	wantFail(t, tool(t, dir, "plist", "/nologo", "--combine", "--format=json", pbts[0]), 2, "--combine: invalid option")
	// A database missing, or not one: named, and no tracefile written,
	// not even the others' part.
	wantFail(t, tool(t, dir, "plist", "/nologo", "--combine", "--format=lcov", "-o", "none.info", pbts[0], "nosuch"), 1, "PRF1011: cannot open file nosuch.pbt")
	if err := os.WriteFile(filepath.Join(dir, "junk.pbt"), []byte("not a database"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = tool(t, dir, "plist", "/nologo", "--combine", "--format=lcov", "-o", "none.info", pbts[0], "junk")
	if r.status == 0 || !strings.Contains(r.stderr, "junk.pbt") || !strings.Contains(r.stderr, "PRF") {
		t.Errorf("--combine of a file that is not a database: status %d\n%s", r.status, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "none.info")); err == nil {
		t.Error("a tracefile was written though an input could not be read")
	}
}

// checkSuitePage writes the page of the suite's two line counting
// profiles pbts combined (plist --combine --format=html) and reads
// suitelib.c in it: its row of the Files summary has every line run
// (100.0 %) and the hits of both programs; its annotated source has
// each line's count summed over the programs, those the tracefile has
// (clamp's first test 14, its returns 3, 4 and 7, its second test 11,
// twice's line 2), each a link target of the page; the header names
// the two profiles, each of line counting with its one run.
func checkSuitePage(t *testing.T, dir string, pbts []string) {
	t.Helper()
	must(t, dir, "plist", append([]string{"/nologo", "--combine", "--format=html", "-o", "suite.html"}, pbts...)...)
	b, err := os.ReadFile(filepath.Join(dir, "suite.html"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, p := range pbts {
		if want := p + ".pbt</span>: line counting, 1 run</li>"; !strings.Contains(page, want) {
			t.Errorf("the page's header lacks %s", want)
		}
	}
	if !strings.Contains(page, "<h1>Combined coverage of 2 profiles</h1>") {
		t.Error("the page's heading is not the suite's")
	}
	row := regexp.MustCompile(`<a href="#(F0-\d+)">suitelib\.c</a></td><td class="n">(\d+)</td><td class="n">(\d+)</td><td class="n">([\d.]+)</td><td class="n">(\d+)</td>`).FindStringSubmatch(page)
	if row == nil {
		t.Fatalf("no row of suitelib.c in the page's Files summary:\n%s", page)
	}
	if row[2] != row[3] || row[4] != "100.0" {
		t.Errorf("suitelib.c's row: %s lines, %s run, %s %%; want every line run", row[2], row[3], row[4])
	}
	src := regexp.MustCompile(`(?s)<div class="file" id="` + row[1] + `">\n<h3>[^<]*/suitelib\.c</h3>.*?</div>`).FindString(page)
	if src == "" {
		t.Fatalf("no annotated source of suitelib.c, %s", row[1])
	}
	for line, want := range map[int]string{4: "14", 5: "3", 6: "11", 7: "4", 8: "7", 13: "2"} {
		cell := regexp.MustCompile(fmt.Sprintf(`<tr id="L0-%s-%d" class="[a-z]+"><td class="ln">%d</td><td class="c">(\d+)</td>`, row[1][len("F0-"):], line, line)).FindStringSubmatch(src)
		if cell == nil || cell[1] != want {
			t.Errorf("suitelib.c's line %d in the page: %v, want %s", line, cell, want)
		}
	}
	if strings.Contains(src, `class="never"`) {
		t.Errorf("a line of suitelib.c is marked never run:\n%s", src)
	}
}
