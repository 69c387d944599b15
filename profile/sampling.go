package profile

// Function sampling (/FS, method 523): the program counter of every
// thread, read every interval of the thread's CPU time, as profil(2) read
// it at every clock tick, while the profiled functions' calls are counted
// exactly in-process, as function counting counts them (gprof's -pg did
// both). A sample is placed in the function and the line whose code holds
// its program counter; a sample in no profiled function is time outside
// functions.
//
// Two samplers take the samples:
//
//   - perf: the kernel's software clock event of each thread
//     (PERF_COUNT_SW_TASK_CLOCK), opened at the thread's first stop,
//     before it runs, with a ring the kernel writes the samples into. A
//     goroutine of PROFILE reads the rings while the tracer waits for
//     stops: samples cost the program nothing but the kernel's
//     interrupt. Where the kernel allows it, its own code is sampled too
//     (sampling_kernel.go).
//   - ptrace, where the kernel refuses its events (perf_event_paranoid,
//     a seccomp filter): every interval PROFILE interrupts each thread,
//     and at its stop reads its program counter, weighed by the CPU time
//     the thread used since its last sample (schedstat), so that a thread
//     that slept is not sampled. It costs a stop per thread per sample,
//     and is warned about (PRF4675).
//
// Neither touches the program's timers or signals: a program that
// profiles itself (Go's runtime/pprof, SIGPROF) gets its own profile.
//
// A function-timing run whose books are kept in the program (ledger.go)
// samples too, by perf alone, for one figure: the share of the program's
// CPU time spent in PROFILE's own code (owncode.go).

import (
	"cmp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/profile/procmaps"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// The sampling intervals PROFILE takes (/S, in microseconds), and its
// default: 1 kHz, as perf's 4 kHz costs the program a tenth more
// (docs/design/sampling.md) and profil's 100 Hz is too coarse for a
// run of a second.
const (
	DefaultInterval = time.Millisecond
	MinInterval     = 100 * time.Microsecond
	MaxInterval     = time.Second
)

// drainEvery is how often the perf rings are read while the program runs:
// a ring holds half a second of one thread's samples at the shortest
// interval.
const drainEvery = 20 * time.Millisecond

// sampler is the run's sampler and what it found.
type sampler struct {
	env      samplerEnv
	interval time.Duration
	kind     datafile.Sampler

	// places is where each sampled program counter goes: replaced, never
	// changed, when a module is planted or forgotten, as the goroutine
	// reading the rings uses it.
	places atomic.Pointer[placeTable]
	// open opens the kernel's sampler of a thread (the process's
	// openSampler; a fake in unit tests).
	open func(tid int, o ptrace.SamplerOptions) (sampleRing, error)
	// stacks are the samples' stacks (sampling_stacks.go).
	stacks stackSampling
	// timing marks the sampler of a function-timing run whose books are
	// kept in the program (newOwnCodeSampler): it samples by perf alone,
	// for the share of PROFILE's own code (ownCode), gives the run's
	// figures nothing and warns of nothing. started is set once start
	// took the main thread (by perf, or for function sampling by
	// ptrace).
	timing  bool
	started bool
	// mu guards the perf samplers and the tally.
	mu         sync.Mutex
	perf       map[int]sampleRing // by thread
	tally      tally
	readErr    error // the first ring that could not be read
	stop, done chan struct{}
	// unsampled counts the threads whose clock event the kernel refused
	// after it took the main thread's (its memory for the rings, say),
	// and openErr is the first refusal; partial is set once one was.
	unsampled int
	partial   bool
	openErr   error
	// stopped is set at an exec: the new image is not sampled.
	stopped bool

	// rounds are the ptrace sampler's (sampling_ptrace.go).
	rounds ptraceRounds

	// kernel is whether the samples see the kernel's time, and the CPU
	// time the program spent there (sampling_kernel.go).
	kernel kernelSampling
}

// samplerEnv is what the sampler needs of the run: the plan, the
// program's threads and process (the ptrace sampler stops them; set when
// the process is obtained: tracer.choose), the trampolines written (a
// sample in one is its function's), the executable areas PROFILE mapped
// in the program (own: PROFILE's own code, read on the tracer's goroutine
// when a module is planted or forgotten; nil for none), and where
// warnings go.
type samplerEnv struct {
	plan     *datafile.Plan
	threads  map[int]*thread
	proc     process
	counters *counters
	own      func() [][2]uint64
	warn     func(*prf.Diagnostic)
	arch     string // GOARCH
}

// sampleRing is the ring of one thread's samples: a [ptrace.Sampler],
// or a fake in the unit tests.
type sampleRing interface {
	Read(fn func(*ptrace.Sample)) (lost uint64, err error)
	Close() error
}

// newSampler prepares the sampling of a run every interval.
func newSampler(env samplerEnv, interval time.Duration) *sampler {
	s := &sampler{
		env:      env,
		interval: interval,
		kind:     datafile.PerfSampler,
		perf:     map[int]sampleRing{},
		tally:    newTally(env.plan),
		rounds:   newPtraceRounds(),
		// (Stacks answer the callers of each function, which /AT's
		// exact arcs answer already.)
		stacks: stackSampling{want: env.plan.Method == datafile.FuncSampling && !env.plan.Attribution},
	}
	s.open = func(tid int, o ptrace.SamplerOptions) (sampleRing, error) {
		ps, err := s.env.proc.openSampler(tid, o)
		if err != nil {
			return nil, err // (not a nil *ptrace.Sampler in a ring)
		}
		return ps, nil
	}
	s.places.Store(&placeTable{})
	return s
}

// start samples the main thread, stopped before its first instruction,
// and starts reading the rings; where the kernel refuses its events, it
// falls back to ptrace, with a warning. A timing run's sampler does not:
// it samples nothing, silently (a stop per sample would cost the timed
// program more than its figure is worth).
func (s *sampler) start(tid int) {
	if s.stacks.want && !s.timing {
		s.startStacks(tid)
	}
	if err := s.openPerf(tid); err != nil {
		if s.timing {
			return
		}
		s.kind = datafile.PtraceSampler
		s.started = true
		s.env.warn(prf.PtraceSampler(err, s.interval))
		return
	}
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	s.mu.Lock()
	s.started = true
	s.mu.Unlock()
	go s.drainLoop(s.drainInterval())
}

// openPerf opens the kernel's sampler of thread tid, with its stack
// where the run takes stacks: where the kernel refuses the ring a stack
// sampler needs (the locked memory of the rings), one of program
// counters alone, the thread counted for a warning at the end (PRF4686).
func (s *sampler) openPerf(tid int) error {
	o := s.options()
	ps, err := s.openKernel(tid, o)
	if err != nil && o.Stack > 0 && !ptrace.IsNoProcess(err) {
		o.Stack = 0
		if ps, _ = s.openKernel(tid, o); ps != nil {
			s.stacks.stackless++
			s.stacks.refused = cmp.Or(s.stacks.refused, err)
			err = nil
		}
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.perf[tid] = ps
	s.mu.Unlock()
	return nil
}

// threadBorn samples a new thread of the program, at its first stop (a
// foreign process is not the program's). A thread the kernel refuses a
// clock event (having given the main thread one: the memory of the rings
// is limited, RLIMIT_MEMLOCK) is not sampled, and counted for a warning
// at the end (PRF4678). A timing run's sampler samples the threads only
// once the kernel gave the main thread its event (start).
func (s *sampler) threadBorn(tid int, foreign bool) error {
	if s.kind != datafile.PerfSampler || s.stopped || foreign || s.timing && !s.started {
		return nil
	}
	if err := s.openPerf(tid); err != nil && !ptrace.IsNoProcess(err) {
		s.unsampled++
		s.partial = true
		if s.openErr == nil {
			s.openErr = err
		}
	}
	return nil
}

// threadEnded reads the last samples of thread tid, gone, and closes its
// sampler.
func (s *sampler) threadEnded(tid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rounds.forget(tid)
	if ps := s.perf[tid]; ps != nil {
		s.drainOne(ps, s.places.Load())
		ps.Close()
		delete(s.perf, tid)
	}
}

// drainLoop reads the rings every interval until stop is closed.
func (s *sampler) drainLoop(interval time.Duration) {
	defer close(s.done)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
			s.drain()
		}
	}
}

// drainInterval is how often the rings are read: every drainEvery, or
// more often where a ring holds less than four times that (a ring of
// stacks: ptrace.RingHolds).
func (s *sampler) drainInterval() time.Duration {
	return min(drainEvery, max(time.Millisecond, ptrace.RingHolds(s.options())/4))
}

// drain reads every ring.
func (s *sampler) drain() {
	s.mu.Lock()
	defer s.mu.Unlock()
	places := s.places.Load()
	for _, ps := range s.perf {
		s.drainOne(ps, places)
	}
	if s.stacks.tally != nil {
		s.stacks.tally.frames.drained()
	}
}

// drainOne reads one ring; s.mu is held.
func (s *sampler) drainOne(ps sampleRing, places *placeTable) {
	lost, err := ps.Read(func(sm *ptrace.Sample) {
		fn, own := s.tally.place(places, sm.PC, 1, sm.Kernel)
		if s.stacks.tally != nil && !own {
			s.stacks.tally.take(places, sm, fn, 1)
		}
	})
	s.tally.lost += lost
	if err != nil && s.readErr == nil {
		s.readErr = err // (warned at the end, from the tracer's goroutine: PRF4679)
	}
}

// ended stops reading the rings, reads them a last time and closes them.
// The tally stays (ownCode). A timing run's sampler warns of nothing: its
// samples are no figure of the run's.
func (s *sampler) ended() {
	if s.stop != nil {
		close(s.stop)
		<-s.done
		s.stop = nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	places := s.places.Load()
	for tid, ps := range s.perf {
		s.drainOne(ps, places)
		ps.Close()
		delete(s.perf, tid)
	}
	if s.stacks.tally != nil {
		s.stacks.tally.frames.close()
	}
	s.stacks.close()
	if s.timing {
		s.readErr, s.unsampled = nil, 0
	}
	if s.readErr != nil {
		s.env.warn(prf.SamplesUnreadable(s.readErr))
		s.readErr = nil
	}
	if s.unsampled > 0 {
		s.env.warn(prf.UnsampledThreads(s.unsampled, s.openErr))
		s.unsampled = 0
	}
	if s.stacks.stackless > 0 {
		s.env.warn(prf.StacklessThreads(s.stacks.stackless, s.stacks.refused))
		s.stacks.stackless = 0
	}
}

// execed stops sampling at an exec: the new image's samples would all be
// outside functions.
func (s *sampler) execed() {
	s.forget(0, ^uint64(0), nil)
	s.ended()
	s.stopped = true
}

// noteTimes reads the program's CPU time in the kernel at an exit stop of
// its threads: the last one read holds them all (the kernel sums the
// threads that ended into the process's). A timing run's sampler, which
// gives no figure, reads nothing.
func (s *sampler) noteTimes(pid int) {
	if s.timing {
		return
	}
	if _, kernel, err := cpuTimes(pid); err == nil {
		s.kernel.time = kernel
	}
}

// lastMap reads the program's memory map at the exit stop of its last
// thread, the last moment it has one, for the samples read after
// (keptMap).
func (s *sampler) lastMap() {
	if s.stacks.maps != nil {
		s.stacks.maps.read()
	}
}

// stats fills the sampling figures of a run: the samples, and the times
// they estimate. A timing run's sampler leaves the figures as they are:
// its samples only measure PROFILE's own code (ownCode).
func (s *sampler) stats(st *datafile.Stats) {
	if s.timing {
		return
	}
	iv := int64(s.interval)
	if s.kind == datafile.PtraceSampler {
		// (Its samples are weighed by the threads' whole CPU time, the
		// kernel's included: none is left out.)
		s.kernel.time = 0
	}
	f := &s.tally
	st.Sampling = datafile.SamplingStats{
		Interval:    iv,
		Sampler:     s.kind,
		Samples:     f.samples,
		LineSamples: f.lineSamples,
		Outside:     f.outside,
		Overhead:    f.overhead,
		Lost:        f.lost,
		KernelTime:  int64(s.kernel.time),
	}
	st.FuncTime = make([]int64, len(f.samples))
	all := f.outside
	for i, n := range f.samples {
		st.FuncTime[i] = int64(n) * iv
		all += n
	}
	st.TotalTime, st.OutsideTime = int64(all)*iv, int64(f.outside)*iv
	s.kernelFigures(&st.Sampling)
	if s.stacks.tally != nil {
		s.stacks.tally.figures(st, s.env.plan, iv)
		s.stacks.tally.warn(s.env.warn)
	} else {
		st.ChildTime = childTimes(st.FuncTime, st.Hits, st.Stacks)
		stackTimes(st)
	}
	if f.lost > 0 {
		s.env.warn(prf.LostSamples(f.lost, all))
	}
}

// planted adds module mi, loaded with bias as instance in, to the places,
// once its trampolines are written, with PROFILE's own code as it is then
// (every area PROFILE maps, it maps planting a module, or before the
// first: the counters' page, the closer's, the calibration's code).
func (s *sampler) planted(mi int, bias uint64, in procmaps.Instance) {
	var tramps []*tramp
	if s.env.counters != nil {
		tramps = s.env.counters.tramps
	}
	p := s.places.Load().with(s.env.plan, mi, bias, in.Lo, in.Hi, tramps)
	if s.env.own != nil {
		p = p.withOwn(s.env.own())
	}
	s.places.Store(p)
}

// forget reads the rings before the code in [lo, hi) goes, and drops it
// from the places, with the areas PROFILE mapped beside it (its own code
// unmapped with it).
func (s *sampler) forget(lo, hi uint64, areas [][2]uint64) {
	s.drain()
	s.places.Store(s.places.Load().without(lo, hi, areas))
}

// tally is what the samples found: the samples in each function and
// each line, those in no profiled function, those in PROFILE's code
// that is no function's (overhead: its counting, not the instructions
// of a function's a trampoline carries), and those the kernel lost (a
// ring full before PROFILE read it); those taken in the kernel, and of
// them those in each function; and, across the functions, those in
// PROFILE's own code and all those taken (ownCode).
type tally struct {
	samples       []uint64
	lineSamples   []uint64
	outside       uint64
	overhead      uint64
	lost          uint64
	kernel        uint64
	kernelSamples []uint64
	own, all      uint64
}

// newTally returns the empty tally of a run of plan.
func newTally(plan *datafile.Plan) tally {
	return tally{
		samples:       make([]uint64, len(plan.Funcs)),
		lineSamples:   make([]uint64, len(plan.Lines)),
		kernelSamples: make([]uint64, len(plan.Funcs)),
	}
}

// place counts n samples at program counter pc, taken in the kernel when
// kernel is set (pc is then where the thread will return to user space:
// after the system call, or the faulting instruction), and returns the function
// they fell in (-1: none; of a function inlined there, the innermost:
// sampling_inlined.go), and whether they are the profiler's overhead.
func (f *tally) place(places *placeTable, pc uint64, n uint64, kernel bool) (fn int, overhead bool) {
	f.all += n
	if kernel {
		f.kernel += n
	}
	own := places.inOwn(pc)
	if own {
		f.own += n
	}
	fn, line := places.find(pc)
	if fn >= 0 && len(places.inlined) > 0 {
		// (In a trampoline, at the instruction of the function's that it
		// carries, as the stack's frames are found: stackTally.take.)
		fn = places.innermost(fn, places.origin(pc))
	}
	switch {
	case fn < 0 && own:
		f.overhead += n
		return fn, true
	case fn < 0:
		f.outside += n
		return fn, false
	}
	f.samples[fn] += n
	if kernel {
		f.kernelSamples[fn] += n
	}
	if line >= 0 {
		f.lineSamples[line] += n
	}
	return fn, false
}
