// The tracer's loop: each stop waited for, handled, and the thread let go.

package profile

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/profile/ptrace"
)

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
		case ws.Stopped():
			if th := t.threads[tid]; th != nil {
				// Its wait came before this stop, and its records.
				t.settleWait(th)
				if t.rings != nil {
					t.rings.stopped(th)
				}
			}
			t.explain.stop()
			if err := t.stopped(tid, ws); err != nil {
				return err
			}
			if t.books != nil {
				t.charge(tid)
				t.waitTick()
			}
		}
		t.flushTrace()
		t.progress()
	}
}

// stopped handles one ptrace stop of thread tid.
func (t *tracer) stopped(tid int, ws ptrace.WaitStatus) error {
	t.maskBack(tid, ws)
	t.requeuedIdle()
	th := t.threads[tid]
	if th == nil {
		return t.newcomer(tid, ws)
	}
	if ws.GroupStop() {
		// The program was stopped (SIGSTOP, SIGTSTP...): it stays stopped,
		// as it would natively, until SIGCONT.
		t.noteRelease()
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
		// interrupt (for a sweep of line coverage's jumps, among
		// others). A thread in the middle of a single step must go on
		// stepping: continued, it would run past its slot.
		t.interruptStop(th)
		if th.stepping != nil {
			t.noteRelease()
			t.noteRelease()
			if err := ptrace.Step(th.tid); err != nil && !ptrace.IsNoProcess(err) {
				return fmt.Errorf("step thread %d: %w", th.tid, err)
			}
			return nil
		}
	}
	return t.resume(th.tid, 0)
}

// noteRelease notes the moment the tracer lets a stopped thread go: the
// end of the time the stop takes from it (timing). It is taken before the
// ptrace request, which may wake the thread on the tracer's own CPU and
// leave the tracer waiting there while the thread runs.
func (t *tracer) noteRelease() { t.resumed = t.clock() }

// wait waits for the next stop, polling for spin first; with yielding,
// see ptrace.WaitYielding.
func (t *tracer) wait(spin time.Duration) (int, ptrace.WaitStatus, error) {
	if n := len(t.later); n > 0 {
		s := t.later[0]
		t.later = t.later[1:]
		return s.tid, s.ws, nil
	}
	if t.attach != nil || t.cfg.Progress != nil {
		return t.waitTelling(spin)
	}
	if s := t.sampling; s != nil && s.kind == datafile.PtraceSampler && !s.ended {
		// The ptrace sampler's rounds, and the rings' reading if any.
		idle := s.interruptAll
		if t.rings != nil {
			idle = func() bool {
				drained := t.rings.drainIdle()
				t.flushTrace()
				return s.interruptAll() || drained
			}
		}
		return ptrace.WaitPolling(spin, s.pollEvery(), idle)
	}
	if t.trace != nil && (t.rings != nil || t.yielding) {
		// The events booked are written at least every traceFlushEvery,
		// also while no thread stops (the tracer does not sleep until the
		// next stop, reading the rings meanwhile): a program that runs or
		// waits long without a stop keeps them if PROFILE is killed.
		idle := func() bool {
			t.flushTrace()
			return false
		}
		if t.rings != nil {
			idle = func() bool {
				drained := t.rings.drainIdle()
				t.flushTrace()
				return drained
			}
		}
		return ptrace.WaitTicking(yieldWindow, traceFlushEvery/2, idle)
	}
	if t.rings != nil {
		return ptrace.WaitIdle(yieldWindow, t.rings.drainIdle)
	}
	if t.lines != nil && t.lines.sweep != nil && len(t.lines.sweep.live) > 0 && len(t.threads) == 1 {
		// (Sweeps only in a program of one thread: with several, stops
		// are waited for as always, not polled for.)
		return ptrace.WaitPolling(spin, time.Millisecond, t.sweepIdle)
	}
	if idle := t.explain.idle(); idle != nil {
		// (The narration's first hits of in-process counters.)
		return ptrace.WaitPolling(spin, time.Millisecond, idle)
	}
	if t.yielding {
		return ptrace.WaitYielding(yieldWindow)
	}
	return ptrace.Wait(spin)
}

// resume continues a thread; a thread that vanished meanwhile (killed by
// another thread's exit_group) is not an error.
func (t *tracer) resume(tid int, sig syscall.Signal) error {
	if tid == t.pid {
		t.mainGoes()
	}
	t.noteRelease()
	if th := t.threads[tid]; th != nil {
		th.released = t.resumed
	}
	if err := ptrace.Cont(tid, sig); err != nil && !ptrace.IsNoProcess(err) {
		return fmt.Errorf("resume thread %d: %w", tid, err)
	}
	return nil
}
