//go:build linux && (amd64 || arm64)

package ptrace

import (
	"testing"
	"time"

	"github.com/sourceprofiler/sprof/internal/testutil"
)

// TestCounter checks that the counter moves forward with the clock, at a
// rate between 1 MHz and 10 GHz (arm64's generic timer runs at tens of
// MHz, an x86 TSC at the CPU's nominal GHz).
func TestCounter(t *testing.T) {
	c0, t0 := Counter(), time.Now()
	time.Sleep(20 * time.Millisecond)
	c1, t1 := Counter(), time.Now()
	if c1 <= c0 {
		t.Fatalf("counter went from %d to %d", c0, c1)
	}
	hz := float64(c1-c0) / t1.Sub(t0).Seconds()
	if hz < 1e6 || hz > 1e10 {
		t.Errorf("counter at %.0f Hz", hz)
	}
	t.Logf("counter at %.3f MHz", hz/1e6)
}

// TestCounterWarp checks the counters of this machine's CPUs against the
// first's: it takes turns between two CPUs (on a machine of one, none),
// and where the kernel took the TSC as its clock, having checked that the
// CPUs' counters agree, or on arm64, whose system counter is one for
// every CPU by the architecture, it finds them agree too.
func TestCounterWarp(t *testing.T) {
	w, err := CounterWarp(20000, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d CPUs, %d turns between two at the fewest, the counter %d counts back at the most", w.CPUs, w.Turns, w.Back)
	if w.CPUs > 1 && w.Turns == 0 {
		t.Errorf("no turn taken between two CPUs of %d", w.CPUs)
	}
	if testutil.CounterOneClock() && w.Back != 0 {
		t.Errorf("the counter went %d counts back from one CPU to another", w.Back)
	}
}

// TestCounterWarpFound: a counter 1,000,000 counts behind on the second
// CPU is a warp, seen at each turn from the first: back by 1,000,000
// less what the counter moved between the two readings. The largest is
// at the shortest such turn, no longer than the turns from the first to
// the second take on average: at least half the turns less one are of
// them, within the counts the whole check took.
func TestCounterWarpFound(t *testing.T) {
	cpus, err := allowedCPUs()
	if err != nil || len(cpus) < 2 {
		t.Skipf("one CPU to run on (%v)", err)
	}
	const behind, turns = 1000000, 1000
	start := Counter()
	w, err := warpPair(cpus[0], cpus[1], turns, time.Second, func(cpu int) uint64 {
		if cpu == cpus[1] {
			return Counter() - behind
		}
		return Counter()
	})
	took := Counter() - start
	if err != nil {
		t.Fatal(err)
	}
	slack := 2 * took / (turns - 1)
	if w.turns < turns || w.back > behind || w.back+slack < behind {
		t.Errorf("%d turns, back %d counts; want %d turns, and back by %d less up to %d (the check took %d counts)", w.turns, w.back, turns, behind, slack, took)
	}
	t.Logf("%d turns, back %d counts, in %d counts", w.turns, w.back, took)
}

// BenchmarkCounterWarp times the check PROFILE makes of the CPUs'
// counters where the kernel did not take the TSC as its clock: 20,000
// turns between the first CPU and each other.
func BenchmarkCounterWarp(b *testing.B) {
	for b.Loop() {
		if _, err := CounterWarp(20000, 200*time.Millisecond); err != nil {
			b.Fatal(err)
		}
	}
}
