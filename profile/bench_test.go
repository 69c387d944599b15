package profile

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/internal/testutil"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// The benchmarks measure what a user pays. Each reports ns/hit: the run's
// elapsed time divided by the breakpoint hits. bench/run takes medians.

const benchHits = 100000

// BenchmarkHit: a counting breakpoint (profile --breakpoints) at the entry
// of a function called benchHits times.
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
			Stdout: devnull, Stderr: devnull, Breakpoints: true})
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

// BenchmarkTimedCall: function timing of a function called benchHits
// times, with this version's breakpoints at its entry and exit; ns/call is
// the run's elapsed time divided by the calls, and x-hit that cost against
// one counting breakpoint's (BenchmarkHit's program, run alternately).
func BenchmarkTimedCall(b *testing.B) {
	testutil.MustHavePtrace(b)
	prog := testutil.BuildC(b, "bench_hits", "-O2")
	timing := planFor(&testing.T{}, prog, datafile.FuncTiming, "f")
	counting := planFor(&testing.T{}, prog, datafile.FuncCounting, "f")
	devnull, _ := os.Open(os.DevNull)
	defer devnull.Close()
	run := func(plan *datafile.Plan) time.Duration {
		start := time.Now()
		res, err := Run(Config{Plan: plan, Path: prog, Args: []string{"bench_hits", strconv.Itoa(benchHits)},
			Stdout: devnull, Stderr: devnull, Breakpoints: true})
		elapsed := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if res.Counts.Stats.Hits[0] != benchHits {
			b.Fatalf("f hit %d times, want %d", res.Counts.Stats.Hits[0], benchHits)
		}
		return elapsed
	}
	b.ResetTimer()
	var timed, counted time.Duration
	for i := 0; i < b.N; i++ {
		timed += run(timing)
		counted += run(counting)
	}
	b.ReportMetric(float64(timed.Nanoseconds())/float64(b.N*benchHits), "ns/call")
	b.ReportMetric(float64(timed)/float64(counted), "x-hit")
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
	return bareTracer(b, prog, []string{"bench_int3", strconv.Itoa(benchHits)}, devnull, syscall.SIGTRAP)
}

// bareTracer runs prog with args under a tracer that does nothing but
// continue every stop, passing signals on, and returns the number of
// stops for sig (a SIGTRAP stop is taken, not passed on).
func bareTracer(b *testing.B, prog string, args []string, devnull *os.File, sig syscall.Signal) int {
	done := make(chan int)
	go func() {
		runtime.LockOSThread()
		pid, err := ptrace.Start(prog, args, nil, "", []*os.File{devnull, devnull, devnull})
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
			got := ws.StopSignal()
			if got == sig && ws.Event() == 0 {
				stops++
			}
			if got == syscall.SIGTRAP {
				got = 0 // a breakpoint, or an event's stop
			}
			ptrace.Cont(pid, got)
		}
	}()
	return <-done
}

// BenchmarkCoverage: function coverage with breakpoints (each removed at
// its first hit) of eight functions called a million times each, against
// the same program run natively. The two alternate in
// every iteration, so that both see the same machine; the metrics are the
// medians of each and the overhead between them.
func BenchmarkCoverage(b *testing.B) {
	testutil.MustHavePtrace(b)
	prog := testutil.BuildC(b, "bench_cover", "-O2")
	plan := planFor(&testing.T{}, prog, datafile.FuncCoverage, "main", "f0", "f1", "f2", "f3", "f4", "f5", "f6", "f7")
	var native, covered []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		native = append(native, runNatively(b, prog))
		start := time.Now()
		res, err := Run(Config{Plan: plan, Path: prog, Args: []string{"bench_cover"}, Breakpoints: true})
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

// runNatively runs prog without PROFILE and returns how long it took.
func runNatively(b *testing.B, prog string) time.Duration {
	start := time.Now()
	if err := exec.Command(prog).Run(); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkInProcess: function counting and function timing in-process
// (trampolines; timing through the threads' rings) of a call-heavy
// workload (bench_calls: 15.6 million calls of small functions) and a
// mixed one (bench_mixed: 31 million calls among loops), against the same
// programs run natively, alternating in every iteration. Metrics: the
// medians, their ratio, and the added cost per profiled call.
func BenchmarkInProcess(b *testing.B) {
	testutil.MustHavePtrace(b)
	for _, w := range []struct {
		name  string
		funcs []string
	}{
		{"calls", []string{"main", "mix", "step", "clamp", "fold"}},
		{"mixed", []string{"main", "primes", "is_marked", "mark", "less", "sort", "rotl", "mixin"}},
	} {
		for _, m := range []struct {
			name   string
			method datafile.Method
		}{{"count", datafile.FuncCounting}, {"time", datafile.FuncTiming}} {
			b.Run(w.name+"-"+m.name, func(b *testing.B) {
				if m.method.IsTiming() && !testutil.TimesInProcess() {
					b.Skip("timing with breakpoints: two stops for each of millions of calls")
				}
				prog := testutil.BuildC(b, "bench_"+w.name, "-O2")
				plan := planFor(&testing.T{}, prog, m.method, w.funcs...)
				devnull, _ := os.Open(os.DevNull)
				defer devnull.Close()
				var native, profiled []time.Duration
				var calls uint64
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					native = append(native, runNatively(b, prog))
					start := time.Now()
					res, err := Run(Config{Plan: plan, Path: prog, Args: []string{"bench_" + w.name}, Stdout: devnull, Stderr: devnull})
					profiled = append(profiled, time.Since(start))
					if err != nil {
						b.Fatal(err)
					}
					calls = 0
					for _, h := range res.Counts.Stats.Hits {
						calls += h
					}
					// (Timing: an exit too short for a jump, with no
					// padding near for a hop, keeps a breakpoint for its
					// first exitStops returns.)
					if res.Hits > exitStops && testutil.InProcess() {
						b.Fatalf("%d breakpoint hits: an entry was not patched", res.Hits)
					}
				}
				n, c := median(native), median(profiled)
				b.ReportMetric(float64(n.Microseconds())/1000, "native-ms")
				b.ReportMetric(float64(c.Microseconds())/1000, "profiled-ms")
				b.ReportMetric(float64(c)/float64(n), "x-native")
				b.ReportMetric(float64(c-n)/float64(calls), "ns/call")
				b.ReportMetric(float64(calls), "calls")
			})
		}
	}
}

// BenchmarkStartup: a program of 10,000 functions whose main returns at
// once, profiled (every entry patched) and native, alternating: the
// difference is PROFILE's start-up (the tracer's own start, the exec, the
// mapping of the area and the counters, 10,000 trampolines and patches)
// and its end (reading the counts, and comparing the code with the
// patches: end-check-ms).
func BenchmarkStartup(b *testing.B) {
	testutil.MustHavePtrace(b)
	const n = 10000
	prog := buildManyFuncs(b, n)
	names := make([]string, n)
	for i := range names {
		names[i] = "fn" + strconv.Itoa(i)
	}
	plan := planFor(&testing.T{}, prog, datafile.FuncCounting, names...)
	var native, counted, checked []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		native = append(native, runNatively(b, prog))
		var fellBack bool
		start := time.Now()
		res, err := Run(Config{Plan: plan, Path: prog, Args: []string{"many"},
			Warn: func(*prf.Diagnostic) { fellBack = true }})
		counted = append(counted, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		checked = append(checked, res.EndCheck)
		if fellBack && testutil.InProcess() {
			b.Fatal("an entry was not patched")
		}
	}
	nat, c := median(native), median(counted)
	b.ReportMetric(float64(nat.Microseconds())/1000, "native-ms")
	b.ReportMetric(float64(c.Microseconds())/1000, "profiled-ms")
	b.ReportMetric(float64((c-nat).Microseconds())/1000, "startup-ms")
	b.ReportMetric(float64(median(checked).Microseconds())/1000, "end-check-ms")
}

// buildManyFuncs compiles a C program of n functions (each a few
// instructions, all reachable through a table) whose main returns at once.
func buildManyFuncs(b *testing.B, n int) string {
	dir := b.TempDir()
	var src strings.Builder
	src.WriteString("volatile long sink;\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&src, "__attribute__((noinline)) long fn%d(long x) { sink += x; return x * %d; }\n", i, i+1)
	}
	src.WriteString("long (*const table[])(long) = {\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&src, "fn%d,\n", i)
	}
	src.WriteString("};\nint main(int argc, char **argv) { (void)argv; return argc > 5 ? (int)table[argc](argc) : 0; }\n")
	c := filepath.Join(dir, "many.c")
	if err := os.WriteFile(c, []byte(src.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	prog := filepath.Join(dir, "many")
	if out, err := exec.Command(testutil.CC(), "-O1", "-o", prog, c).CombinedOutput(); err != nil {
		b.Fatalf("compile: %v\n%s", err, out)
	}
	return prog
}

// benchSignals is the number of signals BenchmarkSignal's program raises.
const benchSignals = 20000

// BenchmarkSignal: the cost of a signal under PROFILE. hostile.c raises
// SIGUSR1 benchSignals times, each caught by a handler; it runs natively,
// under PROFILE (function counting in-process), and under a bare tracer
// that only passes each signal on (the floor ptrace sets: every signal to
// a traced thread is a stop), alternating. Metrics: the medians, and the
// cost of a signal above the native run's, in microseconds, for PROFILE
// and for the bare tracer.
func BenchmarkSignal(b *testing.B) {
	testutil.MustHavePtrace(b)
	prog := testutil.BuildC(b, "hostile", "-O2")
	plan := planFor(&testing.T{}, prog, datafile.FuncCounting, "f", "main")
	args := []string{"hostile", "signals", strconv.Itoa(benchSignals)}
	devnull, _ := os.Open(os.DevNull)
	defer devnull.Close()
	var native, profiled, bare []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if err := exec.Command(prog, args[1:]...).Run(); err != nil {
			b.Fatal(err)
		}
		native = append(native, time.Since(start))
		start = time.Now()
		if _, err := Run(Config{Plan: plan, Path: prog, Args: args, Stdout: devnull, Stderr: devnull}); err != nil {
			b.Fatal(err)
		}
		profiled = append(profiled, time.Since(start))
		start = time.Now()
		if n := bareTracer(b, prog, args, devnull, syscall.SIGUSR1); n != benchSignals {
			b.Fatalf("%d signal stops, want %d", n, benchSignals)
		}
		bare = append(bare, time.Since(start))
	}
	n, p, f := median(native), median(profiled), median(bare)
	per := func(d time.Duration) float64 { return float64(d-n) / float64(time.Microsecond) / benchSignals }
	b.ReportMetric(float64(n.Microseconds())/1000, "native-ms")
	b.ReportMetric(per(p), "profile-us/signal")
	b.ReportMetric(per(f), "floor-us/signal")
}

// BenchmarkScanModule: what decoding a module costs before anything is
// planted in it (scanModule: instr.MapCode over its code, every planned
// function from its start, the code between linearly), for the program
// of 10,000 functions of BenchmarkStartup, all of them planned: the
// landings of its jumps and calls, and its instruction boundaries.
func BenchmarkScanModule(b *testing.B) {
	prog := buildManyFuncs(b, 10000)
	f, err := elf.Open(prog)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	text := f.Section(".text")
	code, err := text.Data()
	if err != nil {
		b.Fatal(err)
	}
	a, err := instr.ForMachine(f.Machine)
	if err != nil {
		b.Fatal(err)
	}
	syms, _ := f.Symbols()
	var funcs [][2]uint64
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Size > 0 {
			funcs = append(funcs, [2]uint64{s.Value, s.Value + s.Size})
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		instr.MapCode(a, code, text.Addr, funcs)
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/module")
	b.ReportMetric(float64(len(funcs)), "functions")
	b.ReportMetric(float64(len(code)), "bytes")
}
