package main

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/bench/internal/callgrind"
	"github.com/sourceprofiler/sprof/datafile"
)

// callgrindOut is bench/internal/callgrind's calls.out: a callgrind
// output of the shape --dump-instr=yes writes, a PLT call's cost and its
// stub's among its lines.
var callgrindOut = func() string {
	b, _ := os.ReadFile("../internal/callgrind/testdata/calls.out") // (missing: the tests that read it fail)
	return string(b)
}()

// TestCompare: a line counts the runs of all its sites; the program's
// load bias under valgrind is found from its functions' entries.
func TestCompare(t *testing.T) {
	p, err := callgrind.Read(strings.NewReader(callgrindOut), func(obj string) bool { return obj == "/opt/prog" })
	if err != nil {
		t.Fatal(err)
	}
	plan := &datafile.Plan{
		Modules: []datafile.Module{{Name: "prog", Path: "/opt/prog", Files: []string{"prog.c"}}},
		Funcs:   []datafile.Func{{Name: "main", Entry: 0x1000}, {Name: "leaf", Entry: 0x1100}},
		Lines: []datafile.Line{
			{Line: 1, Addrs: []uint64{0x1000, 0x1002}},
			{Line: 5, Addrs: []uint64{0x1005}},
			{Line: 7, Addrs: []uint64{0x1100}},
			{Line: 9, Addrs: []uint64{0x1200}}, // never ran
		},
	}
	bias, err := loadBias(plan, p)
	if err != nil || bias != 0x108000 {
		t.Fatalf("bias %#x, %v; want 0x108000", bias, err)
	}
	c := compare(plan, []uint64{2, 5, 6, 0}, p.Ir, bias)
	if c.lines != 4 || c.same != 3 || c.ran != 3 || len(c.differ) != 1 || !strings.Contains(c.differ[0], "prog.c:7: counted 6, its sites ran 7") {
		t.Errorf("%+v", c)
	}
}

// TestRun: the whole command, on files written as PREP, PROFILE and
// callgrind write them; and its refusals of files that do not go
// together, each naming the file.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	plan := &datafile.Plan{
		Method:  datafile.LineCounting,
		Modules: []datafile.Module{{Name: "prog", Path: "/opt/prog", Arch: "amd64", Files: []string{"prog.c"}}},
		Funcs:   []datafile.Func{{Name: "main", Entry: 0x1000}, {Name: "leaf", Entry: 0x1100}},
		Lines: []datafile.Line{
			{Line: 1, Addrs: []uint64{0x1000, 0x1002}},
			{Line: 5, Addrs: []uint64{0x1005}},
			{Line: 7, Addrs: []uint64{0x1100}},
		},
	}
	plan.ID = datafile.PlanID(plan)
	counts := &datafile.Counts{PlanID: plan.ID, Method: plan.Method, Stats: datafile.Stats{Hits: []uint64{2, 5, 6}}}
	other := &datafile.Counts{PlanID: datafile.ID{2}, Method: plan.Method, Stats: datafile.Stats{Hits: []uint64{2, 5, 7}}}
	pbi, pbo, otherPbo := dir+"/prog.pbi", dir+"/prog.pbo", dir+"/other.pbo"
	cg, bad := dir+"/callgrind.out", dir+"/bad.out"
	for _, err := range []error{
		datafile.SavePlan(pbi, plan), datafile.SaveCounts(pbo, counts), datafile.SaveCounts(otherPbo, other),
		os.WriteFile(cg, []byte(callgrindOut), 0o644), os.WriteFile(bad, []byte("events: Ir\n0x1000 1\n"), 0o644),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	var out strings.Builder
	if err := run(&out, pbi, pbo, cg, ""); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "2 of 3 lines of prog counted as callgrind ran their sites (3 of them ran)\n") ||
		!strings.Contains(out.String(), "prog.c:7: counted 6, its sites ran 7 times") {
		t.Errorf("output:\n%s", out.String())
	}
	for _, c := range []struct{ pbi, pbo, cg, want string }{
		{dir + "/missing.pbi", pbo, cg, "missing.pbi"},
		{pbi, otherPbo, cg, "other.pbo is not a line profile of the plan"},
		{pbi, pbo, bad, "bad.out"},
		{pbi, pbo, dir + "/missing.out", "missing.out"},
	} {
		if err := run(io.Discard, c.pbi, c.pbo, c.cg, ""); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("run(%s, %s, %s): %v, want an error naming %q", c.pbi, c.pbo, c.cg, err, c.want)
		}
	}
}

// TestRunCover: given a line coverage plan, the lines whose statement
// rows ran (its addresses) and those callgrind's line numbers say ran,
// each with the lines no site of which ran and those that read 0; a
// coverage plan of another program is refused, naming it.
func TestRunCover(t *testing.T) {
	dir := t.TempDir()
	mod := datafile.Module{Name: "prog", Path: "/opt/prog", Arch: "amd64", BuildID: []byte{1}, Files: []string{"prog.c"}}
	plan := &datafile.Plan{
		Method:  datafile.LineCounting,
		Modules: []datafile.Module{mod},
		Funcs:   []datafile.Func{{Name: "main", Entry: 0x1000}, {Name: "leaf", Entry: 0x1100}},
		Lines: []datafile.Line{
			{Line: 1, Addrs: []uint64{0x1000, 0x1002}},
			{Line: 5, Addrs: []uint64{0x1005}},
			{Line: 7, Addrs: []uint64{0x1100}},
			{Line: 10, Addrs: []uint64{0x1300}}, // no site that ran
		},
	}
	plan.ID = datafile.PlanID(plan)
	cover := &datafile.Plan{Method: datafile.LineCoverage, StartIndex: -1, Modules: []datafile.Module{mod}, Lines: []datafile.Line{
		{Line: 1, Addrs: []uint64{0x1000}},
		{Line: 5, Addrs: []uint64{0x1009}},
		{Line: 7, Addrs: []uint64{0x1100}},
		{Line: 10, Addrs: []uint64{0x1101}}, // ran 7 times
		{Line: 12, Addrs: []uint64{0x1400}}, // never ran
	}}
	cover.ID = datafile.PlanID(cover)
	other := &datafile.Plan{Method: datafile.LineCoverage, StartIndex: -1, Modules: []datafile.Module{{Name: "prog", BuildID: []byte{2}}}}
	other.ID = datafile.PlanID(other)
	counts := &datafile.Counts{PlanID: plan.ID, Method: plan.Method, Stats: datafile.Stats{Hits: []uint64{2, 5, 7, 0}}}
	pbi, pbo, cg := dir+"/prog.pbi", dir+"/prog.pbo", dir+"/callgrind.out"
	for _, err := range []error{
		datafile.SavePlan(pbi, plan), datafile.SavePlan(dir+"/cover.pbi", cover), datafile.SavePlan(dir+"/other.pbi", other),
		datafile.SaveCounts(pbo, counts), os.WriteFile(cg, []byte(callgrindOut), 0o644),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	var out strings.Builder
	if err := run(&out, pbi, pbo, cg, dir+"/cover.pbi"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"4 of 4 lines of prog counted as callgrind ran their sites (3 of them ran)\n",
		"4 lines of prog ran, a statement row of theirs: 1 with no site that ran, 1 read 0\n" +
			"   prog.c:10: no site ran, its instructions ran 7 times (sites [0x1300])\n" +
			"   prog.c:10: counted 0, its instructions ran 7 times, its sites 0 (sites [0x1300])\n",
		// callgrind's lines of prog.c: 3, 4, 5 (10 executions) and 10 (14).
		"2 lines of prog ran, any instruction of theirs: 1 with no site that ran, 1 read 0\n" +
			"   prog.c:10: no site ran, its instructions ran 14 times (sites [0x1300])\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output:\n%s\nwant in it:\n%s", out.String(), want)
		}
	}
	if err := run(io.Discard, pbi, pbo, cg, dir+"/other.pbi"); err == nil || !strings.Contains(err.Error(), "other.pbi is not a line coverage plan of /opt/prog") {
		t.Errorf("another program's coverage plan: %v", err)
	}
}
