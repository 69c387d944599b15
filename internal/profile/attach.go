// Attaching: profiling a process that is already running (profile
// --pid), for a window, then letting it go as it was.

package profile

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/internal/profile/ptrace"
)

// An attached run differs from a run of a program PROFILE starts in four
// ways (docs/architecture.md, "Attaching to a running process"):
//
//   - Every thread is seized and stopped where it is (ptrace.Attach), and
//     planted as a program is at its exec stop; the libraries already
//     loaded are planted at once. Frames open at that moment are closed
//     by their returns, as the books close any frame whose entry they did
//     not see.
//   - What PROFILE runs on a thread of the program (the calibrations, its
//     system calls) starts below the thread's red zone, and never restarts
//     a system call the thread was in: the thread's registers, and the
//     system call it was in, come back as they were.
//   - Every byte PROFILE writes over the program's code is logged with the
//     bytes it replaced (undoMemory), and written back before PROFILE
//     detaches, with every thread stopped. The trampolines and the
//     counters stay mapped: a thread stopped in one finishes it, and one
//     inside the callee of a relocated call returns there, to its jump
//     back. They need no tracer, and no patch leads into them any more.
//   - The window ends after Config.Duration, at a signal to PROFILE
//     (Ctrl-C), or when the program ends. A signal PROFILE receives is
//     not passed on.

// attachment is the state of an attached run.
type attachment struct {
	// quit is closed when the window ends.
	quit chan struct{}
	// undo is the program's memory as PROFILE writes it, logging what it
	// replaces.
	undo *undoMemory
	// bases are the thread bases (amd64's GS base) and thread pointers
	// (arm64's TPIDR_EL0, for Go) of the threads as PROFILE found them,
	// put back before it detaches; base is the main thread's, which
	// threads started during the window inherited.
	bases, pointers map[int]uint64
	base, pointer   uint64
	// pcs are where the threads were stopped: no patch covers one
	// (scanCode's landings); sps are their stack pointers then.
	pcs []uint64
	sps map[int]uint64
	// mask is the main thread's signal mask, every signal blocked while
	// PROFILE sets up.
	mask uint64
	// began is when the window began, as the threads were let go;
	// detached is set when PROFILE has let the process go, still running.
	began    time.Time
	detached bool
	// running is set once the threads were let go; windowEnded when the
	// window ended with the process running (loop).
	running, windowEnded bool
	// why is what ended the window, for the run record.
	why string
	// stopped is set when a SIGSTOP sent before PROFILE attached reached
	// a thread PROFILE stepped in its set-up: the process is being
	// stopped, and PROFILE refuses it as it refuses a stopped one, the
	// SIGSTOP held for its thread and delivered as PROFILE lets it go.
	stopped bool
}

// testHookSeized, set by tests alone, runs as soon as PROFILE has
// seized and stopped every thread of the process it attaches to, before
// it looks at them: what happens to the process in that moment (a
// SIGSTOP on its way, TestAttachStoppedDuringSetUp).
var testHookSeized func(pid int)

// attachRun profiles process cfg.Attach for its window and lets it go.
// Whatever fails after it attached, the patches are taken out and the
// process is let go, never killed.
func (t *tracer) attachRun() (*Result, error) {
	start := t.cfg.Now()
	t.explain.plan()
	pid := t.cfg.Attach
	tids, group, err := ptrace.Attach(pid)
	if err != nil {
		return nil, prf.CannotAttach(pid, err)
	}
	if testHookSeized != nil {
		testHookSeized(pid)
	}
	if len(group) > 0 {
		// (Set-up steps the main thread, which a group-stop would take
		// back; detached, the threads stay stopped.)
		ptrace.DetachStopped(tids)
		return nil, prf.CannotAttach(pid, errors.New("it is stopped (SIGSTOP or SIGTSTP): continue it first (kill -CONT)"))
	}
	a := &attachment{
		quit:     make(chan struct{}),
		bases:    map[int]uint64{},
		pointers: map[int]uint64{},
		sps:      map[int]uint64{},
	}
	t.attach = a
	t.pid = pid
	for _, tid := range tids {
		t.threads[tid] = &thread{tid: tid, tgid: pid}
	}
	if err := t.attachChecks(); err != nil {
		t.letGo(nil)
		return nil, err
	}
	t.knownChildren()
	defer t.closeTrace(false)
	err = t.openTrace(start)
	var res *Result
	if err == nil {
		res, err = t.attachedRun(start)
	}
	if err != nil {
		if !a.detached {
			// Nothing was planted yet (attachedRun lets go of what it
			// planted itself).
			t.letGo(nil)
		}
		return nil, err
	}
	t.closeTrace(true)
	return res, nil
}

// attachedRun is traceRun for a process PROFILE attached to: it plants the
// plan in the stopped process, lets it run for the window, and detaches.
func (t *tracer) attachedRun(start time.Time) (res *Result, err error) {
	a, pid := t.attach, t.pid
	mem, err := ptrace.OpenMem(pid)
	if err != nil {
		return nil, fmt.Errorf("open memory of process %d: %w", pid, err)
	}
	defer mem.Close()
	a.undo = &undoMemory{Memory: mem, maps: t.readMaps}
	t.mem = a.undo
	if t.maps, err = ptrace.OpenMaps(pid); err != nil {
		return nil, fmt.Errorf("open memory map of process %d: %w", pid, err)
	}
	defer t.maps.Close()
	t.saveBases()
	t.explain.startedAt()
	defer func() { t.counters.close() }()
	// Whatever fails from here, what was planted is taken out, before
	// the memory, the map and the counters are closed.
	defer func() {
		if err != nil && !a.detached {
			if a.running {
				t.haltAll()
			}
			err = errors.Join(err, t.letGo(nil))
		}
	}()
	// The main thread runs PROFILE's set-up with every signal blocked:
	// one that comes meanwhile waits, and is delivered once its mask is
	// back.
	if a.mask, err = ptrace.SigMask(pid); err == nil {
		err = ptrace.SetSigMask(pid, ^uint64(0))
	}
	if err != nil {
		return nil, fmt.Errorf("block the signals of thread %d: %w", pid, err)
	}
	masked := true
	unmask := func() {
		if masked {
			ptrace.SetSigMask(pid, a.mask)
			masked = false
		}
	}
	defer unmask()
	t.startCounter()
	if err = t.plantAll(); err != nil {
		return nil, err
	}
	// The libraries are loaded already: planted now, and followed from
	// here as in any run.
	if err = t.syncLibraries(); err != nil {
		return nil, err
	}
	if err = t.calibrateAll(); err != nil {
		return nil, err
	}
	t.explain.calibrated()
	t.refineCounter()
	for _, tid := range t.threadIDs() {
		if tid == pid {
			continue
		}
		if err := t.giveBlock(tid, false); err != nil && !ptrace.IsNoProcess(err) {
			return nil, fmt.Errorf("give thread %d its counters: %w", tid, err)
		}
	}
	if err = t.ownFramesAbove(); err != nil {
		return nil, fmt.Errorf("give the threads their stacks: %w", err)
	}
	if a.stopped {
		// Let go, its thread takes the SIGSTOP held (letGo), and the
		// process is left in the group-stop it makes.
		unmask()
		err = errors.Join(prf.CannotAttach(pid, errors.New("it was stopped (SIGSTOP) as PROFILE attached: continue it first (kill -CONT)")), t.letGo(nil))
		ptrace.WaitStopped(t.threadIDs())
		return nil, err
	}
	res = &Result{}
	if t.sampling != nil {
		t.sampling.start(pid)
		defer t.sampling.finish()
		for tid := range t.threads {
			if tid != pid {
				t.sampling.threadStarted(tid)
			}
		}
	}
	a.began = time.Now()
	stop := t.endWindow()
	defer stop()
	unmask()
	t.startWaits()
	for _, tid := range t.threadIDs() {
		t.openThreadBooks(t.threads[tid])
		if err = t.resume(tid, 0); err != nil {
			return nil, err
		}
	}
	a.running = true
	t.progressStart = time.Now()
	t.explain.running()
	if t.cfg.Attached != nil {
		t.cfg.Attached(len(t.threads))
	}
	if err := t.loop(res); err != nil {
		return nil, err
	}
	if a.windowEnded {
		if err := t.detachAll(res); err != nil {
			return nil, err
		}
	}
	if !a.detached {
		t.releaseSurvivors()
	}
	t.finish(start, res)
	return res, nil
}

// threadIDs returns the threads' IDs in order.
func (t *tracer) threadIDs() []int {
	ids := make([]int, 0, len(t.threads))
	for tid := range t.threads {
		ids = append(ids, tid)
	}
	slices.Sort(ids)
	return ids
}

// saveBases notes the thread bases and pointers of the threads as PROFILE
// found them (attachment.bases), and where they are: their PCs, and those
// their signal handlers return to (framePCs), no patch covers.
func (t *tracer) saveBases() {
	a := t.attach
	maps, _ := t.readMaps()
	for tid := range t.threads {
		var regs ptrace.Regs
		if err := ptrace.GetRegs(tid, &regs); err == nil {
			if regs.RestartEINTR() {
				// (Its call failed for the attach's interrupt.)
				ptrace.SetRegs(tid, &regs)
			}
			a.bases[tid] = regs.ThreadBase()
			a.pcs = append(a.pcs, regs.PC())
			a.pcs = append(a.pcs, t.framePCs(&regs, maps)...)
			a.sps[tid] = t.arch.SP(&regs)
		}
		if p, err := ptrace.ThreadPointer(tid); err == nil {
			a.pointers[tid] = p
		}
	}
	a.base, a.pointer = a.bases[t.pid], a.pointers[t.pid]
}

// endWindow starts what ends the window: Config.Duration, a signal to
// PROFILE, whichever comes first. It returns the function that stops
// watching.
func (t *tracer) endWindow() (stop func()) {
	a := t.attach
	done := make(chan struct{})
	var timeout <-chan time.Time
	if t.cfg.Duration > 0 {
		timer := time.NewTimer(t.cfg.Duration)
		defer func() { stop = func() { timer.Stop(); close(done) } }()
		timeout = timer.C
	} else {
		defer func() { stop = func() { close(done) } }()
	}
	go func() {
		select {
		case <-done:
			return
		case <-timeout:
			a.why = fmt.Sprintf("for %s", seconds(t.cfg.Duration))
		case s := <-t.cfg.Signals:
			a.why = fmt.Sprintf("until PROFILE received %s after %s", signalName(s.(syscall.Signal)), seconds(time.Since(a.began)))
		}
		close(a.quit)
	}()
	return stop
}

// seconds writes d as a user reads a window: "0.25 s", "1.5 s", three
// digits, or whole seconds from 100 s on ("3600 s").
func seconds(d time.Duration) string {
	s := d.Seconds()
	if s >= 99.95 {
		return strconv.FormatFloat(math.Round(s), 'f', -1, 64) + " s"
	}
	return strconv.FormatFloat(s, 'g', 3, 64) + " s"
}

// knownChildren notes the children the process had when PROFILE attached
// (/proc/PID/task/TID/children): their SIGCHLD is no sign of a child made
// out of PROFILE's sight (PRF4670).
func (t *tracer) knownChildren() {
	for tid, th := range t.threads {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", th.tgid, tid))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if child, err := strconv.Atoi(f); err == nil {
				t.noteChild(child)
			}
		}
	}
}

// detachLimit is how long the end of the window waits for the threads to
// stop: one that does not (a vfork parent whose child never lets go) is
// left traced, and is let go when PROFILE exits.
const detachLimit = 10 * time.Second

// detachAll ends the window: it stops every thread, reads what the rings
// hold, takes every patch out, puts the thread bases back, and detaches
// the threads. A thread's stop that comes on the way (a breakpoint, a
// signal, a new thread, a vfork child's exec) is handled as in the run,
// and the thread is stopped again: no signal is lost. A vfork child,
// which shares the memory, is not stopped: its parent stops when it has
// let the memory go. A thread past its exit stop is not waited for.
func (t *tracer) detachAll(res *Result) error {
	ready, asked := map[int]bool{}, map[int]bool{}
	needed := func(th *thread) bool { return !th.foreign && !th.exiting }
	ask := func() {
		for _, tid := range t.mainLast() {
			if th := t.threads[tid]; th != nil && needed(th) && !ready[tid] && !asked[tid] {
				ptrace.Interrupt(tid)
				asked[tid] = true
			}
		}
	}
	done := func() bool {
		for tid, th := range t.threads {
			if (needed(th) && !ready[tid]) || th.foreign {
				return false
			}
		}
		return true
	}
	// trapped: a thread with a SIGTRAP on its way after the interrupt's
	// stop, of a breakpoint it hit or of a step through a slot it made.
	// Detached, it would die of it: the trap is handled first, as in the
	// run.
	trapped := func(th *thread) bool {
		return ptrace.Pending(th.tid)&(1<<(syscall.SIGTRAP-1)) != 0
	}
	quit := make(chan struct{})
	timer := time.AfterFunc(detachLimit, func() { close(quit) })
	defer timer.Stop()
	ask()
	for !done() {
		tid, ws, err := ptrace.WaitUntil(0, 10*time.Millisecond, func() bool { return false }, quit)
		if err == ptrace.ErrQuit {
			break
		}
		if err != nil {
			if errors.Is(err, syscall.ECHILD) {
				return nil
			}
			return fmt.Errorf("wait: %w", err)
		}
		switch {
		case ws.Exited() || ws.Signaled():
			if tid == t.pid {
				res.Exited, res.ExitCode = ws.Exited(), ws.ExitStatus()
				if ws.Signaled() {
					res.Signal = ws.Signal()
				}
				clear(t.threads)
				t.attach.detached = true
				return nil
			}
			t.threadGone(tid)
			delete(ready, tid)
			delete(asked, tid)
		case ws.Stopped():
			th := t.threads[tid]
			if th != nil && asked[tid] && (ws.GroupStop() || (ws.StopSignal() == syscall.SIGTRAP && ws.Event() == ptrace.EventStop)) && !trapped(th) {
				// (A thread stepping through a slot is ready too, its
				// step not made: it may be in a system call there, as
				// long as the call lasts, and the slot's jump back needs
				// no tracer.)
				ready[tid] = true
				t.readyToGo(tid, ws)
				continue
			}
			if th != nil && t.rings != nil {
				t.rings.stopped(th)
			}
			if err := t.stopped(tid, ws); err != nil {
				return err
			}
			if t.books != nil {
				t.charge(tid)
			}
			delete(asked, tid)
		}
		ask()
	}
	return t.letGo(ready)
}

// haltAll stops the threads of the process, after an error of PROFILE's
// while it ran, so that letGo can take the patches out: each is
// interrupted, and given a second to stop (one stopped already reports
// nothing). A thread stopped at a breakpoint is put back before it, to
// run the instruction there once the code is back; a signal on its way
// is delivered when it is detached.
func (t *tracer) haltAll() {
	for tid := range t.threads {
		ptrace.Interrupt(tid)
	}
	quit := make(chan struct{})
	timer := time.AfterFunc(time.Second, func() { close(quit) })
	defer timer.Stop()
	for {
		tid, ws, err := ptrace.WaitUntil(0, 10*time.Millisecond, func() bool { return false }, quit)
		if err != nil {
			return
		}
		th := t.threads[tid]
		switch {
		case th == nil:
		case ws.Exited() || ws.Signaled():
			delete(t.threads, tid)
		case ws.Stopped() && ws.StopSignal() == syscall.SIGTRAP && ws.Event() == 0:
			var regs ptrace.Regs
			if ptrace.GetRegs(tid, &regs) == nil {
				if addr := t.arch.BreakpointAddr(regs.PC()); t.bp.sites[addr] != nil {
					regs.SetPC(addr)
					ptrace.SetRegs(tid, &regs)
				}
			}
		case ws.Stopped() && !ws.GroupStop() && ws.StopSignal() != syscall.SIGTRAP:
			th.pendingSig = ws.StopSignal()
		}
	}
}

// threadGone forgets thread tid, ended (loop).
func (t *tracer) threadGone(tid int) {
	if th := t.threads[tid]; th != nil {
		t.closeThreadBooks(th)
	}
	delete(t.threads, tid)
	delete(t.requeued, tid)
	t.threadEnded(tid)
	if t.sampling != nil {
		t.sampling.threadEnded(tid)
	}
	t.foreignDone(tid)
}

// letGo puts the process back as PROFILE found it, its threads stopped:
// the rings are read, the code is written back, each thread gets its
// thread base back and is detached. ready names the threads known to be
// stopped (nil: all of them); the others, which would not stop, keep
// PROFILE as their tracer until it exits.
func (t *tracer) letGo(ready map[int]bool) error {
	a := t.attach
	stopped := func(tid int) bool { return ready == nil || ready[tid] }
	if a.undo == nil {
		for tid := range t.threads {
			ptrace.Detach(tid, 0)
		}
		a.detached = true
		return nil
	}
	for _, tid := range t.threadIDs() {
		if th := t.threads[tid]; th != nil && t.rings != nil && stopped(tid) {
			t.rings.stopped(th)
		}
	}
	// The rings' checks off first: a thread in a trampoline, or one that
	// returns into one, must never stop for a full ring.
	t.counters.unchecked(a.undo.Memory)
	var errs []error
	if err := a.undo.restore(); err != nil {
		errs = append(errs, fmt.Errorf("write the program's code back: %w", err))
	}
	maps, _ := t.readMaps()
	t.masksBack(stopped)
	for i, tid := range t.mainFirst() {
		if !stopped(tid) {
			continue
		}
		t.putBase(tid, t.settleFrames(tid, maps))
		sig := syscall.Signal(0)
		if th := t.threads[tid]; th != nil {
			sig = th.takePending()
		}
		ran := runs(tid)
		if i > 0 {
			t.noneWaitFor(tid)
		}
		if err := ptrace.Detach(tid, sig); err != nil && !ptrace.IsNoProcess(err) {
			errs = append(errs, fmt.Errorf("detach thread %d: %w", tid, err))
		}
		if i == 0 && tid == t.pid {
			t.mainTakes(ran)
		}
	}
	for tid := range t.early {
		ptrace.Detach(tid, 0)
	}
	a.detached = true
	return errors.Join(errs...)
}

// putBase gives stopped thread tid its thread base (and, for Go on arm64,
// its thread pointer) as PROFILE found it; a thread started during the
// window gets the main thread's, which it inherited. A thread stopped in
// PROFILE's code keeps PROFILE's, which that code reads: single-stepped
// out, it might block there in a system call of a slot. So does one
// whose signal handler returns there (keep: settleFrames).
func (t *tracer) putBase(tid int, keep bool) {
	a := t.attach
	base, ok := a.bases[tid]
	if !ok {
		base = a.base
	}
	var regs ptrace.Regs
	if keep || ptrace.GetRegs(tid, &regs) != nil || t.ownArea(regs.PC()) {
		return
	}
	if regs.ThreadBase() != base {
		regs.SetThreadBase(base)
		ptrace.SetRegs(tid, &regs)
	}
	if t.counters != nil && t.counters.table && t.counters.rings && t.goThreadPointer() {
		p, ok := a.pointers[tid]
		if !ok {
			p = a.pointer
		}
		ptrace.SetThreadPointer(tid, p)
	}
}

// ownArea reports whether addr is in one of the areas PROFILE mapped in
// the program (trampolines, slots, hops, punned trampolines' pages).
func (t *tracer) ownArea(addr uint64) bool {
	for _, a := range t.ownMaps {
		if addr >= a[0] && addr < a[0]+a[1] {
			return true
		}
	}
	return false
}

// borrowed returns the registers saved of a thread PROFILE borrows, made
// ready for code of PROFILE's: no system call restarts when the thread
// goes on (it may have been stopped in one), and, in a process PROFILE
// attached to, the stack starts below the red zone of the function the
// thread was stopped in. The saved registers, put back, restart it.
func (t *tracer) borrowed(saved ptrace.Regs) ptrace.Regs {
	regs := saved
	regs.NoRestart()
	if t.attach != nil {
		t.arch.SetSP(&regs, (t.arch.SP(&regs)-t.arch.RedZone()-64)&^15)
	}
	return regs
}

// reason is the run record's word on an attached run: the window its
// counts cover.
func (a *attachment) reason(pid int, res *Result) string {
	d := seconds(time.Since(a.began))
	switch {
	case a.detached && a.why != "":
		return fmt.Sprintf("attached to process %d %s: the counts cover that window", pid, a.why)
	case a.detached:
		return fmt.Sprintf("attached to process %d for %s: the counts cover that window", pid, d)
	case res.Exited:
		return fmt.Sprintf("attached to process %d for the last %s of its run, until it exited with status %d", pid, d, res.ExitCode)
	}
	return fmt.Sprintf("attached to process %d for the last %s of its run, until it was terminated by signal %s", pid, d, describeSignal(res.Signal))
}
