package profile

import (
	"debug/elf"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/instr"
	"github.com/sourceprofiler/sprof/internal/testutil"
)

// Crafted plans (issue 18): a plan whose CRC and identity are right but
// whose sites are not where the program's instructions begin. PROFILE
// checks every site against the code it reads from the process, decoded
// from each function's start, whatever the plan says, and refuses those
// that are not instruction boundaries: the program runs unharmed.

// insideInstruction returns an address inside an instruction of the
// function fn of the program at path, not on a boundary: past the first
// byte of its first instruction of more than one byte (amd64), or 2
// bytes into its first instruction (arm64).
func insideInstruction(t *testing.T, path string, fn *datafile.Func) uint64 {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, err := instr.ForMachine(f.Machine)
	if err != nil {
		t.Fatal(err)
	}
	if a.Name() == "arm64" {
		return fn.Low + 2
	}
	code := make([]byte, fn.High-fn.Low)
	for _, s := range f.Sections {
		if s.Addr <= fn.Low && fn.High <= s.Addr+s.Size && s.Type == elf.SHT_PROGBITS {
			if _, err := s.ReadAt(code, int64(fn.Low-s.Addr)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for pc := fn.Low; pc < fn.High; {
		in, err := a.Decode(code[pc-fn.Low:], pc)
		if err != nil {
			t.Fatalf("decode %s at %#x: %v", fn.Name, pc, err)
		}
		if in.Len > 1 {
			return pc + 1
		}
		pc += uint64(in.Len)
	}
	t.Fatalf("%s has no instruction of more than one byte", fn.Name)
	return 0
}

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
			f.Entry = insideInstruction(t, prog, f)
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
			bad := insideInstruction(t, prog, &plan.Funcs[0])
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
