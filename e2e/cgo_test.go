package e2e

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/internal/testutil"
)

// TestCgoTiming: gocgo's Go calls C, which calls Go back, which calls C
// (main.run, c_outer, main.goCallback, main.goWork, c_leaf, c_work; cgo's
// wrappers between them), with /FT /AT, in-process and with breakpoints.
// The books nest the C calls a goroutine makes in its Go frames and its
// callbacks in those C frames, so that each chain adds up: the counts
// and the call depth (10, the wrappers counted) are known, each measured
// function's times lie where the program's own measure of the same run
// puts them (testutil.Own.Check), and the wrappers, which only call, have
// between them no more function time than the gaps of the measured calls
// below main.run (its desc), where they run, and 2 ms. A C caller of Go
// showed the Go call as its own time, and a Go caller of C the C call: cgo's
// three wrappers held a third of the run each.
func TestCgoTiming(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildCgo(t, "gocgo")
	// Go's scheduler takes a goroutine in a callback of a long cgo call
	// for one that has run 10 ms without a break, and interrupts it
	// (SIGURG) in the middle of the measured calls: a stop there is
	// PROFILE's, taken out of its times and not of the program's
	// measure, which holds each addition of PROFILE's in the gaps of
	// the calls. (PROFILE runs with it too: it changes nothing there.)
	t.Setenv("GODEBUG", "asyncpreemptoff=1")
	n, unit := 10, 1000 // calls, µs
	if testutil.Slow() {
		n, unit = 4, 10000
	}
	measured := []string{"main.run", "c_outer", "main.goCallback", "main.goWork", "c_leaf", "c_work"}
	for _, m := range []struct {
		name string
		opts []string
	}{{"inprocess", nil}, {"breakpoints", []string{"--breakpoints"}}} {
		t.Run(m.name, func(t *testing.T) {
			dir, r := workflowWith(t, prog, []string{"/FT", "/AT"}, m.opts, strconv.Itoa(n), strconv.Itoa(unit))
			if r.status != 0 || !strings.Contains(r.stdout, "gocgo done") {
				t.Fatalf("profile: status %d, output %q\n%s", r.status, r.stdout, r.stderr)
			}
			out := must(t, dir, "plist", "/nologo", "/T", "gocgo").stdout
			hits, self, all := goTimes(t, out)
			want := map[string]uint64{"main.run": 1, "c_outer": 1, "goCallback": uint64(n), "main.goCallback": uint64(n),
				"main.goWork": uint64(n), "c_leaf": uint64(n), "c_work": 2 * uint64(n)}
			for name, w := range want {
				if hits[name] != w {
					t.Errorf("%s: %d hits, want %d", name, hits[name], w)
				}
			}
			if depth := parseTab(t, out).depth; depth != 10 {
				t.Errorf("call depth %d, want 10", depth)
			}
			own := testutil.ParseOwn(t, r.stdout)
			// Where Go's functions keep breakpoints and C's are timed
			// in-process (arm64: a cgo program's thread pointer is its C
			// library's), a C call made right after a Go function's
			// stop begins on the goroutine's clock half a stop's
			// calibrated cost late (the unseen return from the trap,
			// which a record, unlike a stop, does not share): under
			// emulation, where the calibration is far off, 10 % of
			// c_work's time. The C functions' times are not held to the
			// program's measure there.
			mixed := m.opts == nil && strings.Contains(r.stderr, "thread pointer")
			for _, name := range measured {
				if mixed && !strings.HasPrefix(name, "main.") {
					continue
				}
				own.Check(t, name, self[name], all[name])
			}
			var wrappers int64
			var names []string
			for name, s := range self {
				if !slices.Contains(measured, name) && name != "main.main" && name != "main.init" && name != "threadentry" {
					wrappers += s
					names = append(names, name)
				}
			}
			slices.Sort(names)
			limit := own["main.run"]["desc"] + 2e6
			t.Logf("the wrappers' function time %.3f ms, the gaps below main.run %.3f ms: %v", float64(wrappers)/1e6,
				float64(own["main.run"]["desc"])/1e6, names)
			if wrappers > limit {
				for _, name := range names {
					t.Logf("%s: function time %.3f ms, with children %.3f ms", name, float64(self[name])/1e6, float64(all[name])/1e6)
				}
				t.Errorf("cgo's wrappers have %.3f ms of function time, want at most %.3f ms: a call on the other side of cgo is not their child",
					float64(wrappers)/1e6, float64(limit)/1e6)
			}
		})
	}
}
