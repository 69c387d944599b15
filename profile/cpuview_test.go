package profile

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/testutil"
)

// TestTimingWaitsPerCall runs waits.c (TestTimingCPUTime's) with the
// books kept in the program, in one thread and in two, and checks the
// time each call spent off a CPU (ledger_waits.go) against what the
// program does by construction: each thread's work calls nap, which
// sleeps NAPS times NAP_MS, then spin, which runs until its thread has
// used SPIN_MS of its CPU clock. On a CPU, nap takes next to nothing and
// spin its SPIN_MS, whatever the machine's load made their elapsed
// times; main's children, its own thread's spin. With breakpoints, which keep no page,
// nothing is measured: the run states no waits.
func TestTimingWaitsPerCall(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "waits", "-O2", "-pthread")
	naps, napMS, spinMS := 3, 100, 50
	for _, threads := range []int{1, 2} {
		for _, mech := range mechanisms {
			t.Run(fmt.Sprintf("%d/%s", threads, mech.name), func(t *testing.T) {
				plan := planFor(t, prog, datafile.FuncTiming, "main", "work", "nap", "spin")
				got := runTimedWith(t, plan, prog, mech.breakpoints, strconv.Itoa(threads), strconv.Itoa(naps), strconv.Itoa(napMS), strconv.Itoa(spinMS))
				w := got.stats.Waits
				if mech.breakpoints {
					if w != nil {
						t.Errorf("waits %+v measured with breakpoints, which keep no clock's page", w)
					}
					return
				}
				if w == nil {
					if perfAllowed() {
						t.Fatal("no waits measured, perf events allowed")
					}
					t.Skip("no task clock: perf_event_paranoid")
				}
				if got.res.ClockStops < uint64(naps*threads) {
					t.Errorf("%d stops for a thread back on its CPU, want one after each of the %d naps at least", got.res.ClockStops, naps*threads)
				}
				cpu := map[string][2]int64{}
				for i, f := range plan.Funcs {
					cpu[f.Name] = [2]int64{got.stats.FuncTime[i] - w.FuncWait[i], got.stats.ChildTime[i] - w.ChildWait[i]}
					t.Logf("%-5s elapsed %v (with children %v), waits %v (%v): on a CPU %v (%v)", f.Name,
						time.Duration(got.stats.FuncTime[i]), time.Duration(got.stats.ChildTime[i]), time.Duration(w.FuncWait[i]),
						time.Duration(w.ChildWait[i]), time.Duration(cpu[f.Name][0]), time.Duration(cpu[f.Name][1]))
				}
				own, err := threadClocks(got.stdout)
				if err != nil {
					t.Fatal(err)
				}
				// (The truth is the threads' own CPU clocks, which count
				// what PROFILE's stops cost them in the kernel, some
				// milliseconds each under a loaded emulation: a function's
				// time lies between its body's and its calls', which add
				// the calls' edges, where the stops are. The slack, the book
				// code's own time: 1 ms a nap; and the time the threads
				// waited for a CPU, ready to run, which PROFILE may charge
				// to a call beside the one it was in (docs/architecture.md,
				// "Time on a CPU per call"): none on a machine running
				// nothing else.)
				slack := int64(threads*naps) * int64(time.Millisecond)
				between := func(what string, got int64, want clockSpan, delay int64) {
					t.Logf("%-18s on a CPU %v, the program's clocks %v inside, %v around; kept waiting %v", what, time.Duration(got),
						time.Duration(want.in), time.Duration(want.out), time.Duration(delay))
					if tol := slack + delay; got < want.in-tol || got > want.out+tol {
						t.Errorf("%s on a CPU %v, want between %v and %v within %v", what, time.Duration(got), time.Duration(want.in),
							time.Duration(want.out), time.Duration(tol))
					}
				}
				all := own["all"].in
				between("spin", cpu["spin"][0], own["spin"], all)
				between("nap", cpu["nap"][0], own["nap"], all)
				between("work with children", cpu["work"][1], own["work"], all)
				// (main's children: its own thread's work, not the other
				// thread's.)
				between("main's children", cpu["main"][1]-cpu["main"][0], own["own"], own["delay"].in)
				if naps := int64(naps*napMS) * int64(time.Millisecond) * int64(threads); w.FuncWait[2] < naps*9/10 {
					t.Errorf("nap waited %v, want the naps' %v at least", time.Duration(w.FuncWait[2]), time.Duration(naps))
				}
				// (The total less every wait: the threads' time on a CPU,
				// as the kernel counted it for the same lives, from each
				// thread's clock's opening to its exit stop. Seen within
				// 4 % beside four spinning processes, 0.2 % mostly in the
				// arm64 emulation.)
				onCPU := got.stats.TotalTime - w.InsideWait - w.OutsideWait
				t.Logf("total %v (outside %v), waits inside %v, outside %v; on a CPU %v; %d clock stops", time.Duration(got.stats.TotalTime),
					time.Duration(got.stats.OutsideTime), time.Duration(w.InsideWait), time.Duration(w.OutsideWait), time.Duration(got.stats.CPUTime), got.res.ClockStops)
				if s := got.stats.CPUTime; onCPU < s-s/10-int64(10*time.Millisecond) || onCPU > s+s/10+int64(10*time.Millisecond) {
					t.Errorf("total less the waits %v, the threads' time on a CPU %v", time.Duration(onCPU), time.Duration(s))
				}
				if w.InsideWait < w.ChildWait[1] || w.InsideWait > got.stats.TotalTime-got.stats.OutsideTime {
					t.Errorf("waits inside the outermost calls %v: want at least work's %v, at most the time inside %v",
						time.Duration(w.InsideWait), time.Duration(w.ChildWait[1]), time.Duration(got.stats.TotalTime-got.stats.OutsideTime))
				}
			})
		}
	}
}

// clockSpan is a function's time on a CPU as the program measured it
// (waits.c): inside its body and around its calls.
type clockSpan struct{ in, out int64 }

// threadClocks reads what waits.c's threads' clocks measured, from its
// output, by function ("own": main's thread's work), and how long the
// threads were kept waiting for a CPU in work ("delay": main's, "all":
// both threads', each as a span of one value).
func threadClocks(out string) (map[string]clockSpan, error) {
	_, rest, _ := strings.Cut(out, " own ")
	f := strings.Fields("own " + rest)
	spans := map[string]clockSpan{}
	for i := 0; i+1 < len(f); i += 2 {
		in, outside, two := strings.Cut(f[i+1], "-")
		if !two {
			outside = in
		}
		a, err1 := strconv.ParseInt(in, 10, 64)
		b, err2 := strconv.ParseInt(outside, 10, 64)
		if err := errors.Join(err1, err2); err != nil || a < 0 || b < a {
			return nil, fmt.Errorf("output %q: %q: %v", out, f[i+1], err)
		}
		spans[f[i]] = clockSpan{a, b}
	}
	if len(spans) != 6 {
		return nil, fmt.Errorf("output %q: want the clocks of 4 calls and 2 waits for a CPU", out)
	}
	return spans, nil
}

// perfAllowed reports whether this process may open a task clock of its
// own threads: perf_event_paranoid below 3, or root.
func perfAllowed() bool {
	b, err := os.ReadFile("/proc/sys/kernel/perf_event_paranoid")
	if err != nil {
		return false
	}
	level, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return os.Geteuid() == 0 || (err == nil && level < 3)
}

// TestTimingWaitsPerStack runs waits.c in one thread with caller stacks
// (/AT): each function's waits are its stacks' (a wait is charged to the
// innermost call's stack as to its function), the naps' in nap's one
// stack, and each stack waited no longer than its time.
func TestTimingWaitsPerStack(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "waits", "-O2", "-pthread")
	naps, napMS := 3, 100
	plan := planFor(t, prog, datafile.FuncTiming, "main", "work", "nap", "spin")
	plan.Attribution = true
	got := runTimedWith(t, plan, prog, false, "1", strconv.Itoa(naps), strconv.Itoa(napMS), "20")
	s := got.stats
	if s.Waits == nil {
		if perfAllowed() {
			t.Fatal("no waits measured, perf events allowed")
		}
		t.Skip("no task clock: perf_event_paranoid")
	}
	byFunc := make([]int64, len(plan.Funcs))
	for _, st := range s.Stacks {
		byFunc[st.Func] += st.Wait
		if st.Wait > st.Time || st.ChildWait > st.ChildTime || st.Wait > st.ChildWait {
			t.Errorf("stack of %s: waits %d (%d with children) for times %d (%d)", plan.Funcs[st.Func].Name, st.Wait, st.ChildWait, st.Time, st.ChildTime)
		}
		if plan.Funcs[st.Func].Name == "nap" && st.Wait < int64(naps*napMS)*int64(time.Millisecond)*9/10 {
			t.Errorf("nap's stack waited %v, want the naps' %v at least", time.Duration(st.Wait), time.Duration(naps*napMS)*time.Millisecond)
		}
	}
	for fn, f := range plan.Funcs {
		if byFunc[fn] != s.Waits.FuncWait[fn] {
			t.Errorf("%s: its stacks waited %v, the function %v", f.Name, time.Duration(byFunc[fn]), time.Duration(s.Waits.FuncWait[fn]))
		}
	}
}

// TestTimingNoCPUTime: with Config.NoCPUTime (profile --no-cpu-time) a
// run that keeps its books in the program opens no clock: it states no
// waits, and its code never stops for a thread back on its CPU, though
// waits.c sleeps ten times.
func TestTimingNoCPUTime(t *testing.T) {
	testutil.MustHavePtrace(t)
	if !testutil.TimesInProcess() {
		t.Skip("timing with breakpoints keeps no clock")
	}
	prog := testutil.BuildC(t, "waits", "-O2", "-pthread")
	plan := planFor(t, prog, datafile.FuncTiming, "main", "work", "nap", "spin")
	out, err := os.CreateTemp(t.TempDir(), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	res, err := Run(Config{Plan: plan, Path: prog, Args: []string{"waits", "1", "10", "2", "5"}, Stdout: out, Stderr: os.Stderr,
		NoCPUTime: true})
	if err != nil {
		t.Fatal(err)
	}
	if w := res.Counts.Stats.Waits; w != nil || res.ClockStops != 0 || !res.Books {
		t.Errorf("waits %+v, %d stops for a thread back on its CPU, books in the program %v: want none, none, yes", w, res.ClockStops, res.Books)
	}
}
