package testutil

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// Own is what a timing fixture measured of its own calls in the run a
// test checks, by function and figure: the lines
//
//	own NAME key value ...
//
// it prints at exit (testdata/progs/c/timing.c, "The program's own
// measure", and testdata/progs/go/gotiming). A function's line has
// calls, in (the time inside its calls: from their first statement to
// their last), out (the time of its calls where they were made), kin and
// kout (the in and out of the measured calls it made) and desc (the gaps,
// out less in, of every measured call below it), in nanoseconds of the
// monotonic clock, the one PROFILE's times are on.
//
// Timing tests take their truth from there: a machine's load, which
// lengthens the calls, lengthens both sides alike.
type Own map[string]map[string]int64

// ParseOwn reads the "own" lines of a fixture's output.
func ParseOwn(t testing.TB, out string) Own {
	t.Helper()
	o := Own{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "own" {
			continue
		}
		if len(f)%2 != 0 {
			t.Fatalf("fixture's line %q: want pairs of keys and values", line)
		}
		m := map[string]int64{}
		for i := 2; i < len(f); i += 2 {
			v, err := strconv.ParseInt(f[i+1], 10, 64)
			if err != nil {
				t.Fatalf("fixture's line %q: %v", line, err)
			}
			m[f[i]] = v
		}
		o[f[1]] = m
	}
	return o
}

// Check holds PROFILE's function time (self) and function+child time
// (all) of the function name to where the program's own measure of the
// same run puts them. Whatever PROFILE adds to a call, a record or a stop,
// lies in the call's gap, before in begins or after it ends, within out;
// and a stopped thread's time is taken out of PROFILE's. So:
//
//   - function+child time lies between in less desc (every stop below
//     the function taken out) and out;
//   - function time lies between in less kout and out less kin.
//
// PROFILE's estimate of what a record or a stop costs the program is an
// error within those gaps: each bound is widened by the gaps of the calls
// it involves (the function's own, out less in, and its children's, kout
// less kin, or everything below it, desc), and by 0.2 % and 2 µs for the
// two clocks' readings and the reports' rounding. On a machine doing
// nothing else, in-process, a gap is some 100 ns a call; with breakpoints,
// or beside other work, it is what the stops and the waits for a CPU took.
func (o Own) Check(t testing.TB, name string, self, all int64) {
	t.Helper()
	m, ok := o[name]
	if !ok || m["calls"] == 0 {
		t.Errorf("the program measured no call of %s", name)
		return
	}
	in, out, kin, kout, desc := m["in"], m["out"], m["kin"], m["kout"], m["desc"]
	// (0.2 % of what is measured, and 2 µs.)
	eps := func(v int64) int64 { return max(v, 0)/500 + 2000 }
	gap := out - in
	for _, c := range []struct {
		what           string
		got, low, high int64
		lowIs, highIs  string
	}{
		{"function+child time", all, in - desc - (gap + desc) - eps(out), out + gap + desc + eps(out), "in less desc", "out"},
		{"function time", self, in - kout - (gap + kout - kin) - eps(out-kin), out - kin + (gap + kout - kin) + eps(out-kin),
			"in less kout", "out less kin"},
	} {
		if c.got < c.low || c.got > c.high {
			t.Errorf("%s's %s is %v, want between %v (%s) and %v (%s), the gaps allowed; the program measured %v",
				name, c.what, time.Duration(c.got), time.Duration(c.low), c.lowIs, time.Duration(c.high), c.highIs, m)
		}
	}
	t.Logf("%s: function+child %v, function %v; the program: in %v, out %v, kin %v, kout %v, desc %v, %d calls", name,
		time.Duration(all), time.Duration(self), time.Duration(in), time.Duration(out),
		time.Duration(kin), time.Duration(kout), time.Duration(desc), m["calls"])
}
