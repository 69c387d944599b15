// System calls PROFILE's stops must not make fail. A thread blocked in a
// system call that the kernel never restarts (epoll_wait, or poll, select
// and the like with a timeout, where a handler runs) fails with EINTR
// when PROFILE interrupts it (PTRACE_INTERRUPT wakes it as a signal
// does), and a signal to the process that comes while PROFILE holds the
// thread that would take it natively (the main thread, stopped for its
// own signal, for a breakpoint, or by PROFILE) is given by the kernel to
// another thread, whose call it interrupts. Neither happens natively.

package profile

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// siTKill is the code of a signal sent to one thread by tgkill(2)
// (SI_TKILL, include/uapi/asm-generic/siginfo.h).
const siTKill = -6

// requeued is a thread that PROFILE made block a signal (misrouted): its
// mask as it was, and the signal's bit; restored once it has its mask
// back, waiting while the signal still waits for the main thread (the
// thread keeps blocking it until then), interrupted while PROFILE's
// interrupt of it is to come.
type requeued struct {
	mask, bit                      uint64
	restored, waiting, interrupted bool
}

// restartCall makes the system call stopped thread tid of proc was in,
// which an interrupt of PROFILE's made fail with EINTR, restart as it
// would have natively when the thread goes on (ptrace.Regs.RestartEINTR:
// x86-64; arm64 keeps no means to).
func restartCall(proc process, tid int) {
	var regs ptrace.Regs
	if proc.getRegs(tid, &regs) == nil && regs.RestartEINTR() {
		proc.setRegs(tid, &regs)
	}
}

// misrouted gives signal sig, which thread th is stopped for, back to the
// kernel to be given again, when th is not the process's main thread and
// the main thread would have taken it natively: a signal to the process
// (tgkill's, sent to th itself, are told apart by their code) that the
// main thread does not block, and that interrupted a system call of th's
// that a handler would make fail (ptrace.Regs.InterruptedCall). th
// blocks sig and goes on with it: the kernel queues again a signal a
// thread goes on with but blocks, as it was sent (kernel/signal.c,
// ptrace_signal), and gives a signal to the process to a thread that can
// take it, the main thread once PROFILE lets it go; one sent to th comes
// back to th. th's call restarts, as it would have had no signal come (a
// handler for a signal that is th's makes it fail, as natively), and
// PROFILE interrupts th at once to give it its mask back (maskBack), once
// the signal is no longer waiting. It reports whether it did so.
func (s *signals) misrouted(th *thread, sig syscall.Signal, e *signalEnv) bool {
	main := e.threads[e.pid]
	bit := uint64(1) << (sig - 1)
	if !e.attached || th.tid == e.pid || th.tgid != e.pid || th.foreign || th.stepping != nil ||
		main == nil || main.exiting || e.proc.signals(e.pid, sigBlocked)&bit != 0 {
		return false
	}
	if info, err := e.proc.sigInfo(th.tid); err != nil || info.Code == siTKill {
		return false
	}
	var regs ptrace.Regs
	if e.proc.getRegs(th.tid, &regs) != nil || !regs.InterruptedCall() {
		return false
	}
	mask, err := e.proc.sigMask(th.tid)
	if r := s.requeued[th.tid]; r != nil && !r.restored {
		mask = r.mask // (it blocks another signal for the main thread)
	}
	if err != nil || mask&bit != 0 || e.proc.setSigMask(th.tid, mask|bit) != nil {
		return false
	}
	if regs.RestartEINTR() {
		e.proc.setRegs(th.tid, &regs)
	}
	if s.requeued == nil {
		s.requeued = map[int]*requeued{}
	}
	s.requeued[th.tid] = &requeued{mask: mask, bit: bit, interrupted: true}
	e.told.note(requeuedEvent{th.tid, sig})
	if err := e.loop.resume(th.tid, sig); err != nil {
		return false
	}
	e.proc.interrupt(th.tid)
	return true
}

// maskBack gives thread tid of proc (main thread pid), stopped (ws), the
// mask misrouted took from it, unless the signal still waits for the
// main thread: the thread then keeps blocking it (it would take it
// again), and is interrupted again once it no longer does
// (requeuedIdle). At the stop of PROFILE's interrupt (an EventStop),
// which made its restarted call fail, the call restarts again.
func (s *signals) maskBack(proc process, pid, tid int, ws ptrace.WaitStatus) {
	r := s.requeued[tid]
	if r == nil {
		return
	}
	if ws.StopSignal() == syscall.SIGTRAP && ws.Event() == ptrace.EventStop {
		restartCall(proc, tid)
		r.interrupted = false
	}
	if !r.restored {
		r.waiting = proc.signals(pid, sigSharedPending)&r.bit != 0
		if !r.waiting {
			proc.setSigMask(tid, r.mask)
			r.restored = true
		}
	}
	if r.restored && !r.interrupted {
		delete(s.requeued, tid)
	}
}

// requeuedIdle interrupts each thread of proc (main thread pid) that
// keeps blocking a signal for the main thread once the main thread has
// taken it, to give it its mask back (maskBack). PROFILE calls it while
// it waits, and at every stop.
func (s *signals) requeuedIdle(proc process, pid int) {
	for tid, r := range s.requeued {
		if r.waiting && proc.signals(pid, sigSharedPending)&r.bit == 0 {
			r.waiting, r.interrupted = false, true
			proc.interrupt(tid)
		}
	}
}

// mainGoes runs as PROFILE lets the main thread go (resume), which is
// stopped: a signal to the process that came while PROFILE held it waits,
// and may have woken another thread to take it, whose system call then
// fails, with no stop of PROFILE's, if the main thread takes the signal
// first. So, while one waits, each other thread is interrupted: it stops
// before it is back in its code, and its call restarts (maskBack), or it
// takes the signal, which misrouted gives back. The main thread is pid
// of proc, threads the loop's threads, attached whether PROFILE attached
// to the process.
func (s *signals) mainGoes(proc process, pid int, threads map[int]*thread, attached bool) {
	if !attached || len(threads) < 2 || proc.signals(pid, sigSharedQueued) == 0 {
		return
	}
	if s.requeued == nil {
		s.requeued = map[int]*requeued{}
	}
	for tid, th := range threads {
		if tid == pid || th.foreign || th.exiting || th.tgid != pid {
			continue
		}
		if r := s.requeued[tid]; r != nil {
			r.interrupted = true
		} else {
			s.requeued[tid] = &requeued{restored: true, interrupted: true}
		}
		proc.interrupt(tid)
	}
}

// masksBack gives every thread of proc PROFILE holds (stopped) the mask
// misrouted took from it, as it lets the process go: a signal for the
// main thread that still waits is taken by it, let go first (mainTakes).
func (s *signals) masksBack(proc process, stopped func(int) bool) {
	for tid, r := range s.requeued {
		if stopped(tid) && !r.restored {
			proc.setSigMask(tid, r.mask)
		}
	}
	clear(s.requeued)
}

// mainFirst returns the threads' IDs, ids in order, the main thread's
// (pid) first: let go first, it takes the signals to the process that
// came while PROFILE held every thread, as natively (mainTakes).
func mainFirst(ids []int, pid int) []int {
	n := len(ids)
	ids = slices.DeleteFunc(ids, func(tid int) bool { return tid == pid })
	if len(ids) < n {
		ids = append([]int{pid}, ids...)
	}
	return ids
}

// noneWaitFor waits until no signal to process pid of proc that its
// thread tid does not block waits (a tenth of a second at most), before
// it is let go: let go, it takes one that waits, which the main thread
// would take.
func noneWaitFor(proc process, pid, tid int) {
	for deadline := time.Now().Add(100 * time.Millisecond); time.Now().Before(deadline); {
		if proc.signals(pid, sigSharedPending)&^proc.signals(tid, sigBlocked) == 0 {
			return
		}
		ptrace.Yield()
	}
}

// mainLast returns the threads' IDs, ids in order, the main thread's
// (pid) last: stopped last (detachAll), it takes the signals to the
// process that come while the others stop, as natively.
func mainLast(ids []int, pid int) []int {
	ids = mainFirst(ids, pid)
	if len(ids) > 0 && ids[0] == pid {
		ids = append(ids[1:], pid)
	}
	return ids
}

// readyToGo is the stop, ws, of thread tid of proc (main thread pid) that
// detachAll interrupted to let it go: its mask back (maskBack), and, at
// the interrupt's stop, the call the interrupt made fail restarts when
// the thread goes.
func (s *signals) readyToGo(proc process, pid, tid int, ws ptrace.WaitStatus) {
	s.maskBack(proc, pid, tid, ws)
	if !ws.GroupStop() {
		restartCall(proc, tid)
	}
}

// mainTakes waits, the main thread let go (ran counts its runs on a CPU
// then) and the others still held, until it has run, and taken the
// signals to the process that wait and that it does not block (a tenth
// of a second at most). Let go, a thread is woken as for a signal; until
// it has run, the kernel gives a signal to the process to another
// thread, which could take one, and have its system call fail. The main
// thread is pid of proc.
func mainTakes(proc process, pid int, ran uint64) {
	for deadline := time.Now().Add(100 * time.Millisecond); time.Now().Before(deadline); {
		if runs(pid) > ran && proc.signals(pid, sigSharedPending)&^proc.signals(pid, sigBlocked) == 0 {
			return
		}
		ptrace.Yield()
	}
}

// runs is how many times thread tid was put on a CPU (the third field of
// /proc/PID/task/TID/schedstat), 0 when it cannot be read.
func runs(tid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/schedstat")
	if f := strings.Fields(string(b)); err == nil && len(f) == 3 {
		n, _ := strconv.ParseUint(f[2], 10, 64)
		return n
	}
	return 0
}
