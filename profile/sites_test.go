package profile

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/testutil"
)

// Crafted plans (issue 18): a plan whose CRC and identity are right but
// whose sites are not where the program's instructions begin. PROFILE
// checks every site against the code it reads from the process, decoded
// from each function's start, whatever the plan says, and refuses those
// that are not instruction boundaries: the program runs unharmed.

// TestCraftedEntry moves f's entry inside one of its instructions in an
// otherwise right plan (identity recomputed): f is not planted, with
// warning PRF4657, and counts nothing; the program runs as natively, and
// every other function counts its calls, in-process and with
// breakpoints.
func TestCraftedEntry(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "counts", "-O2")
	for _, mech := range mechanisms {
		t.Run(mech.name, func(t *testing.T) {
			plan := planFor(t, prog, datafile.FuncCounting, "main", "f", "g", "h", "helper", "fib", "viaptr")
			f := &plan.Funcs[1]
			f.Entry = testutil.InsideInstruction(t, prog, f.Low, f.High, amd64Len)
			plan.ID = datafile.PlanID(plan)
			got := runWith(t, plan, prog, mech.breakpoints)
			if !strings.Contains(got.stdout, "counts result ") {
				t.Errorf("output %q, want the program's", got.stdout)
			}
			for name, want := range countsWant {
				if name == "f" {
					want = 0
				}
				if got.hits[name] != want {
					t.Errorf("%s hit %d times, want %d", name, got.hits[name], want)
				}
			}
			want := fmt.Sprintf("function f in file %s is not profiled: the plan does not match the program's code: its entry %#x: ", plan.Modules[0].Name, f.Entry)
			if !slices.ContainsFunc(got.warnings, func(w string) bool {
				return strings.Contains(w, want) && strings.HasSuffix(w, "not on an instruction boundary")
			}) {
				t.Errorf("warnings %q, want %q... not on an instruction boundary", got.warnings, want)
			}
		})
	}
}

// TestCraftedLineSite moves the site of f's line inside an instruction
// in a line plan (identity recomputed): it is not planted, with warning
// PRF4624, and the program runs as natively; the other lines count.
func TestCraftedLineSite(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "counts", "-O2")
	want := map[string]uint64{"f": 0, "g": 3, "h": 0, "fib": 1973}
	for _, method := range []datafile.Method{datafile.LineCounting, datafile.LineCoverage} {
		t.Run(method.String(), func(t *testing.T) {
			plan := linePlan(t, prog, method, "f", "g", "h", "fib")
			bad := testutil.InsideInstruction(t, prog, plan.Funcs[0].Low, plan.Funcs[0].High, amd64Len)
			plan.Lines[0].Addrs = []uint64{bad}
			plan.Lines = plan.Lines[:len(plan.Lines)-1] // (not the line sharing f's site)
			plan.ID = datafile.PlanID(plan)
			got := runPlan(t, plan, prog)
			if !strings.Contains(got.stdout, "counts result ") {
				t.Errorf("output %q, want the program's", got.stdout)
			}
			hits := got.res.Counts.Stats.Hits
			for i, f := range plan.Funcs {
				w := want[f.Name]
				if method.IsCoverage() {
					w = min(w, 1)
				}
				if hits[i] != w {
					t.Errorf("%s's line: %d hits, want %d", f.Name, hits[i], w)
				}
			}
			msg := fmt.Sprintf("cannot profile line 1 of test.c in file %s: address %#x: ", plan.Modules[0].Name, bad)
			if !slices.ContainsFunc(got.warnings, func(w string) bool {
				return strings.Contains(w, msg) && strings.HasSuffix(w, "not on an instruction boundary; not planted")
			}) {
				t.Errorf("warnings %q, want %q... not on an instruction boundary; not planted", got.warnings, msg)
			}
		})
	}
}

// amd64Len is the length of the x86-64 instruction at the start of code
// (testutil.InsideInstruction).
func amd64Len(code []byte, pc uint64) (int, error) {
	in, err := instr.AMD64.Decode(code, pc)
	return in.Len, err
}
