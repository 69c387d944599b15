package profile

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/internal/testutil"
	"github.com/sourceprofiler/sprof/profile/books"
)

// cpuTracer is a tracer of plan over the fake process fp, its parts
// those of a run that keeps books, as choose wires them.
func cpuTracer(plan *datafile.Plan, fp *fakeProcess) *tracer {
	tr := &tracer{plan: plan, proc: fp, pid: fakePID, cfg: Config{Warn: func(*prf.Diagnostic) {}},
		threads: map[int]*thread{}, clocks: clocks{epoch: time.Now(), stolen: map[books.Key]int64{}, carried: map[int]uint64{}}}
	tr.parts.bp = newBreakpoints(tr)
	tr.parts.books = testBooks(-1, "", false, 0)
	tr.choose()
	return tr
}

// TestClocksCPUTime: function timing adds up the program's threads'
// times on a CPU, each as the kernel tells it (the fake process's
// schedstat) when its clock opened and again at its exit stop, or at the
// end of the run for one still there: a thread whose schedstat says 3 ms
// more at its exit stop than at its start adds 3 ms, and the main
// thread, still there at the end, 5 ms more, its 5. A thread gone
// without an exit stop (killed: its ID may be another's by then), one
// whose time could not be read as its clock opened, and a foreign
// process (a vfork child) are left out. A run that times no function
// reads nothing.
func TestClocksCPUTime(t *testing.T) {
	const (
		mainTID = fakePID
		side    = fakePID + 1
		killed  = fakePID + 2
		unread  = fakePID + 3
		foreign = fakePID + 4
		ms      = int64(time.Millisecond)
	)
	fp := newFakeProcess(instr.AMD64, &fakeMem{})
	tr := cpuTracer(&datafile.Plan{Method: datafile.FuncTiming}, fp)
	if p := tr.parts; len(p.exiting) != 1 {
		t.Fatalf("function timing: the exit stop's hooks are %v, want the books' clocks'", p.exiting)
	}
	start := map[int]int64{mainTID: 40 * ms, side: 2 * ms, killed: 1 * ms, foreign: 9 * ms}
	for _, tid := range []int{mainTID, side, killed, unread, foreign} {
		th := &thread{tid: tid, tgid: mainTID, foreign: tid == foreign}
		tr.threads[tid] = th
		if ns, ok := start[tid]; ok {
			fp.cpu[tid] = ns
		}
		tr.clocks.openThreadBooks(th, tr.parts.books)
	}
	fp.cpu[unread] = 60 * ms
	// side's exit stop, then its end: gone, no longer in /proc.
	fp.cpu[side] += 3 * ms
	if err := tr.threadExit(tr.threads[side]); err != nil {
		t.Fatal(err)
	}
	delete(fp.cpu, side)
	tr.threadGone(side)
	// killed ends without an exit stop; its ID read again would be
	// another thread's.
	fp.cpu[killed] += 100 * ms
	tr.threadGone(killed)
	fp.cpu[foreign] += 100 * ms
	fp.cpu[mainTID] += 5 * ms
	var s datafile.Stats
	tr.parts.addStats(&s)
	if want := 3*ms + 5*ms; s.CPUTime != want {
		t.Errorf("CPU time %v, want %v (3 ms of the thread that ended, 5 of main)", time.Duration(s.CPUTime), time.Duration(want))
	}

	// Counting with the books (a start function): nothing read.
	fp = newFakeProcess(instr.AMD64, &fakeMem{})
	tr = cpuTracer(&datafile.Plan{Method: datafile.FuncCounting, StartFunc: "main"}, fp)
	fp.cpu[mainTID] = 40 * ms
	th := &thread{tid: mainTID, tgid: mainTID}
	tr.threads[mainTID] = th
	tr.clocks.openThreadBooks(th, tr.parts.books)
	fp.cpu[mainTID] += 5 * ms
	s = datafile.Stats{}
	tr.parts.addStats(&s)
	if s.CPUTime != 0 || tr.clocks.lives.cpu.from != nil {
		t.Errorf("function counting: CPU time %d, threads read %v; want none", s.CPUTime, tr.clocks.lives.cpu.from)
	}
}

// TestTimingCPUTime: a function timing run of waits.c, whose work()
// sleeps five times 200 ms and then runs on a CPU for 50 ms of its
// thread's own CPU clock, in one thread and in two side by side, in-
// process and with breakpoints. The run's CPU time lies between the
// program's own since main's start and its own in all, as it measured
// them in the same run (CLOCK_PROCESS_CPUTIME_ID), within 20 % and 20 ms
// (PROFILE's counts from when it opens the main thread's clock, after
// what it ran in the program before, the calibration of its code
// included, which the program's whole counts: some 50 ms under the arm64
// VM's emulation; and its stops' own cost in the kernel), and below half
// the total time, which the naps, a second a thread, make elapsed by
// construction: the report's line that the threads mostly waited.
func TestTimingCPUTime(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "waits", "-O2", "-pthread")
	naps, napMS, spinMS := 5, 200, 50
	for _, threads := range []int{1, 2} {
		for _, mech := range mechanisms {
			t.Run(fmt.Sprintf("%d/%s", threads, mech.name), func(t *testing.T) {
				plan := planFor(t, prog, datafile.FuncTiming, "main", "work", "nap", "spin")
				got := runTimedWith(t, plan, prog, mech.breakpoints, strconv.Itoa(threads), strconv.Itoa(naps), strconv.Itoa(napMS), strconv.Itoa(spinMS))
				var own, sinceMain, elapsed int64
				if _, err := fmt.Sscanf(got.stdout, "waits cpu %d main %d elapsed %d", &own, &sinceMain, &elapsed); err != nil {
					t.Fatalf("output %q: %v", got.stdout, err)
				}
				s := got.stats
				t.Logf("CPU time %v (the program's own %v, %v since main's start), total time %v, elapsed %v", time.Duration(s.CPUTime),
					time.Duration(own), time.Duration(sinceMain), time.Duration(s.TotalTime), time.Duration(elapsed))
				checkHits(t, got.hits, map[string]uint64{"main": 1, "work": uint64(threads), "nap": uint64(threads * naps), "spin": uint64(threads)})
				slack := own/5 + int64(20*time.Millisecond)
				if s.CPUTime < sinceMain-slack || s.CPUTime > own+slack {
					t.Errorf("CPU time %v, the program's own %v, %v since main's start: want it between them, within %v", time.Duration(s.CPUTime),
						time.Duration(own), time.Duration(sinceMain), time.Duration(slack))
				}
				if minCPU := int64(threads*spinMS) * int64(time.Millisecond); s.CPUTime < minCPU {
					t.Errorf("CPU time %v, less than the threads' spins, %v", time.Duration(s.CPUTime), time.Duration(minCPU))
				}
				if s.CPUTime*2 >= s.TotalTime {
					t.Errorf("CPU time %v, total time %v: want it below half (%d naps of %d ms a thread)", time.Duration(s.CPUTime), time.Duration(s.TotalTime), naps, napMS)
				}
			})
		}
	}
}

// TestParseSchedstat: a task's schedstat gives its time on a CPU in its
// first field; anything else (nothing, not a number, below 0) is an
// error, not a time.
func TestParseSchedstat(t *testing.T) {
	if ns, err := parseSchedstat([]byte("123456789 2000 17\n")); err != nil || ns != 123456789 {
		t.Errorf("schedstat 123456789: %d, %v", ns, err)
	}
	for _, bad := range []string{"", " \n", "abc 1 2", "-5 1 2", "99999999999999999999 1 2"} {
		if ns, err := parseSchedstat([]byte(bad)); err == nil {
			t.Errorf("schedstat %q: %d, want an error", bad, ns)
		}
	}
}
