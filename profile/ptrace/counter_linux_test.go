//go:build linux && (amd64 || arm64)

package ptrace

import (
	"testing"
	"time"
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
