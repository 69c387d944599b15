// Signals: the program's own signals passed on unchanged, a thread moved
// out of PROFILE's code first where a handler or a core dump must not see
// it, and the signals PROFILE receives passed on to the program.

package profile

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// signals is the tracer's part that passes signals on: the program's
// (signal), a thread moved out of PROFILE's code first where a handler
// must not find it there, a signal the kernel gave another thread in the
// main thread's place given back (eintr.go), and the signals PROFILE
// receives (forward). It holds no tracer: each signal's stop gives it
// what it reads of the run (signalEnv).
type signals struct {
	// lastSignal[n] is when the program last reported signal n (Unix ns),
	// so that a signal PROFILE receives too (Ctrl-C reaches the whole
	// process group) is not passed on twice.
	lastSignal [65]atomic.Int64
	sigNote    atomic.Value // string: the signal PROFILE received, if any
	// requeued are the threads that block a signal for a moment
	// (eintr.go).
	requeued map[int]*requeued
	// later are stops a wait for one thread took (deliverOutside), which
	// the loop handles first (takeLater).
	later []laterStop
	// rolledBack counts the threads rolled out of instrumentation code
	// for a signal (Result.RolledBack).
	rolledBack uint64
	// ownCont is set until the tracer has seen the SIGCONT that ended the
	// stop of ptrace.Seize: it is the tracer's, not the program's.
	ownCont bool
	// goDepth: the plan has functions whose frames the depth code keys
	// as Go's (caps.goDepth, given when the tracer is made: settleDepth).
	goDepth bool
}

// signalLoop is what a signal's stop asks of the loop: to let a thread
// go, with a signal or none (resume), to handle a stop that a thread
// stepped out of PROFILE's code came to (stopped) and do what an
// interrupt was for (interruptStop).
type signalLoop interface {
	resume(tid int, sig syscall.Signal) error
	stopped(tid int, ws ptrace.WaitStatus) error
	interruptStop(th *thread)
}

// signalEnv is what a signal's stop reads of the run: the loop and its
// program (proc, its main thread pid, its threads, whether PROFILE
// attached to it); regs, the registers of the thread stopped, where the
// loop and the parts read them; the parts whose code a thread may be
// stopped in (the counters' trampolines, the breakpoints' slots, the
// rings' full stops), the narration, and the watch with what it reads.
// clocks has when the loop saw the stop and when it last let a thread go
// (noteRelease).
type signalEnv struct {
	loop     signalLoop
	proc     process
	pid      int
	threads  map[int]*thread
	attached bool
	regs     *ptrace.Regs
	counters *counters
	bp       *breakpoints
	rings    *rings
	ledgers  *ledgers
	told     observers
	watch    *watch
	watched  watchEnv
	clocks   *clocks
	// ownArea reports whether an address is in an area PROFILE mapped in
	// the program (planter.ownArea).
	ownArea func(addr uint64) bool
}

// signalEnv gives a signal's stop what it reads of t's run.
func (t *tracer) signalEnv() signalEnv {
	return signalEnv{
		loop: t, proc: t.proc, pid: t.pid, threads: t.threads, attached: t.attach != nil, regs: &t.regs,
		counters: t.parts.counters, bp: t.parts.bp, rings: t.parts.rings, ledgers: t.parts.ledgers, told: t.told,
		watch: &t.parts.watch, watched: t.watchEnv(), clocks: &t.clocks, ownArea: t.parts.plant.ownArea,
	}
}

// signal passes a signal on to the thread that received it, unchanged
// (pass), and notes how long PROFILE held the thread for it
// (watch.signalCost).
func (s *signals) signal(th *thread, sig syscall.Signal, e signalEnv) error {
	err := s.pass(th, sig, &e)
	if c := e.clocks; c.resumed > c.waited {
		e.watch.held += c.resumed - c.waited
	}
	return err
}

// pass passes a signal on to the thread that received it.
// Its registers are read only where the signal needs them: to roll a
// thread out of a trampoline's code that a handler would run again, and
// to move a fault in PROFILE's code to the program's own.
func (s *signals) pass(th *thread, sig syscall.Signal, e *signalEnv) error {
	if int(sig) < len(s.lastSignal) {
		s.lastSignal[sig].Store(time.Now().UnixNano())
	}
	e.watch.signals++
	if th.released > 0 {
		e.watch.signalGap(e.clocks.waited - th.released)
	}
	if sig == syscall.SIGCHLD {
		e.watch.childSignal(e.proc, th, e.watched.warn)
	}
	if e.told.on() {
		e.told.note(signalEvent{th, sig})
	}
	if s.misrouted(th, sig, e) {
		return nil
	}
	if e.ledgers != nil {
		e.ledgers.signalled(th)
	}
	if th.stepping == nil && e.counters.rolls() {
		if err := s.rollBack(th, e); err != nil {
			return err
		}
	}
	if th.stepping == nil && faultSignal(sig) {
		moved, err := leaveOwnCode(th, e)
		if err != nil {
			return err
		}
		if !moved && sig != syscall.SIGFPE {
			e.watch.copyOfJump(e.regs.PC(), e.watched)
		}
	} else if th.stepping == nil {
		if done, err := s.deliverOutside(th, sig, e); done || err != nil {
			return err
		}
	}
	if th.stepping != nil {
		// The thread is inside a single-stepped slot: finish the step first
		// and deliver the signal after it.
		th.pendingSig = sig
		e.clocks.noteRelease()
		if err := e.proc.step(th.tid); err != nil && !ptrace.IsNoProcess(err) {
			return fmt.Errorf("step thread %d: %w", th.tid, err)
		}
		return nil
	}
	return e.loop.resume(th.tid, sig)
}

// rollBack undoes a thread stopped for a signal inside a trampoline's call
// depth or record code (see counters.rollBack), or moves it out of book
// code, its event booked (ledgers.leaveAtStop), so that a handler that
// runs profiled functions finds the save slots free.
func (s *signals) rollBack(th *thread, e *signalEnv) error {
	if err := e.proc.getRegs(th.tid, e.regs); err != nil {
		if ptrace.IsNoProcess(err) {
			return nil
		}
		return fmt.Errorf("read registers of thread %d: %w", th.tid, err)
	}
	e.watch.checkThreadBase(e.counters, th, e.regs, e.watched.warn)
	rolled := (e.ledgers != nil && inCode{e.ledgers}.leaveAtStop(th, e.regs)) || e.counters.rollBack(e.regs)
	s.settleDepth(e.counters, e.watched.plan, e.watched.arch, e.regs)
	if !rolled {
		return nil
	}
	s.rolledBack++
	if err := e.proc.setRegs(th.tid, e.regs); err != nil && !ptrace.IsNoProcess(err) {
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
// distance from their goroutine's stack top, are left as they are. c
// are the counters, of plan's functions, on arch.
func (s *signals) settleDepth(c *counters, plan *datafile.Plan, arch instr.Arch, regs *ptrace.Regs) {
	if !c.keepsDepth() {
		return
	}
	if s.goDepth {
		return
	}
	sp := arch.SP(regs)
	var area []byte
	if c.layout.Table {
		b := c.tableArea(sp)
		if b == 0 {
			return // the discard area
		}
		area = c.area(b)
	} else {
		b, ok := c.layout.BlockAt(regs.ThreadBase())
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
		// (The last entry's stack pointer is no longer on top.)
		binary.LittleEndian.PutUint64(area[instr.DepthTop:], 0)
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
// registers are in e.regs either way.
func leaveOwnCode(th *thread, e *signalEnv) (moved bool, err error) {
	if err := e.proc.getRegs(th.tid, e.regs); err != nil {
		if ptrace.IsNoProcess(err) {
			return false, nil
		}
		return false, fmt.Errorf("read registers of thread %d: %w", th.tid, err)
	}
	pc := e.regs.PC()
	orig, ok := e.counters.origPC(pc)
	if s := e.bp.inSlot(pc); !ok && s != nil {
		orig, ok = s.addr, true
	}
	if !ok {
		return false, nil
	}
	e.regs.SetPC(orig)
	if err := e.proc.setRegs(th.tid, e.regs); err != nil && !ptrace.IsNoProcess(err) {
		return false, fmt.Errorf("write registers of thread %d: %w", th.tid, err)
	}
	return true, nil
}

func (th *thread) takePending() syscall.Signal {
	sig := th.pendingSig
	th.pendingSig = 0
	return sig
}

// forward passes the signals PROFILE receives (received) on to the
// program, process pid of proc, narrated by explain. A signal the
// program itself reported within the last moment (Ctrl-C reaches the
// whole foreground process group) is not sent twice.
func (s *signals) forward(received <-chan os.Signal, proc process, pid int, told observers) (stop func()) {
	if received == nil {
		return func() {}
	}
	quit := make(chan struct{})
	go func() {
		for {
			select {
			case <-quit:
				return
			case r := <-received:
				sig, ok := r.(syscall.Signal)
				if !ok {
					continue
				}
				s.sigNote.Store("profile received " + signalName(sig))
				at := time.Now().UnixNano()
				time.Sleep(50 * time.Millisecond)
				if int(sig) < len(s.lastSignal) && s.lastSignal[sig].Load() >= at-int64(50*time.Millisecond) {
					continue
				}
				told.note(forwardedEvent{sig})
				proc.kill(pid, 0, sig)
			}
		}
	}()
	return func() { close(quit) }
}

// note is what run.Reason says of a signal PROFILE received, or "".
func (s *signals) note() string {
	note, _ := s.sigNote.Load().(string)
	return note
}

// interruptStop does what an interrupt of thread th was for: a sweep of
// line coverage's jumps (the thread stopped: held there by the loop, or
// asked again), a sample of the ptrace sampler. (The loop's: the signals
// part asks for it through signalLoop.)
func (t *tracer) interruptStop(th *thread) {
	t.parts.interrupted(th)
	if t.parts.sampling != nil {
		t.parts.sampling.sampleStop(th)
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
func (s *signals) deliverOutside(th *thread, sig syscall.Signal, e *signalEnv) (bool, error) {
	tid := th.tid
	// (A thread in a system call there ran a system call instruction of a
	// breakpoint's slot, interrupted: stepped on, it would make the call
	// again, and wait in it.)
	if err := e.proc.getRegs(tid, e.regs); err != nil || !e.ownArea(e.regs.PC()) || e.proc.inSyscall(th.tgid, th.tid) {
		return false, nil
	}
	info, err := e.proc.rawSigInfo(tid)
	if err != nil {
		return false, nil
	}
	var later []syscall.Signal
	from := e.regs.PC()
	for steps := 1; steps <= stepOutLimit; steps++ {
		ws, gone, err := stepThrough(e.proc, tid)
		if err != nil || gone {
			return true, err
		}
		switch {
		case !ws.Stopped():
			s.later = append(s.later, laterStop{tid, ws}) // (gone: the loop sees it)
			return true, nil
		case ws.StopSignal() == syscall.SIGTRAP && ws.Event() == 0:
			if err := e.proc.getRegs(tid, e.regs); err != nil {
				return true, nil
			}
			if (e.rings != nil && e.rings.passFull(th)) || (e.ledgers != nil && e.ledgers.passStop(th)) {
				continue
			}
			if e.ledgers != nil && (inCode{e.ledgers}).leaveAtStop(th, e.regs) {
				// (Stepped into book code before its commit, through
				// instructions moved before it: its event booked at the
				// stop's time, not stepped through its readings.)
				e.proc.setRegs(tid, e.regs)
			}
			if !e.ownArea(e.regs.PC()) {
				e.told.note(steppedOutEvent{th, sig, from, e.regs.PC(), steps})
				return true, deliverHeld(th, sig, info, later, e)
			}
		case ws.StopSignal() == syscall.SIGTRAP && ws.Event() == ptrace.EventStop:
			e.loop.interruptStop(th)
		case ws.GroupStop():
			// The program is stopped (SIGSTOP): it stays so, and the
			// signals held come when it goes on (SIGCONT).
			resend(e.proc, th, append(later, sig))
			return true, e.loop.stopped(tid, ws)
		case ws.StopSignal() == syscall.SIGTRAP:
			// An event (the thread's exit): handled as any, the signals
			// held dropped with the thread.
			return true, e.loop.stopped(tid, ws)
		case faultSignal(ws.StopSignal()):
			if _, err := leaveOwnCode(th, e); err != nil {
				return true, err
			}
			resend(e.proc, th, append(later, sig))
			return true, e.loop.resume(tid, ws.StopSignal())
		default:
			later = append(later, ws.StopSignal())
		}
	}
	return true, deliverHeld(th, sig, info, later, e) // (where it is)
}

// stepThrough single-steps stopped thread tid of proc and waits for its
// next stop, whatever it is; gone when the thread no longer exists to
// step (killed meanwhile: the loop sees its end).
func stepThrough(proc process, tid int) (ws ptrace.WaitStatus, gone bool, err error) {
	if err := proc.step(tid); err != nil {
		if ptrace.IsNoProcess(err) {
			return 0, true, nil
		}
		return 0, false, fmt.Errorf("step thread %d: %w", tid, err)
	}
	ws, err = proc.waitFor(tid, time.Millisecond)
	if err != nil {
		return 0, false, fmt.Errorf("wait for thread %d: %w", tid, err)
	}
	return ws, false, nil
}

// deliverHeld delivers signal sig to stopped thread th with its siginfo,
// and sends the signals held after it again.
func deliverHeld(th *thread, sig syscall.Signal, info ptrace.RawSigInfo, later []syscall.Signal, e *signalEnv) error {
	if err := e.proc.setSigInfo(th.tid, info); err != nil && !ptrace.IsNoProcess(err) {
		return fmt.Errorf("give thread %d its signal's information: %w", th.tid, err)
	}
	resend(e.proc, th, later)
	return e.loop.resume(th.tid, sig)
}

// resend sends signals held while thread th stepped out of PROFILE's code
// again: they are pending when it goes on, and stop it again.
func resend(proc process, th *thread, sigs []syscall.Signal) {
	for _, s := range sigs {
		proc.kill(th.tgid, th.tid, s)
	}
}

// laterStop is a stop of a thread that a wait for it alone took, which
// the loop handles next (signals.later).
type laterStop struct {
	tid int
	ws  ptrace.WaitStatus
}

// takeLater takes the first of the stops a wait for one thread took, if
// any: the loop handles them before it waits again.
func (s *signals) takeLater() (laterStop, bool) {
	if len(s.later) == 0 {
		return laterStop{}, false
	}
	l := s.later[0]
	s.later = s.later[1:]
	return l, true
}
