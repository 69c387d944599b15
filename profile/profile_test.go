package profile

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/elfid"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/internal/testutil"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testutil.Cleanup()
	os.Exit(code)
}

// planFor makes a plan for the named functions of an ELF program straight
// from its symbol table (debug/elf): the tracer is tested without PREP.
func planFor(t testing.TB, path string, method datafile.Method, names ...string) *datafile.Plan {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	arch := map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64"}[f.Machine]
	m := datafile.Module{Name: filepath.Base(path), Path: path, Arch: arch, Size: st.Size(),
		ModTime: st.ModTime().UnixNano(), PIE: f.Type == elf.ET_DYN}
	m.LinkBase = elfid.LinkBase(f)
	plan := &datafile.Plan{Method: method, StartIndex: -1, Calibration: -1, Modules: []datafile.Module{m}}
	for _, name := range names {
		found := false
		for _, s := range syms {
			if s.Name == name && elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
				plan.Funcs = append(plan.Funcs, datafile.Func{Name: name, Entry: s.Value, Source: "test.o",
					Low: s.Value, High: s.Value + s.Size})
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("%s has no function %s", path, name)
		}
	}
	return plan
}

type runOut struct {
	res    *Result
	stdout string
	hits   map[string]uint64
	// warnings are the warnings' texts, codes their PRF numbers.
	warnings []string
	codes    []int
}

// runPlan runs the program in-process (trampolines where they can go).
func runPlan(t testing.TB, plan *datafile.Plan, path string, args ...string) runOut {
	t.Helper()
	return runWith(t, plan, path, false, args...)
}

// mechanisms are the two ways of counting entries, each test of counts
// runs both: in-process, and with --breakpoints.
var mechanisms = []struct {
	name        string
	breakpoints bool
}{{"inprocess", false}, {"breakpoints", true}}

func runWith(t testing.TB, plan *datafile.Plan, path string, breakpoints bool, args ...string) runOut {
	t.Helper()
	out, err := os.CreateTemp(t.TempDir(), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	var warnings []string
	var codes []int
	res, err := Run(Config{
		Plan: plan, Path: path, Args: append([]string{filepath.Base(path)}, args...),
		CommandLine: strings.Join(append([]string{filepath.Base(path)}, args...), " "),
		Env:         os.Environ(), Stdout: out, Stderr: os.Stderr,
		Warn: func(d *prf.Diagnostic) {
			t.Logf("warning: %v", d)
			warnings = append(warnings, d.Error())
			codes = append(codes, d.Code)
		},
		Breakpoints: breakpoints,
	})
	if err != nil {
		t.Fatalf("run %s: %v", path, err)
	}
	b, _ := os.ReadFile(out.Name())
	hits := map[string]uint64{}
	for i, f := range plan.Funcs {
		hits[f.Name] = res.Counts.Stats.Hits[i]
	}
	return runOut{res: res, stdout: string(b), hits: hits, warnings: warnings, codes: codes}
}

var countsWant = map[string]uint64{"main": 1, "f": 1000, "g": 3, "h": 0, "helper": 4, "fib": 1973, "viaptr": 7}

// fixtureFlags are the builds every end-to-end fixture is run in.
var fixtureFlags = map[string][]string{
	"O0-pie":   {"-O0", "-pie", "-fPIE"},
	"O0-nopie": {"-O0", "-no-pie", "-fno-pie"},
	"O2-pie":   {"-O2", "-pie", "-fPIE"},
	"O2-nopie": {"-O2", "-no-pie", "-fno-pie"},
}

func TestCounting(t *testing.T) {
	testutil.MustHavePtrace(t)
	names := []string{"main", "f", "g", "h", "helper", "fib", "viaptr"}
	for build, flags := range fixtureFlags {
		t.Run(build, func(t *testing.T) {
			prog := testutil.BuildC(t, "counts", flags...)
			if strings.HasPrefix(build, "O2") && testutil.HaveTool("valgrind") {
				// An independent count of the calls the binary makes.
				calls := testutil.Callgrind(t, prog, "7")
				for name, want := range countsWant {
					if calls[name] != want {
						t.Errorf("callgrind counts %s %d times, the source says %d", name, calls[name], want)
					}
				}
			}
			for _, mech := range mechanisms {
				for _, method := range []datafile.Method{datafile.FuncCounting, datafile.FuncCoverage} {
					plan := planFor(t, prog, method, names...)
					got := runWith(t, plan, prog, mech.breakpoints, "7")
					if !got.res.Exited || got.res.ExitCode != 7 {
						t.Errorf("%v: status = exited %v code %d, want exit 7", method, got.res.Exited, got.res.ExitCode)
					}
					if !strings.Contains(got.stdout, "counts result ") {
						t.Errorf("%v: program output %q", method, got.stdout)
					}
					for name, want := range countsWant {
						if method.IsCoverage() && (mech.breakpoints || !testutil.InProcess()) && want > 1 {
							// A coverage breakpoint goes at its first hit;
							// in-process, coverage counts every call.
							want = 1
						}
						if got.hits[name] != want {
							t.Errorf("%s %v: %s hit %d times, want %d", mech.name, method, name, got.hits[name], want)
						}
					}
					if got.res.Counts.Run.Incomplete {
						t.Errorf("%v: run marked incomplete: %s", method, got.res.Counts.Run.Reason)
					}
				}
			}
		})
	}
}

func TestThreads(t *testing.T) {
	testutil.MustHavePtrace(t)
	for _, build := range []string{"O0-pie", "O2-nopie"} {
		t.Run(build, func(t *testing.T) {
			prog := testutil.BuildC(t, "threads", fixtureFlags[build]...)
			plan := planFor(t, prog, datafile.FuncCounting, "main", "worker", "work")
			calls := testutil.Scale(20000)
			got := runPlan(t, plan, prog, strconv.Itoa(calls))
			want := map[string]uint64{"main": 1, "worker": 4, "work": 4 * uint64(calls)}
			for name, w := range want {
				if got.hits[name] != w {
					t.Errorf("%s hit %d times, want %d", name, got.hits[name], w)
				}
			}
		})
	}
}

func TestCrashKeepsCounts(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "crash")
	plan := planFor(t, prog, datafile.FuncCounting, "main", "f")
	got := runPlan(t, plan, prog)
	if got.res.Exited || got.res.Signal != syscall.SIGSEGV {
		t.Fatalf("status: exited %v signal %v, want SIGSEGV", got.res.Exited, got.res.Signal)
	}
	if got.res.Status() != 128+int(syscall.SIGSEGV) {
		t.Errorf("Status() = %d, want %d", got.res.Status(), 128+int(syscall.SIGSEGV))
	}
	if got.hits["f"] != 3 || got.hits["main"] != 1 {
		t.Errorf("hits = %v, want f 3, main 1", got.hits)
	}
	run := got.res.Counts.Run
	if !run.Incomplete || !strings.Contains(run.Reason, "SIGSEGV") {
		t.Errorf("run = %+v, want incomplete because of SIGSEGV", run)
	}
}

func TestInterruptForwarded(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "crash")
	plan := planFor(t, prog, datafile.FuncCounting, "main", "f")
	sigs := make(chan os.Signal, 1)
	var out bytes.Buffer
	r, w, _ := os.Pipe()
	done := make(chan *Result, 1)
	go func() {
		res, err := Run(Config{Plan: plan, Path: prog, Args: []string{"crash", "int"}, Env: os.Environ(),
			Stdout: w, Stderr: os.Stderr, Signals: sigs})
		if err != nil {
			t.Error(err)
		}
		w.Close()
		done <- res
	}()
	// Wait for the program to reach pause(), then interrupt PROFILE.
	buf := make([]byte, 64)
	n, _ := r.Read(buf)
	out.Write(buf[:n])
	sigs <- syscall.SIGINT
	select {
	case res := <-done:
		if res == nil {
			t.Fatal("no result")
		}
		if res.Exited || res.Signal != syscall.SIGINT {
			t.Errorf("program status: exited %v signal %v, want killed by SIGINT", res.Exited, res.Signal)
		}
		if res.Counts.Stats.Hits[1] != 3 {
			t.Errorf("f hit %d times, want 3", res.Counts.Stats.Hits[1])
		}
		if !res.Counts.Run.Incomplete || !strings.Contains(res.Counts.Run.Reason, "SIGINT") {
			t.Errorf("run = %+v, want incomplete naming SIGINT", res.Counts.Run)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the program was not interrupted")
	}
}

func TestChildrenUnharmed(t *testing.T) {
	testutil.MustHavePtrace(t)
	testutil.MustHaveTool(t, "true")
	prog := testutil.BuildC(t, "spawn")
	for _, mech := range mechanisms {
		// (Timing in-process on arm64, the vfork child writes its
		// records into its parent's ring, on its parent's stack: they
		// are dropped at the parent's vfork-done stop.)
		for _, method := range []datafile.Method{datafile.FuncCounting, datafile.FuncCoverage, datafile.FuncTiming} {
			plan := planFor(t, prog, method, "main", "f")
			got := runWith(t, plan, prog, mech.breakpoints)
			if want := "spawn fork=3 vfork=0 traps=1 r=90\n"; got.stdout != want {
				t.Errorf("%s %v: program output %q, want %q", mech.name, method, got.stdout, want)
			}
			want := uint64(10) // the parent's calls only
			if method.IsCoverage() && (mech.breakpoints || !testutil.InProcess()) {
				want = 1
			}
			if got.hits["f"] != want {
				t.Errorf("%s %v: f hit %d times, want %d", mech.name, method, got.hits["f"], want)
			}
		}
	}
}

// TestInProcessSurvives: counts stay exact through what a trampoline must
// survive (a signal handler calling a profiled function, longjmp out of
// profiled frames, a fault in an instruction that runs in a trampoline),
// and the entries that cannot be patched keep breakpoints, said once
// with their reasons.
func TestInProcessSurvives(t *testing.T) {
	testutil.MustHavePtrace(t)
	names := []string{"main", "f", "on_alarm", "jumper", "leaf", "load", "sys3", "tiny", "f4"}
	for _, build := range []string{"O0-pie", "O2-nopie"} {
		for _, mech := range mechanisms {
			t.Run(build+"/"+mech.name, func(t *testing.T) {
				prog := testutil.BuildC(t, "inproc", fixtureFlags[build]...)
				plan := planFor(t, prog, datafile.FuncCounting, names...)
				var warnings []string
				codes := map[int]int{}
				out, err := os.CreateTemp(t.TempDir(), "stdout")
				if err != nil {
					t.Fatal(err)
				}
				// f4's calls per iteration, and the alarm's period: a
				// breakpoint and a signal cost a stop each (1 ms under
				// emulation, where a period of 200 µs would leave the
				// program no time to run).
				inner, every := 50, 200
				if mech.breakpoints || !testutil.InProcess() {
					inner, every = 2, 2000
				}
				if testutil.Slow() {
					every *= 10
				}
				res, err := Run(Config{Plan: plan, Path: prog, Args: []string{"inproc", strconv.Itoa(inner), strconv.Itoa(every)},
					Stdout: out, Stderr: os.Stderr,
					Breakpoints: mech.breakpoints, Verbose: true,
					Warn: func(d *prf.Diagnostic) { warnings = append(warnings, d.Error()); codes[d.Code]++ }})
				if err != nil {
					t.Fatal(err)
				}
				b, _ := os.ReadFile(out.Name())
				var f int
				var pc, f4 string
				if _, err := fmt.Sscanf(string(b), "inproc f=%d load-pc=%s f4=%s", &f, &pc, &f4); err != nil || pc != "ok" || f4 != "ok" {
					t.Fatalf("program output %q (%v), want load-pc=ok f4=ok", b, err)
				}
				want := map[string]uint64{"main": 1, "f": uint64(f), "on_alarm": uint64(f - 1000), "jumper": 50, "leaf": 50,
					"load": 10, "sys3": 3, "tiny": 5, "f4": 1000*uint64(inner) + uint64(f-1000)}
				for i, fn := range plan.Funcs {
					if got := res.Counts.Stats.Hits[i]; got != want[fn.Name] {
						t.Errorf("%s hit %d times, want %d", fn.Name, got, want[fn.Name])
					}
				}
				if d := res.Counts.Stats.CallDepth; testutil.KeepsDepth(false) && !mech.breakpoints && (d < 3 || d > 4) {
					t.Errorf("call depth %d, want 3 or 4", d)
				}
				if mech.breakpoints || !testutil.InProcess() {
					return
				}
				// (On x86-64 a jump replaces one instruction: sys3's
				// first, before the system call, and tiny's ret,
				// punned over the code after it. On arm64 sys3's is
				// an exclusive load, which runs nowhere else.)
				text := strings.Join(warnings, "\n")
				var fell []string
				if runtime.GOARCH == "arm64" {
					fell = append(fell, "function sys3")
				}
				for _, w := range fell {
					if !strings.Contains(text, w) {
						t.Errorf("warnings lack %q:\n%s", w, text)
					}
				}
				if codes[4646] != min(len(fell), 1) || codes[4647] != len(fell) {
					t.Errorf("warnings:\n%s\nwant PRF4647 for %v", text, fell)
				}
			})
		}
	}
}

// TestManyThreads: 64 threads calling one function at the same time, each
// 100,000 times, give 6,400,000, each thread counting into its own block
// (x86-64) or atomically into shared counters (arm64). With breakpoints
// (an ARMv8.0 CPU), a stop per call: fewer calls.
func TestManyThreads(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "threads64", "-O2")
	calls := 100000
	if !testutil.InProcess() {
		calls = 50
	}
	plan := planFor(t, prog, datafile.FuncCounting, "main", "worker", "f")
	got := runPlan(t, plan, prog, strconv.Itoa(calls))
	want := map[string]uint64{"main": 1, "worker": 64, "f": 64 * uint64(calls)}
	for name, w := range want {
		if got.hits[name] != w {
			t.Errorf("%s hit %d times, want %d", name, got.hits[name], w)
		}
	}
	if got.stdout != "threads64 done\n" {
		t.Errorf("program output %q", got.stdout)
	}
}

// TestBlockOverflow: with 8 counter blocks (block 0 for vfork children,
// block 1 the main thread's, 2 to 7 for six threads) and 64 threads alive
// at once, the 58 threads beyond share the main thread's block, and
// PROFILE says counts may be missing (PRF4649). None is invented, and the
// six threads with blocks of their own lose none.
func TestBlockOverflow(t *testing.T) {
	testutil.MustHavePtrace(t)
	if !testutil.ThreadBlocks() {
		t.Skip("threads have blocks of their own only on x86-64, in-process")
	}
	defer func(n int) { maxBlocks = n }(maxBlocks)
	maxBlocks = 8
	prog := testutil.BuildC(t, "threads64", "-O2")
	// Timing in-process too: the threads beyond the blocks write their
	// records to the discarded block, not into another thread's ring.
	for _, method := range []datafile.Method{datafile.FuncCounting, datafile.FuncTiming} {
		plan := planFor(t, prog, method, "main", "worker", "f")
		var codes []int
		devnull, _ := os.Open(os.DevNull)
		defer devnull.Close()
		res, err := Run(Config{Plan: plan, Path: prog, Args: []string{"threads64", "10000"}, Stdout: devnull,
			Warn: func(d *prf.Diagnostic) { codes = append(codes, d.Code) }})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(codes, 4649) {
			t.Errorf("%v: warnings %v, want PRF4649", method, codes)
		}
		if f := res.Counts.Stats.Hits[2]; f > 64*10000 || f < 6*10000 {
			t.Errorf("%v: f hit %d times: more than the 640,000 calls, or fewer than the 60,000 of the six threads with blocks of their own", method, f)
		}
	}
}

// TestWrongExtent: a plan whose function extents do not hold the entry
// (a damaged or foreign .pbi) costs speed, not counts: the entries keep
// breakpoints, with the reason, and count exactly.
func TestWrongExtent(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "counts", "-O2")
	names := []string{"main", "f", "g", "h", "helper", "fib", "viaptr"}
	plan := planFor(t, prog, datafile.FuncCounting, names...)
	for i := range plan.Funcs {
		switch i % 3 {
		case 0:
			plan.Funcs[i].Low, plan.Funcs[i].High = 0, 0 // unknown
		case 1:
			plan.Funcs[i].High = plan.Funcs[i].Low // empty
		case 2:
			plan.Funcs[i].Low, plan.Funcs[i].High = 1<<40, 1<<40+64 // elsewhere
		}
	}
	var warnings []string
	devnull, _ := os.Open(os.DevNull)
	defer devnull.Close()
	res, err := Run(Config{Plan: plan, Path: prog, Args: []string{"counts", "7"}, Stdout: devnull,
		Warn: func(d *prf.Diagnostic) { warnings = append(warnings, d.Error()) }})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range plan.Funcs {
		if got, want := res.Counts.Stats.Hits[i], countsWant[f.Name]; got != want {
			t.Errorf("%s hit %d times, want %d", f.Name, got, want)
		}
	}
	if testutil.InProcess() {
		text := strings.Join(warnings, "\n")
		if want := "7 of 7 function entries are counted with breakpoints"; !strings.Contains(text, want) ||
			!strings.Contains(text, "extent unknown: 7") {
			t.Errorf("warnings:\n%s\nwant %q, all for an unknown extent", text, want)
		}
	}
}
