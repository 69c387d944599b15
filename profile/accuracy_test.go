package profile

import (
	"math"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/testutil"
)

// BenchmarkTimingAccuracy: how close function timing comes to the times
// the timing fixture's work takes by construction, and to what its calls
// take natively. These are the strict figures, which hold only on a
// machine running nothing else: bench/run takes their medians, and
// docs/performance.md, "Timing accuracy", has them. The tests hold the
// same runs to the program's own measure of each run (testutil.Own),
// which holds under any load. Each metric is the median of the
// iterations:
//
//	known-work-BUILD  timing.c work: one, two and four's function times
//	                  (1, 2 and 3 units of 6) and four's function+child
//	                  time (4), as shares of the time inside functions
//	                  (%), the worst of the four's error against its share
//	                  by construction (worst-err-%), the share of the
//	                  functions that only call (calls-only-%, main and
//	                  top: 0 by construction), and the total time against
//	                  a native run's (x-native)
//	short-calls       a million calls of tiny (some 50 ns): its time a
//	                  call, its twin's, and their ratio (tiny-x-twin)
//	full-rings        twenty thousand calls of tiny with rings of 16
//	                  records: what each of the 2,500 stops left in
//	                  tiny's time (ns/stop)
//	return-sites      timing.c returns (x86-64): work_leaf's time against
//	                  its three units (x-units), wrap's own (wrap-us: 0)
//	threads           four threads calling one() and two(): two's time
//	                  against one's (two-x-one: 2)
func BenchmarkTimingAccuracy(b *testing.B) {
	testutil.MustHavePtrace(b)
	for _, build := range []string{"O0-pie", "O2-nopie"} {
		b.Run("known-work-"+build, func(b *testing.B) {
			prog := testutil.BuildC(b, "timing", fixtureFlags[build]...)
			plan := planFor(b, prog, datafile.FuncTiming, "main", "top", "one", "two", "four")
			args := []string{"work", "10", strconv.Itoa(timingUnit())}
			m := metrics{}
			for range b.N {
				got := runTimed(b, plan, prog, args...)
				inside := float64(got.stats.TotalTime - got.stats.OutsideTime)
				worst := 0.0
				for _, c := range []struct {
					name string
					ns   int64
					want float64
				}{
					{"one-%", got.self["one"], 1.0 / 6},
					{"two-%", got.self["two"], 2.0 / 6},
					{"four-%", got.self["four"], 3.0 / 6},
					{"four+child-%", got.all["four"], 4.0 / 6},
				} {
					share := float64(c.ns) / inside
					m.add(c.name, 100*share)
					worst = max(worst, 100*math.Abs(share-c.want)/c.want)
				}
				m.add("worst-err-%", worst)
				m.add("calls-only-%", 100*float64(max(got.self["main"], got.self["top"]))/inside)
				m.add("x-native", float64(got.stats.TotalTime)/float64(nativeTime(b, prog, args...)))
			}
			m.report(b)
		})
	}
	b.Run("short-calls", func(b *testing.B) {
		prog, plan := ringFixture(b, "O2-pie", "main", "tiny", "slow")
		m := metrics{}
		for range b.N {
			got := runTimed(b, plan, prog, "short")
			c := testutil.ParseOwn(b, got.stdout)["chunks"]
			tiny := float64(got.self["tiny"]) / float64(c["calls"])
			twin := float64(c["twin"]) / float64(c["size"])
			m.add("tiny-ns/call", tiny)
			m.add("twin-ns/call", twin)
			m.add("tiny-x-twin", tiny/twin)
		}
		m.report(b)
	})
	b.Run("full-rings", func(b *testing.B) {
		defer func(n int, b bool) { ringRecords, booksInProgram = n, b }(ringRecords, booksInProgram)
		booksInProgram = false // (the rings' full stops)
		ringRecords = 16
		prog, plan := ringFixture(b, "O2-pie", "main", "tiny", "slow")
		m := metrics{}
		for range b.N {
			got := runTimed(b, plan, prog, "short", "20000", "1000")
			c := testutil.ParseOwn(b, got.stdout)["chunks"]
			twin := float64(c["calls"]) * float64(c["twin"]) / float64(c["size"])
			m.add("tiny-ms", float64(got.self["tiny"])/1e6)
			m.add("twin-ms", twin/1e6)
			m.add("ns/stop", (float64(got.self["tiny"])-twin)/float64(got.res.FullRings))
		}
		m.report(b)
	})
	b.Run("return-sites", func(b *testing.B) {
		if runtime.GOARCH != "amd64" {
			b.Skip("arm64 patches every return in place")
		}
		prog, plan := ringFixture(b, "O0-pie", "main", "wrap", "work_leaf")
		m := metrics{}
		for range b.N {
			got := runTimed(b, plan, prog, "returns", "2000")
			m.add("x-units", float64(got.all["work_leaf"])/6e6)
			m.add("wrap-us", float64(got.self["wrap"])/1e3)
		}
		m.report(b)
	})
	b.Run("threads", func(b *testing.B) {
		prog := testutil.BuildC(b, "timing", append(fixtureFlags["O2-pie"], "-pthread")...)
		plan := planFor(b, prog, datafile.FuncTiming, "one", "two")
		m := metrics{}
		for range b.N {
			got := runTimed(b, plan, prog, "threads", strconv.Itoa(timingUnit()))
			m.add("two-x-one", float64(got.self["two"])/float64(got.self["one"]))
		}
		m.report(b)
	})
}

// metrics collects a benchmark's figures, reported as the median of each.
type metrics map[string][]float64

func (m metrics) add(name string, v float64) { m[name] = append(m[name], v) }

func (m metrics) report(b *testing.B) {
	for name, v := range m {
		slices.Sort(v)
		b.ReportMetric(v[len(v)/2], name)
	}
}

// nativeTime is the median wall time of three runs of the program.
func nativeTime(t testing.TB, prog string, args ...string) time.Duration {
	t.Helper()
	var runs []time.Duration
	for range 3 {
		began := time.Now()
		if err := exec.Command(prog, args...).Run(); err != nil {
			t.Fatalf("run %s natively: %v", prog, err)
		}
		runs = append(runs, time.Since(began))
	}
	slices.Sort(runs)
	return runs[len(runs)/2]
}
