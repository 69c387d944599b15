// Package e2e runs the three tools as a user does, on C fixtures compiled at
// test time, and checks the numbers the reports give against numbers known
// by construction. The table of fixtures and expectations (cases) is the
// one place a new feature adds its end-to-end checks.
package e2e

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sourceprofiler/sprof/internal/testutil"
)

// bin is the directory of the tools built for the tests.
var bin string

func TestMain(m *testing.M) {
	code := func() int {
		// SPROF_BIN names tools built beforehand, with profiler.ini beside
		// them (the arm64 VM has no Go toolchain); else they are built now.
		if bin = os.Getenv("SPROF_BIN"); bin == "" {
			dir, err := os.MkdirTemp("", "sprof-e2e-")
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			defer os.RemoveAll(dir)
			if err := buildTools(dir); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			bin = dir
		}
		defer testutil.Cleanup()
		return m.Run()
	}()
	os.Exit(code)
}

// buildTools builds the three tools into dir, with profiler.ini beside
// them, as make build does.
func buildTools(dir string) error {
	build := exec.Command("go", "build", "-o", dir+"/", "../cmd/prep", "../cmd/profile", "../cmd/plist")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build the tools: %v\n%s", err, out)
	}
	ini, err := os.ReadFile("../prep/profiler.ini")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "profiler.ini"), ini, 0o644)
}

// result is what one tool invocation did.
type result struct {
	stdout, stderr string
	status         int
}

// toolLimit bounds one tool invocation. The slowest, the threaded
// fixtures under emulated arm64, take seconds; a run still going after
// this has hung, and is reported with what every task was waiting on.
const toolLimit = 3 * time.Minute

// tool runs one of the tools in dir.
func tool(t testing.TB, dir, name string, args ...string) result {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, name), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PREP=", "PROFILE=", "PLIST=", "INIT=")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(toolLimit):
		tree := testutil.ProcessTree(cmd.Process.Pid)
		time.Sleep(time.Second)
		again := testutil.ProcessTree(cmd.Process.Pid)
		cmd.Process.Signal(syscall.SIGQUIT) // a Go program prints its goroutines
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		// (The tree comes last: a CI log's excerpt is its tail.)
		t.Fatalf("%s %s: still running after %v\nstderr:\n%s\n%s\na second later:\n%s",
			name, strings.Join(args, " "), toolLimit, errb.String(), tree, again)
	}
	return result{out.String(), errb.String(), exitStatus(t, name, err)}
}

// exitStatus is the exit status of a command that ended with err; a
// command that could not run fails the test.
func exitStatus(t testing.TB, name string, err error) int {
	t.Helper()
	if err == nil {
		return 0
	}
	ee, ok := err.(*exec.ExitError)
	if !ok {
		t.Fatalf("%s: %v", name, err)
	}
	return ee.ExitCode()
}

// must runs a tool and fails the test unless it exits 0.
func must(t testing.TB, dir, name string, args ...string) result {
	t.Helper()
	r := tool(t, dir, name, args...)
	if r.status != 0 {
		t.Fatalf("%s %s: status %d\nstderr: %s", name, strings.Join(args, " "), r.status, r.stderr)
	}
	return r
}

// tab is a parsed plist /T report.
type tab struct {
	hits                    map[string]uint64 // record 6, by function
	total, marked, executed uint64            // record 3
	runs                    []string          // record 4 command lines
	method                  int               // record 1
	depth                   int               // record 2, call depth
}

func parseTab(t *testing.T, out string) tab {
	t.Helper()
	tb := tab{hits: map[string]uint64{}}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		f := strings.Split(line, "\t")
		num := func(i int) uint64 {
			n, err := strconv.ParseUint(f[i], 10, 64)
			if err != nil {
				t.Fatalf("record %q: field %d: %v", line, i, err)
			}
			return n
		}
		switch f[0] {
		case "1":
			tb.method = int(num(1))
		case "2":
			tb.depth = int(num(3))
		case "3":
			tb.total, tb.marked, tb.executed = num(1), num(2), num(3)
		case "4":
			tb.runs = append(tb.runs, f[2])
		case "6":
			tb.hits[f[6]] = num(3)
		}
	}
	return tb
}

// install copies a fixture into dir and returns its bare name, which the
// tools find in the current directory: reports then name no temporary path.
func install(t testing.TB, prog, dir string) string {
	t.Helper()
	b, err := os.ReadFile(prog)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(prog)
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o755); err != nil {
		t.Fatal(err)
	}
	return name
}

// workflow runs prep, profile, prep /M in a fresh directory and returns the
// directory and profile's result.
func workflow(t testing.TB, prog string, prepArgs []string, args ...string) (string, result) {
	t.Helper()
	return workflowWith(t, prog, prepArgs, nil, args...)
}

// workflowWith is workflow with PROFILE's options profileOpts.
func workflowWith(t testing.TB, prog string, prepArgs, profileOpts []string, args ...string) (string, result) {
	t.Helper()
	dir := t.TempDir()
	prog = install(t, prog, dir)
	must(t, dir, "prep", append(append([]string{"/nologo"}, prepArgs...), prog)...)
	opts := append(append([]string{"/nologo"}, profileOpts...), prog)
	r := tool(t, dir, "profile", append(opts, args...)...)
	if m := tool(t, dir, "prep", "/nologo", "/M", filepath.Base(prog)); m.status != 0 {
		t.Fatalf("prep /M: status %d\nstderr: %s\nafter profile: status %d\nstderr: %s", m.status, m.stderr, r.status, r.stderr)
	}
	return dir, r
}

// build is one way of compiling a fixture.
type build struct {
	name  string
	flags []string
}

// goBuilds are the builds of the Go fixtures.
var goBuilds = []build{
	{"exe", nil},
	{"pie", []string{"-buildmode=pie"}},
}

// fixtureBuilds are the builds of the C fixtures.
var fixtureBuilds = []build{
	{"O0-pie", []string{"-O0", "-pie", "-fPIE"}},
	{"O0-nopie", []string{"-O0", "-no-pie", "-fno-pie"}},
	{"O2-pie", []string{"-O2", "-pie", "-fPIE"}},
	{"O2-nopie", []string{"-O2", "-no-pie", "-fno-pie"}},
}

// threadCalls is how often each of the four threads of the threads fixture
// calls work.
var threadCalls = testutil.Scale(20000)

// cases are the fixtures with their expected counts, run in every build.
// A nil count means "ask callgrind" (at -O2 the compiler may change how
// often a recursive function calls itself).
var cases = []struct {
	fixture string
	lang    string // "c" (the default), "c++", "go", "rust"
	args    []string
	counts  map[string]uint64
	o2      map[string]bool // functions whose -O2 count comes from callgrind (the compiler changes it)
	stdout  string          // a substring of the program's output
	status  int             // the program's exit status (profile /X)
	// depth is the deepest nesting of profiled functions, by
	// construction: exact for C, C++ and Rust; for Go the least and the
	// most it can be (a goroutine that moves to another thread starts a
	// new shadow stack there, docs/linux.md "Call depth").
	depth [2]int
}{
	{
		fixture: "counts",
		args:    []string{"5"},
		counts:  map[string]uint64{"main": 1, "f": 1000, "g": 3, "h": 0, "helper": 4, "fib": 1973, "viaptr": 7},
		stdout:  "counts result ",
		status:  5,
		depth:   [2]int{16, 16}, // main, fib(15) down to fib(1)
	},
	{
		fixture: "threads",
		args:    []string{strconv.Itoa(threadCalls)},
		counts:  map[string]uint64{"main": 1, "worker": 4, "work": 4 * uint64(threadCalls)},
		stdout:  "threads done",
		depth:   [2]int{2, 2}, // worker, work
	},
	{
		fixture: "gocounts",
		lang:    "go",
		counts: map[string]uint64{"main.main": 1, "main.work": 20000, "main.fib": 1973, "main.unused": 0,
			"main.main.func1": 4, "main.main.func1.deferwrap1": 4},
		stdout: "gocounts 149990000 610",
		depth:  [2]int{15, 16}, // main.main (if it did not move), fib(15) to fib(1)
	},
	{
		fixture: "cppcounts.cpp",
		lang:    "c++",
		counts: map[string]uint64{"main": 1, "Counter::Counter()": 1, "Counter::bump(int)": 60,
			"Counter::value() const": 1, "twice(int)": 50, "twice(double)": 10, "maxof<int>(int, int)": 20},
		stdout: "cppcounts 2550 19",
	},
	{
		fixture: "gostacks",
		lang:    "go",
		counts: map[string]uint64{"main.main": 1, "main.deep": 16 * 1001, "main.guard": 100,
			"main.mayPanic": 100, "main.guard.func1": 100, "main.main.func1": 16,
			"main.main.func1.deferwrap1": 16},
		stdout: "gostacks 500500 50",
		depth:  [2]int{1001, 1002}, // main.main.func1, deep(1000) to deep(0)
	},
	{
		fixture: "cppthrow.cpp",
		lang:    "c++",
		counts:  map[string]uint64{"main": 1, "outer(int)": 30, "inner(int)": 30, "Guard::~Guard()": 30},
		stdout:  "cppthrow 620 10 30",
		depth:   [2]int{3, 3}, // main, outer, inner (or Guard::~Guard)
	},
	{
		fixture: "rcounts",
		lang:    "rust",
		counts: map[string]uint64{"rcounts::main": 1, "rcounts::work": 1000, "rcounts::Acc::add": 300,
			"rcounts::fib": 177},
		o2:     map[string]bool{"rcounts::fib": true},
		stdout: "rcounts 1499500 44850 55",
	},
}

// sumCounts is the number of calls counts add up to.
func sumCounts(counts map[string]uint64) uint64 {
	var n uint64
	for _, c := range counts {
		n += c
	}
	return n
}

// rustBuilds are the builds of the Rust fixtures.
var rustBuilds = []build{
	{"O0", []string{"-Copt-level=0"}},
	{"O2", []string{"-Copt-level=2"}},
}

// buildFixture builds a case's fixture in one of its builds.
func buildFixture(t *testing.T, fixture, lang string, b build) string {
	switch lang {
	case "go":
		return testutil.BuildGo(t, fixture, b.flags...)
	case "rust":
		return testutil.BuildRust(t, fixture, b.flags...)
	}
	return testutil.BuildC(t, fixture, b.flags...)
}

func TestFunctionCounting(t *testing.T) {
	testutil.MustHavePtrace(t)
	for _, c := range cases {
		builds := map[string][]build{"go": goBuilds, "rust": rustBuilds}[c.lang]
		if builds == nil {
			builds = fixtureBuilds
		}
		for _, b := range builds {
			t.Run(c.fixture+"/"+b.name, func(t *testing.T) {
				prog := buildFixture(t, c.fixture, c.lang, b)
				want := c.counts
				if strings.HasPrefix(b.name, "O2") && testutil.HaveTool("valgrind") && c.lang != "go" {
					// callgrind counts the calls the binary really makes:
					// the profile must agree with it.
					calls := testutil.Callgrind(t, prog, c.args...)
					want = maps.Clone(c.counts)
					for name, n := range c.counts {
						if c.o2[name] {
							want[name] = calls[name]
						} else if calls[name] != n {
							t.Errorf("callgrind counts %s %d times, the source says %d", name, calls[name], n)
						}
					}
				}
				for _, method := range []string{"/FC", "/FV", "/FT"} {
					if method == "/FT" && testutil.Slow() && sumCounts(c.counts) > 1000 {
						// Timing stops twice per call, a few milliseconds
						// under emulation: the VM times the small fixtures.
						continue
					}
					dir := t.TempDir()
					name := install(t, prog, dir)
					must(t, dir, "prep", "/nologo", method, name)
					r := tool(t, dir, "profile", append([]string{"/nologo", "/X", name}, c.args...)...)
					if r.status != c.status {
						t.Errorf("%s: profile /X status %d, want %d\nstderr: %s", method, r.status, c.status, r.stderr)
					}
					if strings.Contains(withoutExpected(r.stderr), "PRF") {
						t.Errorf("%s: profile reported: %s", method, r.stderr)
					}
					if !strings.Contains(r.stdout, c.stdout) {
						t.Errorf("%s: program output %q lacks %q", method, r.stdout, c.stdout)
					}
					must(t, dir, "prep", "/nologo", "/M", filepath.Base(prog))
					tb := parseTab(t, must(t, dir, "plist", "/nologo", "/T", filepath.Base(prog)).stdout)
					var total, executed uint64
					for name, n := range want {
						// Coverage counts every call in-process, as the
						// original's records did; its report shows only
						// whether a function ran. With breakpoints each
						// goes at its first hit: a Go PIE's on an ARMv8.0
						// CPU too.
						goBreakpoints := c.lang == "go" && b.name == "pie" && !testutil.GoInProcess()
						if method == "/FV" && (!testutil.InProcess() || goBreakpoints) {
							n = min(n, 1)
						}
						if tb.hits[name] != n {
							t.Errorf("%s: %s hit %d times, want %d", method, name, tb.hits[name], n)
						}
						total += n
						if n > 0 {
							executed++
						}
					}
					if len(tb.hits) != len(want) {
						t.Errorf("%s: %d functions profiled, want %d: %v", method, len(tb.hits), len(want), tb.hits)
					}
					// Timing always keeps the depth (its books are
					// PROFILE's); counting and coverage where they run
					// in-process.
					keeps := method == "/FT" || testutil.KeepsDepth(c.lang == "go")
					if d := c.depth; keeps && d != [2]int{} && (tb.depth < d[0] || tb.depth > d[1]) {
						t.Errorf("%s: call depth %d, want %d to %d", method, tb.depth, d[0], d[1])
					}
					if tb.total != total || tb.marked != uint64(len(want)) || tb.executed != executed {
						t.Errorf("%s: record 3 = %d %d %d, want %d %d %d", method, tb.total, tb.marked, tb.executed, total, len(want), executed)
					}
				}
			})
		}
	}
}

// TestMergeAddsRuns: two runs merged give twice the counts, two run records,
// and the listing's figures.
func TestMergeAddsRuns(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "counts")
	dir, _ := workflow(t, prog, []string{"/FC"}, "1")
	must(t, dir, "profile", "/nologo", "counts", "two", "words here")
	must(t, dir, "prep", "/nologo", "/M", "counts")
	tb := parseTab(t, must(t, dir, "plist", "/nologo", "/T", "counts").stdout)
	if tb.hits["f"] != 2000 || tb.hits["fib"] != 2*1973 || tb.total != 2*2988 {
		t.Errorf("after two runs: f %d, fib %d, total %d; want 2000, 3946, 5976", tb.hits["f"], tb.hits["fib"], tb.total)
	}
	wantRuns := []string{"counts 1", `counts two "words here"`}
	if strings.Join(tb.runs, "|") != strings.Join(wantRuns, "|") {
		t.Errorf("run records %q, want %q", tb.runs, wantRuns)
	}
	// A run is merged once: the same .pbo again is refused, and the .pbt
	// is left as it was.
	r := tool(t, dir, "prep", "/nologo", "/M", "counts")
	wantFail(t, r, 1, "the run in counts.pbo is already in counts.pbt")
	if again := parseTab(t, must(t, dir, "plist", "/nologo", "/T", "counts").stdout); again.hits["f"] != 2000 {
		t.Errorf("after the refused merge: f %d, want 2000", again.hits["f"])
	}
	// /IT /IO /OT adds a third run into another file, leaving the input as
	// it was.
	must(t, dir, "profile", "/nologo", "/O", "third", "counts", "3")
	must(t, dir, "prep", "/nologo", "/IT", "counts", "/IO", "third", "/OT", "three")
	tb3 := parseTab(t, must(t, dir, "plist", "/nologo", "/T", "three.pbt").stdout)
	if tb3.hits["f"] != 3000 || len(tb3.runs) != 3 {
		t.Errorf("three.pbt: f %d, %d runs; want 3000, 3", tb3.hits["f"], len(tb3.runs))
	}
	if tb2 := parseTab(t, must(t, dir, "plist", "/nologo", "/T", "counts").stdout); tb2.hits["f"] != 2000 {
		t.Errorf("counts.pbt after /OT three: f %d, want 2000", tb2.hits["f"])
	}
}

// TestReportGolden checks the whole default listing of the counts fixture.
func TestReportGolden(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "counts")
	dir, _ := workflow(t, prog, []string{"/FC"})
	for _, opts := range [][]string{nil, {"/SN"}, {"/C", "0"}, {"/SNS"}, {"/T"}} {
		name := "counts-fc" + strings.ToLower(strings.Join(opts, ""))
		name = strings.NewReplacer("/", "-", " ", "").Replace(name)
		out := must(t, dir, "plist", append(append([]string{"/nologo"}, opts...), "counts")...).stdout
		testutil.Golden(t, filepath.Join("testdata", name+".golden"), maskDates(out))
	}
	dir, _ = workflow(t, prog, []string{"/FV"})
	out := must(t, dir, "plist", "/nologo", "counts").stdout
	testutil.Golden(t, filepath.Join("testdata", "counts-fv.golden"), maskDates(out))
}

var (
	dateLine = regexp.MustCompile(`(?m)^Date:    .*$`)
	runDate  = regexp.MustCompile(`\d{4} [A-Z][a-z]{2} \d\d \d\d:\d\d`)
)

// maskDates replaces the dates of a report, which change with every run.
// Where PROFILE keeps no call depth (breakpoints), the depth is written as the
// goldens have it (16, by construction of the counts fixture), so that
// the rest of the layout is still compared; TestFunctionCounting checks
// the depth where it is kept.
func maskDates(s string) []byte {
	s = dateLine.ReplaceAllString(s, "Date:    Sat Nov 21 04:51:11 2026")
	if !testutil.KeepsDepth(false) {
		s = depthLine.ReplaceAllString(s, "${1}16")
		s = depthRecord.ReplaceAllString(s, "${1}16")
	}
	return []byte(runDate.ReplaceAllString(s, "2026 Nov 21 04:51"))
}

var (
	depthLine   = regexp.MustCompile(`(?m)^(    Call depth: )0$`)
	depthRecord = regexp.MustCompile(`(?m)^(2\t[^\t]*\t[^\t]*\t)0$`)
)

// goEntriesOnly matches the warning that entries keep breakpoints where
// all of them are Go functions' on an ARMv8.0 core.
var goEntriesOnly = regexp.MustCompile(`PRF4646\b.*\(Go function, no LSE: \d+\)`)

// withoutExpected removes from PROFILE's stderr the warnings a run may
// give whatever the program: that the CPU cannot count in-process
// (PRF4648), or not a Go function's entry (PRF4646 of Go functions alone,
// on an ARMv8.0 core), and that timing, /SF or /AT stop at every call
// (PRF4650).
func withoutExpected(stderr string) string {
	var keep []string
	for _, l := range strings.Split(stderr, "\n") {
		// (PRF4650: timing with breakpoints; PRF4651: exits that keep
		// breakpoints, as in unoptimised code, where an epilogue is too
		// short for a jump; PRF4653: such an exit, hot, taken out.
		// PRF4671, under emulation: a Go program's preemption signals,
		// some 80 a second, each a stop that costs milliseconds in the
		// arm64 VM, are a fifth of its run there, which the warning
		// truly says; on a real CPU they cost a thousandth. PRF4672,
		// under emulation too: qemu now and then runs a stale copy of
		// code whose breakpoint PROFILE took out, which the warning
		// says, and its hint names qemu: docs/linux.md, "What PROFILE
		// cannot see".)
		expected := strings.Contains(l, "PRF4650") || strings.Contains(l, "PRF4651") || strings.Contains(l, "PRF4653") ||
			(testutil.Slow() && (strings.Contains(l, "PRF4671") || strings.Contains(l, "PRF4672")))
		expected = expected || (!testutil.GoInProcess() && goEntriesOnly.MatchString(l))
		if !expected && (testutil.InProcess() || !strings.Contains(l, "PRF4648")) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}
