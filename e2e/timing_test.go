package e2e

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/internal/testutil"
)

// TestFunctionTiming runs the programs of the original's timing,
// start-function and attribution goldens (testdata/original/src) through
// the whole workflow with the options those goldens were made with, and
// compares what both profilers counted from the same sources: the hits of
// every function, the call depth, and the caller stacks with their hits.
// (The original's /T output attaches some stacks to the wrong function, a
// bug not copied: the stacks are compared as a set.) Function timing is
// the default type: a PREP without a type switch asks for it.
func TestFunctionTiming(t *testing.T) {
	testutil.MustHavePtrace(t)
	for _, c := range []struct {
		src    string
		prep   []string
		golden string
	}{
		{"ftime", nil, "ftime/ft-plist-t.out"},
		{"ftime", []string{"/CB", "5"}, "ftime/ft-cb-plist-t.out"},
		{"ftime", []string{"/AT"}, "ftime/ft-atdefault-plist-t.out"},
		{"ftime", []string{"/AT", "/STACK", "1"}, "ftime/ft-at1-plist-t.out"},
		{"ftime", []string{"/AT", "/STACK", "2"}, "ftime/ft-at2-plist-t.out"},
		{"ftime", []string{"/AT", "/STACK", "3"}, "ftime/ft-at3-plist-t.out"},
		{"ftime", []string{"/FC", "/AT", "/STACK", "3"}, "ftime/fc-at3-plist-t.out"},
		{"ftime", []string{"/FV", "/AT"}, "ftime/fv-at-plist-t.out"},
		{"sf", []string{"/FT", "/SF", "work"}, "sf/ft-plist-t.out"},
		{"sf", []string{"/FC", "/SF", "work"}, "sf/fc-plist-t.out"},
		{"sf", []string{"/FC", "/AT", "/SF", "work"}, "sf/fc-at-plist-t.out"},
		{"sf", []string{"/FT", "/AT", "/SF", "work"}, "sf/ft-at-plist-t.out"},
		{"sf", []string{"/FC", "/SF", "nosuch"}, "sf/name3-plist-t.out"},
		{"sf", []string{"/FC", "/SF", "main"}, "sf/name4-plist-t.out"},
		{"sf", []string{"/FC", "/SF", "inner"}, "sf/name5-plist-t.out"},
		{"deep", []string{"/FC", "/AT", "/STACK", "16"}, "deep/fc-at16-plist-t.out"},
		{"deep", []string{"/FC", "/AT"}, "deep/fc-atdefault-plist-t.out"},
	} {
		name := c.src + strings.ReplaceAll(strings.Join(c.prep, ""), "/", "-")
		t.Run(name, func(t *testing.T) {
			prog := testutil.BuildOriginal(t, c.src)
			dir, r := workflow(t, prog, c.prep)
			if r.status != 0 {
				t.Fatalf("profile: status %d\n%s", r.status, r.stderr)
			}
			got := parseCalls(t, must(t, dir, "plist", "/nologo", "/T", c.src).stdout)
			want := parseCalls(t, testutil.OriginalText(t, c.golden))
			t.Logf("%d functions, %d hits, depth %d, %d stacks", len(got.hits), sumHits(got), got.depth, len(got.stacks))
			if diff := compareCalls(want, got); diff != "" {
				t.Errorf("against the original's %s:\n%s", c.golden, diff)
			}
			if slices.Contains(c.prep, "/FC") || slices.Contains(c.prep, "/FV") {
				return
			}
			report := must(t, dir, "plist", "/nologo", c.src).stdout
			lines := []string{"Profile: Function timing, sorted by time", "    Total time: ",
				"    Time outside of functions: ", "    Overhead Calculated "}
			if slices.Contains(c.prep, "/CB") {
				lines = append(lines, "    Overhead Used 5\n")
			}
			for _, line := range lines {
				if !strings.Contains(report, line) {
					t.Errorf("the report has no %q:\n%s", line, report)
				}
			}
		})
	}
}

// calls is what a /T output says was called: hits by function, the call
// depth, the start function, and the caller stacks ("caller caller hits"),
// names without the original's leading underscore.
type calls struct {
	hits   map[string]uint64
	depth  int
	start  string
	stacks []string
}

func parseCalls(t *testing.T, out string) calls {
	t.Helper()
	c := calls{hits: map[string]uint64{}}
	bare := func(name string) string { return strings.TrimPrefix(name, "_") }
	var stack []string // names of the stack being read, then its hits last
	var want int       // names it still awaits
	for _, line := range strings.Split(strings.TrimRight(out, "\r\n"), "\n") {
		f := strings.Split(strings.TrimRight(line, "\r"), "\t")
		switch f[0] {
		case "2":
			c.depth, _ = strconv.Atoi(f[3])
		case "5":
			c.start = bare(f[1])
		case "6":
			hits, err := strconv.ParseUint(f[3], 10, 64)
			if err != nil {
				t.Fatalf("record %q: %v", line, err)
			}
			c.hits[bare(f[6])] = hits
		case "9":
			want, _ = strconv.Atoi(f[1])
			stack = []string{f[2]}
		case "10":
			stack = append(stack, bare(f[1]))
			if want--; want == 0 {
				c.stacks = append(c.stacks, strings.Join(append(stack[1:], stack[0]), " "))
			}
		}
	}
	slices.Sort(c.stacks)
	return c
}

// compareCalls says how got differs from want, or "".
func compareCalls(want, got calls) string {
	var b strings.Builder
	for name, w := range want.hits {
		if g, ok := got.hits[name]; !ok || g != w {
			fmt.Fprintf(&b, "%s: %d hits, the original %d\n", name, g, w)
		}
	}
	if len(got.hits) != len(want.hits) {
		fmt.Fprintf(&b, "%d functions, the original %d\n", len(got.hits), len(want.hits))
	}
	if got.depth != want.depth {
		fmt.Fprintf(&b, "call depth %d, the original %d\n", got.depth, want.depth)
	}
	if got.start != want.start {
		fmt.Fprintf(&b, "start function %q, the original %q\n", got.start, want.start)
	}
	if !slices.Equal(got.stacks, want.stacks) {
		fmt.Fprintf(&b, "stacks (callers, hits):\n  %q\nthe original:\n  %q\n", got.stacks, want.stacks)
	}
	return b.String()
}

func sumHits(c calls) uint64 {
	var n uint64
	for _, h := range c.hits {
		n += h
	}
	return n
}

// goTimes reads the functions' hits, and their function times and
// function+child times in nanoseconds, from a /T report.
func goTimes(t testing.TB, out string) (hits map[string]uint64, self, all map[string]int64) {
	t.Helper()
	hits, self, all = map[string]uint64{}, map[string]int64{}, map[string]int64{}
	ns := func(ms string) int64 {
		v, err := strconv.ParseFloat(ms, 64)
		if err != nil {
			t.Fatalf("/T report: time %q: %v", ms, err)
		}
		return int64(math.Round(v * 1e6))
	}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Split(line, "\t"); f[0] == "6" && len(f) > 6 {
			hits[f[6]], _ = strconv.ParseUint(f[3], 10, 64)
			self[f[6]], all[f[6]] = ns(f[4]), ns(f[5])
		}
	}
	// The program's measuring helpers are inlined: a call of one, a
	// function of the plan, would stop inside the calls it measures.
	for name, n := range hits {
		if strings.Contains(name, "span") && n > 0 {
			t.Errorf("%s, a helper of the program's own measure, was called %d times: it must be inlined", name, n)
		}
	}
	return hits, self, all
}

// TestGoroutineTiming: a Go program's calls are timed per goroutine, so
// that a goroutine's time is its own whichever thread runs it. Four
// goroutines, which move between threads as they sleep, run one() and
// two(), which sleep one and two units in wait(): each function's times
// are where the program's own measure of the same run puts them
// (testutil.Own.Check). (How close they come to the units on a machine
// running nothing else is BenchmarkGoroutineTiming's.)
func TestGoroutineTiming(t *testing.T) {
	testutil.MustHavePtrace(t)
	// Go's scheduler interrupts a goroutine (SIGURG) in the middle of
	// the measured calls, to preempt it or to stop the world for its
	// collector: the signal's stop is PROFILE's, taken out of its times
	// and not out of the program's measure, which holds what PROFILE
	// adds only in the gaps at the calls' edges. Under emulation such a
	// stop costs a millisecond: an arm64 VM read main.two's function
	// time 0.55 ms below the floor, its own measure of the calls'
	// bodies 3.9 ms where other runs read 0.1 (TestCgoTiming's reason).
	t.Setenv("GODEBUG", "asyncpreemptoff=1")
	// A unit of 20 ms: a goroutine that wakes up may wait for a thread
	// the tracer holds, some hundred microseconds under breakpoints.
	unit := 20000
	if testutil.Slow() {
		unit = 100000
	}
	for _, b := range goBuilds {
		t.Run(b.name, func(t *testing.T) {
			prog := testutil.BuildGo(t, "gotiming", b.flags...)
			dir, r := workflow(t, prog, nil, strconv.Itoa(unit))
			if r.status != 0 || !strings.Contains(r.stdout, "gotiming done") {
				t.Fatalf("profile: status %d, output %q\n%s", r.status, r.stdout, r.stderr)
			}
			hits, self, all := goTimes(t, must(t, dir, "plist", "/nologo", "/T", "gotiming").stdout)
			if hits["main.one"] != 12 || hits["main.two"] != 12 || hits["main.wait"] != 24 {
				t.Errorf("hits: one %d, two %d, wait %d; want 12, 12, 24", hits["main.one"], hits["main.two"], hits["main.wait"])
			}
			own := testutil.ParseOwn(t, r.stdout)
			for _, name := range []string{"main.one", "main.two", "main.wait"} {
				own.Check(t, name, self[name], all[name])
			}
		})
	}
}

// TestGoKnownWork: a Go program's functions are timed as the program
// measures them (testdata/progs/go/goknown): each function's share of the
// total time within 5 points of its share of the time its goroutines
// lived, added up (the total's meaning where goroutines ran side by side:
// docs/linux.md, "Timing"), a and b, which only call work, with about
// none of their own, and the total time within 10 % of that time. Among them a
// goroutine that goes on in other threads between its units of work, one
// that sleeps, a stack that grows and is copied inside a timed call, and a
// panic recovered two frames up. In-process on x86-64, and on arm64 but
// for the PIE (its thread pointer is the dynamic linker's): breakpoints.
func TestGoKnownWork(t *testing.T) {
	testutil.MustHavePtrace(t)
	// Under emulation a breakpoint's stop takes a millisecond or two,
	// which the program's own measure holds and PROFILE's does not: units
	// of 50 ms keep the PIE's (arm64: breakpoints) some 270 stops within
	// a few per cent of the run.
	unit := 2000 // µs
	if testutil.Slow() {
		unit = 50000
	}
	for _, b := range goBuilds {
		t.Run(b.name, func(t *testing.T) {
			prog := testutil.BuildGo(t, "goknown", b.flags...)
			dir, r := workflow(t, prog, nil, strconv.Itoa(unit))
			if r.status != 0 || !strings.Contains(r.stdout, "goknown done") {
				t.Fatalf("profile: status %d, output %q\n%s", r.status, r.stdout, r.stderr)
			}
			// In-process: on x86-64, and on arm64 where the thread
			// pointer is free (a program without cgo, not a PIE).
			inProcess := runtime.GOARCH == "amd64" || b.name == "exe"
			if kept := strings.Contains(r.stderr, "PRF4650") || strings.Contains(r.stderr, "PRF4646"); kept == inProcess {
				t.Errorf("timed with breakpoints: %v, want %v (%s, %s):\n%s", kept, !inProcess, runtime.GOARCH, b.name, r.stderr)
			}
			out := must(t, dir, "plist", "/nologo", "/T", "goknown").stdout
			hits, self, all := goTimes(t, out)
			want := map[string]uint64{"main.a": 20, "main.b": 10, "main.c": 10, "main.work": 56, "main.moved": 1,
				"main.blocked": 5, "main.grow": 5, "main.big": 5, "main.rescue": 5, "main.thrower1": 5, "main.thrower2": 5}
			for name, n := range want {
				if hits[name] != n {
					t.Errorf("%s: %d hits, want %d", name, hits[name], n)
				}
			}
			total := statsTotal(t, out)
			own := testutil.ParseOwn(t, r.stdout)
			elapsed := ownValue(t, r.stdout, "elapsed") + ownValue(t, r.stdout, "goroutines")
			if d := math.Abs(float64(total-elapsed)) / float64(elapsed); d > 0.10 {
				t.Errorf("total time %.3f ms, the run's goroutines' own lives %.3f ms: %.1f %% apart, want at most 10 %%",
					float64(total)/1e6, float64(elapsed)/1e6, 100*d)
			}
			share := func(v, of int64) float64 { return 100 * float64(v) / float64(of) }
			for _, name := range []string{"main.a", "main.b", "main.c", "main.work", "main.moved", "main.blocked", "main.grow", "main.rescue"} {
				m := own[name]
				if m["calls"] != int64(hits[name]) {
					t.Errorf("%s: the program counted %d calls, PROFILE %d", name, m["calls"], hits[name])
				}
				got, known := share(all[name], total), share(m["in"], elapsed)
				if name == "main.work" {
					got = share(self[name], total) // (its own time: it calls nothing profiled)
				}
				if math.Abs(got-known) > 5 {
					t.Errorf("%s: %.1f %% of the total time, %.1f %% of the run's own: want within 5 points", name, got, known)
				}
			}
			for _, name := range []string{"main.a", "main.b", "main.c", "main.grow", "main.rescue"} {
				if s := share(self[name], total); s > 5 {
					t.Errorf("%s: function time %.1f %% of the total, want about 0 (its time is work's)", name, s)
				}
			}
			if n := ownValue(t, r.stdout, "moved threads"); n < 2 {
				t.Logf("moved's goroutine ran on %d thread: the test did not see it move", n)
			}
		})
	}
}

// statsTotal reads the total time, in nanoseconds, from a /T report
// (record 2).
func statsTotal(t testing.TB, out string) int64 {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Split(line, "\t"); f[0] == "2" && len(f) > 1 {
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				t.Fatalf("/T report: total time %q: %v", f[1], err)
			}
			return int64(math.Round(v * 1e6))
		}
	}
	t.Fatalf("/T report without record 2:\n%s", out)
	return 0
}

// ownValue reads a fixture's line "KEY N".
func ownValue(t testing.TB, out, key string) int64 {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, key+" "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("fixture's line %q: %v", line, err)
			}
			return n
		}
	}
	t.Fatalf("the fixture printed no %q line:\n%s", key, out)
	return 0
}

// TestGoexitTiming: a goroutine that ends with runtime.Goexit inside a
// profiled function leaves its frame open; it closes at the goroutine's
// last event, one's exit, so that the function's time is what ran in it:
// within the program's own measure, which ends when one() has returned
// (testutil.Own.Check). The program then sleeps a unit before it ends: a
// frame closed later would take it.
func TestGoexitTiming(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildGo(t, "gotiming")
	unit := 20000 // µs; under emulation a stop's leftover is milliseconds
	if testutil.Slow() {
		unit = 100000
	}
	dir, r := workflow(t, prog, nil, "goexit", strconv.Itoa(unit))
	if r.status != 0 || !strings.Contains(r.stdout, "gotiming goexit done") {
		t.Fatalf("profile: status %d, output %q\n%s", r.status, r.stdout, r.stderr)
	}
	hits, self, all := goTimes(t, must(t, dir, "plist", "/nologo", "/T", "gotiming").stdout)
	if hits["main.exiter"] != 1 || hits["main.one"] != 1 {
		t.Errorf("hits: exiter %d, one %d; want 1, 1", hits["main.exiter"], hits["main.one"])
	}
	own := testutil.ParseOwn(t, r.stdout)
	for _, name := range []string{"main.exiter", "main.one", "main.wait"} {
		own.Check(t, name, self[name], all[name])
	}
}

// BenchmarkGoroutineTiming: how close the timing of goroutines comes to
// the units they sleep, on a machine running nothing else (the strict
// figures: bench/run, docs/performance.md, "Timing accuracy"; the tests hold the
// same runs to the program's own measure, which holds under any load).
// Medians of the iterations: one's and two's function+child times in
// units (12 and 24, and each sleep's wake-up), two's less one's (12: the
// wake-ups cancel), wait's against one's and two's together (a little
// less than 1: what is not wait's is the stops' leftover), and exiter's
// against the one() it calls before runtime.Goexit (a little more than 1).
func BenchmarkGoroutineTiming(b *testing.B) {
	testutil.MustHavePtrace(b)
	const unit = 20000
	ms := float64(unit) / 1000
	prog := testutil.BuildGo(b, "gotiming")
	m := map[string][]float64{}
	add := func(name string, v float64) { m[name] = append(m[name], v) }
	for range b.N {
		dir, r := workflow(b, prog, nil, strconv.Itoa(unit))
		if r.status != 0 {
			b.Fatalf("profile: status %d\n%s", r.status, r.stderr)
		}
		_, _, all := goTimes(b, must(b, dir, "plist", "/nologo", "/T", "gotiming").stdout)
		one, two, wait := float64(all["main.one"])/1e6/ms, float64(all["main.two"])/1e6/ms, float64(all["main.wait"])/1e6/ms
		add("one-units", one)
		add("two-units", two)
		add("two-less-one-units", two-one)
		add("wait-x-one+two", wait/(one+two))
		dir, r = workflow(b, prog, nil, "goexit", strconv.Itoa(unit))
		if r.status != 0 {
			b.Fatalf("profile: status %d\n%s", r.status, r.stderr)
		}
		_, _, all = goTimes(b, must(b, dir, "plist", "/nologo", "/T", "gotiming").stdout)
		add("exiter-x-one", float64(all["main.exiter"])/float64(all["main.one"]))
	}
	for name, v := range m {
		slices.Sort(v)
		b.ReportMetric(v[len(v)/2], name)
	}
}

// TestTraceLikeOriginal: plist /trace prints the report, then looks for
// the trace file, which a run without profile /TRACE does not write (the
// original's never did), and fails with PRF1011 naming it, as
// ftime/ft-plist-trace.out shows: the same report as without /trace, then
// the error. (TestTraceOriginalLayout has the trace.)
func TestTraceLikeOriginal(t *testing.T) {
	testutil.MustHavePtrace(t)
	golden := strings.ReplaceAll(testutil.OriginalText(t, "ftime/ft-plist-trace.out"), "\r\n", "\n")
	plain := strings.ReplaceAll(testutil.OriginalText(t, "ftime/ft-plist.out"), "\r\n", "\n")
	report, fatal, ok := strings.Cut(golden, "PLIST : fatal error PRF1011: cannot open file ")
	if !ok || !strings.HasSuffix(strings.TrimSpace(fatal), `\ftime.pbx`) {
		t.Fatalf("the golden does not end with PRF1011 for ftime.pbx:\n%s", golden)
	}
	if n, m := strings.Count(report, "\n"), strings.Count(plain, "\n"); n != m {
		t.Fatalf("the golden's report has %d lines, its ft-plist.out %d", n, m)
	}
	prog := testutil.BuildOriginal(t, "ftime")
	dir, r := workflow(t, prog, nil)
	if r.status != 0 {
		t.Fatalf("profile: status %d\n%s", r.status, r.stderr)
	}
	want := must(t, dir, "plist", "/nologo", "ftime").stdout
	got := tool(t, dir, "plist", "/nologo", "/trace", "ftime")
	if got.status == 0 {
		t.Errorf("plist /trace: status 0, want a failure")
	}
	// (The two runs of plist may print different dates.)
	undated := func(s string) string { return dateLine.ReplaceAllString(s, "Date:") }
	if undated(got.stdout) != undated(want) {
		t.Errorf("plist /trace printed:\n%s\nwant the report of plist without it:\n%s", got.stdout, want)
	}
	if !strings.Contains(got.stderr, "fatal error PRF1011: cannot open file ftime.pbx") {
		t.Errorf("plist /trace: stderr %q, want PRF1011 for ftime.pbx", got.stderr)
	}
}
