package profile

import (
	"fmt"
	"io"
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

// BenchmarkBooksDepth: what the books spend on one event with attribution,
// the entry or the exit of a leaf function called under 10, 1,000 and
// 4,000 frames, as the records of a ring reach them (BenchmarkBooks
// without attribution).
func BenchmarkBooksDepth(b *testing.B) {
	for _, depth := range benchDepths {
		for _, levels := range []int{0, 2} {
			b.Run(fmt.Sprintf("depth-%d/stack-%d", depth, levels), func(b *testing.B) {
				p := &datafile.Plan{Funcs: make([]datafile.Func, 3), Attribution: true, StackDepth: levels}
				bk := newBooks(p)
				l := bk.ledger(threadLedger(1))
				const main, down, leaf = 0, 1, 2
				sp := uint64(1 << 30)
				bk.enterLedger(l, main, sp, 0)
				for range depth {
					sp -= 64
					bk.enterLedger(l, down, sp, 0)
				}
				now := int64(1)
				b.ResetTimer()
				for i := 0; i < b.N; i += 2 {
					bk.enterLedger(l, leaf, sp-64, now)
					bk.exitLedger(l, leaf, sp-64, now+1)
					now += 2
				}
			})
		}
	}
}

// BenchmarkBooksCall is what the books take for one call, its entry and
// its exit, at depth 3 of one thread, without an execution trace and with
// one (written to io.Discard): what /TRACE adds to every call PROFILE
// books, and what the books cost without it.
func BenchmarkBooksCall(b *testing.B) {
	for _, traced := range []bool{false, true} {
		name := "plain"
		if traced {
			name = "trace"
		}
		b.Run(name, func(b *testing.B) {
			bk := testBooks(-1, "", false, 0)
			if traced {
				w, err := datafile.NewTraceWriter(io.Discard, datafile.TraceHeader{Funcs: 4}, 0)
				if err != nil {
					b.Fatal(err)
				}
				bk.trace = w
			}
			l := bk.ledger(thread1)
			bk.enterLedger(l, 0, 1000, 0)
			bk.enterLedger(l, 1, 900, 1)
			now := int64(2)
			for b.Loop() {
				bk.enterLedger(l, 2, 800, now)
				bk.exitLedger(l, 2, 800, now+5)
				now += 10
			}
		})
	}
}
