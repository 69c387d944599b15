package profile

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/internal/testutil"
)

// The fault and signal suite: scenarios of testdata/progs/c/faults.c, each
// run natively and under PROFILE with function counting and coverage.
// PROFILE must change nothing the program does (the same output and exit
// status as natively) and count what the scenario promises. To add a
// scenario: a mode in faults.c, with its promise in the comment at the top,
// and a row here (docs/testing.md, "The fault and signal suite").

// fault is one scenario.
type fault struct {
	name string
	args []string
	// drive acts on the program once it printed "ready PID", natively and
	// under PROFILE alike: interrupt sends a signal the way a user's
	// terminal or kill(1) reaches PROFILE (natively, the program).
	drive func(t *testing.T, pid int, interrupt func(syscall.Signal))
	// hits are the counts of f and g under function counting.
	hits map[string]uint64
	// incomplete says the run is marked incomplete.
	incomplete bool
	// breakpoints, when set, says how breakpoints change what the program
	// does, a limit of breakpoints documented in docs/linux.md ("Signals"):
	// the outputs are not compared, and PROFILE must warn with warns.
	breakpoints string
	warns       int
}

var faults = []fault{
	{name: "catch SIGINT", args: []string{"catch"}, drive: interruptWith(syscall.SIGINT), hits: map[string]uint64{"f": 5}},
	{name: "catch SIGTERM", args: []string{"catch"}, drive: interruptWith(syscall.SIGTERM), hits: map[string]uint64{"f": 5}},
	{name: "catch SIGHUP", args: []string{"catch"}, drive: interruptWith(syscall.SIGHUP), hits: map[string]uint64{"f": 5}},
	{name: "clone CLONE_VM child", args: []string{"clonevm"}, hits: map[string]uint64{"f": 2000}},
	{name: "clone child without CLONE_VM", args: []string{"clonefork"}, hits: map[string]uint64{"f": 1000}},
	{name: "CLONE_VM child outliving the program", args: []string{"orphan"}, hits: map[string]uint64{"f": 1}},
	{name: "threads after the main thread ended", args: []string{"mainexit"}, hits: map[string]uint64{"f": 2000}},
	{name: "stopped from outside", args: []string{"stop"}, drive: stopFromOutside, hits: nil},
	{name: "SIGTRAP handler calling a profiled function", args: []string{"trapcatch"},
		breakpoints: "g's breakpoint, hit while SIGTRAP is blocked in its handler, resets the handler: the next raise kills",
		warns:       4645},
	{name: "SIGTRAP ignored", args: []string{"trapign"},
		breakpoints: "f's breakpoint, hit while SIGTRAP is ignored, resets it to the default: the raise kills",
		warns:       4645},
	{name: "many arguments", args: append([]string{"args"}, strings.Fields(strings.Repeat("a ", 1000))...), hits: map[string]uint64{"f": 1000}},
}

// interruptWith sends sig once the program is ready.
func interruptWith(sig syscall.Signal) func(*testing.T, int, func(syscall.Signal)) {
	return func(_ *testing.T, _ int, interrupt func(syscall.Signal)) { interrupt(sig) }
}

// stopFromOutside stops the program with SIGSTOP as kill(1) would: it must
// stay stopped until SIGCONT, then go on; SIGUSR1 then ends it.
func stopFromOutside(t *testing.T, pid int, _ func(syscall.Signal)) {
	syscall.Kill(pid, syscall.SIGSTOP)
	deadline := time.Now().Add(10 * time.Second)
	// The first stop seen may be the signal's delivery to the tracer,
	// which then lets the thread run into its group stop: wait until it
	// has stayed stopped a while (once, in the emulated VM, the thread was
	// caught running between the two).
	for settled := 0; settled < 10; {
		if time.Now().After(deadline) {
			t.Errorf("process %d is not stopped 10 s after SIGSTOP (state %s)", pid, procState(pid))
			break
		}
		if settled++; !stoppedState(pid) {
			settled = 0
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Stopped, it stays stopped: sample its state while it would have run
	// hundreds of loops.
	for range 20 {
		time.Sleep(10 * time.Millisecond)
		if !stoppedState(pid) {
			t.Errorf("process %d runs again without SIGCONT (state %s)", pid, procState(pid))
			break
		}
	}
	syscall.Kill(pid, syscall.SIGCONT)
	for stoppedState(pid) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	syscall.Kill(pid, syscall.SIGUSR1)
}

// procState is the state letter of /proc/pid/stat.
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "gone"
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2 : i+3]
	}
	return "?"
}

// stoppedState reports a job-control stop: T natively, t (a tracing stop)
// under a tracer that leaves the program stopped.
func stoppedState(pid int) bool {
	s := procState(pid)
	return s == "T" || s == "t"
}

// outcome is what a run of a scenario showed.
type outcome struct {
	stdout string
	status string
}

// readyPID reads the "ready PID" line a scenario prints first, and copies
// the rest of what it prints into out until wait returns. It may run on a
// goroutine of its own: it reports a missing line with Errorf and a pid of
// 0.
func readyPID(t *testing.T, r io.Reader, out *strings.Builder) (pid int, wait func()) {
	br := bufio.NewReader(r)
	line, err := br.ReadString('\n')
	out.WriteString(line)
	if err == nil {
		pid, err = strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "ready ")))
	}
	if err != nil || pid <= 0 {
		t.Errorf("no ready line: %v (%q)", err, line)
		io.Copy(out, br)
		return 0, func() {}
	}
	out.Reset()
	out.WriteString("ready PID\n") // the same natively and under PROFILE
	done := make(chan struct{})
	go func() {
		io.Copy(out, br)
		close(done)
	}()
	return pid, func() { <-done }
}

func TestFaults(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "faults")
	for _, sc := range faults {
		t.Run(sc.name, func(t *testing.T) {
			native := runNative(t, prog, sc)
			for _, mech := range mechanisms {
				for _, method := range []datafile.Method{datafile.FuncCounting, datafile.FuncCoverage} {
					checkFault(t, prog, sc, native, mech.name, mech.breakpoints, method)
				}
			}
			// Function timing stops at every entry and exit, in-process
			// or not (this version).
			checkFault(t, prog, sc, native, "timing", true, datafile.FuncTiming)
		})
	}
}

// checkFault runs scenario sc under PROFILE and compares it with its
// native run.
func checkFault(t *testing.T, prog string, sc fault, native outcome, mech string, breakpoints bool, method datafile.Method) {
	t.Helper()
	got, res, warnings := runFault(t, prog, sc, method, breakpoints)
	breakpoints = breakpoints || !testutil.InProcess()
	if sc.breakpoints != "" && breakpoints {
		// A documented limit of breakpoints: PROFILE says so.
		if !slices.Contains(warnings, sc.warns) {
			t.Errorf("%s %v: warnings %v, want PRF%d (%s)", mech, method, warnings, sc.warns, sc.breakpoints)
		}
		t.Logf("%s %v: natively %+v, under PROFILE %+v: %s", mech, method, native, got, sc.breakpoints)
		return
	}
	if got != native {
		t.Errorf("%s %v: under PROFILE %+v, natively %+v", mech, method, got, native)
	}
	for i, fn := range []string{"f", "g"} {
		want := sc.hits[fn]
		if method.IsCoverage() && breakpoints && want > 1 {
			want = 1
		}
		if sc.hits != nil && res.Counts.Stats.Hits[i] != want {
			t.Errorf("%s %v: %s hit %d times, want %d", mech, method, fn, res.Counts.Stats.Hits[i], want)
		}
	}
	if run := res.Counts.Run; run.Incomplete != sc.incomplete {
		t.Errorf("%s %v: run incomplete %v (%s), want %v", mech, method, run.Incomplete, run.Reason, sc.incomplete)
	}
}

// runNative runs a scenario without PROFILE.
func runNative(t *testing.T, prog string, sc fault) outcome {
	t.Helper()
	cmd := exec.Command(prog, sc.args...)
	var out strings.Builder
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if sc.drive != nil {
		if pid, wait := readyPID(t, pipe, &out); pid > 0 {
			sc.drive(t, pid, func(sig syscall.Signal) { syscall.Kill(pid, sig) })
			wait()
		}
	} else {
		io.Copy(&out, pipe)
	}
	err = cmd.Wait()
	status := "exit 0"
	if ee, ok := err.(*exec.ExitError); ok {
		status = ee.ProcessState.String()
	}
	return outcome{out.String(), status}
}

// runFault runs a scenario under PROFILE, signals to PROFILE going through
// Config.Signals as cmd/profile passes them, and returns what the program
// did, the run, and the numbers of PROFILE's warnings.
func runFault(t *testing.T, prog string, sc fault, method datafile.Method, breakpoints bool) (outcome, *Result, []int) {
	t.Helper()
	plan := planFor(t, prog, method, "f", "g")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	sigs := make(chan os.Signal, 1)
	type done struct {
		res *Result
		err error
	}
	ch := make(chan done, 1)
	var warnings []int
	go func() {
		res, err := Run(Config{Plan: plan, Path: prog, Args: append([]string{"faults"}, sc.args...), Env: os.Environ(),
			Stdout: w, Stderr: os.Stderr, Signals: sigs, Warn: func(d *prf.Diagnostic) { warnings = append(warnings, d.Code) },
			Breakpoints: breakpoints})
		w.Close()
		ch <- done{res, err}
	}()
	var out strings.Builder
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		if sc.drive != nil {
			if pid, wait := readyPID(t, r, &out); pid > 0 {
				sc.drive(t, pid, func(sig syscall.Signal) { sigs <- sig })
				wait()
			}
		} else {
			io.Copy(&out, r)
		}
	}()
	var d done
	select {
	case d = <-ch:
	case <-time.After(2 * time.Minute):
		t.Fatalf("%v: the run did not end\n%s\n%s", method, testutil.ProcessTree(os.Getpid()), goroutines())
	}
	// The output ends when every process that holds it is gone: a child
	// left stopped on a breakpoint would hold it for ever.
	select {
	case <-copied:
	case <-time.After(30 * time.Second):
		t.Fatalf("%v: the program's output did not end 30 s after the run\n%s", method, testutil.ProcessTree(os.Getpid()))
	}
	r.Close()
	if d.err != nil {
		t.Fatalf("%v: %v", method, d.err)
	}
	status := "exit 0"
	switch {
	case !d.res.Exited:
		status = "signal: " + signalText(d.res.Signal)
	case d.res.ExitCode != 0:
		status = "exit status " + strconv.Itoa(d.res.ExitCode)
	}
	return outcome{out.String(), status}, d.res, warnings
}

// signalText names a signal as os.ProcessState does ("signal: interrupt").
func signalText(sig syscall.Signal) string { return sig.String() }

// goroutines is every goroutine's stack, for a run that hung: the
// tracer's shows which event it waits for.
func goroutines() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}
