package profile

import (
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/internal/testutil"
	"github.com/sourceprofiler/sprof/profile/procmaps"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// fakeSampleRing is a thread's ring of samples in the unit tests: the
// program counters put in it since its last Read. The sampler's goroutine
// reads it beside the test, which writes it.
type fakeSampleRing struct {
	mu      sync.Mutex
	samples []ptrace.Sample
	closed  bool
}

// put puts samples of program counters alone.
func (r *fakeSampleRing) put(pcs ...uint64) {
	for _, pc := range pcs {
		r.putSample(ptrace.Sample{PC: pc})
	}
}

// putSample puts a sample.
func (r *fakeSampleRing) putSample(s ptrace.Sample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.samples = append(r.samples, s)
}

func (r *fakeSampleRing) pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.samples)
}

func (r *fakeSampleRing) Read(fn func(*ptrace.Sample)) (uint64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.samples {
		fn(&r.samples[i])
	}
	r.samples = nil
	return 0, nil
}

func (r *fakeSampleRing) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	return nil
}

// fakeSampleRings opens a fakeSampleRing for each thread, and refuses
// those of refused, and with a stack those of noStacks; options are the
// options of each thread's ring.
type fakeSampleRings struct {
	rings    map[int]*fakeSampleRing
	refused  map[int]bool
	noStacks map[int]bool
	options  map[int]ptrace.SamplerOptions
	opened   int
}

func (f *fakeSampleRings) open(tid int, o ptrace.SamplerOptions) (sampleRing, error) {
	f.opened++
	if f.refused[tid] || o.Stack > 0 && f.noStacks[tid] {
		return nil, syscall.EPERM
	}
	r := &fakeSampleRing{}
	f.rings[tid] = r
	if f.options == nil {
		f.options = map[int]ptrace.SamplerOptions{}
	}
	f.options[tid] = o
	return r, nil
}

// ownAreas are PROFILE's executable areas in the unit tests: a module's
// area at 0x9000 (f's entry trampoline at its start, samplingPlan) and
// the closer's page at 0x7ff00000.
var ownAreas = [][2]uint64{{0x7ff00000, 0x1000}, {0x9000, 0x1000}}

// TestOwnCodeTally: a timing run's sampler counts the samples in
// PROFILE's areas, to their last byte and not past it, apart from all of
// its threads', reading the rings itself when asked before its end; it
// writes no figure and warns of nothing; an area forgotten with its
// module is no longer PROFILE's.
// (TestOwnCodePartial: a thread refused its event.)
func TestOwnCodeTally(t *testing.T) {
	plan := samplingPlan()
	plan.Method = datafile.FuncTiming
	var warned []*prf.Diagnostic
	s := newOwnCodeSampler(samplerEnv{plan: plan, own: func() [][2]uint64 { return ownAreas },
		warn: func(d *prf.Diagnostic) { warned = append(warned, d) }})
	rings := &fakeSampleRings{rings: map[int]*fakeSampleRing{}, refused: map[int]bool{}}
	s.open = rings.open
	if s.interval != time.Millisecond || !s.timing {
		t.Fatalf("a timing run's sampler every %v, timing %v", s.interval, s.timing)
	}
	if _, _, _, ok := s.ownCode(); ok {
		t.Error("own code measured before the sampler started")
	}
	s.threadBorn(100, false) // (before start: not sampled)
	if rings.opened != 0 {
		t.Fatalf("%d rings opened before start", rings.opened)
	}
	s.planted(0, 0, procmaps.Instance{Lo: 0x1000, Hi: 0x2000})
	s.start(100)
	defer s.ended()
	s.threadBorn(101, false)
	s.threadBorn(103, true) // (foreign)
	if rings.opened != 2 || len(rings.rings) != 2 {
		t.Fatalf("%d rings opened, %d given; want 2 and 2", rings.opened, len(rings.rings))
	}
	// Thread 100's samples read by the sampler's goroutine, thread 101's
	// by ownCode itself.
	rings.rings[100].put(0x1010, 0x9010, 0x7ff00010, 0x5000)
	for deadline := time.Now().Add(5 * time.Second); rings.rings[100].pending() > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the sampler's goroutine does not read the rings")
		}
	}
	rings.rings[101].put(0x9fff, 0xa000, 0x8fff, 0x7ff00fff)
	own, all, iv, ok := s.ownCode()
	if !ok || own != 4 || all != 8 || iv != time.Millisecond {
		t.Errorf("own code %d of %d samples every %v (ok %v), want 4 of 8 every 1ms", own, all, iv, ok)
	}
	if got := s.tally.samples[0]; got != 1 {
		t.Errorf("f's samples %d, want 1: the functions are placed as ever", got)
	}
	// The module's area unmapped with it: a sample there, now another
	// mapping's, is not PROFILE's.
	s.forget(0x1000, 0x2000, [][2]uint64{{0x9000, 0x1000}})
	rings.rings[101].put(0x9010, 0x7ff00020)
	s.ended()
	if own, all, _, ok := s.ownCode(); !ok || own != 5 || all != 10 {
		t.Errorf("after the end: own code %d of %d (ok %v), want 5 of 10", own, all, ok)
	}
	for tid, r := range rings.rings {
		if !r.closed {
			t.Errorf("thread %d's ring left open", tid)
		}
	}
	st := datafile.Stats{Hits: []uint64{1, 2, 3, 4}}
	s.stats(&st)
	if d := cmp.Diff(datafile.Stats{Hits: []uint64{1, 2, 3, 4}}, st); d != "" {
		t.Errorf("a timing run's sampler changed the figures (-want +got):\n%s", d)
	}
	if len(warned) != 0 {
		t.Errorf("a timing run's sampler warned: %v", warned)
	}
}

// TestOwnCodePartial: where the kernel refuses a thread its clock event
// (having given the main thread one), the samples are not of every
// thread's calls: no cost is measured, silently. Samples the rings lost
// count as those read fell.
func TestOwnCodePartial(t *testing.T) {
	var warned []*prf.Diagnostic
	plan := samplingPlan()
	plan.Method = datafile.FuncTiming
	s := newOwnCodeSampler(samplerEnv{plan: plan, own: func() [][2]uint64 { return ownAreas },
		warn: func(d *prf.Diagnostic) { warned = append(warned, d) }})
	rings := &fakeSampleRings{rings: map[int]*fakeSampleRing{}, refused: map[int]bool{102: true}}
	s.open = rings.open
	s.planted(0, 0, procmaps.Instance{Lo: 0x1000, Hi: 0x2000})
	s.start(100)
	rings.rings[100].put(0x9010, 0x5000)
	s.tally.lost = 2 // (two more, lost as the ring was full)
	if own, all, _, ok := s.ownCode(); !ok || own != 2 || all != 4 {
		t.Errorf("own code %d of %d (ok %v), want 2 of 4: the lost as the read", own, all, ok)
	}
	s.threadBorn(102, false)
	if _, _, _, ok := s.ownCode(); ok {
		t.Error("own code measured with a thread unsampled")
	}
	s.ended()
	if _, _, _, ok := s.ownCode(); ok || len(warned) != 0 {
		t.Errorf("after the end: measured %v, warnings %v; want neither", ok, warned)
	}
}

// TestOwnCodeRefused: where the kernel refuses the main thread its clock
// event, a timing run's sampler samples nothing, by no other means (no
// ptrace rounds), silently, and says so.
func TestOwnCodeRefused(t *testing.T) {
	var warned []*prf.Diagnostic
	plan := samplingPlan()
	plan.Method = datafile.FuncTiming
	s := newOwnCodeSampler(samplerEnv{plan: plan, warn: func(d *prf.Diagnostic) { warned = append(warned, d) }})
	rings := &fakeSampleRings{rings: map[int]*fakeSampleRing{}, refused: map[int]bool{100: true}}
	s.open = rings.open
	s.start(100)
	s.threadBorn(101, false)
	if now, _, _ := s.waiting(); now || s.kind != datafile.PerfSampler || s.wantsRound() {
		t.Errorf("a refused timing run's sampler falls back to ptrace: %s, waiting %v", s.kind, now)
	}
	s.ended()
	if rings.opened != 1 || len(warned) != 0 {
		t.Errorf("%d rings asked for, warnings %v; want the main thread's alone, none", rings.opened, warned)
	}
	if own, all, iv, ok := s.ownCode(); ok || own+all != 0 || iv != 0 {
		t.Errorf("own code %d of %d every %v, ok %v: want nothing", own, all, iv, ok)
	}
	var none *sampler
	if _, _, _, ok := none.ownCode(); ok {
		t.Error("own code measured with no sampler")
	}
}

// TestOwnCodeFunctionSampling: function sampling tallies PROFILE's own
// code too, beside its figures: a sample in the instruction of f that
// f's entry trampoline carries is f's, and PROFILE's code's; one in the
// trampoline's counting, or elsewhere in PROFILE's areas, is no
// function's, nor outside them: PROFILE's overhead, left out of the
// total time.
func TestOwnCodeFunctionSampling(t *testing.T) {
	plan := samplingPlan()
	tr := &tramp{addr: 0x9000, patch: instr.Patch{Site: 0x1000}}
	tr.code.Code = make([]byte, 0x40)
	tr.code.PCs = []instr.PCMap{{Tramp: 0x9030, Orig: 0x1000}}
	s := newSampler(samplerEnv{plan: plan, counters: &counters{tramps: []*tramp{tr}}, own: func() [][2]uint64 { return ownAreas },
		warn: func(*prf.Diagnostic) {}}, time.Millisecond)
	rings := &fakeSampleRings{rings: map[int]*fakeSampleRing{}}
	s.open = rings.open
	s.planted(0, 0, procmaps.Instance{Lo: 0x1000, Hi: 0x2000})
	s.start(100)
	rings.rings[100].put(0x1010, 0x9034, 0x9010, 0x9100, 0x5000)
	s.ended()
	st := datafile.Stats{Hits: make([]uint64, len(plan.Funcs))}
	s.stats(&st)
	if got := st.Sampling.Samples; !cmp.Equal(got, []uint64{2, 0, 0, 0}) || st.Sampling.Outside != 1 || st.Sampling.Overhead != 2 || st.TotalTime != 3*int64(time.Millisecond) {
		t.Errorf("samples %v, outside %d, PROFILE's %d, total %d: want f's 2, 1 outside, 2 PROFILE's, 3 ms",
			got, st.Sampling.Outside, st.Sampling.Overhead, st.TotalTime)
	}
	if own, all, _, ok := s.ownCode(); !ok || own != 3 || all != 5 {
		t.Errorf("own code %d of %d (ok %v), want 3 of 5", own, all, ok)
	}
}

// runTracer runs plan's program prog as Run does, and returns the tracer
// with what its parts measured.
func runTracer(t *testing.T, plan *datafile.Plan, prog string, args ...string) (*tracer, *Result, []int) {
	t.Helper()
	out, err := os.Create(filepath.Join(t.TempDir(), "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	var codes []int
	cfg := Config{Plan: plan, Path: prog, Args: append([]string{filepath.Base(prog)}, args...), Env: os.Environ(),
		Stdout: out, Stderr: os.Stderr, Now: time.Now,
		Warn: func(d *prf.Diagnostic) {
			t.Logf("warning: %v", d)
			codes = append(codes, d.Code)
		}}
	type outcome struct {
		tr  *tracer
		res *Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		runtime.LockOSThread() // (never unlocked: the thread ends with the goroutine, as Run's)
		tr, err := newTracer(cfg)
		if err != nil {
			done <- outcome{err: err}
			return
		}
		res, err := tr.runTarget(newLaunch(tr))
		done <- outcome{tr, res, err}
	}()
	o := <-done
	if o.err != nil {
		t.Fatalf("run %s: %v", prog, o.err)
	}
	if !o.res.Exited || o.res.ExitCode != 0 {
		t.Fatalf("%s: exited %v, status %d", prog, o.res.Exited, o.res.ExitCode)
	}
	return o.tr, o.res, codes
}

// TestOwnCodeRun times bench_calls with the books in the program: timing
// its small functions, called 6.25 million times, a share of the samples
// is in PROFILE's code, and not all; timing main alone, whose loop calls
// no timed function, next to none. The run's figures are timing's alone.
func TestOwnCodeRun(t *testing.T) {
	testutil.MustHavePtrace(t)
	if runtime.GOARCH != "amd64" {
		t.Skip("the books are kept in the program on amd64 only")
	}
	prog := testutil.BuildC(t, "bench_calls", "-O2")
	for _, c := range []struct {
		name  string
		funcs []string
		calls bool
	}{
		{"calls", []string{"main", "mix", "step", "clamp", "fold"}, true},
		{"no calls", []string{"main"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			plan := planFor(t, prog, datafile.FuncTiming, c.funcs...)
			tr, res, codes := runTracer(t, plan, prog, "2000000")
			if tr.parts.ledgers == nil {
				t.Skipf("the books are not kept in the program here (warnings %v)", codes)
			}
			own, all, iv, ok := tr.parts.sampling.ownCode()
			if !ok {
				t.Skip("the kernel refuses its clock events here")
			}
			t.Logf("%d of %d samples in PROFILE's code, every %v", own, all, iv)
			if iv != DefaultInterval || all < 20 {
				t.Errorf("%d samples every %v: want 20 at least, every %v", all, iv, DefaultInterval)
			}
			if c.calls && (own == 0 || own >= all) {
				t.Errorf("timing 6.25 million calls: %d of %d samples in PROFILE's code, want some and not all", own, all)
			}
			if !c.calls && own*100 > all {
				t.Errorf("timing main alone: %d of %d samples in PROFILE's code, want under 1 %%", own, all)
			}
			st := res.Counts.Stats
			if !cmp.Equal(st.Sampling, datafile.SamplingStats{}) {
				t.Errorf("the samples in the run's figures: %+v", st.Sampling)
			}
			if want := uint64(2000000); c.calls && st.Hits[1] != want {
				t.Errorf("mix called %d times, want %d", st.Hits[1], want)
			}
		})
	}
}
