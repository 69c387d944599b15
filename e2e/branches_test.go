package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/testutil"
)

// branchWays are the ways the branches of branches.c go, by line, as
// its header says: to the target first, then on (the -O0 code's test of
// each line is one conditional branch). both's x < 0 (jns, b.ge: to the
// target when it is not negative) goes both ways; one's only to the
// target; never's does not run; main's loop test goes back into the
// loop 10 times and out once; main's argc > 99 only to the target, over
// the call; spin's loop test goes back 1,000 times and on once.
var branchWays = map[int][2]uint64{24: {1, 1}, 31: {1, 0}, 38: {0, 0}, 46: {1, 1}, 49: {1, 0}, spinLine: {1, 1}}

// spinLine is spin's loop: by breakpoints, its branch goes back more
// times than a branch's breakpoint stops the program, and is left
// uncounted (Stats.Unprobed).
const spinLine = 59

// TestBranchCoverage profiles branches.c with line coverage, built PIE
// and not, its branches marked in-process (a trampoline per branch with
// a mark on each way) and by breakpoints (each hit emulates the branch),
// and checks each line's branch went the ways branchWays says (by
// breakpoints, spin's is not counted: spinLine), and that a second run
// adds its ways to the first's in the database.
func TestBranchCoverage(t *testing.T) {
	testutil.MustHavePtrace(t)
	for _, b := range []build{{"pie", nil}, {"nopie", []string{"-no-pie"}}} {
		t.Run(b.name, func(t *testing.T) {
			// (Each build in a test of its own: the arm64 suite's export
			// of the fixtures skips the test that builds one.)
			testBranchCoverage(t, testutil.BuildC(t, "branches", b.flags...))
		})
	}
}

// testBranchCoverage is TestBranchCoverage of one build, prog.
func testBranchCoverage(t *testing.T, prog string) {
	for _, mech := range []struct {
		name string
		opts []string
	}{{"inprocess", nil}, {"breakpoints", []string{"--breakpoints"}}} {
		t.Run(mech.name, func(t *testing.T) {
			dir, r := workflowWith(t, prog, []string{"/LV"}, mech.opts)
			if r.status != 0 || !strings.Contains(r.stdout, "branches done 1") {
				t.Fatalf("profile: status %d\n%s%s", r.status, r.stdout, r.stderr)
			}
			bps := mech.opts != nil
			checkBranchWays(t, filepath.Join(dir, "branches.pbt"), 1, bps)
			checkBranchReports(t, dir, bps)
			if r := tool(t, dir, "profile", append(append([]string{"/nologo"}, mech.opts...), "branches")...); r.status != 0 {
				t.Fatalf("second run: status %d\n%s", r.status, r.stderr)
			}
			must(t, dir, "prep", "/nologo", "/M", "branches")
			checkBranchWays(t, filepath.Join(dir, "branches.pbt"), 2, bps)
		})
	}
}

// checkBranchWays checks that the database pbt, of runs runs of
// branches.c, has one branch on each line of branchWays, which went its
// ways in every run; by breakpoints (bps), spin's was counted in no run.
func checkBranchWays(t *testing.T, pbt string, runs uint64, bps bool) {
	t.Helper()
	m, err := datafile.OpenMerged(pbt)
	if err != nil {
		t.Fatal(err)
	}
	got, uncounted := map[int][2]uint64{}, map[int]uint64{}
	for i, b := range m.Plan.Branches {
		l := &m.Plan.Lines[b.Line]
		if filepath.Base(m.Plan.Modules[l.Module].Files[l.File]) != "branches.c" {
			continue
		}
		if _, twice := got[l.Line]; twice {
			t.Errorf("line %d has two branches", l.Line)
		}
		got[l.Line] = [2]uint64{m.Stats.Branches[2*i], m.Stats.Branches[2*i+1]}
		if i < len(m.Stats.Unprobed) && m.Stats.Unprobed[i] > 0 {
			uncounted[l.Line] = m.Stats.Unprobed[i]
		}
	}
	want := map[int][2]uint64{}
	for line, w := range branchWays {
		want[line] = [2]uint64{w[0] * runs, w[1] * runs}
	}
	wantUncounted := map[int]uint64{}
	if bps {
		want[spinLine] = [2]uint64{runs, 0} // (back, 100 times: then taken out)
		wantUncounted[spinLine] = runs
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ways by line (to the target, on) in %d runs: %v, want %v", runs, got, want)
	}
	if fmt.Sprint(uncounted) != fmt.Sprint(wantUncounted) {
		t.Errorf("runs that did not count, by line: %v, want %v", uncounted, wantUncounted)
	}
}

// checkBranchReports checks the reports of the database of one run of
// branches.c in dir: the lcov tracefile's BRDA records (block 0 of each
// line, way 0 to the target and 1 on; never's line did not run: "-";
// spin's left out by breakpoints, bps, which did not count it), which
// lcov and genhtml read with branch coverage on, and the listing's
// lines whose branches did not go both ways.
func checkBranchReports(t *testing.T, dir string, bps bool) {
	t.Helper()
	info := must(t, dir, "plist", "/nologo", "--format=lcov", "branches").stdout
	var brda []string
	for _, l := range strings.Split(info, "\n") {
		if strings.HasPrefix(l, "BRDA:") || strings.HasPrefix(l, "BRF:") || strings.HasPrefix(l, "BRH:") {
			brda = append(brda, l)
		}
	}
	want := []string{"BRDA:24,0,0,1", "BRDA:24,0,1,1", "BRDA:31,0,0,1", "BRDA:31,0,1,0", "BRDA:38,0,0,-", "BRDA:38,0,1,-",
		"BRDA:46,0,0,1", "BRDA:46,0,1,1", "BRDA:49,0,0,1", "BRDA:49,0,1,0", "BRDA:59,0,0,1", "BRDA:59,0,1,1", "BRF:12", "BRH:8"}
	summary, taken := "66.7% (8 of 12 branches)", "8 of 12 branch ways taken (66.7%)\n"
	if bps {
		want = append(want[:10:10], "BRF:10", "BRH:6")
		summary, taken = "60.0% (6 of 10 branches)", "6 of 10 branch ways taken (60.0%)\n"
	}
	if strings.Join(brda, " ") != strings.Join(want, " ") {
		t.Errorf("branch records:\n%s\nwant:\n%s", strings.Join(brda, "\n"), strings.Join(want, "\n"))
	}
	if err := os.WriteFile(filepath.Join(dir, "branches.info"), []byte(info), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, ok := consumer(t, dir, "lcov", "--rc", "lcov_branch_coverage=1", "--rc", "branch_coverage=1", "--summary", "branches.info"); ok && !strings.Contains(out, summary) {
		t.Errorf("lcov --summary:\n%s", out)
	}
	if _, ok := consumer(t, dir, "genhtml", "-q", "--branch-coverage", "-o", "html", "branches.info"); ok {
		if pages, _ := filepath.Glob(filepath.Join(dir, "html", "*", "branches.c.gcov.html")); len(pages) != 1 {
			t.Errorf("genhtml made no page of branches.c")
		}
	}
	listing := must(t, dir, "plist", "/nologo", "branches").stdout
	_, section, _ := strings.Cut(listing, "Branches Not Taken Both Ways\n")
	for _, want := range []string{"branches.c:31   branch 0 never on\n", "branches.c:38   never ran (1 branch)\n",
		"branches.c:49   branch 0 never on\n", taken} {
		if !strings.Contains(section, want) {
			t.Errorf("the listing's branches lack %q:\n%s", strings.TrimSpace(want), section)
		}
	}
	if strings.Contains(section, "branches.c:24") || strings.Contains(section, "branches.c:46") || strings.Contains(section, "branches.c:59") {
		t.Errorf("the listing names a line whose branch went both ways:\n%s", section)
	}
}
