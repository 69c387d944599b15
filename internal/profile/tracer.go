package profile

import (
	"bytes"
	"errors"
	"fmt"
	"math"
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

// site is one planted breakpoint: the physical side of a plan's logical site.
type site struct {
	addr uint64 // run-time address
	item int    // index of the counted item (Plan.Funcs or Plan.Lines), or -1
	// more are the other lines of a line site that several lines share.
	more []int
	// exit is the function an exit site leaves (timing), or -1.
	exit int
	orig []byte // the bytes the breakpoint replaced
	disp instr.Displaced
	// displaced is set when disp is valid (always, but for coverage sites
	// whose instruction could not be displaced).
	displaced bool
	slot      uint64 // the site's out-of-line slot, or 0
	hits      int    // the times an exit site was hit (timing in-process)
	// pending marks a line site whose displacement is prepared at its
	// first hit (most lines of a program never run): code holds the
	// instruction's bytes.
	pending bool
	code    []byte
	// rendezvous marks the dynamic linker's breakpoint (modules.go).
	rendezvous bool
	// stale marks a retired site whose breakpoint the processor still
	// runs (retrapped): its instruction is carried out of line.
	stale bool
}

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
	// the last, at lastRaw on its clock (ringDebt).
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
}

// tracer is the state of one run. All its methods run on the locked thread.
type tracer struct {
	cfg  Config
	plan *datafile.Plan
	arch instr.Arch
	pid  int
	mem  *ptrace.Mem
	// maps is the program's memory map, opened at the exec stop and read
	// again when needed (readMaps): a program that makes itself
	// non-dumpable keeps it readable, as it keeps mem.
	maps *ptrace.Maps
	regs ptrace.Regs
	// pageSize is the running system's page size (4, 16 or 64 KiB on
	// arm64), the unit of the slot areas.
	pageSize uint64

	sites map[uint64]*site // active breakpoints by run-time address
	// fresh are the sites of the module being planted, whose
	// breakpoints are written last.
	fresh []*site
	// lineSites are the sites of each line not covered yet (line
	// coverage; lines.go).
	lineSites [][]*site
	// slots finds a site by its out-of-line slot, where its instruction
	// runs (and may fault).
	slots   map[uint64]*site
	retired map[uint64]*site // coverage breakpoints removed after their hit
	threads map[int]*thread
	// early holds new threads and children whose first stop came before the
	// event that announces them.
	early map[int]ptrace.WaitStatus
	// expected holds IDs announced by an event whose first stop has not come
	// yet, with the process kind.
	expected map[int]childKind

	// inproc is the in-process counting, once set up; countKind is how
	// trampolines count on this CPU, 0 when entries take breakpoints.
	inproc    *inproc
	countKind instr.CountKind
	// timeInProcess is set when the books are fed from the threads'
	// rings (ring.go); ctr turns the rings' times into the clock's, and
	// ringCost is what one record costs the program, in nanoseconds.
	timeInProcess bool
	ctr           counterClock
	ringCost      float64
	drained       int64 // when the rings were last read
	// landings are where the module's jumps land, returns where its
	// direct calls of each address return, and entries where its symbol
	// table's functions start, cold parts aside (ring.go).
	landings  landings
	code      codeMaps // the module being planted, decoded (ring.go)
	returns   map[uint64][]uint64
	entries   map[uint64]bool
	fullRings uint64
	// libs are the plan's modules other than the program, its shared
	// libraries; loaded the instances of those mapped and planted, areas
	// the areas PROFILE mapped next to each module's instance (both by
	// the instance's start), rdv the dynamic linker's rendezvous,
	// and identity whether each library file seen is the file PREP read
	// (modules.go). here is the thread stopped at the rendezvous, which
	// PROFILE borrows for its system calls meanwhile.
	libs     []int
	loaded   map[uint64]*loaded
	areas    map[uint64][][2]uint64
	rdv      rendezvous
	identity map[string]bool
	here     int
	// touched keeps what calibrateRing read of a ring, so that the reads
	// are made.
	touched uint64

	hits []uint64
	// books keep the stacks of profiled calls, when timing, a start
	// function or attribution need them (timing.go); else nil.
	books *books
	// epoch is the origin of clock; waited is the clock when the stop
	// being handled was seen, resumed when it was let go, and charged the goroutine its event was
	// booked to. stolen has the time taken from each thread and goroutine
	// by its stops; lived sums the lifetimes of the ended threads, stops
	// taken out. overhead is what one event costs beyond what PROFILE's
	// clock sees (timing), and calculated its calibrated value.
	epoch      time.Time
	waited     int64
	resumed    int64
	charged    ledgerKey
	stolen     map[ledgerKey]int64
	lived      int64
	overhead   int64
	calculated int64
	// forced is set when /CB imposes the overhead; gaps are the gaps
	// between stops, which bound it otherwise (eventCost).
	forced bool
	gaps   gaps
	// yielding is set when the tracer waits for stops with
	// ptrace.WaitYielding (timing: see timing.go).
	yielding bool
	// callDepth is the deepest nesting of profiled functions, where kept.
	callDepth int
	trapped   uint64
	coverage  bool
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
}

type childKind int

const (
	kindThread childKind = iota
	kindFork
	kindVfork
)

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
		sites:    make(map[uint64]*site),
		slots:    make(map[uint64]*site),
		retired:  make(map[uint64]*site),
		threads:  make(map[int]*thread),
		early:    make(map[int]ptrace.WaitStatus),
		expected: make(map[int]childKind),
		hits:     make([]uint64, cfg.Plan.NumItems()),
		epoch:    time.Now(),
		stolen:   make(map[ledgerKey]int64),
		areas:    make(map[uint64][][2]uint64),
		identity: make(map[string]bool),
	}
	if keepsBooks(cfg.Plan) {
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
	pid, err := ptrace.Start(t.cfg.Path, t.cfg.Args, t.cfg.Env, t.cfg.Dir, files)
	if err != nil {
		return nil, prf.CannotRun(t.cfg.Path, err)
	}
	t.pid = pid
	t.threads[pid] = &thread{tid: pid, tgid: pid}
	res, err := t.trace(start)
	if err != nil {
		ptrace.Kill(pid, syscall.SIGKILL)
		t.drain()
		return nil, err
	}
	return res, nil
}

// trace plants the breakpoints in the program started at start, stopped
// at its exec, and traces it to its end.
func (t *tracer) trace(start time.Time) (*Result, error) {
	pid := t.pid
	var err error
	if t.mem, err = ptrace.OpenMem(pid); err != nil {
		return nil, fmt.Errorf("open memory of process %d: %w", pid, err)
	}
	defer t.mem.Close()
	if t.maps, err = ptrace.OpenMaps(pid); err != nil {
		return nil, fmt.Errorf("open memory map of process %d: %w", pid, err)
	}
	defer t.maps.Close()
	defer func() { t.inproc.close() }()
	t.startCounter()
	if err := t.plantAll(); err != nil {
		return nil, err
	}
	if t.plan.Method.IsTiming() {
		if t.calculated, err = t.calibrate(); err != nil {
			return nil, fmt.Errorf("calibrate the overhead: %w", err)
		}
		t.overhead = t.calculated
		t.yielding = true
		if t.timeInProcess {
			counts, err := t.calibrateRing()
			if err != nil {
				return nil, fmt.Errorf("calibrate the cost of a record: %w", err)
			}
			t.refineCounter()
			t.ringCost = counts * t.ctr.scale
			t.calculated = int64(math.Round(t.ringCost))
		}
		if c := t.plan.Calibration; c >= 0 {
			t.overhead, t.forced = c, true
			if t.timeInProcess {
				t.ringCost = float64(c)
			}
		}
	}
	t.refineCounter()
	if err := ptrace.Seize(pid); err != nil {
		return nil, prf.CannotRun(t.cfg.Path, err)
	}
	t.ownCont = true
	stopForward := t.forwardSignals()
	defer stopForward()

	res := &Result{}
	if err := ptrace.Cont(pid, 0); err != nil {
		return nil, fmt.Errorf("start program: %w", err)
	}
	t.born(t.threads[pid])
	if err := t.loop(res); err != nil {
		return nil, err
	}
	t.release()
	t.signalCost(t.cfg.Now().Sub(start))
	if t.ownTraps && t.trapped > 0 {
		t.cfg.Warn(prf.OwnTraps())
	}
	if t.inproc != nil {
		t.inproc.addCounts(t.hits)
		t.callDepth = t.inproc.callDepth()
		if t.inproc.overflow {
			t.cfg.Warn(prf.SharedBlocks(t.inproc.nBlocks))
		}
	}
	res.Hits, res.FullRings, res.EndCheck = t.trapped, t.fullRings, t.watch.checked
	if t.inproc != nil {
		res.ReturnSites = t.inproc.returnSites
	}
	res.Counts = t.counts(start, res)
	return res, nil
}

// counts builds the run's datafile.Counts.
func (t *tracer) counts(start time.Time, res *Result) *datafile.Counts {
	run := datafile.Run{ID: datafile.NewRunID(), Time: start.Unix(), CommandLine: t.cfg.CommandLine}
	if !res.Exited {
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
	return c
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
		t.waited = t.clock()
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
			if th := t.threads[tid]; th != nil {
				t.gone(th)
			}
			delete(t.threads, tid)
			t.threadEnded(tid)
			t.foreignDone(tid)
		case ws.Stopped():
			if th := t.threads[tid]; th != nil && t.timeInProcess {
				// Its records come before this stop.
				t.drainThread(th)
				t.fullEnded(th)
			}
			if err := t.stopped(tid, ws); err != nil {
				return err
			}
			if t.books != nil {
				t.charge(tid)
			}
		}
	}
}

// stopped handles one ptrace stop of thread tid.
func (t *tracer) stopped(tid int, ws ptrace.WaitStatus) error {
	th := t.threads[tid]
	if th == nil {
		return t.newcomer(tid, ws)
	}
	if ws.GroupStop() {
		// The program was stopped (SIGSTOP, SIGTSTP...): it stays stopped,
		// as it would natively, until SIGCONT.
		t.let()
		if err := ptrace.Listen(tid); err != nil && !ptrace.IsNoProcess(err) {
			return fmt.Errorf("leave thread %d stopped: %w", tid, err)
		}
		return nil
	}
	sig := ws.StopSignal()
	if sig == syscall.SIGCONT && t.ownCont && tid == t.pid {
		t.ownCont = false
		return t.resume(tid, 0)
	}
	if sig != syscall.SIGTRAP {
		return t.signal(th, sig)
	}
	switch ws.Event() {
	case 0:
		return t.trap(th)
	case ptrace.EventClone, ptrace.EventFork, ptrace.EventVfork:
		return t.spawned(th, ws.Event())
	case ptrace.EventExec:
		return t.exec(th)
	case ptrace.EventVforkDone:
		t.vforkDone(th)
	case ptrace.EventExit:
		return t.threadExit(th)
	case ptrace.EventStop:
		// A notification of the seized program's stop state, or an
		// interrupt. A thread in the middle of a single step must go on
		// stepping: continued, it would run past its slot.
		if th.stepping != nil {
			t.let()
			t.let()
			if err := ptrace.Step(th.tid); err != nil && !ptrace.IsNoProcess(err) {
				return fmt.Errorf("step thread %d: %w", th.tid, err)
			}
			return nil
		}
	}
	return t.resume(th.tid, 0)
}

// let notes the moment the tracer lets a stopped thread go: the end of
// the time the stop takes from it (timing). It is taken before the
// ptrace request, which may wake the thread on the tracer's own CPU and
// leave the tracer waiting there while the thread runs.
func (t *tracer) let() { t.resumed = t.clock() }

// wait waits for the next stop, polling for spin first; with yielding,
// see ptrace.WaitYielding.
func (t *tracer) wait(spin time.Duration) (int, ptrace.WaitStatus, error) {
	if t.timeInProcess {
		return ptrace.WaitIdle(yieldWindow, t.drainRings)
	}
	if t.yielding {
		return ptrace.WaitYielding(yieldWindow)
	}
	return ptrace.Wait(spin)
}

// resume continues a thread; a thread that vanished meanwhile (killed by
// another thread's exit_group) is not an error.
func (t *tracer) resume(tid int, sig syscall.Signal) error {
	t.let()
	if th := t.threads[tid]; th != nil {
		th.released = t.resumed
	}
	if err := ptrace.Cont(tid, sig); err != nil && !ptrace.IsNoProcess(err) {
		return fmt.Errorf("resume thread %d: %w", tid, err)
	}
	return nil
}

// signal passes a signal on to the thread that received it, unchanged.
// Its registers are read only where the signal needs them: to roll a
// thread out of a trampoline's code that a handler would run again, and
// to move a fault in PROFILE's code to the program's own.
func (t *tracer) signal(th *thread, sig syscall.Signal) error {
	if int(sig) < len(t.lastSignal) {
		t.lastSignal[sig].Store(time.Now().UnixNano())
	}
	t.watch.signals++
	if th.released > 0 {
		t.watch.signalGap(t.waited - th.released)
	}
	if sig == syscall.SIGCHLD {
		t.childSignal(th)
	}
	if th.stepping == nil && t.inproc.rolls() {
		if err := t.rollBack(th); err != nil {
			return err
		}
	}
	if th.stepping == nil && faultSignal(sig) {
		moved, err := t.leaveOwnCode(th)
		if err != nil {
			return err
		}
		if !moved && sig != syscall.SIGFPE {
			t.copyOfJump(t.regs.PC())
		}
	}
	if th.stepping != nil {
		// The thread is inside a single-stepped slot: finish the step first
		// and deliver the signal after it.
		th.pendingSig = sig
		t.let()
		if err := ptrace.Step(th.tid); err != nil && !ptrace.IsNoProcess(err) {
			return fmt.Errorf("step thread %d: %w", th.tid, err)
		}
		return nil
	}
	return t.resume(th.tid, sig)
}

// trap handles a SIGTRAP stop without an event: a breakpoint, the end of a
// single step, or the program's own SIGTRAP.
func (t *tracer) trap(th *thread) error {
	if err := ptrace.GetRegs(th.tid, &t.regs); err != nil {
		if ptrace.IsNoProcess(err) {
			return nil
		}
		return fmt.Errorf("read registers of thread %d: %w", th.tid, err)
	}
	if s := th.stepping; s != nil {
		th.stepping = nil
		if err := s.disp.AfterStep(&t.regs, t.mem); err != nil {
			return fmt.Errorf("finish step at %#x: %w", s.addr, err)
		}
		return t.setAndResume(th, th.takePending())
	}
	pc := t.regs.PC()
	addr := t.arch.BreakpointAddr(pc)
	s := t.sites[addr]
	if after := addr + uint64(len(t.arch.Breakpoint())); s == nil && t.inproc.ringFull(after) {
		// Its ring was full, and has been read: it tries again.
		t.ringStopped(th, t.arch.SP(&t.regs))
		t.fullRings++
		if pc != after {
			t.regs.SetPC(after) // past arm64's BRK
			return t.setAndResume(th, 0)
		}
		return t.resume(th.tid, 0)
	}
	if s == nil {
		if r := t.retired[addr]; r != nil {
			return t.retrapped(th, r)
		}
		// Not ours: the program's own trap, delivered unchanged (or a
		// copy of a breakpoint, which PROFILE says).
		t.copyOfBreakpoint(addr)
		t.ownTraps = true
		return t.resume(th.tid, syscall.SIGTRAP)
	}
	if s.rendezvous {
		return t.rendezvousHit(th, s)
	}
	th.retrap = 0
	t.trapped++
	switch {
	case th.foreign:
	case t.books != nil:
		t.book(th, s)
	case t.lineSites != nil:
		if err := t.cover(s); err != nil {
			return err
		}
	default:
		t.hits[s.item]++
		for _, i := range s.more {
			t.hits[i]++
		}
	}
	if s.item < 0 && t.timeInProcess && t.plan.Funcs[s.exit].Frame == datafile.FrameSP {
		if s.hits++; s.hits == exitStops {
			// A hot exit: its frames close from the stack pointer from
			// now on (timing.go).
			t.cfg.Warn(prf.ExitTakenOut(t.plan.Funcs[s.exit].Name, exitStops))
			return t.retire(th, s)
		}
	}
	if s.pending && !(t.coverage && !th.foreign) {
		if !t.displaceLater(s) {
			return t.retire(th, s)
		}
	}
	if t.coverage && (!th.foreign || !s.displaced) {
		// (A vfork child on a breakpoint that cannot be stepped over
		// removes it: the program's own first hit there is then lost, which
		// is better than a child killed.)
		return t.retire(th, s)
	}
	return t.displace(th, s)
}

// rollBack undoes a thread stopped for a signal inside a trampoline's call
// depth or record code (see inproc.rollBack), so that a handler that runs
// profiled functions finds the save slots free.
func (t *tracer) rollBack(th *thread) error {
	if err := ptrace.GetRegs(th.tid, &t.regs); err != nil {
		if ptrace.IsNoProcess(err) {
			return nil
		}
		return fmt.Errorf("read registers of thread %d: %w", th.tid, err)
	}
	t.checkThreadBase(th, &t.regs)
	if !t.inproc.rollBack(&t.regs) {
		return nil
	}
	if err := ptrace.SetRegs(th.tid, &t.regs); err != nil && !ptrace.IsNoProcess(err) {
		return fmt.Errorf("write registers of thread %d: %w", th.tid, err)
	}
	return nil
}

// faultSignal reports the signals an instruction raises by itself: a
// relocated instruction that faults in a trampoline raises them there.
func faultSignal(sig syscall.Signal) bool {
	return sig == syscall.SIGSEGV || sig == syscall.SIGBUS || sig == syscall.SIGFPE || sig == syscall.SIGILL
}

// leaveOwnCode moves a thread about to receive a fault signal in code
// PROFILE wrote (a trampoline, a breakpoint's out-of-line slot) to the
// original address of the faulting instruction, so that the program's
// handler, a core dump or Go's panic see the program's own code; the
// registers are those the original code would have there. Other signals
// are delivered where the thread is: the handler returns into the
// trampoline, which goes on (a thread moved back to the entry would count
// its call twice). Go declines to preempt at a PC it does not know, which
// is harmless. It reports whether it moved the thread; the thread's
// registers are in t.regs either way.
func (t *tracer) leaveOwnCode(th *thread) (moved bool, err error) {
	if err := ptrace.GetRegs(th.tid, &t.regs); err != nil {
		if ptrace.IsNoProcess(err) {
			return false, nil
		}
		return false, fmt.Errorf("read registers of thread %d: %w", th.tid, err)
	}
	pc := t.regs.PC()
	orig, ok := t.inproc.origPC(pc)
	if s := t.slots[pc]; !ok && s != nil {
		orig, ok = s.addr, true
	}
	if !ok {
		return false, nil
	}
	t.regs.SetPC(orig)
	if err := ptrace.SetRegs(th.tid, &t.regs); err != nil && !ptrace.IsNoProcess(err) {
		return false, fmt.Errorf("write registers of thread %d: %w", th.tid, err)
	}
	return true, nil
}

func (th *thread) takePending() syscall.Signal {
	sig := th.pendingSig
	th.pendingSig = 0
	return sig
}

// displace carries out the instruction under a breakpoint for a stopped
// thread, the breakpoint staying in place.
func (t *tracer) displace(th *thread, s *site) error {
	d := &s.disp
	switch {
	case d.Emulate != nil:
		if err := d.Emulate(&t.regs, t.mem); err != nil {
			return fmt.Errorf("emulate %s at %#x: %w", d.Inst.Text, s.addr, err)
		}
		return t.setAndResume(th, 0)
	case d.SingleStep:
		t.regs.SetPC(s.slot)
		if err := ptrace.SetRegs(th.tid, &t.regs); err != nil {
			return fmt.Errorf("write registers of thread %d: %w", th.tid, err)
		}
		th.stepping = s
		t.let()
		if err := ptrace.Step(th.tid); err != nil && !ptrace.IsNoProcess(err) {
			return fmt.Errorf("step thread %d: %w", th.tid, err)
		}
		return nil
	default:
		t.regs.SetPC(s.slot)
		return t.setAndResume(th, 0)
	}
}

// retire removes a coverage breakpoint after its first hit and lets the
// thread run the restored instruction in place. Other threads that trapped
// on it meanwhile find it in t.retired.
func (t *tracer) retire(th *thread, s *site) error {
	if err := t.unplant(s); err != nil {
		return err
	}
	delete(t.sites, s.addr)
	t.retired[s.addr] = s
	t.regs.SetPC(s.addr)
	return t.setAndResume(th, 0)
}

// unplant takes the breakpoint of site s out of the program's memory.
func (t *tracer) unplant(s *site) error {
	if staleCode {
		return nil
	}
	if err := t.mem.WriteMem(s.addr, s.orig); err != nil {
		return fmt.Errorf("remove breakpoint: %w", err)
	}
	return nil
}

// staleCode, set by tests only, makes the processor run a stale copy of
// the code as retrapped describes: the breakpoints PROFILE removes stay
// in memory, and PROFILE, looking, believes them gone.
var staleCode bool

// retrapped handles a thread stopped at the breakpoint of retired site
// s. It trapped there before the breakpoint was removed, and runs the
// restored instruction in place. A thread that traps there again at once
// finds either the breakpoint back in memory (written out again, with a
// warning), or memory holding the original instruction while the
// processor still runs the breakpoint: a stale copy of the code, which
// qemu's emulation of arm64 was seen to keep for minutes, every thread
// trapping there at every pass. Sent back again and again, the threads
// would never get past it; the instruction is carried out of line
// instead, at this pass and every later one (StaleCode, PRF4672).
func (t *tracer) retrapped(th *thread, s *site) error {
	if s.stale {
		return t.displace(th, s)
	}
	if th.retrap == s.addr {
		back, err := t.restore(s)
		if err != nil {
			return err
		}
		if !back {
			if err := t.displaceStale(s); err != nil {
				return err
			}
			t.warnOnce(prf.StaleCode(s.addr))
			s.stale = true
			return t.displace(th, s)
		}
	}
	th.retrap = s.addr
	t.regs.SetPC(s.addr)
	return t.setAndResume(th, 0)
}

// displaceStale prepares the displacement of retired site s, whose
// breakpoint the processor runs though memory no longer holds it: a
// coverage site was never displaced. A site whose instruction cannot be
// carried out of line ends the run: the program could not get past it.
func (t *tracer) displaceStale(s *site) error {
	if s.displaced {
		return nil
	}
	err := errors.New("its instruction cannot be carried out of line")
	if s.pending {
		err = t.prepareDisplace(s)
	}
	if err != nil {
		return fmt.Errorf("the processor still runs the breakpoint removed at %#x, though memory holds the original instruction: %w", s.addr, err)
	}
	return nil
}

// restore writes the original bytes of a removed breakpoint again, when
// the memory holds the breakpoint still, and warns of it: a thread sent
// back to run the restored instruction trapped there again. It reports
// whether it found the breakpoint back.
func (t *tracer) restore(s *site) (bool, error) {
	b := make([]byte, len(s.orig))
	if err := t.mem.ReadMem(s.addr, b); err != nil || !bytes.Equal(b, t.arch.Breakpoint()) || staleCode {
		return false, nil
	}
	t.cfg.Warn(prf.BreakpointBack(s.addr))
	if err := t.mem.WriteMem(s.addr, s.orig); err != nil {
		return true, fmt.Errorf("remove breakpoint again: %w", err)
	}
	return true, nil
}

func (t *tracer) setAndResume(th *thread, sig syscall.Signal) error {
	if err := ptrace.SetRegs(th.tid, &t.regs); err != nil {
		if ptrace.IsNoProcess(err) {
			return nil
		}
		return fmt.Errorf("write registers of thread %d: %w", th.tid, err)
	}
	return t.resume(th.tid, sig)
}

// spawned handles a clone, fork or vfork event of thread th.
func (t *tracer) spawned(th *thread, event int) error {
	msg, err := ptrace.EventMsg(th.tid)
	if err != nil {
		return fmt.Errorf("read event of thread %d: %w", th.tid, err)
	}
	child := int(msg)
	t.noteChild(child)
	kind := map[int]childKind{ptrace.EventClone: kindThread, ptrace.EventFork: kindFork, ptrace.EventVfork: kindVfork}[event]
	switch {
	case th.foreign && kind == kindThread:
		kind = kindVfork // a thread of a foreign process is foreign too
	case kind != kindVfork:
		kind = sharing(th.tid, child, kind)
	}
	if kind == kindVfork && !th.foreign {
		t.vforking(th)
	}
	if ws, ok := t.early[child]; ok {
		delete(t.early, child)
		if err := t.adopt(child, kind, ws); err != nil {
			return err
		}
	} else {
		t.expected[child] = kind
	}
	return t.resume(th.tid, 0)
}

// sharing returns the kind of a new thread or child by what matters:
// whether it shares the program's memory, whatever the clone flags that
// made it. A thread does, so does a child of clone(CLONE_VM) that the
// kernel reports as a fork; a child of clone without CLONE_VM does not,
// though the kernel may report it as a clone. (Writing the original bytes
// back "in the child" of a CLONE_VM fork would take the breakpoints out of
// the program itself.) The child is compared with its parent while the
// parent is stopped at the event that made it: later the parent may have
// exited, and an exited thread has no memory to compare. Where the kernel
// cannot compare (no kcmp), the event's kind stands.
func sharing(parent, child int, kind childKind) childKind {
	same, err := ptrace.SameMemory(parent, child)
	switch {
	case err != nil:
		return kind
	case same:
		return kindThread
	}
	return kindFork
}

// newcomer handles the stop of a thread not yet known: a new thread or child
// whose first stop came before or after the event that announced it.
func (t *tracer) newcomer(tid int, ws ptrace.WaitStatus) error {
	kind, ok := t.expected[tid]
	if !ok {
		t.early[tid] = ws
		return nil
	}
	delete(t.expected, tid)
	return t.adopt(tid, kind, ws)
}

// adopt takes a new thread or child under the tracer at its first stop, of
// the kind sharing found.
func (t *tracer) adopt(tid int, kind childKind, ws ptrace.WaitStatus) error {
	switch kind {
	case kindThread:
		// It runs the program's code in the program's memory: its hits
		// count, as a thread's.
		th := &thread{tid: tid, tgid: tgidOf(tid)}
		t.threads[tid] = th
		if err := t.giveBlock(tid, false); err != nil && !ptrace.IsNoProcess(err) {
			return fmt.Errorf("give thread %d its counters: %w", tid, err)
		}
		t.born(th)
		return t.resume(tid, 0)
	case kindVfork:
		// A vfork child shares the program's memory, breakpoints and
		// trampolines included, until it calls exec or exits: keep it
		// traced, uncounted.
		t.threads[tid] = &thread{tid: tid, tgid: tgidOf(tid), foreign: true}
		t.vforked(tid)
		if err := t.giveBlock(tid, true); err != nil && !ptrace.IsNoProcess(err) {
			return fmt.Errorf("give child %d its counters: %w", tid, err)
		}
		return t.resume(tid, 0)
	}
	// A forked child has its own copy of the memory: take the breakpoints
	// and the patches out of it and let it go, unprofiled and unharmed
	// (its trampolines would count into the program's counters).
	mem, err := t.childMem(tid)
	if err != nil {
		return fmt.Errorf("take the patches out of child %d: %w", tid, err)
	}
	t.unpatch(mem)
	mem.Close()
	if err := ptrace.Detach(tid, 0); err != nil && !ptrace.IsNoProcess(err) {
		return fmt.Errorf("detach child %d: %w", tid, err)
	}
	return nil
}

// exec handles an exec event: the process image, breakpoints and slots are
// gone. A foreign (vfork) child is let go; for the program itself profiling
// ends here, what was counted is kept, and the new image is only waited for.
func (t *tracer) exec(th *thread) error {
	if th.foreign || th.tgid != t.pid {
		// Another process sharing the program's memory has left it.
		delete(t.threads, th.tid)
		t.foreignDone(th.tid)
		if err := ptrace.Detach(th.tid, 0); err != nil && !ptrace.IsNoProcess(err) {
			return fmt.Errorf("detach child %d: %w", th.tid, err)
		}
		return nil
	}
	if !t.execed {
		t.execed = true
		t.cfg.Warn(prf.ExecEnded())
	}
	if t.timeInProcess {
		t.drainAll()
	}
	clear(t.sites)
	clear(t.slots)
	clear(t.retired)
	t.watch.written = nil
	t.loaded = nil // (the rendezvous went with the image)
	if t.inproc != nil {
		t.inproc.tramps = nil // gone with the image; the counts are kept
	}
	return t.resume(th.tid, 0)
}

// release lets go, unharmed, the processes still traced when the program
// has ended: children of clone(CLONE_VM) that share the memory of a program
// that is gone, and children whose first stop has not been handled yet.
// Each is stopped, the breakpoints are taken out of its memory, and it is
// detached. Without this, PROFILE's exit would kill them (EXITKILL), or
// they would trap on breakpoints nobody handles.
func (t *tracer) release() {
	left := map[int]bool{}
	for tid := range t.threads {
		if tid != t.pid {
			left[tid] = true
			ptrace.Interrupt(tid)
		}
	}
	for tid := range t.expected {
		left[tid] = true
		ptrace.Interrupt(tid)
	}
	for tid := range t.early {
		// Stopped already, at its first stop.
		t.letGo(tid, 0)
	}
	for len(left) > 0 {
		tid, ws, err := ptrace.Wait(0)
		if err != nil {
			return
		}
		if !left[tid] {
			continue
		}
		if ws.Exited() || ws.Signaled() {
			delete(left, tid)
			continue
		}
		sig := syscall.Signal(0)
		if !ws.GroupStop() && ws.Event() == 0 && ws.StopSignal() != syscall.SIGTRAP {
			sig = ws.StopSignal() // a signal on its way: deliver it
		}
		t.letGo(tid, sig)
		delete(left, tid)
	}
}

// letGo takes the breakpoints out of the memory of stopped task tid and
// detaches it, delivering sig. Trampolines stay: they need no tracer, and
// other tasks sharing that memory may be running through them.
func (t *tracer) letGo(tid int, sig syscall.Signal) {
	if mem, err := ptrace.OpenMem(tid); err == nil {
		t.takeOut(mem)
		mem.Close()
	} else if errors.Is(err, os.ErrPermission) {
		// A non-dumpable program: the tasks let go here share its
		// memory, which mem still reaches.
		t.takeOut(t.mem)
	}
	t.pastFull(tid)
	ptrace.Detach(tid, sig)
}

// takeOut takes the breakpoints out of mem and turns the rings' checks
// off (letGo).
func (t *tracer) takeOut(mem *ptrace.Mem) {
	for _, s := range t.sites {
		mem.WriteMem(s.addr, s.orig)
	}
	t.inproc.unchecked(mem)
}

// drain reaps the killed program after a fatal tracer error.
func (t *tracer) drain() {
	for {
		tid, ws, err := ptrace.Wait(0)
		if err != nil || (tid == t.pid && (ws.Exited() || ws.Signaled())) {
			return
		}
		if ws.Stopped() {
			ptrace.Cont(tid, 0)
		}
	}
}

// forwardSignals passes the signals PROFILE receives on to the program. A
// signal the program itself reported within the last moment (Ctrl-C reaches
// the whole foreground process group) is not sent twice.
func (t *tracer) forwardSignals() (stop func()) {
	if t.cfg.Signals == nil {
		return func() {}
	}
	quit := make(chan struct{})
	go func() {
		for {
			select {
			case <-quit:
				return
			case s := <-t.cfg.Signals:
				sig, ok := s.(syscall.Signal)
				if !ok {
					continue
				}
				t.sigNote.Store("profile received " + signalName(sig))
				received := time.Now().UnixNano()
				time.Sleep(50 * time.Millisecond)
				if int(sig) < len(t.lastSignal) && t.lastSignal[sig].Load() >= received-int64(50*time.Millisecond) {
					continue
				}
				ptrace.Kill(t.pid, sig)
			}
		}
	}()
	return func() { close(quit) }
}
