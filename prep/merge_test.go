package prep

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/prf"
)

// testPlan is a three-function plan of the given method.
func testPlan(method datafile.Method, prog string) *datafile.Plan {
	p := &datafile.Plan{
		Method:      method,
		StartIndex:  -1,
		Calibration: -1,
		Modules:     []datafile.Module{{Name: prog, Path: "/build/" + prog, Arch: "amd64", Size: 1000}},
		Funcs: []datafile.Func{
			{Name: "main", Source: "prog.o", Entry: 0x1100},
			{Name: "fib", Source: "prog.o", Entry: 0x1140},
			{Name: "helper", Source: "prog.o", Entry: 0x1180},
		},
	}
	p.ID = datafile.PlanID(p)
	return p
}

// testCounts is one run of plan p.
func testCounts(p *datafile.Plan, cmdline string, hits ...uint64) *datafile.Counts {
	c := &datafile.Counts{
		PlanID: p.ID,
		Method: p.Method,
		Run:    datafile.Run{Time: 1_700_000_000, CommandLine: cmdline},
		Stats:  datafile.Stats{Hits: hits, CallDepth: len(cmdline)},
	}
	if p.Method.IsTiming() {
		c.Stats.FuncTime = []int64{100, 200, 300}
		c.Stats.ChildTime = []int64{600, 200, 300}
		c.Stats.TotalTime = 1000
		c.Overhead = 40
	}
	return c
}

// mergeFixture writes a fresh .pbt of plan p and the given .pbo files into
// a temporary directory and returns its path and theirs.
func mergeFixture(t *testing.T, p *datafile.Plan, counts ...*datafile.Counts) (pbt string, pbos []string) {
	t.Helper()
	dir := t.TempDir()
	pbt = filepath.Join(dir, "prog.pbt")
	if err := datafile.SaveMerged(pbt, datafile.NewMerged(p)); err != nil {
		t.Fatal(err)
	}
	for i, c := range counts {
		pbo := filepath.Join(dir, "run"+string(rune('a'+i))+".pbo")
		if err := datafile.SaveCounts(pbo, c); err != nil {
			t.Fatal(err)
		}
		pbos = append(pbos, pbo)
	}
	return pbt, pbos
}

func TestMergeAdds(t *testing.T) {
	p := testPlan(datafile.FuncCounting, "prog")
	pbt, pbos := mergeFixture(t, p,
		testCounts(p, "prog 1", 1, 10, 7),
		testCounts(p, "prog second", 1, 177, 0))
	// The same .pbo twice counts twice: there is no duplicate detection.
	pbos = append(pbos, pbos[0])
	var warnings []error
	if err := Merge(pbt, pbos, pbt, func(err *prf.Diagnostic) { warnings = append(warnings, err) }); err != nil {
		t.Fatalf("Merge: %v", err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings: %v", warnings)
	}
	m, err := datafile.OpenMerged(pbt)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]uint64{3, 197, 14}, m.Stats.Hits); diff != "" {
		t.Errorf("hits (-want +got):\n%s", diff)
	}
	var cmdlines []string
	for _, r := range m.Runs {
		cmdlines = append(cmdlines, r.CommandLine)
	}
	if diff := cmp.Diff([]string{"prog 1", "prog second", "prog 1"}, cmdlines); diff != "" {
		t.Errorf("runs (-want +got):\n%s", diff)
	}
	if m.Stats.CallDepth != len("prog second") {
		t.Errorf("call depth = %d, want the largest, %d", m.Stats.CallDepth, len("prog second"))
	}
}

func TestMergeTiming(t *testing.T) {
	p := testPlan(datafile.FuncTiming, "prog")
	pbt, pbos := mergeFixture(t, p, testCounts(p, "a", 1, 2, 3), testCounts(p, "b", 1, 2, 3))
	out := filepath.Join(filepath.Dir(pbt), "out.pbt")
	if err := Merge(pbt, pbos, out, nil); err != nil {
		t.Fatalf("Merge: %v", err)
	}
	m, err := datafile.OpenMerged(out)
	if err != nil {
		t.Fatal(err)
	}
	got := []any{m.Stats.FuncTime, m.Stats.ChildTime, m.Stats.TotalTime, m.Overheads}
	want := []any{[]int64{200, 400, 600}, []int64{1200, 400, 600}, int64(2000), []int64{40, 40}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("timing (-want +got):\n%s", diff)
	}
	// The input is not touched when the output is another file.
	in, err := datafile.OpenMerged(pbt)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Runs) != 0 {
		t.Errorf("input has %d runs after the merge, want 0", len(in.Runs))
	}
}

func TestMergeCopy(t *testing.T) {
	p := testPlan(datafile.FuncCoverage, "prog")
	pbt, _ := mergeFixture(t, p)
	out := filepath.Join(filepath.Dir(pbt), "copy.pbt")
	if err := Merge(pbt, nil, out, nil); err != nil {
		t.Fatalf("Merge: %v", err)
	}
	a, _ := os.ReadFile(pbt)
	b, err := os.ReadFile(out)
	if err != nil || !bytes.Equal(a, b) {
		t.Errorf("copy differs from its input (err %v)", err)
	}
}

func TestMergeIncompleteRun(t *testing.T) {
	p := testPlan(datafile.FuncCounting, "prog")
	c := testCounts(p, "prog", 1, 5, 0)
	c.Run.Incomplete, c.Run.Reason = true, "killed by signal 9 (SIGKILL)"
	pbt, pbos := mergeFixture(t, p, c)
	var warnings []string
	if err := Merge(pbt, pbos, pbt, func(err *prf.Diagnostic) { warnings = append(warnings, err.Error()) }); err != nil {
		t.Fatalf("Merge: %v", err)
	}
	want := []string{pbos[0] + " holds an incomplete run (killed by signal 9 (SIGKILL)): its counts stop where the run stopped"}
	if diff := cmp.Diff(want, warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	m, err := datafile.OpenMerged(pbt)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Runs[0].Incomplete || m.Stats.Hits[1] != 5 {
		t.Errorf("merged run = %+v, hits %v: want the incomplete run's counts", m.Runs[0], m.Stats.Hits)
	}
}

func TestMergeErrors(t *testing.T) {
	p := testPlan(datafile.FuncCounting, "prog")
	other := testPlan(datafile.FuncCounting, "other")
	coverage := testPlan(datafile.FuncCoverage, "prog")
	timing := testPlan(datafile.FuncTiming, "prog")
	tests := []struct {
		name   string
		counts []*datafile.Counts
		extra  string // a .pbo path added after the fixtures' ("" none)
		code   int
		msg    string // with DIR for the directory
	}{
		{"other program", []*datafile.Counts{testCounts(p, "a", 1, 1, 1), testCounts(other, "b", 1, 1, 1)}, "", 1306,
			"PBT or PBO file DIR/runb.pbo is not derived from same PBI file"},
		// A counting run into a .pbt prepared again for coverage: the same
		// sites, another method.
		{"other method", []*datafile.Counts{testCounts(coverage, "a", 1, 1, 1)}, "", 1304,
			"PBT or PBO file DIR/runa.pbo conflicts with current profiling state"},
		// Timing and non-timing data are incompatible: another plan.
		{"timing into counting", []*datafile.Counts{testCounts(timing, "a", 1, 1, 1)}, "", 1306,
			"PBT or PBO file DIR/runa.pbo is not derived from same PBI file"},
		{"missing pbo", []*datafile.Counts{testCounts(p, "a", 1, 1, 1)}, "nosuch.pbo", 1011,
			"cannot open file DIR/nosuch.pbo"},
		{"pbt as pbo", nil, "prog.pbt", 1012, "cannot read expected number of bytes from file DIR/prog.pbt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pbt, pbos := mergeFixture(t, p, tt.counts...)
			dir := filepath.Dir(pbt)
			if tt.extra != "" {
				pbos = append(pbos, filepath.Join(dir, tt.extra))
			}
			before, err := os.ReadFile(pbt)
			if err != nil {
				t.Fatal(err)
			}
			err = Merge(pbt, pbos, pbt, nil)
			if err == nil {
				t.Fatal("Merge succeeded, want an error")
			}
			msg := strings.ReplaceAll(err.(*prf.Diagnostic).Text, dir, "DIR")
			if prf.Code(err) != tt.code || msg != tt.msg {
				t.Errorf("Merge = PRF%d %q, want PRF%d %q", prf.Code(err), msg, tt.code, tt.msg)
			}
			after, err := os.ReadFile(pbt)
			if err != nil || !bytes.Equal(before, after) {
				t.Errorf("a failed merge changed the .pbt (err %v)", err)
			}
		})
	}
}

func TestMergeMissingPBT(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.pbt")
	err := Merge(filepath.Join(dir, "nosuch.pbt"), nil, out, nil)
	if prf.Code(err) != 1011 {
		t.Errorf("Merge = %v, want PRF1011", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("output written after a failed merge: %v", err)
	}
}
