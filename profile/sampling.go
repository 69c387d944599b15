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
//     (PERF_COUNT_SW_TASK_CLOCK, user space only), opened at the thread's
//     first stop, before it runs, with a ring the kernel writes the
//     samples into. A goroutine of PROFILE reads the rings while the
//     tracer waits for stops: samples cost the program nothing but the
//     kernel's interrupt.
//   - ptrace, where the kernel refuses its events (perf_event_paranoid,
//     a seccomp filter): every interval PROFILE interrupts each thread,
//     and at its stop reads its program counter, weighed by the CPU time
//     the thread used since its last sample (schedstat), so that a thread
//     that slept is not sampled. It costs a stop per thread per sample,
//     and is warned about (PRF4675).
//
// Neither touches the program's timers or signals: a program that
// profiles itself (Go's runtime/pprof, SIGPROF) gets its own profile.

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/prf"
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
	t        *tracer
	interval time.Duration
	kind     datafile.Sampler

	// places is where each sampled program counter goes: replaced, never
	// changed, when a module is planted or forgotten, as the goroutine
	// reading the rings uses it.
	places atomic.Pointer[placeTable]
	// open opens the kernel's sampler of a thread (the process's
	// openSampler; a fake in unit tests).
	open func(tid int, period time.Duration) (*ptrace.Sampler, error)
	// mu guards the perf samplers and the figures.
	mu          sync.Mutex
	perf        map[int]*ptrace.Sampler // by thread
	samples     []uint64
	lineSamples []uint64
	outside     uint64
	lost        uint64
	readErr     error // the first ring that could not be read
	stop, done  chan struct{}
	// unsampled counts the threads whose clock event the kernel refused
	// after it took the main thread's (its memory for the rings, say),
	// and openErr is the first refusal.
	unsampled int
	openErr   error
	// ended is set at an exec: the new image is not sampled.
	ended bool

	// The ptrace sampler's: each thread's CPU time at its last sample, and
	// what is left of it short of an interval; when each thread
	// interrupted for a sample was; when the last round was.
	ran         map[int]int64
	credit      map[int]int64
	interrupted map[int]time.Time
	round       time.Time

	// kernel is the CPU time the program spent in the kernel, read at
	// its threads' exits.
	kernel time.Duration
}

// newSampler prepares the sampling of a run every interval.
func newSampler(t *tracer, interval time.Duration) *sampler {
	s := &sampler{
		t:           t,
		interval:    interval,
		kind:        datafile.PerfSampler,
		open:        func(tid int, period time.Duration) (*ptrace.Sampler, error) { return t.proc.openSampler(tid, period) },
		perf:        map[int]*ptrace.Sampler{},
		samples:     make([]uint64, len(t.plan.Funcs)),
		lineSamples: make([]uint64, len(t.plan.Lines)),
		ran:         map[int]int64{},
		credit:      map[int]int64{},
		interrupted: map[int]time.Time{},
	}
	s.places.Store(&placeTable{})
	return s
}

// start samples the main thread, stopped before its first instruction,
// and starts reading the rings; where the kernel refuses its events, it
// falls back to ptrace, with a warning.
func (s *sampler) start(tid int) {
	if err := s.openPerf(tid); err != nil {
		s.kind = datafile.PtraceSampler
		s.t.cfg.Warn(prf.PtraceSampler(err, s.interval))
		return
	}
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go s.drainLoop()
}

// openPerf opens the kernel's sampler of thread tid.
func (s *sampler) openPerf(tid int) error {
	ps, err := s.open(tid, s.interval)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.perf[tid] = ps
	s.mu.Unlock()
	return nil
}

// threadStarted samples a new thread of the program, at its first stop.
// A thread the kernel refuses a clock event (having given the main thread
// one: the memory of the rings is limited, RLIMIT_MEMLOCK) is not
// sampled, and counted for a warning at the end (PRF4678).
func (s *sampler) threadStarted(tid int) {
	if s.kind != datafile.PerfSampler || s.ended {
		return
	}
	if err := s.openPerf(tid); err != nil && !ptrace.IsNoProcess(err) {
		s.unsampled++
		if s.openErr == nil {
			s.openErr = err
		}
	}
}

// threadEnded reads the last samples of thread tid, gone, and closes its
// sampler.
func (s *sampler) threadEnded(tid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.ran, tid)
	delete(s.credit, tid)
	delete(s.interrupted, tid)
	if ps := s.perf[tid]; ps != nil {
		s.drainOne(ps, s.places.Load())
		ps.Close()
		delete(s.perf, tid)
	}
}

// drainLoop reads the rings every drainEvery until stop is closed.
func (s *sampler) drainLoop() {
	defer close(s.done)
	tick := time.NewTicker(drainEvery)
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

// drain reads every ring.
func (s *sampler) drain() {
	s.mu.Lock()
	defer s.mu.Unlock()
	places := s.places.Load()
	for _, ps := range s.perf {
		s.drainOne(ps, places)
	}
}

// drainOne reads one ring; s.mu is held.
func (s *sampler) drainOne(ps *ptrace.Sampler, places *placeTable) {
	lost, err := ps.Read(func(pc uint64) { s.place(places, pc, 1) })
	s.lost += lost
	if err != nil && s.readErr == nil {
		s.readErr = err // (warned at the end, from the tracer's goroutine: PRF4679)
	}
}

// place counts n samples at program counter pc; s.mu is held.
func (s *sampler) place(places *placeTable, pc uint64, n uint64) {
	fn, line := places.find(pc)
	if fn < 0 {
		s.outside += n
		return
	}
	s.samples[fn] += n
	if line >= 0 {
		s.lineSamples[line] += n
	}
}

// finish stops reading the rings, reads them a last time and closes them.
func (s *sampler) finish() {
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
	if s.readErr != nil {
		s.t.cfg.Warn(prf.SamplesUnreadable(s.readErr))
		s.readErr = nil
	}
	if s.unsampled > 0 {
		s.t.cfg.Warn(prf.UnsampledThreads(s.unsampled, s.openErr))
		s.unsampled = 0
	}
}

// execed stops sampling at an exec: the new image's samples would all be
// outside functions.
func (s *sampler) execed() {
	s.forget(0, ^uint64(0), nil)
	s.finish()
	s.ended = true
}

// noteTimes reads the program's CPU time in the kernel at an exit stop of
// its threads: the last one read holds them all (the kernel sums the
// threads that ended into the process's).
func (s *sampler) noteTimes(pid int) {
	if _, kernel, err := cpuTimes(pid); err == nil {
		s.kernel = kernel
	}
}

// stats fills the sampling figures of a run: the samples, and the times
// they estimate.
func (s *sampler) stats(st *datafile.Stats) {
	iv := int64(s.interval)
	if s.kind == datafile.PtraceSampler {
		// (Its samples are weighed by the threads' whole CPU time, the
		// kernel's included: none is left out.)
		s.kernel = 0
	}
	st.Sampling = datafile.SamplingStats{
		Interval:    iv,
		Sampler:     s.kind,
		Samples:     s.samples,
		LineSamples: s.lineSamples,
		Outside:     s.outside,
		Lost:        s.lost,
		KernelTime:  int64(s.kernel),
	}
	st.FuncTime = make([]int64, len(s.samples))
	all := s.outside
	for i, n := range s.samples {
		st.FuncTime[i] = int64(n) * iv
		all += n
	}
	st.TotalTime, st.OutsideTime = int64(all)*iv, int64(s.outside)*iv
	st.ChildTime = childTimes(st.FuncTime, st.Hits, st.Stacks)
	stackTimes(st)
	if s.lost > 0 {
		s.t.cfg.Warn(prf.LostSamples(s.lost, all))
	}
}

// The ptrace sampler.

// wantsRound reports whether the ptrace sampler is due a round: every
// thread is looked at once an interval.
func (s *sampler) wantsRound() bool {
	return s.kind == datafile.PtraceSampler && !s.ended && time.Since(s.round) >= s.interval
}

// pollEvery is how often the tracer looks for a round due while it waits
// for stops (ptrace sampler).
func (s *sampler) pollEvery() time.Duration {
	return min(max(s.interval/4, 50*time.Microsecond), 5*time.Millisecond)
}

// interruptAll interrupts, for a sample, every thread of the program that
// is running and has used an interval of CPU time since its last sample;
// it reports whether it interrupted any. (The stop comes as an EventStop:
// sampleStop.) A thread that sleeps, in a system call that blocks, is not
// interrupted: an interrupt would end the call with EINTR, as a stop
// signal does.
func (s *sampler) interruptAll() bool {
	if !s.wantsRound() {
		return false
	}
	s.round = time.Now()
	interrupted := false
	for tid, th := range s.t.threads {
		// (A thread whose interrupt has not stopped it yet is not
		// interrupted again, for a while: it may be in a group stop,
		// which it leaves at the program's SIGCONT.)
		if at, ok := s.interrupted[tid]; th.foreign || ok && time.Since(at) < 100*s.interval {
			continue
		}
		if ran, err := runTime(th.tgid, tid); err == nil && ran-s.ran[tid]+s.credit[tid] < int64(s.interval) {
			continue
		}
		if !running(th.tgid, tid) {
			continue
		}
		if s.t.proc.interrupt(tid) == nil {
			s.interrupted[tid] = s.round
			interrupted = true
		}
	}
	return interrupted
}

// sampleStop takes the sample of thread th, if an interrupt of
// interruptAll stopped it: its program counter, weighed by the intervals
// of CPU time it used since its last sample (one, where the system keeps
// no schedstat).
func (s *sampler) sampleStop(th *thread) {
	tid := th.tid
	if _, ok := s.interrupted[tid]; !ok {
		return
	}
	delete(s.interrupted, tid)
	var regs ptrace.Regs
	if err := s.t.proc.getRegs(tid, &regs); err != nil {
		return
	}
	n := int64(1)
	if ran, err := runTime(th.tgid, tid); err == nil {
		credit := s.credit[tid] + ran - s.ran[tid]
		s.ran[tid] = ran
		n = credit / int64(s.interval)
		s.credit[tid] = credit - n*int64(s.interval)
	}
	if n <= 0 {
		return
	}
	s.mu.Lock()
	s.place(s.places.Load(), regs.PC(), uint64(n))
	s.mu.Unlock()
}

// consumed notes that the stop of thread tid an interrupt of the sampler
// would have made was taken by PROFILE itself (a system call it ran in
// the thread: stepSyscall).
func (s *sampler) consumed(tid int) { delete(s.interrupted, tid) }

// The places of program counters.

// placeTable says which function, and which line, holds each program
// counter of the modules planted: the functions' code sorted by address,
// and the start of every line's code.
type placeTable struct {
	funcs []codeSpan
	lines []lineStart
}

// codeSpan is the code [lo, hi) of function fn (a function's own, or a
// trampoline of its entry).
type codeSpan struct {
	lo, hi uint64
	fn     int
	tramp  bool
}

// lineStart is the start of a range of line's code (an index in
// Plan.Lines).
type lineStart struct {
	addr uint64
	line int
}

// find returns the function holding pc and its line, or -1.
func (p *placeTable) find(pc uint64) (fn, line int) {
	i, _ := slices.BinarySearchFunc(p.funcs, pc, func(c codeSpan, pc uint64) int {
		if pc < c.lo {
			return 1
		}
		if pc >= c.hi {
			return -1
		}
		return 0
	})
	if i >= len(p.funcs) || pc < p.funcs[i].lo || pc >= p.funcs[i].hi {
		return -1, -1
	}
	c := p.funcs[i]
	if c.tramp {
		return c.fn, -1
	}
	j, found := slices.BinarySearchFunc(p.lines, pc, func(l lineStart, pc uint64) int { return cmp.Compare(l.addr, pc) })
	if !found {
		j--
	}
	if j < 0 || p.lines[j].addr < c.lo {
		return c.fn, -1
	}
	return c.fn, p.lines[j].line
}

// with returns a table with the functions and lines of module mi, loaded
// with bias in [lo, hi), added, and the trampolines of their entries.
func (p *placeTable) with(plan *datafile.Plan, mi int, bias, lo, hi uint64, tramps []*tramp) *placeTable {
	q := &placeTable{funcs: slices.Clone(p.funcs), lines: slices.Clone(p.lines)}
	byEntry := map[uint64]int{}
	for i := range plan.Funcs {
		f := &plan.Funcs[i]
		if f.Module != mi {
			continue
		}
		byEntry[f.Entry+bias] = i
		if f.High > f.Low {
			q.funcs = append(q.funcs, codeSpan{lo: f.Low + bias, hi: f.High + bias, fn: i})
		}
	}
	for _, tr := range tramps {
		if fn, ok := byEntry[tr.patch.Site]; ok && tr.patch.Site >= lo && tr.patch.Site < hi {
			q.funcs = append(q.funcs, codeSpan{lo: tr.addr, hi: tr.addr + uint64(len(tr.code.Code)), fn: fn, tramp: true})
		}
	}
	for i := range plan.Lines {
		if l := &plan.Lines[i]; l.Module == mi {
			for _, a := range l.Addrs {
				q.lines = append(q.lines, lineStart{a + bias, i})
			}
		}
	}
	q.sort()
	return q
}

// without returns a table without the code in [lo, hi), a module's
// instance unmapped (and its trampolines, in the areas next to it).
func (p *placeTable) without(lo, hi uint64, areas [][2]uint64) *placeTable {
	gone := func(a uint64) bool {
		if a >= lo && a < hi {
			return true
		}
		for _, ar := range areas {
			if a >= ar[0] && a < ar[0]+ar[1] {
				return true
			}
		}
		return false
	}
	q := &placeTable{
		funcs: slices.DeleteFunc(slices.Clone(p.funcs), func(c codeSpan) bool { return gone(c.lo) }),
		lines: slices.DeleteFunc(slices.Clone(p.lines), func(l lineStart) bool { return gone(l.addr) }),
	}
	return q
}

// sort orders the table; of overlapping functions (aliases, or a
// function's code PREP saw twice) the first by address keeps the span.
func (p *placeTable) sort() {
	slices.SortFunc(p.funcs, func(a, b codeSpan) int { return cmp.Or(cmp.Compare(a.lo, b.lo), cmp.Compare(b.hi, a.hi)) })
	out := p.funcs[:0]
	for _, c := range p.funcs {
		if n := len(out); n > 0 && c.lo < out[n-1].hi {
			if c.hi <= out[n-1].hi {
				continue
			}
			c.lo = out[n-1].hi
		}
		out = append(out, c)
	}
	p.funcs = out
	slices.SortStableFunc(p.lines, func(a, b lineStart) int { return cmp.Compare(a.addr, b.addr) })
}

// planted adds module mi, loaded with bias as instance in, to the places,
// once its trampolines are written.
func (s *sampler) planted(mi int, bias uint64, in instance) {
	var tramps []*tramp
	if s.t.counters != nil {
		tramps = s.t.counters.tramps
	}
	s.places.Store(s.places.Load().with(s.t.plan, mi, bias, in.lo, in.hi, tramps))
}

// forget reads the rings before the code in [lo, hi) goes, and drops it
// from the places.
func (s *sampler) forget(lo, hi uint64, areas [][2]uint64) {
	s.drain()
	s.places.Store(s.places.Load().without(lo, hi, areas))
}

// Times of the program's threads, from /proc.

// clockTick is the unit of /proc's CPU times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// cpuTimes returns process pid's CPU times, user and kernel, from
// /proc/PID/stat: its threads', ended ones included.
func cpuTimes(pid int) (user, kernel time.Duration, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	// The fields after the command's name, which may hold anything up to
	// its last ')': state is field 3, utime 14 and stime 15.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, 0, errors.New("malformed stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, 0, errors.New("malformed stat")
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	k, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, err
	}
	return time.Duration(u) * clockTick, time.Duration(k) * clockTick, nil
}

// running reports whether thread tid of process pid is running or
// runnable (state R in /proc/PID/task/TID/stat), not asleep in a system
// call; true when it cannot tell.
func running(pid, tid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid))
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'R'
}

// runTime returns the CPU time thread tid of process pid has run, in
// nanoseconds (/proc/PID/task/TID/schedstat, its first field).
func runTime(pid, tid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/schedstat", pid, tid))
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, errors.New("empty schedstat")
	}
	return strconv.ParseInt(f[0], 10, 64)
}

// Time with children.

// childTimes returns each function's time with its children, from self,
// the time in each function itself, as gprof propagates it along the
// exact arcs of the call graph: a function's time with children is its
// own plus, for each function it calls, that callee's time with children
// in the share of the callee's calls from other functions that came from
// it (a function's calls of itself are no share of anyone's). The arcs are the
// nearest profiled callers of the attribution stacks (/AT); without them
// a function's time with children is its own. A call that closes a cycle
// of calls (recursion) passes no time back up the cycle: gprof would
// merge the cycle into one entry instead.
func childTimes(self []int64, hits []uint64, stacks []datafile.Stack) []int64 {
	all := slices.Clone(self)
	if len(stacks) == 0 {
		return all
	}
	calls := make([]map[int]uint64, len(self)) // caller -> callee -> calls
	for i := range stacks {
		k := &stacks[i]
		caller := k.Callers[len(k.Callers)-1]
		if caller < 0 || caller >= len(self) || k.Func < 0 || k.Func >= len(self) {
			continue
		}
		if calls[caller] == nil {
			calls[caller] = map[int]uint64{}
		}
		calls[caller][k.Func] += k.Hits
	}
	const (
		unseen = iota
		open
		done
	)
	state := make([]uint8, len(self))
	total := make([]float64, len(self))
	var visit func(f int) float64
	visit = func(f int) float64 {
		switch state[f] {
		case open:
			return 0 // a cycle
		case done:
			return total[f]
		}
		state[f] = open
		t := float64(self[f])
		for _, g := range slices.Sorted(maps.Keys(calls[f])) {
			// (Of g's calls, those from g itself are not shares.)
			outer := hits[g] - min(calls[g][g], hits[g])
			if g == f || outer == 0 {
				continue
			}
			share := float64(calls[f][g]) / float64(outer)
			t += visit(g) * min(share, 1)
		}
		state[f] = done
		total[f] = t
		return t
	}
	for f := range self {
		all[f] = int64(visit(f) + 0.5)
	}
	return all
}

// stackTimes gives each attribution stack of st its share of its
// function's times, in proportion to its calls.
func stackTimes(st *datafile.Stats) {
	for i := range st.Stacks {
		k := &st.Stacks[i]
		if k.Func < 0 || k.Func >= len(st.FuncTime) || st.Hits[k.Func] == 0 {
			continue
		}
		share := float64(k.Hits) / float64(st.Hits[k.Func])
		k.Time = int64(float64(st.FuncTime[k.Func])*share + 0.5)
		k.ChildTime = int64(float64(st.ChildTime[k.Func])*share + 0.5)
	}
}
