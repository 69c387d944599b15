// Signals: the program's own signals passed on unchanged, a thread moved
// out of PROFILE's code first where a handler or a core dump must not see
// it, and the signals PROFILE receives passed on to the program.

package profile

import (
	"encoding/binary"
	"fmt"
	"slices"
	"syscall"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// signal passes a signal on to the thread that received it, unchanged
// (passSignal), and notes how long PROFILE held the thread for it
// (signalCost).
func (t *tracer) signal(th *thread, sig syscall.Signal) error {
	err := t.passSignal(th, sig)
	if t.clocks.resumed > t.clocks.waited {
		t.watch.held += t.clocks.resumed - t.clocks.waited
	}
	return err
}

// passSignal passes a signal on to the thread that received it.
// Its registers are read only where the signal needs them: to roll a
// thread out of a trampoline's code that a handler would run again, and
// to move a fault in PROFILE's code to the program's own.
func (t *tracer) passSignal(th *thread, sig syscall.Signal) error {
	if int(sig) < len(t.lastSignal) {
		t.lastSignal[sig].Store(time.Now().UnixNano())
	}
	t.watch.signals++
	if th.released > 0 {
		t.watch.signalGap(t.clocks.waited - th.released)
	}
	if sig == syscall.SIGCHLD {
		t.childSignal(th)
	}
	t.explain.signal(th, sig)
	if t.misrouted(th, sig) {
		return nil
	}
	if th.stepping == nil && t.counters.rolls() {
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
	} else if th.stepping == nil {
		if done, err := t.deliverOutside(th, sig); done || err != nil {
			return err
		}
	}
	if th.stepping != nil {
		// The thread is inside a single-stepped slot: finish the step first
		// and deliver the signal after it.
		th.pendingSig = sig
		t.clocks.noteRelease()
		if err := t.proc.step(th.tid); err != nil && !ptrace.IsNoProcess(err) {
			return fmt.Errorf("step thread %d: %w", th.tid, err)
		}
		return nil
	}
	return t.resume(th.tid, sig)
}

// rollBack undoes a thread stopped for a signal inside a trampoline's call
// depth or record code (see counters.rollBack), so that a handler that runs
// profiled functions finds the save slots free.
func (t *tracer) rollBack(th *thread) error {
	if err := t.proc.getRegs(th.tid, &t.regs); err != nil {
		if ptrace.IsNoProcess(err) {
			return nil
		}
		return fmt.Errorf("read registers of thread %d: %w", th.tid, err)
	}
	t.checkThreadBase(th, &t.regs)
	rolled := t.counters.rollBack(&t.regs)
	t.settleDepth(&t.regs)
	if !rolled {
		return nil
	}
	t.rolledBack++
	if err := t.proc.setRegs(th.tid, &t.regs); err != nil && !ptrace.IsNoProcess(err) {
		return fmt.Errorf("write registers of thread %d: %w", th.tid, err)
	}
	return nil
}

// settleDepth pops from the shadow stack of a thread stopped for a signal
// (its registers regs, rolled back) the frames that have returned: those
// entered below its stack pointer. The entry code pops a returned frame
// only at the next entry from as high or higher; a handler that runs
// before that (an alarm while the thread runs code of its own, after a
// handler that called profiled functions) would find the last handler's
// frames above its own, lower on the stack, and take them for its
// callers: two frames more at each such alarm (TestInProcessSurvives saw
// a call depth of 6 where 4 is the deepest). Go's frames, keyed by their
// distance from their goroutine's stack top, are left as they are.
func (t *tracer) settleDepth(regs *ptrace.Regs) {
	c := t.counters
	if !c.keepsDepth() {
		return
	}
	if !t.goDepthChecked {
		t.goDepthChecked = true
		t.goDepth = slices.ContainsFunc(t.plan.Funcs, func(f datafile.Func) bool { return f.Frame == datafile.FrameGoroutine })
	}
	if t.goDepth {
		return
	}
	sp := t.arch.SP(regs)
	var area []byte
	if c.layout.table {
		b := c.tableArea(sp)
		if b == 0 {
			return // the discard area
		}
		area = c.area(b)
	} else {
		b, ok := c.layout.blockAt(regs.ThreadBase())
		if !ok {
			return
		}
		area = c.area(b)
	}
	n := binary.LittleEndian.Uint64(area[instr.DepthCurrent:])
	n = min(n, uint64(len(area)-instr.DepthStack)/8)
	top := n
	for top > 0 && binary.LittleEndian.Uint64(area[instr.DepthStack+8*(top-1):]) < sp {
		top--
	}
	if top < n {
		binary.LittleEndian.PutUint64(area[instr.DepthCurrent:], top)
	}
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
// registers are those the original code would have there. (Other
// signals are delivered where the thread is back in the program's code:
// deliverOutside.) It reports whether it moved the thread; the thread's
// registers are in t.regs either way.
func (t *tracer) leaveOwnCode(th *thread) (moved bool, err error) {
	if err := t.proc.getRegs(th.tid, &t.regs); err != nil {
		if ptrace.IsNoProcess(err) {
			return false, nil
		}
		return false, fmt.Errorf("read registers of thread %d: %w", th.tid, err)
	}
	pc := t.regs.PC()
	orig, ok := t.counters.origPC(pc)
	if s := t.bp.inSlot(pc); !ok && s != nil {
		orig, ok = s.addr, true
	}
	if !ok {
		return false, nil
	}
	t.regs.SetPC(orig)
	if err := t.proc.setRegs(th.tid, &t.regs); err != nil && !ptrace.IsNoProcess(err) {
		return false, fmt.Errorf("write registers of thread %d: %w", th.tid, err)
	}
	return true, nil
}

func (th *thread) takePending() syscall.Signal {
	sig := th.pendingSig
	th.pendingSig = 0
	return sig
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
				t.explain.forwarded(sig)
				t.proc.kill(t.pid, 0, sig)
			}
		}
	}()
	return func() { close(quit) }
}

// interruptStop does what an interrupt of thread th was for: a sweep of
// line coverage's jumps, a sample of the ptrace sampler.
func (t *tracer) interruptStop(th *thread) {
	if t.lines != nil && t.lines.sweep != nil && t.lines.sweep.wanted {
		t.lines.sweepStop()
	}
	if t.sampling != nil {
		t.sampling.sampleStop(th)
	}
}

// stepOutLimit is how many instructions, at most, a thread is stepped
// through PROFILE's code before a signal is delivered: a trampoline is a
// few dozen, but a relocated string instruction (rep movs) steps once a
// round.
const stepOutLimit = 4096

// deliverOutside delivers signal sig, which stopped thread th in code
// PROFILE wrote (a trampoline of an entry, an exit or a line, a
// breakpoint's slot, a hop), where the thread is back in the program's
// code: the signal is held, the thread single-stepped out, and the
// signal delivered there with its own siginfo. So a handler, or Go's
// profiler reading the interrupted PC, sees the program's code as it
// would natively, and nothing is counted twice (a thread moved back to
// the site would count its call again). A full ring on the way is read,
// a fault on the way is delivered at once (leaveOwnCode), and another
// signal that comes meanwhile is held and sent again after sig. It
// reports whether it took the stop over: false when th is not in
// PROFILE's code, and sig is to be delivered as always.
func (t *tracer) deliverOutside(th *thread, sig syscall.Signal) (bool, error) {
	tid := th.tid
	// (A thread in a system call there ran a system call instruction of a
	// breakpoint's slot, interrupted: stepped on, it would make the call
	// again, and wait in it.)
	if err := t.proc.getRegs(tid, &t.regs); err != nil || !t.ownArea(t.regs.PC()) || t.proc.inSyscall(th.tgid, th.tid) {
		return false, nil
	}
	info, err := t.proc.rawSigInfo(tid)
	if err != nil {
		return false, nil
	}
	var later []syscall.Signal
	from := t.regs.PC()
	for steps := 1; steps <= stepOutLimit; steps++ {
		ws, gone, err := t.stepThrough(tid)
		if err != nil || gone {
			return true, err
		}
		switch {
		case !ws.Stopped():
			t.later = append(t.later, laterStop{tid, ws}) // (gone: the loop sees it)
			return true, nil
		case ws.StopSignal() == syscall.SIGTRAP && ws.Event() == 0:
			if err := t.proc.getRegs(tid, &t.regs); err != nil {
				return true, nil
			}
			if t.rings != nil && t.rings.passFull(th) {
				continue
			}
			if !t.ownArea(t.regs.PC()) {
				t.explain.steppedOut(th, sig, from, t.regs.PC(), steps)
				return true, t.deliverHeld(th, sig, info, later)
			}
		case ws.StopSignal() == syscall.SIGTRAP && ws.Event() == ptrace.EventStop:
			t.interruptStop(th)
		case ws.GroupStop():
			// The program is stopped (SIGSTOP): it stays so, and the
			// signals held come when it goes on (SIGCONT).
			t.resend(th, append(later, sig))
			return true, t.stopped(tid, ws)
		case ws.StopSignal() == syscall.SIGTRAP:
			// An event (the thread's exit): handled as any, the signals
			// held dropped with the thread.
			return true, t.stopped(tid, ws)
		case faultSignal(ws.StopSignal()):
			if _, err := t.leaveOwnCode(th); err != nil {
				return true, err
			}
			t.resend(th, append(later, sig))
			return true, t.resume(tid, ws.StopSignal())
		default:
			later = append(later, ws.StopSignal())
		}
	}
	return true, t.deliverHeld(th, sig, info, later) // (where it is)
}

// stepThrough single-steps stopped thread tid and waits for its next
// stop, whatever it is; gone when the thread no longer exists to step
// (killed meanwhile: the loop sees its end).
func (t *tracer) stepThrough(tid int) (ws ptrace.WaitStatus, gone bool, err error) {
	if err := t.proc.step(tid); err != nil {
		if ptrace.IsNoProcess(err) {
			return 0, true, nil
		}
		return 0, false, fmt.Errorf("step thread %d: %w", tid, err)
	}
	ws, err = t.proc.waitFor(tid, time.Millisecond)
	if err != nil {
		return 0, false, fmt.Errorf("wait for thread %d: %w", tid, err)
	}
	return ws, false, nil
}

// deliverHeld delivers signal sig to stopped thread th with its siginfo,
// and sends the signals held after it again.
func (t *tracer) deliverHeld(th *thread, sig syscall.Signal, info ptrace.RawSigInfo, later []syscall.Signal) error {
	if err := t.proc.setSigInfo(th.tid, info); err != nil && !ptrace.IsNoProcess(err) {
		return fmt.Errorf("give thread %d its signal's information: %w", th.tid, err)
	}
	t.resend(th, later)
	return t.resume(th.tid, sig)
}

// resend sends signals held while thread th stepped out of PROFILE's code
// again: they are pending when it goes on, and stop it again.
func (t *tracer) resend(th *thread, sigs []syscall.Signal) {
	for _, s := range sigs {
		t.proc.kill(th.tgid, th.tid, s)
	}
}

// laterStop is a stop of a thread that a wait for it alone took, which
// the loop handles next (tracer.later).
type laterStop struct {
	tid int
	ws  ptrace.WaitStatus
}
