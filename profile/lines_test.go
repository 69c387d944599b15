package profile

import (
	"debug/elf"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/internal/testutil"
)

// linePlan turns the function plan of prog into a line plan with one
// line per function, at its entry, and a line two functions' entries
// share with the first: each function's count is its line's.
func linePlan(t *testing.T, prog string, method datafile.Method, names ...string) *datafile.Plan {
	t.Helper()
	plan := planFor(t, prog, datafile.FuncCounting, names...)
	plan.Method = method
	plan.Modules[0].Files = []string{"test.c"}
	for i, f := range plan.Funcs {
		plan.Lines = append(plan.Lines, datafile.Line{File: 0, Line: i + 1, Addrs: []uint64{f.Entry}})
	}
	plan.Lines = append(plan.Lines, datafile.Line{File: 0, Line: 100, Addrs: []uint64{plan.Funcs[0].Entry}})
	plan.ID = datafile.PlanID(plan)
	return plan
}

// TestLineSitesShared: the counts fixture's functions (f 1,000 calls, g 3,
// h none, fib 1,973 recursive ones), each a line at its
// entry, one entry a second line's site too: line counting counts every
// hit of each, the shared site for both lines; line coverage marks each
// once.
func TestLineSitesShared(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "counts", "-O2")
	want := map[string]uint64{"f": 1000, "g": 3, "h": 0, "fib": 1973}
	for _, method := range []datafile.Method{datafile.LineCounting, datafile.LineCoverage} {
		plan := linePlan(t, prog, method, "f", "g", "h", "fib")
		got := runPlan(t, plan, prog)
		hits := got.res.Counts.Stats.Hits
		for i, f := range plan.Funcs {
			w := want[f.Name]
			if method.IsCoverage() {
				w = min(w, 1)
			}
			if hits[i] != w {
				t.Errorf("%v: %s's line %d hits, want %d", method, f.Name, hits[i], w)
			}
		}
		if shared := hits[len(hits)-1]; shared != hits[0] {
			t.Errorf("%v: the line sharing %s's site %d hits, want %d", method, plan.Funcs[0].Name, shared, hits[0])
		}
	}
}

// TestLinePlanBadAddresses: a line plan whose sites are not this
// program's code (a plan made for another build, or a forged one) has
// those sites refused, each with a warning, however far from the code
// they are; the program runs unharmed, and its other sites count.
func TestLinePlanBadAddresses(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "counts", "-O2")
	plan := linePlan(t, prog, datafile.LineCounting, "f")
	far := plan.Funcs[0].Entry + 1<<40
	plan.Lines[0].Addrs = append(plan.Lines[0].Addrs, far)
	plan.ID = datafile.PlanID(plan)
	got := runPlan(t, plan, prog)
	if n := got.res.Counts.Stats.Hits[0]; n != 1000 {
		t.Errorf("f's line: %d hits, want 1000 (its good site)", n)
	}
	want := fmt.Sprintf("cannot profile line 1 of test.c in file %s: address %#x: not in the module's code", filepath.Base(prog), far)
	if !slices.ContainsFunc(got.warnings, func(w string) bool { return strings.Contains(w, want) }) {
		t.Errorf("warnings %q, want %q", got.warnings, want)
	}
}

// TestDisplaceLaterFails: a line site whose instruction needs an
// out-of-line slot and has none (no room was found near the module) is
// warned about at its first hit, naming the line, and reported as not
// displaced, so that its breakpoint is taken out rather than run again.
func TestDisplaceLaterFails(t *testing.T) {
	var warnings []string
	tr := &tracer{arch: instr.AMD64, cfg: Config{Warn: func(d *prf.Diagnostic) { warnings = append(warnings, fmt.Sprintf("PRF%d %v", d.Code, d)) }},
		plan: &datafile.Plan{Modules: []datafile.Module{{Name: "prog", Files: []string{"parse.c"}}},
			Lines: []datafile.Line{{File: 0, Line: 42, Addrs: []uint64{0x1000}}}}}
	tr.parts.bp = newBreakpoints(tr)
	tr.choose()
	s := &site{addr: 0x401000, meaning: meaning{item: 0, exit: -1}, carrying: carrying{pending: true, code: []byte{0x48, 0x89, 0xf8}}} // mov %rdi,%rax
	if tr.parts.bp.displaceLater(s) || s.displaced || s.pending {
		t.Errorf("displaced %v, pending %v: want neither, for a slot that is not there", s.displaced, s.pending)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "PRF4624") || !strings.Contains(warnings[0], "line 42 of parse.c") {
		t.Errorf("warnings %q, want one PRF4624 naming line 42 of parse.c", warnings)
	}
}

// TestStaleCode: a processor that still runs a breakpoint PROFILE has
// removed (a stale copy of the code, which qemu's emulation of arm64 kept
// for minutes, every thread trapping there again and again) no longer
// holds the program at the breakpoint forever: after the second trap in a
// row, the site's instruction is carried out of line at every pass,
// PRF4672 says so once, and the program runs to its end with the coverage
// right: line coverage (sites displaced only then) and function coverage
// with breakpoints (displaced from the start). The counts fixture prints
// what it prints natively; in the threads fixture, four threads pass each
// site at once (its output is racy by design: only its end is checked).
func TestStaleCode(t *testing.T) {
	testutil.MustHavePtrace(t)
	calls := "2000"
	if testutil.Slow() {
		calls = "100"
	}
	for _, fx := range []struct {
		name    string
		args    []string
		covered map[string]uint64
	}{
		{"counts", nil, map[string]uint64{"f": 1, "g": 1, "h": 0, "fib": 1}},
		{"threads", []string{calls}, map[string]uint64{"main": 1, "worker": 1, "work": 1}},
	} {
		t.Run(fx.name, func(t *testing.T) {
			// (Each fixture is built in its own test: exporting one
			// for the arm64 VM skips the test that builds it.)
			prog := testutil.BuildC(t, fx.name, "-O2")
			output := "threads done"
			if fx.name == "counts" {
				native, err := exec.Command(prog).Output()
				if err != nil {
					t.Fatal(err)
				}
				output = string(native)
			}
			staleCode = true
			defer func() { staleCode = false }()
			names := slices.Sorted(maps.Keys(fx.covered))
			for _, method := range []datafile.Method{datafile.LineCoverage, datafile.FuncCoverage} {
				var plan *datafile.Plan
				if method.IsFunction() {
					plan = planFor(t, prog, method, names...)
				} else {
					plan = linePlan(t, prog, method, names...)
				}
				got := runWith(t, plan, prog, true, fx.args...)
				if !strings.Contains(got.stdout, output) {
					t.Errorf("%v: output %q, want %q", method, got.stdout, output)
				}
				for i, f := range plan.Funcs {
					if n := got.res.Counts.Stats.Hits[i]; n != fx.covered[f.Name] {
						t.Errorf("%v: %s %d hits, want %d", method, f.Name, n, fx.covered[f.Name])
					}
				}
				if n := countOf(got.codes, 4672); n != 1 {
					t.Errorf("%v: PRF4672 %d times (warnings %q), want once", method, n, got.warnings)
				}
			}
		})
	}
}

// countOf counts code in codes.
func countOf(codes []int, code int) int {
	n := 0
	for _, c := range codes {
		if c == code {
			n++
		}
	}
	return n
}

// TestDisplaceStaleFails: a site the processor still runs after its
// removal, whose instruction cannot be carried out of line (a coverage
// site never displaced; a line site needing a slot it has not), ends the
// run with an error naming the address, rather than sending the thread
// back for ever.
func TestDisplaceStaleFails(t *testing.T) {
	tr := &tracer{arch: instr.AMD64}
	tr.parts.bp = newBreakpoints(tr)
	tr.choose()
	for _, s := range []*site{
		{addr: 0x401000, meaning: meaning{item: 0, exit: -1}},
		{addr: 0x401000, meaning: meaning{item: 0, exit: -1}, carrying: carrying{pending: true, code: []byte{0x48, 0x89, 0xf8}}}, // mov %rdi,%rax, no slot
	} {
		err := tr.parts.bp.displaceStale(s)
		if err == nil || !strings.Contains(err.Error(), "0x401000") || s.displaced {
			t.Errorf("pending %v: error %v, displaced %v; want an error naming 0x401000", s.pending, err, s.displaced)
		}
	}
}

// TestLineSignalsInProbes: a line site where the flags are live (the
// spin loop's conditional jump in lines.c, at -O0) counts with code that
// saves a register in the thread's block; another thread sends the
// spinning one SIGUSR1 200 times, every 200 µs, whose handler counts a
// line too.
// Threads stopped inside that code are rolled out of it before the
// handler runs (some are, in a run of this length), and every pass is
// counted once: the jump runs SPIN+1 times, the loop's result is the
// program's own.
func TestLineSignalsInProbes(t *testing.T) {
	testutil.MustHavePtrace(t)
	if !testutil.ThreadBlocks() {
		t.Skip("line counts save no register here")
	}
	prog := testutil.BuildC(t, "lines", "-O0", "-pthread")
	// (Long enough for all 200 signals to come: some 8 % land inside
	// the count's code.)
	const spin = "30000000"
	native, err := exec.Command(prog, "10", spin).Output()
	if err != nil {
		t.Fatal(err)
	}
	spun := strings.Fields(string(native))[3]
	plan := linePlan(t, prog, datafile.LineCounting, "spin")
	jcc := condJumpIn(t, prog, &plan.Funcs[0])
	plan.Lines = []datafile.Line{{File: 0, Line: 1, Addrs: []uint64{jcc}}}
	plan.ID = datafile.PlanID(plan)
	got := runPlan(t, plan, prog, "10", spin)
	if !strings.Contains(got.stdout, spun) {
		t.Errorf("output %q, natively %q", got.stdout, native)
	}
	if hits := got.res.Counts.Stats.Hits[0]; hits != 30000001 {
		t.Errorf("the loop's jump: %d hits, want 30,000,001", hits)
	}
	if got.res.RolledBack == 0 {
		t.Errorf("no thread was stopped inside the count's code: the test proves nothing (output %q)", got.stdout)
	}
	t.Logf("%d threads rolled out of the count's code; %s", got.res.RolledBack, got.stdout)
}

// condJumpIn returns the address of the first conditional jump of
// function f of prog.
func condJumpIn(t *testing.T, prog string, f *datafile.Func) uint64 {
	t.Helper()
	ef, err := elf.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	text := ef.Section(".text")
	code, err := text.Data()
	if err != nil {
		t.Fatal(err)
	}
	arch, _ := instr.ForMachine(ef.Machine)
	for pc := f.Low; pc < f.High; {
		in, err := arch.Decode(code[pc-text.Addr:], pc)
		if err != nil {
			t.Fatal(err)
		}
		if in.Kind == instr.CondJump {
			return pc
		}
		pc += uint64(in.Len)
	}
	t.Fatalf("no conditional jump in %s", f.Name)
	return 0
}
