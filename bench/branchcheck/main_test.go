package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/bench/internal/callgrind"
	"github.com/sourceprofiler/sprof/datafile"
)

// callgrindOut is bench/internal/callgrind's jumps.out: a callgrind
// output of the shape --collect-jumps=yes --dump-instr=yes writes, of a
// position-independent program loaded 0x108000 above its link-time
// addresses: a conditional jump that went both ways (jcnd=3/5 at
// 0x109004), one that ran 4 times and never went to its target, one that
// always did, in two contexts (4/4 and 3/3 at 0x109100), and another
// object's jump, which is not the program's.
var callgrindOut = func() string {
	b, _ := os.ReadFile("../internal/callgrind/testdata/jumps.out") // (missing: the tests that read it fail)
	return string(b)
}()

// testPlan is the line coverage plan of the program of callgrindOut, at
// its link-time addresses: the three jumps above and one that never ran
// (0x1200).
func testPlan() *datafile.Plan {
	p := &datafile.Plan{
		Method: datafile.LineCoverage, StartIndex: -1, Calibration: -1,
		Modules: []datafile.Module{{Name: "prog", Path: "/opt/prog", Arch: "amd64", PIE: true, Files: []string{"prog.c"}}},
		Funcs:   []datafile.Func{{Name: "main", Entry: 0x1000}, {Name: "leaf", Entry: 0x1100}},
		Lines: []datafile.Line{
			{Line: 3, Addrs: []uint64{0x1000}},
			{Line: 5, Addrs: []uint64{0x1008}},
			{Line: 10, Addrs: []uint64{0x1100}},
			{Line: 12, Addrs: []uint64{0x1200}},
		},
		Branches: []datafile.Branch{
			{Line: 0, Addr: 0x1004, Target: 0x1010},
			{Line: 1, Addr: 0x1008, Target: 0x1020},
			{Line: 2, Addr: 0x1100, Target: 0x1000},
			{Line: 3, Addr: 0x1200, Target: 0x1210},
		},
	}
	p.ID = datafile.PlanID(p)
	return p
}

// testWays are the profile's ways of testPlan's branches (to the
// target, on): the first's agree; the second went on by callgrind
// alone; the third went on by the profile alone.
var testWays = []uint64{1, 1, 0, 0, 1, 1, 0, 0}

func isProg(obj string) bool { return obj == "/opt/prog" }

// TestLoadBias: the jumps and the functions vote for the bias; a
// program none of whose code callgrind saw has none.
func TestLoadBias(t *testing.T) {
	p, err := callgrind.Read(strings.NewReader(callgrindOut), isProg)
	if err != nil {
		t.Fatal(err)
	}
	plan := testPlan()
	if bias, err := loadBias(plan, p); err != nil || bias != 0x108000 {
		t.Errorf("bias %#x, %v; want 0x108000", bias, err)
	}
	// C++: callgrind's demangled names do not match; the jumps decide.
	plan.Funcs = []datafile.Func{{Name: "_Z4mainv", Entry: 0x1000}}
	if bias, err := loadBias(plan, p); err != nil || bias != 0x108000 {
		t.Errorf("by the jumps alone: bias %#x, %v; want 0x108000", bias, err)
	}
	none := &callgrind.Profile{Taken: map[callgrind.Arc]uint64{{From: 0x9004, To: 0x9020}: 1}, First: map[string]uint64{"other": 0x9000}}
	if _, err := loadBias(plan, none); err == nil || !strings.Contains(err.Error(), "no jump or function of prog ran under callgrind") {
		t.Errorf("nothing of the plan: %v", err)
	}
}

func TestCompare(t *testing.T) {
	p, err := callgrind.Read(strings.NewReader(callgrindOut), isProg)
	if err != nil {
		t.Fatal(err)
	}
	c := compare(testPlan(), testWays, nil, p, 0x108000)
	want := comparison{branches: 4, went: 4, agree: 3, onlyCallgrind: 1, onlyProfile: 1, differ: []string{
		"0x1008 prog.c:5: callgrind taken 0/4; profile target 0, on 0",
		"0x1100 prog.c:10: callgrind taken 7/7; profile target 1, on 1",
	}}
	if c.branches != want.branches || c.went != want.went || c.agree != want.agree || c.onlyCallgrind != want.onlyCallgrind ||
		c.onlyProfile != want.onlyProfile || c.elsewhere != 0 || strings.Join(c.differ, "\n") != strings.Join(want.differ, "\n") {
		t.Errorf("compare:\n%+v\nwant\n%+v", c, want)
	}
	// With a wrong bias, nothing lines up: callgrind's jumps from the
	// branches' addresses go elsewhere.
	if c := compare(testPlan(), testWays, nil, p, 0x108000-0x100); c.elsewhere != 1 || c.went != 2 {
		t.Errorf("wrong bias: %+v, want the jump at 0x109100 elsewhere and 2 ways that went (on, by the Ir at 0x109000 and 0x109100)", c)
	}
}

// TestRun: the whole command, on files written as PREP, PROFILE and
// callgrind write them; and its refusals of files that do not go
// together or cannot be read, each naming the file.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	plan := testPlan()
	counts := &datafile.Counts{PlanID: plan.ID, Method: plan.Method,
		Stats: datafile.Stats{Hits: []uint64{1, 1, 1, 0}, Branches: testWays}}
	other := *counts
	other.PlanID = datafile.ID{2}
	noBranches := &datafile.Plan{Method: datafile.LineCoverage, StartIndex: -1, Calibration: -1,
		Modules: plan.Modules, Lines: plan.Lines}
	noBranches.ID = datafile.PlanID(noBranches)
	noBranchCounts := &datafile.Counts{PlanID: noBranches.ID, Method: plan.Method, Stats: datafile.Stats{Hits: []uint64{1, 1, 1, 0}}}
	path := func(name string) string { return filepath.Join(dir, name) }
	for _, err := range []error{
		datafile.SavePlan(path("prog.pbi"), plan), datafile.SaveCounts(path("prog.pbo"), counts),
		datafile.SaveCounts(path("other.pbo"), &other),
		datafile.SavePlan(path("nobranch.pbi"), noBranches), datafile.SaveCounts(path("nobranch.pbo"), noBranchCounts),
		os.WriteFile(path("callgrind.out"), []byte(callgrindOut), 0o644),
		os.WriteFile(path("bad.out"), []byte("events: Ir\n0x1000 1\n"), 0o644),
		os.WriteFile(path("empty.out"), []byte("positions: instr\nevents: Ir\nob=/opt/prog\n0x1000 1\n"), 0o644),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	var out strings.Builder
	if err := run(&out, path("prog.pbi"), path("prog.pbo"), path("callgrind.out")); err != nil {
		t.Fatal(err)
	}
	want := "4 branches of prog: 4 ways went by callgrind, profile agrees on 3; 2 differ (1 by callgrind only, 1 by the profile only)\n" +
		"   0x1008 prog.c:5: callgrind taken 0/4; profile target 0, on 0\n" +
		"   0x1100 prog.c:10: callgrind taken 7/7; profile target 1, on 1\n"
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}
	for _, c := range []struct{ pbi, pbo, cg, want string }{
		{"missing.pbi", "prog.pbo", "callgrind.out", "missing.pbi"},
		{"prog.pbi", "missing.pbo", "callgrind.out", "missing.pbo"},
		{"prog.pbi", "other.pbo", "callgrind.out", "other.pbo is not a run of the plan"},
		{"nobranch.pbi", "nobranch.pbo", "callgrind.out", "nobranch.pbi has no branch"},
		{"prog.pbi", "prog.pbo", "bad.out", "read " + path("bad.out") + ": line 2: "},
		{"prog.pbi", "prog.pbo", "missing.out", "missing.out"},
		{"prog.pbi", "prog.pbo", "empty.out", "empty.out: no jump or function of prog ran under callgrind"},
	} {
		if err := run(io.Discard, path(c.pbi), path(c.pbo), path(c.cg)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("run(%s, %s, %s): %v, want an error saying %q", c.pbi, c.pbo, c.cg, err, c.want)
		}
	}
}
