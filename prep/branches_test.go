package prep

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/dwarf"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/testutil"
)

// TestPlanBranches plans line coverage of branches.c at -O0, where each
// test of the source is one conditional branch: one branch on each of
// the lines that test (both's, one's and never's if, main's loop and its
// if, spin's loop), each a conditional branch of its function's code, by address; a
// line counting plan has none, nor one made with --no-branches
// (Options.NoBranches), which has the same lines.
func TestPlanBranches(t *testing.T) {
	prog := testutil.BuildC(t, "branches")
	plan, err := planLinesOf(t, datafile.LineCoverage, prog)
	if err != nil {
		t.Fatal(err)
	}
	f, err := dwarf.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	arch, err := instr.ForName(f.Arch)
	if err != nil {
		t.Fatal(err)
	}
	lines := map[int]int{}
	for i, b := range plan.Branches {
		l := &plan.Lines[b.Line]
		if filepath.Base(plan.Modules[l.Module].Files[l.File]) != "branches.c" {
			continue
		}
		lines[l.Line]++
		if i > 0 && b.Addr <= plan.Branches[i-1].Addr {
			t.Errorf("branch %d at %#x after %#x: not by address", i, b.Addr, plan.Branches[i-1].Addr)
		}
		code, err := f.Code(b.Addr, arch.MaxInstLen())
		if err != nil {
			t.Fatal(err)
		}
		in, err := instr.BareDecoder(arch)(code, b.Addr)
		if err != nil || in.Kind != instr.CondJump || in.Target != b.Target {
			t.Errorf("line %d: %#x is %q (%v), not a conditional branch to %#x", l.Line, b.Addr, in.Text, err, b.Target)
		}
	}
	if got, want := fmt.Sprint(lines), "map[24:1 31:1 38:1 46:1 49:1 59:1]"; got != want {
		t.Errorf("branches by line: %s, want %s", got, want)
	}
	none, err := buildPlan(Options{Method: datafile.LineCoverage, Programs: []string{prog}, Specs: defaults(t), Calibration: -1, NoBranches: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(none.Branches) != 0 || len(none.Lines) != len(plan.Lines) || none.ID == plan.ID {
		t.Errorf("--no-branches: %d branches, %d lines (want 0 and %d), id %s (the plan with branches: %s)", len(none.Branches), len(none.Lines), len(plan.Lines), none.ID, plan.ID)
	}
	counting, err := planLinesOf(t, datafile.LineCounting, prog)
	if err != nil {
		t.Fatal(err)
	}
	if len(counting.Branches) != 0 {
		t.Errorf("line counting plans %d branches", len(counting.Branches))
	}
}

// TestPlanBranchesGo plans line coverage of a Go program: no branch is a
// stack check's (the jump to the block that calls morestack, before each
// function's entry site).
func TestPlanBranchesGo(t *testing.T) {
	prog := testutil.BuildGo(t, "golines")
	plan, err := buildPlan(Options{Method: datafile.LineCoverage, Programs: []string{prog}, Specs: defaults(t), Calibration: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Branches) == 0 {
		t.Fatal("no branch planned")
	}
	entries := map[uint64]bool{}
	fplan, err := buildPlan(Options{Method: datafile.FuncCounting, Programs: []string{prog}, Specs: defaults(t), Calibration: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, fn := range fplan.Funcs {
		entries[fn.Entry] = true
	}
	for _, fn := range fplan.Funcs {
		for _, b := range plan.Branches {
			if b.Addr >= fn.Low && b.Addr < fn.Entry && fn.Entry > fn.Low {
				t.Errorf("%s: branch at %#x, before its entry site %#x (its stack check)", fn.Name, b.Addr, fn.Entry)
			}
		}
	}
}
