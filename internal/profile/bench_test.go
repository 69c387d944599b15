package profile

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/profile/ptrace"
	"github.com/sourceprofiler/sprof/internal/testutil"
)

// The benchmarks measure what a user pays. Each reports ns/hit: the run's
// elapsed time divided by the breakpoint hits. bench/run takes medians.

const benchHits = 100000

// BenchmarkHit: a counting breakpoint at the entry of a function called
// benchHits times.
func BenchmarkHit(b *testing.B) {
	testutil.MustHavePtrace(b)
	prog := testutil.BuildC(b, "bench_hits", "-O2")
	plan := planFor(&testing.T{}, prog, datafile.FuncCounting, "f")
	devnull, _ := os.Open(os.DevNull)
	defer devnull.Close()
	b.ResetTimer()
	var elapsed time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		res, err := Run(Config{Plan: plan, Path: prog, Args: []string{"bench_hits", strconv.Itoa(benchHits)},
			Stdout: devnull, Stderr: devnull})
		elapsed += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if res.Counts.Stats.Hits[0] != benchHits {
			b.Fatalf("f hit %d times, want %d", res.Counts.Stats.Hits[0], benchHits)
		}
	}
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N*benchHits), "ns/hit")
}

// BenchmarkBareLoop: the floor, a tracer that only waits for each int3 stop
// of a program executing benchHits int3 instructions and continues it. It
// waits as the tracer does (spinning briefly between close stops).
func BenchmarkBareLoop(b *testing.B) {
	testutil.MustHavePtrace(b)
	if runtime.GOARCH != "amd64" {
		b.Skip("the bare loop fixture executes int3 (x86-64)")
	}
	prog := testutil.BuildC(b, "bench_int3", "-O2")
	devnull, _ := os.Open(os.DevNull)
	defer devnull.Close()
	b.ResetTimer()
	var elapsed time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		stops := bareLoop(b, prog, devnull)
		elapsed += time.Since(start)
		if stops != benchHits {
			b.Fatalf("%d stops, want %d", stops, benchHits)
		}
	}
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N*benchHits), "ns/hit")
}

func bareLoop(b *testing.B, prog string, devnull *os.File) int {
	done := make(chan int)
	go func() {
		runtime.LockOSThread()
		pid, err := ptrace.Start(prog, []string{"bench_int3", strconv.Itoa(benchHits)}, nil, "",
			[]*os.File{devnull, devnull, devnull})
		if err != nil {
			b.Error(err)
			done <- -1
			return
		}
		stops := 0
		ptrace.Cont(pid, 0)
		for {
			// The same wait as the tracer's (spinning between close
			// stops), so that the floor is measured with the same means.
			_, ws, err := ptrace.Wait(spinWindow)
			if err != nil || ws.Exited() || ws.Signaled() {
				done <- stops
				return
			}
			if ws.StopSignal() == syscall.SIGTRAP {
				stops++
			}
			ptrace.Cont(pid, 0)
		}
	}()
	return <-done
}

// BenchmarkCoverage: function coverage of eight functions called a million
// times each, against the same program run natively. The two alternate in
// every iteration, so that both see the same machine; the metrics are the
// medians of each and the overhead between them.
func BenchmarkCoverage(b *testing.B) {
	testutil.MustHavePtrace(b)
	prog := testutil.BuildC(b, "bench_cover", "-O2")
	plan := planFor(&testing.T{}, prog, datafile.FuncCoverage, "main", "f0", "f1", "f2", "f3", "f4", "f5", "f6", "f7")
	var native, covered []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if err := exec.Command(prog).Run(); err != nil {
			b.Fatal(err)
		}
		native = append(native, time.Since(start))
		start = time.Now()
		res, err := Run(Config{Plan: plan, Path: prog, Args: []string{"bench_cover"}})
		covered = append(covered, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		if res.Counts.Stats.Hits[1] != 1 {
			b.Fatalf("f0 covered %d, want 1", res.Counts.Stats.Hits[1])
		}
	}
	n, c := median(native), median(covered)
	b.ReportMetric(float64(n.Microseconds())/1000, "native-ms")
	b.ReportMetric(float64(c.Microseconds())/1000, "coverage-ms")
	b.ReportMetric(100*(float64(c)-float64(n))/float64(n), "overhead-%")
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
