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
	"github.com/sourceprofiler/sprof/internal/instr"
	"github.com/sourceprofiler/sprof/internal/profile/ptrace"
)

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
	}
	if th.stepping != nil {
		// The thread is inside a single-stepped slot: finish the step first
		// and deliver the signal after it.
		th.pendingSig = sig
		t.noteRelease()
		if err := ptrace.Step(th.tid); err != nil && !ptrace.IsNoProcess(err) {
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
	if err := ptrace.GetRegs(th.tid, &t.regs); err != nil {
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
	if err := ptrace.SetRegs(th.tid, &t.regs); err != nil && !ptrace.IsNoProcess(err) {
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
	if c.table {
		b := c.tableArea(sp)
		if b == 0 {
			return // the discard area
		}
		area = c.area(b)
	} else {
		base := regs.ThreadBase()
		if base < c.progAddr || c.blockSize == 0 || (base-c.progAddr)%c.blockSize != 0 {
			return
		}
		b := (base - c.progAddr) / c.blockSize
		if b == 0 || b >= uint64(c.nBlocks) {
			return
		}
		area = c.area(int(b))
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
	orig, ok := t.counters.origPC(pc)
	if s := t.bp.inSlot(pc); !ok && s != nil {
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
				ptrace.Kill(t.pid, sig)
			}
		}
	}()
	return func() { close(quit) }
}
