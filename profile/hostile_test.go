package profile

import (
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/internal/testutil"
)

// The hostile suite: testdata/progs/c/hostile.c does what a tracer cannot
// stop a program doing (docs/linux.md, "What PROFILE cannot see"), and
// PROFILE must say so, with the warning of each case, rather than be
// silent.

// native runs prog with args without PROFILE and returns its output.
func native(t *testing.T, prog string, args ...string) string {
	t.Helper()
	out, err := exec.Command(prog, args...).Output()
	if err != nil {
		t.Fatalf("%s %v natively: %v", prog, args, err)
	}
	return string(out)
}

// TestCodeChanged: a program that writes a new constant into its own
// function (made writable, written, protected again) runs the constant
// PROFILE moved into a trampoline or a breakpoint's slot, or breaks the
// jump PROFILE wrote: it dies or prints the old value. PROFILE compares
// its patches with the program's code when the program ends, and says
// what changed (PRF4667).
func TestCodeChanged(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "hostile")
	if got := native(t, prog, "patch"); got != "value 1\nvalue 2\n" {
		t.Fatalf("natively %q", got)
	}
	plans := map[string]*datafile.Plan{
		"function counting": planFor(t, prog, datafile.FuncCounting, "value", "main"),
		"line counting":     linePlan(t, prog, datafile.LineCounting, "value"),
	}
	for name, plan := range plans {
		t.Run(name, func(t *testing.T) {
			r := runWith(t, plan, prog, false, "patch")
			if r.stdout == "value 1\nvalue 2\n" {
				// Where nothing ran from a moved copy, nothing is wrong.
				t.Logf("the program ran as natively: %q", r.stdout)
			}
			if !slices.Contains(r.codes, 4667) {
				t.Errorf("output %q, warnings %v: want PRF4667 (the program changed its own code)", r.stdout, r.codes)
			}
		})
	}
}

// TestCodeWritable: a program that makes its code writable, where
// PROFILE patched it, and leaves it so, is warned about (PRF4668): it may
// write it.
func TestCodeWritable(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "hostile")
	plan := planFor(t, prog, datafile.FuncCounting, "value", "main")
	r := runWith(t, plan, prog, false, "writable")
	if r.stdout != "value 1\nvalue 1\n" || r.hits["value"] != 2 {
		t.Errorf("output %q, value %d times: want value 1 twice", r.stdout, r.hits["value"])
	}
	if !slices.Contains(r.codes, 4668) || slices.Contains(r.codes, 4667) {
		t.Errorf("warnings %v: want PRF4668 (code made writable), not PRF4667 (nothing changed)", r.codes)
	}
}

// TestCodeCopied: a program that copies a function PROFILE patched and
// runs the copy runs PROFILE's jump or breakpoint where it does not work:
// it dies, and PROFILE says why (PRF4669), with a jump (in-process) and a
// breakpoint.
func TestCodeCopied(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "hostile")
	if got := native(t, prog, "copy"); got != "copy 1\n" {
		t.Fatalf("natively %q", got)
	}
	for _, mech := range mechanisms {
		t.Run(mech.name, func(t *testing.T) {
			if !mech.breakpoints && !testutil.InProcess() {
				t.Skip("no in-process counting on this CPU")
			}
			plan := planFor(t, prog, datafile.FuncCounting, "value", "main")
			r := runWith(t, plan, prog, mech.breakpoints, "copy")
			if !slices.Contains(r.codes, 4669) {
				t.Errorf("output %q, exited %v, warnings %v: want PRF4669 (a copy of patched code ran)",
					r.stdout, r.res.Exited, r.codes)
			}
		})
	}
}

// TestThreadBase: on x86-64, a program that sets its own GS base has the
// trampolines count into its own memory; PROFILE says so (PRF4666), and
// --breakpoints, which the warning advises, counts every call.
func TestThreadBase(t *testing.T) {
	testutil.MustHavePtrace(t)
	if runtime.GOARCH != "amd64" {
		t.Skip("GS is x86-64's")
	}
	prog := testutil.BuildC(t, "hostile")
	if got := native(t, prog, "gsbase"); got != "f 1000 buffer clean\n" {
		t.Fatalf("natively %q", got)
	}
	plan := planFor(t, prog, datafile.FuncCounting, "f", "main")
	r := runWith(t, plan, prog, false, "gsbase")
	if !slices.Contains(r.codes, 4666) {
		t.Errorf("output %q, f %d times, warnings %v: want PRF4666 (the program set its own GS base)", r.stdout, r.hits["f"], r.codes)
	}
	r = runWith(t, plan, prog, true, "gsbase")
	if r.stdout != "f 1000 buffer clean\n" || r.hits["f"] != 1000 || slices.Contains(r.codes, 4666) {
		t.Errorf("--breakpoints: output %q, f %d times, warnings %v: want the native output, 1000 and no PRF4666", r.stdout, r.hits["f"], r.codes)
	}
}

// TestUntracedChild: a child made with clone(CLONE_UNTRACED) is never
// reported to PROFILE; it runs with the patches of the memory it copied
// (in-process, its calls add to the program's counts; with breakpoints, it
// dies of SIGTRAP at the first). PROFILE sees its SIGCHLD and says so
// (PRF4670), naming the signal that killed it.
func TestUntracedChild(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "hostile")
	if got := native(t, prog, "untraced"); got != "child 0\n" {
		t.Fatalf("natively %q", got)
	}
	for _, mech := range mechanisms {
		t.Run(mech.name, func(t *testing.T) {
			plan := planFor(t, prog, datafile.FuncCounting, "f", "main")
			r := runWith(t, plan, prog, mech.breakpoints, "untraced")
			if !slices.Contains(r.codes, 4670) {
				t.Errorf("output %q, f %d times, warnings %v: want PRF4670 (a child out of PROFILE's sight)", r.stdout, r.hits["f"], r.codes)
			}
			if r.hits["f"] < 100 {
				t.Errorf("f %d times, want at least the program's 100", r.hits["f"])
			}
		})
	}
}

// TestOwnSIGCHLD: a SIGCHLD that no child's end sent (the program's own
// kill or raise, or PROFILE's tgkill of a signal it held back) is no
// sign of a child out of PROFILE's sight: its sender is no child. (Told
// PRF4670 of the program itself, and of PROFILE, in TestAttachBusy.)
func TestOwnSIGCHLD(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "hostile")
	if got := native(t, prog, "sigchld"); got != "sigchld 3 child 0\n" {
		t.Fatalf("natively %q", got)
	}
	for _, mech := range mechanisms {
		t.Run(mech.name, func(t *testing.T) {
			plan := planFor(t, prog, datafile.FuncCounting, "f", "main")
			r := runWith(t, plan, prog, mech.breakpoints, "sigchld")
			if !strings.HasSuffix(r.stdout, " child 0\n") || slices.Contains(r.codes, 4670) {
				t.Errorf("output %q, warnings %v: want the child's 0, and no PRF4670", r.stdout, r.codes)
			}
		})
	}
}

// TestSignalStops: a program whose signals' stops take a good part of
// its run is told what they cost it (PRF4671); each is still delivered.
func TestSignalStops(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "hostile")
	plan := planFor(t, prog, datafile.FuncCounting, "f", "main")
	n := "5000"
	if testutil.Slow() {
		n = "1200" // (PRF4671 is said of 1,000 signals or more)
	}
	r := runWith(t, plan, prog, false, "signals", n)
	if r.stdout != "signals "+n+"\n" {
		t.Errorf("output %q, want every signal caught", r.stdout)
	}
	if !slices.Contains(r.codes, 4671) {
		t.Errorf("warnings %v: want PRF4671 (the signals' cost)", r.codes)
	}
}

// TestSignalCostCountsHolds: the signals' share of a run counts what
// PROFILE held the threads at their stops, as well as the least time a
// stop took: a run on a machine busy with other work, longer, has its
// holds longer too. 1,200 signals whose fastest stop took 50 µs, held 2
// ms each, in a run of 4 s (the arm64 VM's, busy) is 62 % of the run; the
// fastest stop alone said 1.5 %, and nothing.
func TestSignalCostCountsHolds(t *testing.T) {
	var said []*prf.Diagnostic
	tr := &tracer{cfg: Config{Warn: func(d *prf.Diagnostic) { said = append(said, d) }}}
	tr.parts.watch.signals, tr.parts.watch.stop, tr.parts.watch.held = 1200, 50_000, 1200*2_000_000
	tr.parts.watch.signalCost(4*time.Second, tr.cfg.Warn)
	if len(said) != 1 || said[0].Code != 4671 || !strings.Contains(said[0].Error(), "about 2050 µs), some 62% of the run") {
		t.Errorf("said %v, want PRF4671 of 2,050 µs a stop, 62%% of the run", said)
	}
	said = nil
	tr.parts.watch.held = 0
	tr.parts.watch.signalCost(4*time.Second, tr.cfg.Warn)
	if len(said) != 0 {
		t.Errorf("said %v of stops of 50 µs, 1.5%% of the run", said)
	}
}

// TestSharedWrittenOver: a program that writes over the memory it shares
// with PROFILE, as a wild write would (scribble.c: an array of indices
// over the start and the end of /memfd:sprof-counters), between two runs
// of calls. Timed in-process, its ring then looks full for ever: each
// record was a stop, with no end and no word. PROFILE must end, say what
// it found (PRF4690), and count what came after: the ring is taken back
// from where the thread writes, and f's 2N calls are all there. Counted
// in-process, the counters written over are wrong, and PROFILE says so
// (its guard at the end of the memory was written over too).
func TestSharedWrittenOver(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "scribble")
	const n = 1000
	if got := native(t, prog); got != "filled 0\ndone\n" {
		t.Fatalf("natively %q", got)
	}
	for _, c := range []struct {
		name   string
		method datafile.Method
	}{{"timing", datafile.FuncTiming}, {"counting", datafile.FuncCounting}} {
		t.Run(c.name, func(t *testing.T) {
			plan := planFor(t, prog, c.method, "f", "main")
			done := make(chan runOut, 1)
			go func() { done <- runWith(t, plan, prog, false) }()
			var r runOut
			select {
			case r = <-done:
			case <-time.After(2 * time.Minute):
				t.Fatal("PROFILE did not end (its ring full for ever?)")
			}
			if r.stdout == "filled 0\ndone\n" && slices.Contains(r.codes, 4648) {
				t.Skip("nothing counted in-process (PRF4648): no memory shared to write over")
			}
			if !r.res.Exited || r.res.ExitCode != 0 || r.stdout != "filled 1\ndone\n" {
				t.Errorf("exited %v status %d output %q, want 0 and filled 1", r.res.Exited, r.res.ExitCode, r.stdout)
			}
			if !slices.Contains(r.codes, 4690) {
				t.Errorf("warnings %v: want PRF4690 (the shared memory written over)", r.codes)
			}
			// The calls before the write were read before it. On x86-64
			// the write leaves a head behind the tail, full at the next
			// record, which stops the thread: the ring is taken back
			// before any record after it, and every call is booked; on
			// arm64 it leaves a head that is a slot, and what the thread
			// wrote from there is dropped when PROFILE finds the ring
			// written over (at the end, if nothing stops the thread).
			f, want := r.hits["f"], uint64(2*n)
			if runtime.GOARCH != "amd64" && f >= n && f <= 2*n {
				want = f
			}
			if c.method == datafile.FuncTiming && (f != want || r.hits["main"] != 1) {
				t.Errorf("f %d, main %d times; want %d and 1", f, r.hits["main"], want)
			}
		})
	}
}
