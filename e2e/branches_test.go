package e2e

import (
	"fmt"
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
// the call.
var branchWays = map[int][2]uint64{20: {1, 1}, 27: {1, 0}, 34: {0, 0}, 42: {1, 1}, 45: {1, 0}}

// TestBranchCoverage profiles branches.c with line coverage, built PIE
// and not, its branches marked in-process (a trampoline per branch with
// a mark on each way) and by breakpoints (each hit emulates the branch),
// and checks each line's branch went the ways branchWays says, and that
// a second run adds its ways to the first's in the database.
func TestBranchCoverage(t *testing.T) {
	testutil.MustHavePtrace(t)
	for _, b := range []build{{"pie", nil}, {"nopie", []string{"-no-pie"}}} {
		prog := testutil.BuildC(t, "branches", b.flags...)
		for _, mech := range []struct {
			name string
			opts []string
		}{{"inprocess", nil}, {"breakpoints", []string{"--breakpoints"}}} {
			t.Run(b.name+"/"+mech.name, func(t *testing.T) {
				dir, r := workflowWith(t, prog, []string{"/LV"}, mech.opts)
				if r.status != 0 || !strings.Contains(r.stdout, "branches done 1") {
					t.Fatalf("profile: status %d\n%s%s", r.status, r.stdout, r.stderr)
				}
				checkBranchWays(t, filepath.Join(dir, "branches.pbt"), 1)
				if r := tool(t, dir, "profile", append(append([]string{"/nologo"}, mech.opts...), "branches")...); r.status != 0 {
					t.Fatalf("second run: status %d\n%s", r.status, r.stderr)
				}
				must(t, dir, "prep", "/nologo", "/M", "branches")
				checkBranchWays(t, filepath.Join(dir, "branches.pbt"), 2)
			})
		}
	}
}

// checkBranchWays checks that the database pbt, of runs runs of
// branches.c, has one branch on each line of branchWays, which went its
// ways in every run.
func checkBranchWays(t *testing.T, pbt string, runs uint64) {
	t.Helper()
	m, err := datafile.OpenMerged(pbt)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int][2]uint64{}
	for i, b := range m.Plan.Branches {
		l := &m.Plan.Lines[b.Line]
		if filepath.Base(m.Plan.Modules[l.Module].Files[l.File]) != "branches.c" {
			continue
		}
		if _, twice := got[l.Line]; twice {
			t.Errorf("line %d has two branches", l.Line)
		}
		got[l.Line] = [2]uint64{m.Stats.Branches[2*i], m.Stats.Branches[2*i+1]}
	}
	want := map[int][2]uint64{}
	for line, w := range branchWays {
		want[line] = [2]uint64{w[0] * runs, w[1] * runs}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ways by line (to the target, on) in %d runs: %v, want %v", runs, got, want)
	}
}
