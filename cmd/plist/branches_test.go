package main

import (
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
)

// writeBranchProfile writes name.pbt: line coverage of program name,
// whose lines are /src/lib.c's 3 and 4, its branches one on each line,
// and the runs given, each its hits and its branches' ways (0 or 1: a
// run went that way or not), merged as PREP merges them.
func writeBranchProfile(t *testing.T, name string, runs [][2][]uint64) {
	t.Helper()
	p := &datafile.Plan{Method: datafile.LineCoverage, StartIndex: -1, Calibration: -1,
		Modules:  []datafile.Module{{Name: name, Path: "/opt/" + name, Arch: "amd64", Files: []string{"/src/lib.c"}}},
		Lines:    []datafile.Line{{Line: 3, Addrs: []uint64{0x100}}, {Line: 4, Addrs: []uint64{0x110}}},
		Branches: []datafile.Branch{{Line: 0, Addr: 0x108, Target: 0x100}, {Line: 1, Addr: 0x118, Target: 0x100}},
	}
	p.ID = datafile.PlanID(p)
	m := datafile.NewMerged(p)
	for k, r := range runs {
		c := &datafile.Counts{PlanID: p.ID, Method: p.Method,
			Run:   datafile.Run{ID: datafile.NewRunID(), Time: 1700000000 + int64(k), CommandLine: name},
			Stats: datafile.Stats{Hits: r[0], Branches: r[1]}}
		if err := m.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := datafile.SaveMerged(name+".pbt", m); err != nil {
		t.Fatal(err)
	}
}

// TestCombineBranches: databases with branches, written and read back
// in the data file's format, combined by plist --combine: the lcov
// tracefile adds their ways as lcov -a does, and the summary has the
// branches' columns. test_a's two runs both ran line 3 and went to its
// branch's target, one went on too; neither ran line 4. test_b's run
// ran both lines, line 3's branch on, line 4's to its target.
func TestCombineBranches(t *testing.T) {
	t.Chdir(t.TempDir())
	writeBranchProfile(t, "test_a", [][2][]uint64{{{1, 0}, {1, 1, 0, 0}}, {{1, 0}, {1, 0, 0, 0}}})
	writeBranchProfile(t, "test_b", [][2][]uint64{{{1, 1}, {0, 1, 1, 0}}})
	stdout, stderr, status := runPlist(t, words("/nologo --combine --format=lcov test_a test_b"), "")
	want := "TN:\nSF:/src/lib.c\nBRDA:3,0,0,2\nBRDA:3,0,1,2\nBRDA:4,0,0,1\nBRDA:4,0,1,0\nBRF:4\nBRH:3\n" +
		"DA:3,3\nDA:4,1\nLF:2\nLH:2\nend_of_record\n"
	if status != 0 || stderr != "" || stdout != want {
		t.Errorf("plist --combine --format=lcov: status %d, stderr %q, stdout\n%s\nwant\n%s", status, stderr, stdout, want)
	}
	stdout, _, status = runPlist(t, words("/nologo --combine test_a test_b"), "")
	if want := "       2        2   100.0%           0        0     0.0%          4        3    75.0%  Total (1 file)\n"; status != 0 || !strings.HasSuffix(stdout, want) {
		t.Errorf("plist --combine: status %d, stdout\n%s\nwant it to end\n%s", status, stdout, want)
	}
	stdout, _, status = runPlist(t, words("/nologo --format=lcov test_a"), "")
	if want := "BRDA:3,0,0,2\nBRDA:3,0,1,1\nBRDA:4,0,0,-\nBRDA:4,0,1,-\nBRF:4\nBRH:2\n"; status != 0 || !strings.Contains(stdout, want) {
		t.Errorf("plist --format=lcov test_a: status %d, stdout\n%s\nwant it to hold\n%s", status, stdout, want)
	}
	stdout, _, status = runPlist(t, words("/nologo test_a"), "")
	if want := "Branches Not Taken Both Ways\n----------------------------\n    lib.c:4   never ran (1 branch)\n\n    2 of 4 branch ways taken (50.0%)\n"; status != 0 || !strings.HasSuffix(stdout, want) {
		t.Errorf("plist test_a: status %d, stdout\n%s\nwant it to end\n%s", status, stdout, want)
	}
}
