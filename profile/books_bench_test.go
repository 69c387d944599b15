package profile

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/testutil"
)

// deepCalls is how many calls of leaf() bench_deep makes at the bottom of
// its recursion.
const deepCalls = 1000000

// benchDepths are the depths of the stack the attribution benchmarks make
// their calls at.
var benchDepths = []int{10, 1000, 4000}

// BenchmarkAttributionDepth: function timing with attribution (/FT /AT,
// in-process) of bench_deep, a million calls of a leaf function under 10,
// 1,000 and 4,000 profiled frames, alternating with /FT alone of the same
// run. Metrics: the medians of the runs' elapsed times, and what /AT adds
// per call. What a call costs should not depend on the depth.
func BenchmarkAttributionDepth(b *testing.B) {
	testutil.MustHavePtrace(b)
	if !testutil.TimesInProcess() {
		b.Skip("timing with breakpoints: two stops for each of a million calls")
	}
	prog := testutil.BuildC(b, "bench_deep", "-O2")
	timing := planFor(&testing.T{}, prog, datafile.FuncTiming, "main", "down", "leaf")
	attributed := planFor(&testing.T{}, prog, datafile.FuncTiming, "main", "down", "leaf")
	attributed.Attribution = true
	devnull, _ := os.Open(os.DevNull)
	defer devnull.Close()
	for _, depth := range benchDepths {
		b.Run(fmt.Sprintf("depth-%d", depth), func(b *testing.B) {
			run := func(plan *datafile.Plan) time.Duration {
				start := time.Now()
				res, err := Run(Config{Plan: plan, Path: prog, Args: []string{"bench_deep", strconv.Itoa(depth), strconv.Itoa(deepCalls)},
					Stdout: devnull, Stderr: devnull})
				elapsed := time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				s := res.Counts.Stats
				if s.Hits[1] != uint64(depth) || s.Hits[2] != deepCalls || s.CallDepth != depth+2 {
					b.Fatalf("down hit %d times, leaf %d, depth %d; want %d, %d, %d",
						s.Hits[1], s.Hits[2], s.CallDepth, depth, deepCalls, depth+2)
				}
				return elapsed
			}
			var ft, at []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ft = append(ft, run(timing))
				at = append(at, run(attributed))
			}
			f, a := median(ft), median(at)
			b.ReportMetric(float64(f.Microseconds())/1000, "ft-ms")
			b.ReportMetric(float64(a.Microseconds())/1000, "ft-at-ms")
			b.ReportMetric(float64(a-f)/deepCalls, "at-ns/call")
		})
	}
}
