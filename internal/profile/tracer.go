package profile

import (
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/elfid"
	"github.com/sourceprofiler/sprof/internal/instr"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/internal/profile/ptrace"
)

// thread is one traced thread.
type thread struct {
	tid int
	// tgid is its process: the program's, or another process sharing the
	// program's memory (a vfork child, a child of clone(CLONE_VM)).
	tgid int
	// foreign marks a thread of another process sharing the program's memory
	// (a vfork child before its exec): its hits are not counted.
	foreign bool
	// stepping is the site whose slot the thread is single-stepping, and
	// pendingSig a signal that arrived meanwhile, delivered after the step.
	stepping   *site
	pendingSig syscall.Signal
	// born is when it started running, on the tracer's clock, and let
	// when the tracer last let it go (timing).
	born, let int64
	// events counts the records of its ring booked so far, and fullAt
	// is when it stopped because its ring was full, until its next
	// record (ring.go).
	events int64
	fullAt int64
	// debt is what its records cost it so far, in nanoseconds, as of
	// the last, at lastRaw on its clock (rings.debt).
	debt    float64
	lastRaw int64
	// vforking is set from its vfork until its child lets the memory go,
	// where rings are found from the stack: the child, on its stack,
	// writes into its ring (ring.go).
	vforking bool
	// retrap is the removed breakpoint it was last sent back to, to run
	// the restored instruction in place.
	retrap uint64
	// exiting is set at its exit stop (watch.go).
	exiting bool
	// released is when the tracer last let it go, on its clock.
	released int64
	// heldTotal is the time PROFILE has held it, its stops taken out of
	// its clock (timing); wait is what PROFILE read of its waits since
	// its last event, evented whether it made one since PROFILE last
	// looked (waits.go).
	heldTotal int64
	wait      *waiting
	evented   bool
}

// tracer is the state of one run. All its methods run on the locked thread.
type tracer struct {
	cfg  Config
	plan *datafile.Plan
	arch instr.Arch
	pid  int
	// timed is set when calls are timed: function timing, or a function
	// profile of another type that writes a trace (trace.go).
	timed bool
	// runID names the run in its .pbo and its trace; trace is the trace
	// being written, or nil.
	runID datafile.Hex
	trace *traceFile
	// mem is the program's memory (ptrace.Mem), and mapArea maps the
	// area next to a module in it (areaNear: mmap, as a system call the
	// program makes): fakes in the unit tests of planting. (The counters,
	// the calibration blocks and punned jumps' pages are mapped with
	// t.mmap itself.)
	mem     instr.Memory
	mapArea func(hint, size uint64) (uint64, error)
	// maps is the program's memory map, opened at the exec stop and read
	// again when needed (readMaps): a program that makes itself
	// non-dumpable keeps it readable, as it keeps mem.
	maps *ptrace.Maps
	regs ptrace.Regs
	// pageSize is the running system's page size (4, 16 or 64 KiB on
	// arm64), the unit of the slot areas.
	pageSize uint64

	// bp are PROFILE's breakpoints (breakpoints.go).
	bp      *breakpoints
	threads map[int]*thread
	// early holds new threads and children whose first stop came before the
	// event that announces them.
	early map[int]ptrace.WaitStatus
	// expected holds IDs announced by an event whose first stop has not come
	// yet, with the process kind.
	expected map[int]childKind

	// counters is the memory PROFILE shares with the program, once set up
	// (nil when nothing is counted in-process): the threads' blocks of
	// counters, and the trampolines written that count into them.
	counters *counters
	// entries plants function entries in-process (entries.go).
	entries *entryTrampolines
	// lines plants line sites in-process (linetramps.go).
	lines *lineTrampolines
	// rolledBack counts the threads rolled out of instrumentation code
	// for a signal (Result.RolledBack).
	rolledBack uint64
	// rings are the threads' rings, when the books are fed from them
	// (ring.go); ctr turns the rings' times into the clock's (clock.go).
	rings *rings
	// exits patches timed functions' exits in-process, beside the rings
	// (exitpatch.go).
	exits *exitPatches
	ctr   counterClock
	// scan is what the scans of the modules' code found (scan.go).
	scan codeScan
	// libs are the plan's modules other than the program, its shared
	// libraries; loaded the instances of those mapped and planted, areas
	// the areas PROFILE mapped next to each module's instance (both by
	// the instance's start), rdv the dynamic linker's rendezvous,
	// and identity whether each library file seen is the file PREP read
	// (modules.go). rendezvousThread is the thread stopped at the
	// rendezvous, which PROFILE borrows for its system calls meanwhile.
	libs             []int
	loaded           map[uint64]*loaded
	areas            map[uint64][][2]uint64
	rdv              rendezvous
	identity         map[string]bool
	rendezvousThread int
	// seccomp is what the system calls PROFILE makes in the program know
	// of its seccomp filters (seccomp.go).
	seccomp seccompState
	// calls is the thread borrowed for a run of system calls (a
	// planting's pages, their unmapping), or nil (inject.go).
	calls *borrowed

	hits []uint64
	// sampling samples the threads' program counters (function
	// sampling; else nil: sampling.go).
	sampling *sampler
	// books keep the stacks of profiled calls, when timing, a start
	// function or attribution need them (timing.go); else nil.
	books *books
	// epoch is the origin of clock; waited is the clock when the stop
	// being handled was seen, resumed when it was let go, and charged the goroutine its event was
	// booked to. stolen has the time taken from each thread and goroutine
	// by its stops; started is when the first thread was born, ended
	// when the last ended, held the time PROFILE held any of them, and
	// debt the cost of the records of the thread that made the most:
	// the run's total time (elapsed). overhead is what one event costs beyond what PROFILE's
	// clock sees (timing), and calculated its calibrated value.
	epoch   time.Time
	waited  int64
	resumed int64
	charged ledgerKey
	// clockChecked and clockShared: whether the counter was found to be
	// one clock across CPUs (oneClock).
	clockChecked, clockShared bool
	// tpChecked and tpUsable: whether arm64's thread pointer was found
	// free for Go's record code (goThreadPointer); goRingChecked and
	// goRing: whether goroutines' records can be written
	// (goRingPossible).
	tpChecked, tpUsable   bool
	goRingChecked, goRing bool
	// goDepthChecked and goDepth: whether the plan has functions whose
	// frames the depth code keys as Go's (settleDepth).
	goDepthChecked, goDepth bool
	stolen                  map[ledgerKey]int64
	carried                 map[int]uint64 // by thread, the goroutine of its last Go event (carrier)
	started                 int64
	ended                   int64
	longest                 int64 // the longest life of a thread on its own clock
	held                    heldTime
	waits                   waits
	debt                    float64
	overhead                int64
	calculated              int64
	// forced is set when /CB imposes the overhead; gaps are the gaps
	// between stops, which bound it otherwise (eventCost).
	forced bool
	gaps   gaps
	// yielding is set when the tracer waits for stops with
	// ptrace.WaitYielding (timing: see timing.go).
	yielding bool
	// callDepth is the deepest nesting of profiled functions, where kept.
	callDepth int
	execed    bool
	// ownCont is set until the tracer has seen the SIGCONT that ended the
	// stop of ptrace.Seize: it is the tracer's, not the program's.
	ownCont bool
	// ownTraps is set when the program raised a SIGTRAP of its own.
	ownTraps bool
	// watch is what the program does behind PROFILE's back (watch.go).
	watch watch

	// lastSignal[n] is when the program last reported signal n (Unix ns),
	// so that a signal PROFILE receives too (Ctrl-C reaches the whole
	// process group) is not passed on twice.
	lastSignal [65]atomic.Int64
	sigNote    atomic.Value // string: the signal PROFILE received, if any

	// explain narrates the run (profile --explain, explain.go); nil when
	// it is not narrated.
	explain *explainer
	// attach is the state of a run of a process PROFILE attached to
	// (attach.go); nil when PROFILE started the program.
	attach *attachment
	// later are stops a wait for one thread took (deliverOutside), which
	// the loop handles first.
	later []laterStop
	// requeued are the threads that block a signal for a moment
	// (eintr.go).
	requeued map[int]*requeued
	// ownMaps are the executable areas PROFILE mapped in the program
	// (mmap): trampolines, slots, hops, the calibration's code, whether
	// or not a module's areas (areas) list them.
	ownMaps [][2]uint64
	// progressStart and progressLast are when the run began and when its
	// progress was last told (progress.go).
	progressStart, progressLast time.Time
}

// newTracer prepares the tracing of one run of cfg's program.
func newTracer(cfg Config) (*tracer, error) {
	arch, err := instr.ForName(cfg.Plan.Modules[0].Arch)
	if err != nil {
		return nil, err
	}
	if arch.Name() != runtime.GOARCH {
		return nil, prf.OtherArch(arch.Name(), runtime.GOARCH)
	}
	if err := ptrace.Supported(); err != nil {
		return nil, prf.CannotTrace(runtime.GOOS+"/"+runtime.GOARCH, err)
	}
	t := &tracer{
		cfg:      cfg,
		plan:     cfg.Plan,
		arch:     arch,
		pageSize: elfid.PageSize(),
		threads:  make(map[int]*thread),
		early:    make(map[int]ptrace.WaitStatus),
		expected: make(map[int]childKind),
		hits:     make([]uint64, cfg.Plan.NumItems()),
		epoch:    time.Now(),
		stolen:   make(map[ledgerKey]int64),
		carried:  make(map[int]uint64),
		areas:    make(map[uint64][][2]uint64),
		identity: make(map[string]bool),
	}
	t.bp = newBreakpoints(t)
	t.mapArea = t.mmap
	t.explain = newExplainer(t)
	t.runID = datafile.NewRunID()
	t.timed = cfg.Plan.Method.IsTiming() || tracing(&cfg)
	if cfg.Plan.Method.IsSampling() {
		interval := cfg.SampleInterval
		if interval == 0 {
			interval = DefaultInterval
		}
		if interval < MinInterval || interval > MaxInterval {
			return nil, prf.BadInterval(int(interval/time.Microsecond), int(MinInterval/time.Microsecond), int(MaxInterval/time.Microsecond))
		}
		t.sampling = newSampler(t, interval)
	}
	if keepsBooks(cfg.Plan) || tracing(&cfg) {
		t.books = newBooks(cfg.Plan)
		t.books.where = &stackMaps{read: t.readMaps} // (books.go: stacks)
	}
	return t, nil
}

// run starts the program, plants the breakpoints and traces it to its end.
// Whatever fails on the way, the program is killed and reaped, in one
// place.
func (t *tracer) run() (*Result, error) {
	files := []*os.File{t.cfg.Stdin, t.cfg.Stdout, t.cfg.Stderr}
	for i, f := range files {
		if f == nil {
			files[i] = []*os.File{os.Stdin, os.Stdout, os.Stderr}[i]
		}
	}
	start := t.cfg.Now()
	t.progressStart = time.Now()
	t.explain.plan()
	pid, err := ptrace.Start(t.cfg.Path, t.cfg.Args, t.cfg.Env, t.cfg.Dir, files)
	if err != nil {
		return nil, prf.CannotRun(t.cfg.Path, err)
	}
	t.pid = pid
	t.threads[pid] = &thread{tid: pid, tgid: pid}
	defer t.closeTrace(false)
	err = t.openTrace(start)
	var res *Result
	if err == nil {
		res, err = t.traceRun(start)
	}
	if err != nil {
		ptrace.Kill(pid, syscall.SIGKILL)
		t.reapKilled()
		return nil, err
	}
	t.closeTrace(true)
	return res, nil
}

// traceRun plants the breakpoints in the program started at start,
// stopped at its exec, and traces it to its end.
func (t *tracer) traceRun(start time.Time) (*Result, error) {
	pid := t.pid
	var err error
	mem, err := ptrace.OpenMem(pid)
	if err != nil {
		return nil, fmt.Errorf("open memory of process %d: %w", pid, err)
	}
	defer mem.Close()
	t.mem = mem
	if t.maps, err = ptrace.OpenMaps(pid); err != nil {
		return nil, fmt.Errorf("open memory map of process %d: %w", pid, err)
	}
	defer t.maps.Close()
	t.explain.startedAt()
	defer func() { t.counters.close() }()
	t.startCounter()
	if err := t.plantAll(); err != nil {
		return nil, err
	}
	if err := t.calibrateAll(); err != nil {
		return nil, err
	}
	t.explain.calibrated()
	t.refineCounter()
	if err := ptrace.Seize(pid); err != nil {
		return nil, prf.CannotRun(t.cfg.Path, err)
	}
	t.ownCont = true
	stopForward := t.forwardSignals()
	defer stopForward()

	res := &Result{}
	if t.sampling != nil {
		t.sampling.start(pid)
		defer t.sampling.finish()
	}
	if err := ptrace.Cont(pid, 0); err != nil {
		return nil, fmt.Errorf("start program: %w", err)
	}
	t.openThreadBooks(t.threads[pid])
	t.startWaits()
	t.explain.running()
	if err := t.loop(res); err != nil {
		return nil, err
	}
	t.releaseSurvivors()
	t.finish(start, res)
	return res, nil
}

// finish gathers the run's counts into res when the program has ended, or
// PROFILE has let it go.
func (t *tracer) finish(start time.Time, res *Result) {
	t.signalCost(t.cfg.Now().Sub(start))
	if t.ownTraps && t.bp.hits > 0 {
		t.cfg.Warn(prf.OwnTraps())
	}
	if t.counters != nil {
		t.counters.collect()
	}
	if t.sampling != nil {
		t.sampling.finish()
	}
	for _, m := range t.mechanisms() {
		m.collect(res)
	}
	res.EndCheck = t.watch.checked
	res.RolledBack = t.rolledBack
	res.Counts = t.counts(start, res)
	t.explain.ended(res)
}

// counts builds the run's datafile.Counts.
func (t *tracer) counts(start time.Time, res *Result) *datafile.Counts {
	run := datafile.Run{ID: t.runID, Time: start.Unix(), CommandLine: t.cfg.CommandLine}
	if a := t.attach; a != nil {
		// Counts cover the window only: as good as incomplete.
		run.Incomplete = true
		run.Reason = a.reason(t.pid, res)
	} else if !res.Exited {
		// Incomplete means counts may be missing: only a program that did
		// not finish. One that caught the signal PROFILE passed on and
		// exited has every count.
		run.Incomplete = true
		run.Reason = "program terminated by signal " + describeSignal(res.Signal)
		if note, _ := t.sigNote.Load().(string); note != "" {
			run.Reason = note + "; " + run.Reason
		}
	}
	c := &datafile.Counts{
		PlanID: t.plan.ID,
		Method: t.plan.Method,
		Run:    run,
		Stats:  datafile.Stats{Hits: t.hits, CallDepth: t.callDepth},
	}
	if t.books != nil {
		t.timingStats(&c.Stats)
		c.Overhead = t.calculated
	}
	if t.sampling != nil {
		t.sampling.stats(&c.Stats)
	}
	return c
}
