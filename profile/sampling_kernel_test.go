package profile

import (
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// TestKernelSampling: the samplers ask for the kernel's ticks; a sample
// taken in the kernel is placed at its user PC like any other and counted
// apart, in all and in its function, and without stacks a function's
// kernel samples with children are its own; the run then records no
// kernel time beside the samples.
func TestKernelSampling(t *testing.T) {
	plan := samplingPlan()
	s := newSampler(samplerEnv{plan: plan, warn: func(d *prf.Diagnostic) { t.Errorf("warning %v", d) }}, time.Millisecond)
	rings := &fakeSampleRings{rings: map[int]*fakeSampleRing{}}
	s.open = rings.open
	if err := s.openPerf(101); err != nil {
		t.Fatal(err)
	}
	if !rings.options[101].Kernel {
		t.Fatalf("options %+v: the kernel not asked for", rings.options[101])
	}
	s.places.Store((&placeTable{}).with(plan, 0, 0, 0x1000, 0x2000, nil))
	r := rings.rings[101]
	r.put(0x1010, 0x1010, 0x1110)
	r.putSample(ptrace.Sample{PC: 0x1010, Kernel: true})
	r.putSample(ptrace.Sample{PC: 0x1110, Kernel: true})
	r.putSample(ptrace.Sample{PC: 0x1110, Kernel: true})
	r.putSample(ptrace.Sample{PC: 0x8000, Kernel: true}) // (outside)
	r.putSample(ptrace.Sample{Kernel: true})             // (no user registers: outside)
	s.kernel.time = 7 * time.Millisecond                 // (read at an exit: every sample saw it)
	s.ended()
	st := &datafile.Stats{Hits: make([]uint64, len(plan.Funcs))}
	s.stats(st)
	sm := st.Sampling
	if sm.Kernel != 5 || sm.KernelTime != 0 || sm.Outside != 2 {
		t.Errorf("kernel samples %d, kernel time %d, outside %d; want 5, 0 and 2", sm.Kernel, sm.KernelTime, sm.Outside)
	}
	if want := []uint64{3, 3, 0, 0}; !slices.Equal(sm.Samples, want) {
		t.Errorf("samples %v, want %v", sm.Samples, want)
	}
	if want := []uint64{1, 2, 0, 0}; !slices.Equal(sm.KernelSamples, want) || !slices.Equal(sm.KernelChildSamples, want) {
		t.Errorf("kernel samples %v, with children %v; want %v for both", sm.KernelSamples, sm.KernelChildSamples, want)
	}
	if err := (&datafile.Counts{PlanID: plan.ID, Method: plan.Method, Stats: *st}).Validate(); err != nil {
		t.Errorf("the figures do not validate: %v", err)
	}
}

// TestKernelRefused: where the kernel refuses the samples of its own code
// (EACCES), the thread is sampled in user space alone and no later thread
// asks; the run has no kernel samples and keeps the kernel time no sample
// saw. A refusal of everything is the caller's to handle.
func TestKernelRefused(t *testing.T) {
	plan := samplingPlan()
	s := newSampler(samplerEnv{plan: plan, warn: func(*prf.Diagnostic) {}}, time.Millisecond)
	var asked []ptrace.SamplerOptions
	s.open = func(tid int, o ptrace.SamplerOptions) (sampleRing, error) {
		asked = append(asked, o)
		if o.Kernel || tid == 103 {
			return nil, syscall.EACCES
		}
		return &fakeSampleRing{}, nil
	}
	for _, tid := range []int{101, 102} {
		if err := s.openPerf(tid); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.openPerf(103); err == nil {
		t.Error("thread 103 refused everything: no error")
	}
	if len(asked) != 4 || !asked[0].Kernel || asked[1].Kernel || asked[2].Kernel || asked[3].Kernel {
		t.Errorf("options asked %+v: want the kernel once, then never", asked)
	}
	s.kernel.time = 7 * time.Millisecond
	s.ended()
	st := &datafile.Stats{Hits: make([]uint64, len(plan.Funcs))}
	s.stats(st)
	if sm := st.Sampling; sm.KernelSamples != nil || sm.Kernel != 0 || sm.KernelTime != int64(7*time.Millisecond) {
		t.Errorf("kernel samples %v (%d), kernel time %d: want none, and 7 ms not sampled", sm.KernelSamples, sm.Kernel, sm.KernelTime)
	}
}

// TestStackTallyKernel: a function's kernel samples with children are
// those of the chains it is in, each sample once however often the
// function recurs, those outside profiled functions included.
func TestStackTallyKernel(t *testing.T) {
	const main, f, g = 0, 1, 2
	plan := &datafile.Plan{Method: datafile.FuncSampling, Funcs: []datafile.Func{{Name: "main"}, {Name: "f"}, {Name: "g"}}}
	tl := newStackTally(nil)
	tl.count(f, []int{f, f, main}, 4, true)
	tl.count(g, []int{g, f, main}, 2, true)
	tl.count(-1, []int{-1, g, main}, 3, true) // (in the C library g called)
	tl.count(g, []int{g, main}, 10, false)
	var st datafile.Stats
	st.Sampling.KernelChildSamples = make([]uint64, len(plan.Funcs))
	tl.figures(&st, plan, 1000)
	if want := []uint64{9, 6, 5}; !slices.Equal(st.Sampling.KernelChildSamples, want) {
		t.Errorf("kernel samples with children %v, want %v", st.Sampling.KernelChildSamples, want)
	}
}

// TestKernelRefusedLater: once a thread's kernel time is sampled, a
// thread the kernel refuses is not sampled (PRF4678) rather than sampled
// in user space alone, whose kernel time no figure would hold, and later
// threads still ask; a ring the kernel's limit on locked memory refuses
// (ptrace.RingError, EPERM) is no refusal of the kernel's samples.
func TestKernelRefusedLater(t *testing.T) {
	plan := samplingPlan()
	var warned []*prf.Diagnostic
	s := newSampler(samplerEnv{plan: plan, warn: func(d *prf.Diagnostic) { warned = append(warned, d) }}, time.Millisecond)
	asked := map[int][]bool{}
	s.open = func(tid int, o ptrace.SamplerOptions) (sampleRing, error) {
		asked[tid] = append(asked[tid], o.Kernel)
		switch {
		case tid == 102 && o.Kernel:
			return nil, syscall.EACCES
		case tid == 103:
			return nil, &ptrace.RingError{Err: syscall.EPERM}
		}
		return &fakeSampleRing{}, nil
	}
	s.start(101)
	for _, tid := range []int{102, 103, 104} {
		s.threadBorn(tid, false)
	}
	want := map[int][]bool{101: {true}, 102: {true}, 103: {true}, 104: {true}}
	for tid, w := range want {
		if !slices.Equal(asked[tid], w) {
			t.Errorf("thread %d asked for the kernel %v, want %v", tid, asked[tid], w)
		}
	}
	if s.kernel.refused || !s.kernel.sampled {
		t.Errorf("refused %v, sampled %v: want the kernel sampled", s.kernel.refused, s.kernel.sampled)
	}
	s.ended()
	if len(warned) != 1 || warned[0].Code != 4678 || !strings.HasPrefix(warned[0].Text, "2 threads were not sampled") {
		t.Errorf("warnings %v, want one PRF4678 for 2 threads", warned)
	}
}
