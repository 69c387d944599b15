package profile

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"syscall"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/elfid"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/profile/books"
	"github.com/sourceprofiler/sprof/profile/ptrace"
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
	// lifespan is when it started running and when it reached its exit
	// stop, and let when the tracer last let it go (timing).
	lifespan
	let int64
	// events counts the records of its ring booked so far, and fullAt
	// is when it stopped because its ring was full, until its next
	// record (ring.go).
	events int64
	fullAt int64
	// debt is what its records cost it so far, in nanoseconds, as of
	// the last, at lastRaw on its clock (rings.debt); or what its book
	// code cost it, at the calibrated cost of the made calls it made
	// (ledgers.debt).
	debt    float64
	lastRaw int64
	made    uint64
	// vforking is set from its vfork until its child lets the memory go,
	// where rings are found from the stack: the child, on its stack,
	// writes into its ring (ring.go).
	vforking bool
	// retrap is the removed breakpoint it was last sent back to, to run
	// the restored instruction in place.
	retrap uint64
	// exiting is set at its exit stop (watch.go).
	exiting bool
	// bookHold is the hold the books kept in the program took of its
	// last stop let go (ledgers.releasing), for the clocks to take out
	// the same (clocks.charge).
	bookHold bookHold
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

// lifespan is a thread's life on the tracer's clock (timing): born when
// its clock opened, as it was about to run, and ended when its exit stop
// began, where its life ends (clocks.stopped), 0 before.
type lifespan struct{ born, ended int64 }

// bookHold is a hold of a thread the books kept in the program took, on
// the tracer's clock: from the event the stop was at, or before PROFILE
// saw it, and when PROFILE saw the stop (seen), which names the stop.
type bookHold struct{ from, seen int64 }

// tracer is the state of one run: the loop's (the program, its threads
// and tasks, the stop being handled, the signals, the clocks the stops
// are stamped on) and the run's parts (hooks.go). All its methods run on
// the locked thread.
type tracer struct {
	cfg  Config
	plan *datafile.Plan
	arch instr.Arch
	// timed is set when calls are timed: function timing, or a function
	// profile of another type that writes a trace (trace.go).
	timed bool
	// runID names the run in its .pbo and its trace.
	runID datafile.Hex
	// caps are what the run can do, probed once at the start (caps.go).
	caps caps

	pid int
	// proc is the program PROFILE traces, its threads and the tasks it
	// makes (process.go): every ptrace request goes through it.
	proc process
	// mem is the program's memory (ptrace.Mem): a fake in the unit tests
	// of planting.
	mem instr.Memory
	// maps is the program's memory map, opened at the exec stop and read
	// again when needed (readMaps): a program that makes itself
	// non-dumpable keeps it readable, as it keeps mem.
	maps memoryMap
	// regs are the registers of the thread whose stop is being handled.
	regs ptrace.Regs
	// threads are the program's threads (and the foreign processes that
	// share its memory), tasks those it waits to take in (tasks.go).
	threads map[int]*thread
	tasks   tasks
	// signals passes signals on (signals.go, eintr.go).
	signals signals
	// clocks are timing's clocks: PROFILE's, on which the loop stamps
	// each stop, the threads' and the goroutines', their stops taken out
	// (timing.go).
	clocks clocks

	// counted are the counts PROFILE keeps itself.
	counted counted
	// parts are the run's parts and their hooks (hooks.go).
	parts parts
	// told are the run's observers (events.go): the narration of
	// profile --explain, or none.
	told observers
	// attach is the state of a run of a process PROFILE attached to
	// (attach.go); nil when PROFILE started the program.
	attach *attachment
	// status is when the run began and when its progress was last told
	// (progress.go).
	status struct{ start, last time.Time }
}

// counted are the counts of a run that PROFILE keeps itself: the hits
// of each item at its breakpoints (and the counters' sums, at the end),
// the ways each branch of the plan went (datafile.Stats.Branches), and
// the branches left uncounted (datafile.Stats.Unprobed).
type counted struct {
	hits, ways, unprobed []uint64
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
		cfg:     cfg,
		plan:    cfg.Plan,
		arch:    arch,
		threads: make(map[int]*thread),
		tasks:   tasks{early: make(map[int]ptrace.WaitStatus), expected: make(map[int]childKind)},
		counted: counted{hits: make([]uint64, cfg.Plan.NumItems()), ways: make([]uint64, 2*len(cfg.Plan.Branches)),
			unprobed: make([]uint64, len(cfg.Plan.Branches))},
		clocks: clocks{epoch: time.Now(), stolen: make(map[books.Key]int64), carried: make(map[int]uint64)},
	}
	if x := newExplainer(t); x != nil {
		t.told = observers{x}
	}
	t.parts.calls = newInjector(t)
	t.parts.plant = newPlanter(t, elfid.PageSize())
	t.parts.bp = newBreakpoints(t)
	t.parts.modules = newModules(t)
	t.runID = datafile.NewRunID()
	t.timed = cfg.Plan.Method.IsTiming() || tracing(&cfg)
	t.caps = probeCaps(arch, cfg.Plan, cfg.Path)
	t.signals.goDepth = t.caps.goDepth
	if cfg.Plan.Method.IsSampling() {
		interval := cfg.SampleInterval
		if interval == 0 {
			interval = DefaultInterval
		}
		if interval < MinInterval || interval > MaxInterval {
			return nil, prf.BadInterval(int(interval/time.Microsecond), int(MinInterval/time.Microsecond), int(MaxInterval/time.Microsecond))
		}
		t.parts.sampling = newSampler(samplerEnv{plan: t.plan, threads: t.threads, warn: t.cfg.Warn, arch: arch.Name()}, interval)
		t.parts.sampling.stacks.want = t.parts.sampling.stacks.want && !cfg.NoStacks
		t.parts.sampling.kernel.userOnly = cfg.UserOnly
		t.parts.sampling.stacks.framePointers = elfid.ReadIsGo(cfg.Path) // (Go keeps them in all its code)
	}
	t.choose()
	if keepsBooks(cfg.Plan) || tracing(&cfg) {
		t.parts.books = books.New(cfg.Plan)
		t.parts.books.Where = &stackMaps{read: t.readMaps} // (books.go: stacks)
	}
	return t, nil
}

// finish gathers the run's counts into res when the program has ended, or
// PROFILE has let it go: the parts' (their hooks), and the run's record.
func (t *tracer) finish(start time.Time, res *Result) {
	t.parts.watch.signalCost(t.cfg.Now().Sub(start), t.cfg.Warn)
	t.parts.ended(res)
	res.EndCheck = t.parts.watch.checked
	res.RolledBack = t.signals.rolledBack
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
		if note := t.signals.note(); note != "" {
			run.Reason = note + "; " + run.Reason
		}
	}
	c := &datafile.Counts{PlanID: t.plan.ID, Method: t.plan.Method, Run: run, Stats: datafile.Stats{Hits: t.counted.hits}}
	if len(t.counted.ways) > 0 {
		c.Stats.Branches = t.counted.ways
	}
	if slices.ContainsFunc(t.counted.unprobed, func(n uint64) bool { return n != 0 }) {
		c.Stats.Unprobed = t.counted.unprobed
	}
	t.parts.addStats(&c.Stats)
	if t.parts.books != nil {
		c.Overhead = t.clocks.calculated
	}
	res.Counts = c
	t.told.note(endedEvent{res})
}

// spinWindow is how long the tracer polls for the next stop before it
// sleeps, when stops come faster than that.
const spinWindow = 100 * time.Microsecond

// loop handles stops until the program's main thread is gone.
func (t *tracer) loop(res *Result) error {
	var last time.Time
	for {
		// Spin briefly when the last stop was recent: stops come in bursts
		// (a function called in a loop), and a sleeping tracer pays for
		// waking up at each one.
		spin := time.Duration(0)
		if time.Since(last) < spinWindow {
			spin = spinWindow
		}
		tid, ws, err := t.wait(spin)
		last = time.Now()
		t.clocks.waited = t.clocks.clock()
		if err == ptrace.ErrQuit {
			t.attach.windowEnded = true
			return nil
		}
		if err != nil {
			if errors.Is(err, syscall.ECHILD) {
				return errors.New("lost the program: no traced thread left")
			}
			return fmt.Errorf("wait: %w", err)
		}
		switch {
		case ws.Exited() || ws.Signaled():
			if tid == t.pid {
				res.Exited = ws.Exited()
				res.ExitCode = ws.ExitStatus()
				if ws.Signaled() {
					res.Signal = ws.Signal()
				}
				return nil
			}
			t.threadGone(tid)
			delete(t.tasks.expected, tid) // (announced, ended before its first stop)
		case ws.Stopped():
			if th := t.threads[tid]; th != nil {
				t.parts.stopSeen(th)
			}
			if t.told.on() {
				t.told.note(stopEvent{})
			}
			if err := t.stopped(tid, ws); err != nil {
				return err
			}
			t.parts.stopHandled(tid)
		}
		t.progress()
	}
}

// stopped handles one ptrace stop of thread tid.
func (t *tracer) stopped(tid int, ws ptrace.WaitStatus) error {
	t.signals.maskBack(t.proc, t.pid, tid, ws)
	t.signals.requeuedIdle(t.proc, t.pid)
	th := t.threads[tid]
	if th == nil {
		return t.newcomer(tid, ws)
	}
	if ws.GroupStop() {
		// The program was stopped (SIGSTOP, SIGTSTP...): it stays stopped,
		// as it would natively, until SIGCONT (a sweep counts it stopped).
		t.parts.parked(tid)
		t.clocks.noteRelease()
		if err := t.proc.listen(tid); err != nil && !ptrace.IsNoProcess(err) {
			return fmt.Errorf("leave thread %d stopped: %w", tid, err)
		}
		return nil
	}
	sig := ws.StopSignal()
	if sig == syscall.SIGCONT && t.signals.ownCont && tid == t.pid {
		t.signals.ownCont = false
		return t.resume(tid, 0)
	}
	if sig != syscall.SIGTRAP {
		return t.signals.signal(th, sig, t.signalEnv())
	}
	switch ws.Event() {
	case 0:
		return t.trap(th)
	case ptrace.EventClone, ptrace.EventFork, ptrace.EventVfork:
		return t.spawned(th, ws.Event())
	case ptrace.EventExec:
		return t.exec(th)
	case ptrace.EventVforkDone:
		t.parts.vforkDone(th)
	case ptrace.EventExit:
		return t.threadExit(th)
	case ptrace.EventStop:
		// A notification of the seized program's stop state, or an
		// interrupt (for a sweep of line coverage's jumps, among
		// others), where a sweep holds the thread until every thread
		// has stopped (linesweep_hold.go).
		t.interruptStop(th)
		if t.parts.holds(th) {
			return nil
		}
		return afterInterrupt(t, th)
	}
	return t.resume(th.tid, 0)
}

// afterInterrupt lets thread th of t go on from an interrupt's stop. A
// thread in the middle of a single step must go on stepping: continued,
// it would run past its slot.
func afterInterrupt(t *tracer, th *thread) error {
	if th.stepping != nil {
		t.clocks.noteRelease()
		t.clocks.noteRelease()
		if err := t.proc.step(th.tid); err != nil && !ptrace.IsNoProcess(err) {
			return fmt.Errorf("step thread %d: %w", th.tid, err)
		}
		return nil
	}
	return t.resume(th.tid, 0)
}

// wait waits for the next stop, polling for spin first. How it spends
// the time until then is the parts' to say (idleHook): with no idle work,
// it sleeps, or polls yielding its CPU first where a part asks it to
// (timing with breakpoints: ptrace.WaitYielding); with idle work, it
// does the work between polls (the rings read: ptrace.WaitIdle), or
// every so often, yielding first (the trace written while the rings are
// read: WaitTicking) or not (the ptrace sampler's rounds, a sweep, the
// narration's first hits: WaitPolling).
func (t *tracer) wait(spin time.Duration) (int, ptrace.WaitStatus, error) {
	if s, ok := t.signals.takeLater(); ok {
		return s.tid, s.ws, nil
	}
	working, every, yields := t.parts.waiting()
	if t.attach != nil || t.cfg.Progress != nil {
		return t.waitTelling(spin, every, yields)
	}
	switch {
	case !working && yields:
		return t.proc.wait(yieldWait(yieldWindow))
	case !working:
		return t.proc.wait(sleepWait(spin))
	case yields && every == 0:
		return t.proc.wait(idleWait(yieldWindow, t.parts.idleWork))
	case yields:
		return t.proc.wait(tickWait(yieldWindow, every, t.parts.idleWork))
	}
	return t.proc.wait(pollWait(spin, every, t.parts.idleWork))
}

// resume continues a thread; a thread that vanished meanwhile (killed by
// another thread's exit_group) is not an error.
func (t *tracer) resume(tid int, sig syscall.Signal) error {
	if tid == t.pid {
		t.signals.mainGoes(t.proc, t.pid, t.threads, t.attach != nil)
	}
	th := t.threads[tid]
	if th != nil {
		t.parts.releasing(th)
	}
	t.clocks.noteRelease()
	if th != nil {
		th.released = t.clocks.resumed
	}
	if err := t.proc.cont(tid, sig); err != nil && !ptrace.IsNoProcess(err) {
		return fmt.Errorf("resume thread %d: %w", tid, err)
	}
	return nil
}
