package e2e

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/testutil"
	"github.com/sourceprofiler/sprof/plist"
)

// openTrace reads dir/base.pbx and dir/base.pbt.
func openTrace(t *testing.T, dir, base string) (*plist.Trace, *datafile.Merged) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, base+".pbx"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := plist.ReadTrace(f)
	if err != nil {
		t.Fatal(err)
	}
	m, err := datafile.OpenMerged(filepath.Join(dir, base+".pbt"))
	if err != nil {
		t.Fatal(err)
	}
	return tr, m
}

// checkTraceBooks checks that the trace is what the report is made of:
// every function's calls in it are its hits, its calls' own times add up
// to its function time and its outermost calls' times to its time with
// children, to the nanosecond (timing), and its deepest call is the call
// depth.
func checkTraceBooks(t *testing.T, tr *plist.Trace, m *datafile.Merged) {
	t.Helper()
	n := len(m.Plan.Funcs)
	hits, self, all := make([]uint64, n), make([]int64, n), make([]int64, n)
	depth := 0
	for i := range tr.Owners {
		open := make([]int, n)
		tr.Owners[i].Walk(func(s plist.TraceStep) {
			fn := s.Call.Func
			if !s.Return {
				hits[fn]++
				open[fn]++
				depth = max(depth, s.Call.Depth+1)
				return
			}
			self[fn] += s.Call.Self
			if open[fn]--; open[fn] == 0 {
				all[fn] += s.Call.End - s.Call.Start
			}
		})
	}
	st := &m.Stats
	for fn, f := range m.Plan.Funcs {
		if hits[fn] != st.Hits[fn] {
			t.Errorf("%s: %d calls in the trace, %d hits in the report", f.Name, hits[fn], st.Hits[fn])
		}
		if st.FuncTime != nil && (self[fn] != st.FuncTime[fn] || all[fn] != st.ChildTime[fn]) {
			t.Errorf("%s: the trace's time %d ns, with children %d; the report's %d, %d", f.Name, self[fn], all[fn], st.FuncTime[fn], st.ChildTime[fn])
		}
	}
	if depth != st.CallDepth {
		t.Errorf("the trace's deepest call is at depth %d, the report's call depth %d", depth, st.CallDepth)
	}
}

// traceLine is a line of plist /TRACE's trace: a call or a return.
var traceLine = regexp.MustCompile(`^( *)(?:([^\t]+)\t\(caller\+=\d+\.\d{5}\) \{|<--\t\(callee\+=\d+\.\d{5}; callee_child\+=\d+\.\d{5}\) \})$`)

// traceShape returns the calls of plist /TRACE's output out, of the
// functions keep names, in one string: "f(g()g())" for a call of f in
// which g was called twice. It checks every line's layout and indentation
// (two columns a level) on the way, and returns the number of sections
// (threads or goroutines).
func traceShape(t *testing.T, out string, keep ...string) (string, int) {
	t.Helper()
	_, trace, ok := strings.Cut(out, "\n\n*** Execution Trace ***\n")
	if !ok {
		t.Fatalf("no trace in:\n%s", out)
	}
	var b strings.Builder
	var stack []string
	sections := 1
	sc := bufio.NewScanner(strings.NewReader(trace))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		if strings.HasSuffix(line, ":") && (strings.HasPrefix(line, "Thread ") || strings.HasPrefix(line, "Goroutine at ")) {
			if len(stack) != 0 {
				t.Fatalf("a section begins with calls open: %v", stack)
			}
			if b.Len() > 0 || sections > 1 {
				sections++
			}
			b.WriteString("|")
			continue
		}
		if strings.HasPrefix(line, "*** The trace ends with ") {
			// (The calls still open where a trace not whole ends: their
			// returns were made up, above.)
			if len(stack) != 0 {
				t.Fatalf("%q with calls open: %v", line, stack)
			}
			continue
		}
		mm := traceLine.FindStringSubmatch(line)
		if mm == nil {
			t.Fatalf("not a trace line: %q", line)
		}
		if len(mm[1]) != 2*len(stack) && !(mm[2] == "" && len(mm[1]) == 2*(len(stack)-1)) {
			t.Fatalf("%q: indented %d, at depth %d", line, len(mm[1]), len(stack))
		}
		if mm[2] != "" {
			stack = append(stack, mm[2])
			if slices.Contains(keep, mm[2]) {
				b.WriteString(mm[2] + "(")
			}
			continue
		}
		if len(stack) == 0 {
			t.Fatalf("a return with no call open: %q", line)
		}
		if slices.Contains(keep, stack[len(stack)-1]) {
			b.WriteString(")")
		}
		stack = stack[:len(stack)-1]
	}
	return strings.TrimPrefix(b.String(), "|"), sections
}

// TestTraceCalls profiles calls known by construction (timing.c's at
// mode: main calls caller_a, which calls leaf 3 times, caller_b twice,
// which calls it twice, and rec(4), which recurses 4 levels) with
// /TRACE, for each function type, in-process and with breakpoints: plist
// /TRACE lists them in order and nested, in the original's layout, and
// the trace holds exactly what the report is made of.
func TestTraceCalls(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "timing", "-O0")
	const want = "caller_a(leaf()leaf()leaf())caller_b(leaf()leaf())caller_b(leaf()leaf())rec(rec(rec(rec(rec()))))"
	for _, c := range []struct {
		name    string
		prep    []string
		profile []string
		method  string
	}{
		{"FT", []string{"/FT"}, nil, "Function timing"},
		{"FC", []string{"/FC"}, nil, "Function counting"},
		{"FV", []string{"/FV"}, nil, "Function coverage"},
		{"FT-AT", []string{"/FT", "/AT"}, nil, "Function timing"},
		{"FT-breakpoints", []string{"/FT"}, []string{"--breakpoints"}, "Function timing"},
		{"FS", []string{"/FS"}, nil, "Function sampling"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, r := workflowWith(t, prog, c.prep, append([]string{"/TRACE"}, c.profile...), "at")
			if r.status != 0 {
				t.Fatalf("profile: status %d\n%s", r.status, r.stderr)
			}
			out := must(t, dir, "plist", "/nologo", "/trace", "timing")
			if !strings.HasPrefix(out.stdout, "Profile: "+c.method) {
				t.Errorf("the report is not of %s:\n%.200s", c.method, out.stdout)
			}
			if warned := withoutMissingSources(out.stderr); warned != "" {
				t.Errorf("plist /trace warned: %s", warned)
			}
			got, sections := traceShape(t, out.stdout, "caller_a", "caller_b", "leaf", "rec")
			if got != want || sections != 1 {
				t.Errorf("calls %s in %d sections, want %s in 1", got, sections, want)
			}
			tr, m := openTrace(t, dir, "timing")
			if !tr.Status.Ended || tr.Status.Cut || tr.Status.Torn {
				t.Errorf("trace status %+v, want whole", tr.Status)
			}
			if m.Plan.Method.HasTimes() != (m.Stats.FuncTime != nil) || !strings.HasPrefix(c.method, m.Plan.Method.Words()) {
				t.Errorf("the profile is %v, times %v", m.Plan.Method, m.Stats.FuncTime != nil)
			}
			if !m.Plan.Method.IsSampling() {
				checkTraceBooks(t, tr, m)
			}
		})
	}
}

// TestTraceOriginalLayout: the original's ftime profiled with /TRACE;
// plist /trace prints the report exactly as plist does, then the trace,
// whose calls are ftime.c's (testdata/original/src).
func TestTraceOriginalLayout(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildOriginal(t, "ftime")
	dir, r := workflowWith(t, prog, nil, []string{"/TRACE"})
	if r.status != 0 {
		t.Fatalf("profile: status %d\n%s", r.status, r.stderr)
	}
	report := must(t, dir, "plist", "/nologo", "ftime").stdout
	got := must(t, dir, "plist", "/nologo", "/trace", "ftime").stdout
	undated := func(s string) string { return dateLine.ReplaceAllString(s, "Date:") }
	if !strings.HasPrefix(undated(got), undated(report)+"\n\n*** Execution Trace ***\n") {
		t.Fatalf("plist /trace printed:\n%s\nwant the report, then the trace:\n%s", got, report)
	}
	shape, _ := traceShape(t, got, "main", "short_work", "long_work", "mid", "leaf", "caller_a", "caller_b")
	const want = "main(short_work()short_work()short_work()long_work(mid(leaf()))caller_a(leaf()mid(leaf()))caller_b(leaf())caller_b(leaf()))"
	if shape != want {
		t.Errorf("calls %s, want %s", shape, want)
	}
	tr, m := openTrace(t, dir, "ftime")
	checkTraceBooks(t, tr, m)
}

// TestTraceThreads: timing.c's threads mode, four threads that call one()
// and two() in turn three times each, traced in a section a thread.
func TestTraceThreads(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "timing", "-O0", "-pthread")
	dir, r := workflowWith(t, prog, []string{"/FT"}, []string{"/TRACE"}, "threads", "200")
	if r.status != 0 {
		t.Fatalf("profile: status %d\n%s", r.status, r.stderr)
	}
	out := must(t, dir, "plist", "/nologo", "/trace", "timing").stdout
	shape, sections := traceShape(t, out, "one", "two")
	shape = "|" + shape
	workers := strings.Count(shape, "|one()two()one()two()one()two()")
	if workers != 4 || sections < 5 {
		t.Errorf("calls %s in %d sections: want 4 threads calling one 3 times, then two 3 times", shape, sections)
	}
	tr, m := openTrace(t, dir, "timing")
	checkTraceBooks(t, tr, m)
}

// TestTraceGoroutines: gotiming's four goroutines call one() and two()
// three times each, which call wait(); each goroutine's calls are in its
// own section, wherever the threads ran them.
func TestTraceGoroutines(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildGo(t, "gotiming")
	// (Only the calls' owners are checked: any unit will do.)
	unit := 2000
	if testutil.Slow() {
		unit = 10000
	}
	dir, r := workflowWith(t, prog, nil, []string{"/TRACE"}, strconv.Itoa(unit))
	if r.status != 0 || !strings.Contains(r.stdout, "gotiming done") {
		t.Fatalf("profile: status %d, output %q\n%s", r.status, r.stdout, r.stderr)
	}
	tr, m := openTrace(t, dir, "gotiming")
	checkTraceBooks(t, tr, m)
	names := map[int]string{}
	for i, f := range m.Plan.Funcs {
		names[i] = f.Name
	}
	goroutines := 0
	for i := range tr.Owners {
		o := &tr.Owners[i]
		calls := map[string]int{}
		for _, ev := range o.Events {
			if !ev.Return {
				calls[names[int(ev.Func)]]++
			}
		}
		if o.Goroutine && calls["main.one"] == 3 && calls["main.two"] == 3 && calls["main.wait"] == 6 {
			goroutines++
		}
	}
	if goroutines != 4 {
		t.Errorf("%d goroutines made 3 calls of one, 3 of two and 6 of wait, want 4", goroutines)
	}
	out := must(t, dir, "plist", "/nologo", "/trace", "gotiming").stdout
	if n := strings.Count(out, "\nGoroutine at 0x"); n < 4 {
		t.Errorf("%d goroutine sections in plist /trace, want 4 or more", n)
	}
}

// TestTraceCrash: a program that crashes after three calls of f has a
// whole trace of them, made by a counting run (which records exits, as
// timing does, for the trace).
func TestTraceCrash(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "crash", "-O0")
	dir, r := workflowWith(t, prog, []string{"/FC"}, []string{"/TRACE"})
	if !strings.Contains(r.stdout, "before crash") {
		t.Fatalf("profile: status %d, output %q\n%s", r.status, r.stdout, r.stderr)
	}
	out := tool(t, dir, "plist", "/nologo", "/trace", "crash")
	shape, _ := traceShape(t, out.stdout, "main", "f")
	if shape != "main(f()f()f())" {
		t.Errorf("calls %s, want main(f()f()f())", shape)
	}
	tr, m := openTrace(t, dir, "crash")
	checkTraceBooks(t, tr, m)
	if m.Stats.Hits[funcIndex(t, m, "f")] != 3 {
		t.Errorf("f: %d hits, want 3", m.Stats.Hits[funcIndex(t, m, "f")])
	}
}

// funcIndex is the index of the function named name in m's plan.
func funcIndex(t *testing.T, m *datafile.Merged, name string) int {
	t.Helper()
	for i, f := range m.Plan.Funcs {
		if f.Name == name {
			return i
		}
	}
	t.Fatalf("no function %s in the plan", name)
	return -1
}

// TestTraceKilled: PROFILE killed while the program waits keeps the
// trace of what came before: the calls made before the wait are in it,
// and plist says the trace is not whole.
func TestTraceKilled(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "crash", "-O0")
	dir := t.TempDir()
	prog = install(t, prog, dir)
	must(t, dir, "prep", "/nologo", "/FT", prog)
	cmd := exec.Command(filepath.Join(bin, "profile"), "/nologo", "/TRACE", prog, "int")
	cmd.Dir = dir
	// (A file, which the child writes itself: the test reads it while
	// PROFILE runs.)
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "before crash") {
		t.Fatalf("the program printed %q, %v", line, err)
	}
	// The program waits in pause(): PROFILE writes what it booked before
	// it sleeps, some tens of milliseconds after the last event.
	pbx := filepath.Join(dir, "crash.pbx")
	deadline := time.Now().Add(30 * time.Second)
	for {
		tr := readTraceFile(t, pbx)
		if tr != nil && countCalls(tr) >= 3 {
			break
		}
		if time.Now().After(deadline) {
			errs, _ := os.ReadFile(stderr.Name())
			t.Fatalf("the trace holds no 3 calls of f after 30 s: %+v\nprofile's stderr:\n%s", tr, errs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	tr := readTraceFile(t, pbx)
	if tr.Status.Ended {
		t.Errorf("the trace of a killed PROFILE says it ended")
	}
	// (No .pbt: merge nothing; plist reads the trace against the plan's
	// .pbt, which phase I wrote.)
	out := tool(t, dir, "plist", "/nologo", "/trace", "crash")
	if !strings.Contains(out.stderr, "PRF4486") || !strings.Contains(out.stderr, "PRF4485") {
		t.Errorf("plist /trace: want PRF4486 (not whole) and PRF4485 (not merged), stderr:\n%s", out.stderr)
	}
	if shape, _ := traceShape(t, out.stdout, "f"); shape != "f()f()f()" {
		t.Errorf("calls %s, want f()f()f()", shape)
	}
	if !strings.Contains(out.stdout, "\n*** The trace ends with 1 call open: its return above is at its last event ***\n") {
		t.Errorf("plist /trace does not say main was still open:\n%s", out.stdout)
	}
}

// readTraceFile reads the trace at path as it is, or returns nil when it
// has no header yet.
func readTraceFile(t *testing.T, path string) *plist.Trace {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	tr, err := plist.ReadTrace(f)
	if err != nil {
		return nil
	}
	return tr
}

func countCalls(tr *plist.Trace) int {
	n := 0
	for _, o := range tr.Owners {
		for _, ev := range o.Events {
			if !ev.Return {
				n++
			}
		}
	}
	return n
}

// TestTraceLimit: a trace larger than --trace-limit is cut, with a
// warning from PROFILE and from PLIST, and the run's counts are whole.
func TestTraceLimit(t *testing.T) {
	testutil.MustHavePtrace(t)
	if testutil.Slow() {
		// (A MiB of trace is some 170,000 calls, too many where each may
		// be two breakpoints under emulation; the cut is the writer's,
		// which datafile's TestTraceCut checks on every host.)
		t.Skip("too many calls for breakpoints under emulation")
	}
	prog := testutil.BuildC(t, "timing", "-O0")
	calls := 1000000
	dir, r := workflowWith(t, prog, []string{"/FT"}, []string{"/TRACE", "--trace-limit=1"}, "short", strconv.Itoa(calls), "1000")
	if r.status != 0 || !strings.Contains(r.stderr, "PRF4682") {
		t.Fatalf("profile: status %d, want PRF4682\n%s", r.status, r.stderr)
	}
	st, err := os.Stat(filepath.Join(dir, "timing.pbx"))
	if err != nil || st.Size() > 1<<20 {
		t.Fatalf("the trace: %v, %v bytes for a limit of 1 MiB", err, st.Size())
	}
	tr, m := openTrace(t, dir, "timing")
	if !tr.Status.Cut || !tr.Status.Ended {
		t.Errorf("trace status %+v, want cut and ended", tr.Status)
	}
	if h := m.Stats.Hits[funcIndex(t, m, "tiny")]; h != uint64(calls) {
		t.Errorf("tiny: %d hits, want %d", h, calls)
	}
	if n := countCalls(tr); n == 0 || n >= 2*calls {
		t.Errorf("%d calls in the cut trace", n)
	}
	out := tool(t, dir, "plist", "/nologo", "/trace", "timing")
	if out.status != 0 || !strings.Contains(out.stderr, "PRF4486") {
		t.Errorf("plist /trace: status %d, want PRF4486\n%s", out.status, out.stderr)
	}
}

// TestTraceNot: without /TRACE no trace is written, and a line profile
// asked for one warns (PRF4681) and writes none.
func TestTraceNot(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "counts", "-O0", "-g")
	dir, r := workflow(t, prog, []string{"/FC"})
	if _, err := os.Stat(filepath.Join(dir, "counts.pbx")); err == nil || r.status != 0 {
		t.Errorf("a run without /TRACE: status %d, a trace %v", r.status, err)
	}
	// (timing.c's at mode: few lines run, which under emulation may be
	// a breakpoint's stop each.)
	dir, r = workflowWith(t, testutil.BuildC(t, "timing", "-O0"), []string{"/LC"}, []string{"/TRACE"}, "at")
	if _, err := os.Stat(filepath.Join(dir, "timing.pbx")); err == nil || r.status != 0 || !strings.Contains(r.stderr, "PRF4681") {
		t.Errorf("a line profile with /TRACE: status %d, trace %v, stderr:\n%s", r.status, err, r.stderr)
	}
}

// TestTraceBadFile: plist /TRACE with a .pbx that is not a trace, one
// whose chunk is damaged in the middle, and one of another preparation
// of the program: the report first, as the original printed it, then a
// clear error naming the file (PRF1012, PRF1306), or the calls before the
// damage with PRF4486; the data files are left as they were.
func TestTraceBadFile(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "timing", "-O0")
	dir, r := workflowWith(t, prog, []string{"/FT"}, []string{"/TRACE"}, "at")
	if r.status != 0 {
		t.Fatalf("profile: status %d\n%s", r.status, r.stderr)
	}
	pbx := filepath.Join(dir, "timing.pbx")
	good, err := os.ReadFile(pbx)
	if err != nil {
		t.Fatal(err)
	}
	pbt, _ := os.ReadFile(filepath.Join(dir, "timing.pbt"))
	report := must(t, dir, "plist", "/nologo", "timing").stdout
	undated := func(s string) string { return dateLine.ReplaceAllString(s, "Date:") }

	// Not a trace at all.
	os.WriteFile(pbx, []byte("this is not a trace\n"), 0o644)
	out := tool(t, dir, "plist", "/nologo", "/trace", "timing")
	if out.status != 1 || !strings.Contains(out.stderr, "fatal error PRF1012: cannot read expected number of bytes from file timing.pbx") ||
		undated(out.stdout) != undated(report) {
		t.Errorf("garbage: status %d, stderr %q; want 1, PRF1012, and the report alone", out.status, out.stderr)
	}

	// The first chunk's payload damaged: no call is read, the trace says
	// where it stops.
	damaged := bytes.Clone(good)
	damaged[len(damaged)-20] ^= 0xff
	os.WriteFile(pbx, damaged, 0o644)
	out = tool(t, dir, "plist", "/nologo", "/trace", "timing")
	if out.status != 0 || !strings.Contains(out.stderr, "PRF4486") {
		t.Errorf("damaged: status %d, stderr %q; want 0 and PRF4486", out.status, out.stderr)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "timing.pbt")); !bytes.Equal(after, pbt) {
		t.Error("plist changed the .pbt")
	}

	// Another preparation (another type): the trace is refused.
	os.WriteFile(pbx, good, 0o644)
	must(t, dir, "prep", "/nologo", "/FC", filepath.Base(prog))
	out = tool(t, dir, "plist", "/nologo", "/trace", "timing")
	if out.status != 1 || !strings.Contains(out.stderr, "fatal error PRF1306: PBT or PBO file timing.pbx is not derived from same PBI file") {
		t.Errorf("another plan: status %d, stderr %q; want 1 and PRF1306", out.status, out.stderr)
	}
	if after, _ := os.ReadFile(pbx); !bytes.Equal(after, good) {
		t.Error("plist changed the .pbx")
	}
}

// withoutMissingSources is PLIST's stderr without the warning that the
// listing leaves out sources it cannot find (PRF4487, and its hint),
// which a sampling profile's listing of lines gives where the fixtures'
// sources are not (the arm64 VM).
func withoutMissingSources(stderr string) string {
	var keep []string
	skipHint := false
	for _, l := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		switch {
		case strings.Contains(l, "PRF4487"):
			skipHint = true
		case skipHint && strings.HasPrefix(l, "plist: hint:"):
			skipHint = false
		case l != "":
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}
