package profile

import (
	"fmt"
	"os"
	"slices"
	"strings"
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

// samplingPlan is a plan of two modules: in the program, f at 0x1000 (lines
// 10 at 0x1000 and 0x1040, 11 at 0x1020) and g at 0x1100 (line 20), and an
// alias of f that PREP saw as a function of its own over f's second half;
// in the library, h at 0x500.
func samplingPlan() *datafile.Plan {
	return &datafile.Plan{
		Method: datafile.FuncSampling,
		Funcs: []datafile.Func{
			{Module: 0, Name: "f", Entry: 0x1000, Low: 0x1000, High: 0x1080},
			{Module: 0, Name: "g", Entry: 0x1100, Low: 0x1100, High: 0x1140},
			{Module: 0, Name: "f_half", Entry: 0x1040, Low: 0x1040, High: 0x1080},
			{Module: 1, Name: "h", Entry: 0x500, Low: 0x500, High: 0x520},
		},
		Lines: []datafile.Line{
			{Module: 0, Line: 10, Addrs: []uint64{0x1000, 0x1040}},
			{Module: 0, Line: 11, Addrs: []uint64{0x1020}},
			{Module: 0, Line: 20, Addrs: []uint64{0x1110}},
			{Module: 1, Line: 5, Addrs: []uint64{0x500}},
		},
	}
}

// TestPlaceTable places program counters in a program loaded at its link
// addresses and a library loaded with a bias, with an entry trampoline
// (its counting PROFILE's, the instructions it carries the function's,
// on their lines),
// then after the library is forgotten.
func TestPlaceTable(t *testing.T) {
	plan := samplingPlan()
	const bias = 0x7f0000000000
	tr := &tramp{addr: 0x9000, patch: instr.Patch{Site: 0x1100}}
	tr.code.Code = make([]byte, 0x30)
	tr.code.PCs = []instr.PCMap{{Tramp: 0x9020, Orig: 0x1100}, {Tramp: 0x9024, Orig: 0x1110}}
	p := (&placeTable{}).with(plan, 0, 0, 0x1000, 0x2000, []*tramp{tr})
	p = p.with(plan, 1, bias, bias, bias+0x1000, nil)
	for _, c := range []struct {
		pc       uint64
		fn, line int
	}{
		{0x0fff, -1, -1},
		{0x1000, 0, 0},
		{0x101f, 0, 0},
		{0x1020, 0, 1},
		{0x1045, 0, 0},   // (f_half overlaps f: f keeps the span)
		{0x1080, -1, -1}, // between functions
		{0x1100, 1, -1},  // g before its first line
		{0x1110, 1, 2},
		{0x113f, 1, 2},
		{0x1140, -1, -1},
		{0x9010, -1, -1}, // the counting of g's entry trampoline
		{0x9020, 1, -1},  // the instruction of g it carries, before g's first line
		{0x9024, 1, 2},   // the next one, on its line (a leaf carried whole)
		{0x902f, 1, 2},
		{0x9030, -1, -1},
		{bias + 0x510, 3, 3},
		{0x510, -1, -1},
	} {
		if fn, line := p.find(c.pc); fn != c.fn || line != c.line {
			t.Errorf("%#x: function %d line %d, want %d and %d", c.pc, fn, line, c.fn, c.line)
		}
	}
	q := p.without(bias, bias+0x1000, [][2]uint64{{0x9000, 0x1000}})
	for _, pc := range []uint64{bias + 0x510, 0x9020} {
		if fn, _ := q.find(pc); fn != -1 {
			t.Errorf("%#x after the forget: function %d", pc, fn)
		}
	}
	if fn, line := q.find(0x1020); fn != 0 || line != 1 {
		t.Errorf("the program's code after the library's forget: %d %d", fn, line)
	}
	if fn, _ := p.find(bias + 0x510); fn != 3 {
		t.Error("the forget changed the table it was made from")
	}
}

// TestChildTimes propagates time along arcs as gprof does: main calls a
// twice and b once; a calls c (all of c's calls); b calls a once more and
// itself (recursion passes nothing up).
func TestChildTimes(t *testing.T) {
	const main, a, b, c = 0, 1, 2, 3
	self := []int64{10, 30, 20, 60}
	hits := []uint64{1, 3, 2, 6}
	stacks := []datafile.Stack{
		{Func: main, Callers: []int{-1}, Hits: 1},
		{Func: a, Callers: []int{-1, main}, Hits: 2},
		{Func: a, Callers: []int{main, b}, Hits: 1},
		{Func: b, Callers: []int{-1, main}, Hits: 1},
		{Func: b, Callers: []int{main, b}, Hits: 1},
		{Func: c, Callers: []int{main, a}, Key: 1, Hits: 4},
		{Func: c, Callers: []int{b, a}, Key: 2, Hits: 2},
	}
	// a: 30 + all of c's 60 = 90. b: 20 + a third of a = 50. main: 10 +
	// two thirds of a (60) + all of b (50): b's other call is its own.
	want := []int64{120, 90, 50, 60}
	if d := cmp.Diff(want, childTimes(self, hits, stacks)); d != "" {
		t.Errorf("times with children (-want +got):\n%s", d)
	}
	if d := cmp.Diff(self, childTimes(self, hits, nil)); d != "" {
		t.Errorf("without arcs (-want +got):\n%s", d)
	}
	st := &datafile.Stats{Hits: hits, FuncTime: self, ChildTime: want, Stacks: stacks}
	stackTimes(st)
	if k := st.Stacks[1]; k.Time != 20 || k.ChildTime != 60 {
		t.Errorf("a's stack from main: time %d, with children %d; want 20 and 60", k.Time, k.ChildTime)
	}
}

// TestCPUTimes reads this process's CPU times and a thread's run time.
func TestCPUTimes(t *testing.T) {
	for i := 0; i < 20000000; i++ {
		sinkSampling += i
	}
	user, kernel, err := cpuTimes(os.Getpid())
	if err != nil || user < 0 || kernel < 0 {
		t.Fatalf("cpuTimes: %v %v %v", user, kernel, err)
	}
	ran, err := runTime(os.Getpid(), os.Getpid())
	if err != nil || ran <= 0 {
		t.Errorf("runTime: %d %v", ran, err)
	}
	if _, _, err := cpuTimes(1 << 30); err == nil {
		t.Error("the times of no process")
	}
}

var sinkSampling int

// TestSamplingRun samples the shares fixture (three threads, one born
// late) through Run: every call counted, the samples in the order of the
// work (50/30/20 %). Under the race detector it exercises the goroutine
// that reads the rings beside the tracer.
func TestSamplingRun(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "shares", "-O2", "-pthread")
	plan := planFor(t, prog, datafile.FuncSampling, "spin_a", "spin_b", "spin_c", "middle")
	out := runPlan(t, plan, prog, "20")
	for _, fn := range []string{"spin_a", "spin_b", "spin_c", "middle"} {
		if out.hits[fn] != 60 {
			t.Errorf("%s: %d calls, want 60", fn, out.hits[fn])
		}
	}
	sm := out.res.Counts.Stats.Sampling
	if slices.Contains(out.codes, 4675) {
		t.Skip("the kernel refuses its clock events here")
	}
	if sm.Sampler != datafile.PerfSampler || sm.Interval != int64(DefaultInterval) {
		t.Errorf("sampled by %s every %d ns", sm.Sampler, sm.Interval)
	}
	a, b, c := sm.Samples[0], sm.Samples[1], sm.Samples[2]
	t.Logf("samples %d %d %d, outside %d, lost %d", a, b, c, sm.Outside, sm.Lost)
	if !(a > b && b > c && c > 0) {
		t.Errorf("samples %d %d %d: not in the order of the work", a, b, c)
	}
	if got := out.res.Counts.Stats.FuncTime[0]; got != int64(a)*sm.Interval {
		t.Errorf("spin_a's time %d, want %d samples of %d ns", got, a, sm.Interval)
	}
}

// TestSamplerWarnings checks the sampler's warnings: threads whose clock
// event the kernel refused after the main thread's are counted, warned
// about once at the end (PRF4678), and a run's lost samples are warned
// about with their number (PRF4676).
func TestSamplerWarnings(t *testing.T) {
	var warned []*prf.Diagnostic
	plan := samplingPlan()
	s := newSampler(samplerEnv{plan: plan, warn: func(d *prf.Diagnostic) { warned = append(warned, d) }}, time.Millisecond)
	s.open = func(int, ptrace.SamplerOptions) (sampleRing, error) { return nil, syscall.EPERM }
	for _, tid := range []int{101, 102, 103} {
		s.threadBorn(tid, false)
	}
	if len(warned) != 0 {
		t.Fatalf("warned before the end: %v", warned)
	}
	s.ended()
	s.ended() // (once)
	if len(warned) != 1 || warned[0].Code != 4678 || !strings.HasPrefix(warned[0].Text, "3 threads were not sampled") {
		t.Fatalf("warnings %v, want one PRF4678 for 3 threads", warned)
	}
	warned = nil
	s.tally.samples[0], s.tally.outside, s.tally.lost = 7, 2, 5
	st := &datafile.Stats{Hits: make([]uint64, len(plan.Funcs))}
	s.stats(st)
	if len(warned) != 1 || warned[0].Code != 4676 || !strings.HasPrefix(warned[0].Text, "5 samples were lost") {
		t.Errorf("warnings %v, want one PRF4676 for 5 samples", warned)
	}
	if st.TotalTime != 9*int64(time.Millisecond) || st.OutsideTime != 2*int64(time.Millisecond) || st.Sampling.Lost != 5 {
		t.Errorf("total %d, outside %d, lost %d; want 9 ms, 2 ms and 5", st.TotalTime, st.OutsideTime, st.Sampling.Lost)
	}
}

// TestPtraceRoundsWeigh checks the ptrace sampler's weights: a thread's
// samples are the whole intervals of CPU time it used since its last,
// what is left short of one carried to its next, and nothing kept of a
// thread gone.
func TestPtraceRoundsWeigh(t *testing.T) {
	r := newPtraceRounds()
	const ms = time.Millisecond
	for i, c := range []struct{ ran, want int64 }{
		{int64(2500 * time.Microsecond), 2}, // 0.5 ms carried
		{int64(3 * ms), 1},                  // 0.5 more, and the 0.5 carried
		{int64(3 * ms), 0},                  // no time used
		{int64(3900 * time.Microsecond), 0}, // 0.9 ms carried
		{int64(4 * ms), 1},
	} {
		if n := r.weigh(7, c.ran, ms); n != c.want {
			t.Errorf("%d: weigh at %d ns: %d intervals, want %d", i, c.ran, n, c.want)
		}
	}
	r.interrupted[7] = time.Now()
	r.forget(7)
	if len(r.ran)+len(r.credit)+len(r.interrupted) != 0 {
		t.Errorf("a thread forgotten is kept: %v %v %v", r.ran, r.credit, r.interrupted)
	}
}

// TestSamplerPtraceRound: the ptrace sampler's stop path over the fake
// process: a round interrupts each thread of the program (not a process
// that shares its memory without being it), no sooner than an interval
// after the last; the stop it brings places the thread's program counter
// in its function; a stop it did not ask for, or one PROFILE took itself
// (a system call it ran in the thread: consumed), places nothing.
func TestSamplerPtraceRound(t *testing.T) {
	const tid, child = 1 << 30, 1<<30 + 1 // (no such threads: /proc tells nothing of them, and they count as running)
	fp := newFakeProcess(instr.AMD64, &fakeMem{})
	fp.reg(tid).SetPC(0x1010) // in f
	th := &thread{tid: tid, tgid: tid}
	threads := map[int]*thread{tid: th, child: {tid: child, tgid: child, foreign: true}}
	s := newSampler(samplerEnv{plan: samplingPlan(), threads: threads, proc: fp, warn: func(*prf.Diagnostic) {}}, time.Hour)
	s.kind = datafile.PtraceSampler
	s.planted(0, 0, procmaps.Instance{Lo: 0x1000, Hi: 0x2000})
	if !s.interruptAll() {
		t.Fatal("a round interrupted no thread")
	}
	if got, want := fp.acts(), []string{fmt.Sprintf("interrupt %d", tid)}; !slices.Equal(got, want) {
		t.Errorf("a round asked %v, want %v", got, want)
	}
	if s.interruptAll() {
		t.Error("a second round within the interval")
	}
	s.sampleStop(th)
	s.sampleStop(th) // (a stop it did not ask for)
	if got := s.tally.samples; got[0] != 1 || got[1]+got[2]+got[3] != 0 {
		t.Errorf("samples %v, want one, of f", got)
	}
	s.rounds.round = time.Time{} // (a round due again)
	if !s.interruptAll() {
		t.Fatal("a round due interrupted no thread")
	}
	s.consumed(tid)
	s.sampleStop(th)
	if got := s.tally.samples[0]; got != 1 {
		t.Errorf("f's samples %d after a stop PROFILE took itself, want 1", got)
	}
}
