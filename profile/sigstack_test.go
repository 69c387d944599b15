package profile

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/testutil"
)

// TestTimingAlternateStack: a thread's outer() calls spin() 80 times while
// a timer's handler, on an alternate signal stack above or below the
// thread's stack, calls tick() every millisecond. outer's function+child
// time holds every call of spin() it made: at least spin's, by
// construction (it once had 1 ms against spin's 76, the alternate stack
// above: tick's entry closed every frame below its stack pointer). tick's
// calls nest in the frames they interrupt (depth 3: outer, spin, tick),
// in-process and with breakpoints. (On arm64 in-process, records made on
// a stack no thread owns are dropped: tick is not counted there.)
func TestTimingAlternateStack(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "sigstack", "-O2", "-pthread")
	// 80 calls of spin() of 1 ms, a tick every millisecond. Under the
	// arm64 VM's emulation, where a stop (each signal is one) costs one
	// or two milliseconds, 40 calls of 5 ms and a tick every 10.
	spins, unit, period := 80, 1000, 1000
	if testutil.Slow() {
		spins, unit, period = 40, 5000, 10000
	}
	for _, place := range []string{"above", "below"} {
		for _, mech := range mechanisms {
			t.Run(place+"/"+mech.name, func(t *testing.T) {
				plan := planFor(t, prog, datafile.FuncTiming, "outer", "spin", "tick")
				got := runWith(t, plan, prog, mech.breakpoints, place, strconv.Itoa(spins), strconv.Itoa(unit), strconv.Itoa(period))
				if !got.res.Exited || got.res.ExitCode != 0 {
					t.Fatalf("exited %v, status %d, output %q", got.res.Exited, got.res.ExitCode, got.stdout)
				}
				var ticks uint64
				if _, err := fmt.Sscanf(got.stdout, "sigstack "+place+" ticks %d", &ticks); err != nil || ticks == 0 {
					t.Fatalf("output %q (%v): want some ticks", got.stdout, err)
				}
				s := got.res.Counts.Stats
				all := map[string]int64{}
				for i, f := range plan.Funcs {
					all[f.Name] = s.ChildTime[i]
				}
				t.Logf("%d ticks; function+child times: outer %v, spin %v, tick %v; depth %d; cost taken out %d ns an event, uncertain by %d ns a call", ticks,
					time.Duration(all["outer"]), time.Duration(all["spin"]), time.Duration(all["tick"]), s.CallDepth, got.res.Counts.Overhead, s.CostUncertainty)
				dropped := runtime.GOARCH == "arm64" && !mech.breakpoints
				wantTicks, wantDepth := ticks, 3
				if dropped {
					wantTicks, wantDepth = 0, 2
				}
				checkHits(t, got.hits, map[string]uint64{"outer": 1, "spin": uint64(spins), "tick": wantTicks})
				if all["spin"] <= 0 || all["outer"] < all["spin"] {
					t.Errorf("outer's function+child time %v, spin's %v: want outer's at least spin's",
						time.Duration(all["outer"]), time.Duration(all["spin"]))
				}
				if s.CallDepth != wantDepth {
					t.Errorf("call depth %d, want %d (tick nested in spin, in outer)", s.CallDepth, wantDepth)
				}
			})
		}
	}
}

// TestCountingAlternateStack: counting, tick()'s calls on the alternate
// signal stack count as many as the handler ran, in-process and with
// breakpoints: on arm64 without LSE, where each thread counts in the
// area its stack pointer finds, they count in area 0, a stack no thread
// owns, which counts too.
func TestCountingAlternateStack(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "sigstack", "-O2", "-pthread")
	spins, unit, period := 40, 500, 200
	if testutil.Slow() {
		spins, unit, period = 20, 5000, 10000
	}
	for _, place := range []string{"above", "below"} {
		for _, mech := range mechanisms {
			t.Run(place+"/"+mech.name, func(t *testing.T) {
				plan := planFor(t, prog, datafile.FuncCounting, "outer", "spin", "tick")
				got := runWith(t, plan, prog, mech.breakpoints, place, strconv.Itoa(spins), strconv.Itoa(unit), strconv.Itoa(period))
				var ticks uint64
				if _, err := fmt.Sscanf(got.stdout, "sigstack "+place+" ticks %d", &ticks); err != nil || ticks == 0 || !got.res.Exited || got.res.ExitCode != 0 {
					t.Fatalf("output %q (%v), exited %v, status %d: want some ticks", got.stdout, err, got.res.Exited, got.res.ExitCode)
				}
				checkHits(t, got.hits, map[string]uint64{"outer": 1, "spin": uint64(spins), "tick": ticks})
			})
		}
	}
}
