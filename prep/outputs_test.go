package prep

import (
	"os"
	"path/filepath"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/prf"
)

// TestPrepAgainClearsRuns: phase I over a profiled program discards the
// runs waiting beside the database, as it discards those inside it. The
// runs of prog.pbo and prog.pbo.2, of the same plan and never merged,
// join the new database's discarded runs; prog.pbo.2, prog.pbo.3 (of the
// plan before: the program was prepared for another type) and prog.pbo.4
// (a run merged already) are removed; prog.pbo stays, as the original
// left it, and a file that is no run is left alone. PREP /M then finds
// nothing to merge, rather than a run of another plan it cannot take
// (the course's path: chapter 2 left runs in prog.pbo.N, chapter 3
// prepared for timing, and prep /M failed on prog.pbo.2 with PRF1306).
func TestPrepAgainClearsRuns(t *testing.T) {
	dir := t.TempDir()
	plan := func(m datafile.Method) *datafile.Plan {
		p := &datafile.Plan{
			Method: m, StartIndex: -1, Calibration: -1,
			Modules: []datafile.Module{{Name: "prog", Path: "/opt/prog", Arch: "amd64", PIE: true}},
			Funcs:   []datafile.Func{{Name: "f", Source: "prog.o", Entry: 0x1100}},
		}
		p.ID = datafile.PlanID(p)
		return p
	}
	counting, timing := plan(datafile.FuncCounting), plan(datafile.FuncTiming)
	run := func(p *datafile.Plan, hits uint64) *datafile.Counts {
		c := &datafile.Counts{PlanID: p.ID, Method: p.Method, Run: datafile.Run{ID: datafile.NewRunID(), CommandLine: "prog"},
			Stats: datafile.Stats{Hits: []uint64{hits}}}
		if p.Method.IsTiming() {
			c.Stats.FuncTime, c.Stats.ChildTime = []int64{0}, []int64{0}
		}
		return c
	}
	base := filepath.Join(dir, "prog")
	pbi, pbt := base+".pbi", base+".pbt"
	old := datafile.NewMerged(counting)
	merged := run(counting, 7)
	if err := old.Add(merged); err != nil {
		t.Fatal(err)
	}
	files := map[string]*datafile.Counts{
		base + ".pbo": run(counting, 1), base + ".pbo.2": run(counting, 2),
		base + ".pbo.3": run(timing, 3), base + ".pbo.4": merged,
	}
	for path, c := range files {
		if err := datafile.SaveCounts(path, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := datafile.SaveMerged(pbt, old); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(base+".pbo.5", []byte("not a run"), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := []string{base + ".pbo", base + ".pbo.2", base + ".pbo.3", base + ".pbo.4", base + ".pbo.5"}
	var warnings []string
	warn := func(d *prf.Diagnostic) { warnings = append(warnings, prf.Line("prep", d)) }
	if err := WriteOutputs(counting, pbi, pbt, func() []string { return runs }, warn); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"prep: warning PRF4306: " + pbt + " held 1 run; it is discarded and the new prog.pbt is empty",
		"prep: warning PRF4308: " + base + ".pbo, " + base + ".pbo.2, " + base + ".pbo.3 and " + base + ".pbo.4 held runs of the earlier preparation, not merged into " + pbt +
			": they are discarded with it, and " + base + ".pbo.2, " + base + ".pbo.3 and " + base + ".pbo.4 removed",
	}
	if d := gocmp.Diff(want, warnings); d != "" {
		t.Errorf("warnings (-want +got):\n%s", d)
	}
	for path, kept := range map[string]bool{".pbo": true, ".pbo.2": false, ".pbo.3": false, ".pbo.4": false, ".pbo.5": true} {
		if _, err := os.Stat(base + path); (err == nil) != kept {
			t.Errorf("prog%s: kept %v, want %v", path, err == nil, kept)
		}
	}
	m, err := datafile.OpenMerged(pbt)
	if err != nil {
		t.Fatal(err)
	}
	for path, c := range files {
		if m.Pending(c) {
			t.Errorf("the run of %s is still pending in the new database", filepath.Base(path))
		}
	}
	// prep /M: nothing to merge, and it says why.
	if added, err := MergePending(pbt, []string{base + ".pbo"}, nil); len(added) != 0 || prf.Code(err) != 1309 {
		t.Errorf("prep /M after phase I: %v, %v; want PRF1309", added, err)
	}
	// Phase I again, nothing waiting: no word.
	warnings = nil
	if err := WriteOutputs(counting, pbi, pbt, func() []string { return []string{base + ".pbo"} }, warn); err != nil || warnings != nil {
		t.Errorf("phase I once more: %v, warnings %q", err, warnings)
	}
}
