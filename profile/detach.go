// The end of an attached run: every thread stopped, the patches taken
// out, the thread bases put back, and the process let go, running.

package profile

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/sourceprofiler/sprof/profile/ptrace"
)

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
func (a *attachment) detachAll(res *Result) error {
	t := a.t
	t.parts.lines.endSweep() // (the threads a sweep holds stop again, for the end)
	d := &detaching{t: t, ready: map[int]bool{}, asked: map[int]bool{}}
	quit := make(chan struct{})
	timer := time.AfterFunc(detachLimit, func() { close(quit) })
	defer timer.Stop()
	d.ask()
	for !d.done() {
		tid, ws, err := t.proc.wait(quitWait(0, 10*time.Millisecond, func() bool { return false }, quit))
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
				a.detached = true
				return nil
			}
			t.threadGone(tid)
			delete(d.ready, tid)
			delete(d.asked, tid)
		case ws.Stopped():
			th := t.threads[tid]
			if th != nil && d.asked[tid] && (ws.GroupStop() || (ws.StopSignal() == syscall.SIGTRAP && ws.Event() == ptrace.EventStop)) && !d.trapped(th) {
				// (A thread stepping through a slot is ready too, its
				// step not made: it may be in a system call there, as
				// long as the call lasts, and the slot's jump back needs
				// no tracer.)
				d.ready[tid] = true
				t.signals.readyToGo(t.proc, t.pid, tid, ws)
				continue
			}
			if th != nil && t.parts.rings != nil {
				t.parts.rings.stopSeen(th)
			}
			if err := t.stopped(tid, ws); err != nil {
				return err
			}
			if t.parts.books != nil {
				t.clocks.charge(t.threads[tid], t.parts.rings)
			}
			delete(d.asked, tid)
		}
		d.ask()
	}
	return a.letGo(d.ready)
}

// detaching is the state of detachAll: the threads stopped, ready to
// go, and those interrupted whose stop has not come yet.
type detaching struct {
	t            *tracer
	ready, asked map[int]bool
}

// needed reports whether thread th must stop before the process is let
// go: not a vfork child, nor a thread past its exit stop.
func (d *detaching) needed(th *thread) bool { return !th.foreign && !th.exiting }

// ask interrupts the threads needed that are neither ready nor asked,
// the main thread last.
func (d *detaching) ask() {
	t := d.t
	for _, tid := range mainLast(threadIDs(t.threads), t.pid) {
		if th := t.threads[tid]; th != nil && d.needed(th) && !d.ready[tid] && !d.asked[tid] {
			t.proc.interrupt(tid)
			d.asked[tid] = true
		}
	}
}

// done reports whether every thread needed is ready, and no vfork child
// is left.
func (d *detaching) done() bool {
	for tid, th := range d.t.threads {
		if (d.needed(th) && !d.ready[tid]) || th.foreign {
			return false
		}
	}
	return true
}

// trapped reports whether thread th has a SIGTRAP on its way after the
// interrupt's stop, of a breakpoint it hit or of a step through a slot
// it made. Detached, it would die of it: the trap is handled first, as
// in the run.
func (d *detaching) trapped(th *thread) bool {
	return d.t.proc.signals(th.tid, sigPending)&(1<<(syscall.SIGTRAP-1)) != 0
}

// haltAll stops the threads of the process, after an error of PROFILE's
// while it ran, so that letGo can take the patches out: each is
// interrupted, and given a second to stop (one stopped already reports
// nothing). A thread stopped at a breakpoint is put back before it, to
// run the instruction there once the code is back; a signal on its way
// is delivered when it is detached.
func (a *attachment) haltAll() {
	t := a.t
	for tid := range t.threads {
		t.proc.interrupt(tid)
	}
	quit := make(chan struct{})
	timer := time.AfterFunc(time.Second, func() { close(quit) })
	defer timer.Stop()
	for {
		tid, ws, err := t.proc.wait(quitWait(0, 10*time.Millisecond, func() bool { return false }, quit))
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
			if t.proc.getRegs(tid, &regs) == nil {
				if addr := t.arch.BreakpointAddr(regs.PC()); t.parts.bp.sites[addr] != nil {
					regs.SetPC(addr)
					t.proc.setRegs(tid, &regs)
				}
			}
		case ws.Stopped() && !ws.GroupStop() && ws.StopSignal() != syscall.SIGTRAP:
			th.pendingSig = ws.StopSignal()
		}
	}
}

// letGo puts the process back as PROFILE found it, its threads stopped:
// the rings are read, the code is written back, each thread gets its
// thread base back and is detached. ready names the threads known to be
// stopped (nil: all of them); the others, which would not stop, keep
// PROFILE as their tracer until it exits.
func (a *attachment) letGo(ready map[int]bool) error {
	t := a.t
	stopped := func(tid int) bool { return ready == nil || ready[tid] }
	if a.undo == nil {
		for tid := range t.threads {
			t.proc.detach(tid, 0)
		}
		a.detached = true
		return nil
	}
	for _, tid := range threadIDs(t.threads) {
		if th := t.threads[tid]; th != nil && t.parts.rings != nil && stopped(tid) {
			t.parts.rings.stopSeen(th)
		}
	}
	// The rings' checks off first: a thread in a trampoline, or one that
	// returns into one, must never stop for a full ring.
	t.parts.counters.unchecked(a.undo.Memory)
	// (A thread inside book code before it commits goes back to its
	// start, where unchecked jumps over it: on, it might stop at the
	// code's breakpoint, which no tracer would serve.)
	for tid := range t.threads {
		if l := t.parts.ledgers; l != nil && stopped(tid) {
			inCode{l}.restart(tid)
		}
	}
	if l := t.parts.ledgers; l != nil && stopped(t.pid) {
		clockPages{l}.unmapAll(t.pid) // (no code reads them now)
	}
	var errs []error
	if err := a.undo.restore(); err != nil {
		errs = append(errs, fmt.Errorf("write the program's code back: %w", err))
	}
	maps, _ := t.readMaps()
	t.signals.masksBack(t.proc, stopped)
	for i, tid := range mainFirst(threadIDs(t.threads), t.pid) {
		if !stopped(tid) {
			continue
		}
		a.putBase(tid, stacksOf(t).settleFrames(tid, maps))
		sig := syscall.Signal(0)
		if th := t.threads[tid]; th != nil {
			sig = th.takePending()
		}
		ran := runs(tid)
		if i > 0 {
			noneWaitFor(t.proc, t.pid, tid)
		}
		if err := t.proc.detach(tid, sig); err != nil && !ptrace.IsNoProcess(err) {
			errs = append(errs, fmt.Errorf("detach thread %d: %w", tid, err))
		}
		if i == 0 && tid == t.pid {
			mainTakes(t.proc, t.pid, ran)
		}
	}
	for tid := range t.tasks.early {
		t.proc.detach(tid, 0)
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
func (a *attachment) putBase(tid int, keep bool) {
	t := a.t
	base, ok := a.bases[tid]
	if !ok {
		base = a.base
	}
	var regs ptrace.Regs
	if keep || t.proc.getRegs(tid, &regs) != nil || t.parts.plant.ownArea(regs.PC()) {
		return
	}
	if regs.ThreadBase() != base {
		regs.SetThreadBase(base)
		t.proc.setRegs(tid, &regs)
	}
	if t.parts.counters.threadPointers() {
		p, ok := a.pointers[tid]
		if !ok {
			p = a.pointer
		}
		t.proc.setThreadPointer(tid, p)
	}
}
