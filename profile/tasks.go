// Tasks: the threads and children the program makes, each taken under
// the tracer or let go unharmed, an exec, and the tasks let go at the end.

package profile

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// childKind is what a new task of the program is to PROFILE: a thread
// of the program, a forked child with memory of its own, or a vfork child
// sharing the program's memory until its exec (sharing).
type childKind int

// tasks are what the tracer keeps of the tasks it has not taken in yet:
// early, new threads and children whose first stop came before the event
// that announces them; expected, the IDs an event announced whose first
// stop has not come yet, with their kind. execed is set once the program
// called exec (its profile ends there).
type tasks struct {
	early    map[int]ptrace.WaitStatus
	expected map[int]childKind
	execed   bool
}

const (
	kindThread childKind = iota
	kindFork
	kindVfork
)

// spawned handles a clone, fork or vfork event of thread th. A thread
// gone before its event is read (ESRCH: killed at the stop, by the
// group's exit while it was in clone) is left to its exit, which comes;
// so is its new thread, killed unborn (newcomer). (A fork's child would
// outlive it: unannounced, it waits in tasks.early, stopped, until the
// run's end lets the survivors go.)
func (t *tracer) spawned(th *thread, event int) error {
	msg, err := t.proc.eventMsg(th.tid)
	if ptrace.IsNoProcess(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read event of thread %d: %w", th.tid, err)
	}
	child := int(msg)
	t.parts.childMade(child)
	kind := map[int]childKind{ptrace.EventClone: kindThread, ptrace.EventFork: kindFork, ptrace.EventVfork: kindVfork}[event]
	switch {
	case th.foreign && kind == kindThread:
		kind = kindVfork // a thread of a foreign process is foreign too
	case kind != kindVfork:
		kind = sharing(t.proc, th.tid, child, kind)
	}
	if kind == kindVfork && !th.foreign {
		t.parts.vforking(th)
	}
	if ws, ok := t.tasks.early[child]; ok {
		delete(t.tasks.early, child)
		if err := t.adopt(child, kind, ws); err != nil {
			return err
		}
	} else {
		t.tasks.expected[child] = kind
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
func sharing(p process, parent, child int, kind childKind) childKind {
	same, err := p.sameMemory(parent, child)
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
//
// A task whose first stop is its exit was killed before it ever ran, by
// the group's exit (exit_group, a fatal signal) while its parent was in
// clone: its parent, killed as well, will not report it. Kept stopped
// until that event, it would keep the group's leader from being reaped
// and the run from ending; it is let go to its end.
func (t *tracer) newcomer(tid int, ws ptrace.WaitStatus) error {
	if ws.Event() == ptrace.EventExit {
		if err := t.proc.cont(tid, 0); err != nil && !ptrace.IsNoProcess(err) {
			return fmt.Errorf("let dying task %d go: %w", tid, err)
		}
		return nil
	}
	kind, ok := t.tasks.expected[tid]
	if !ok {
		t.tasks.early[tid] = ws
		return nil
	}
	delete(t.tasks.expected, tid)
	return t.adopt(tid, kind, ws)
}

// adopt takes a new thread or child under the tracer at its first stop, of
// the kind sharing found.
func (t *tracer) adopt(tid int, kind childKind, ws ptrace.WaitStatus) error {
	switch kind {
	case kindThread:
		// It runs the program's code in the program's memory: its hits
		// count, as a thread's.
		th := &thread{tid: tid, tgid: t.proc.tgid(tid)}
		t.threads[tid] = th
		if err := t.parts.threadBorn(tid, false); err != nil && !ptrace.IsNoProcess(err) {
			return fmt.Errorf("give thread %d its counters: %w", tid, err)
		}
		t.told.note(threadEvent{tid})
		return t.resume(tid, 0)
	case kindVfork:
		// A vfork child shares the program's memory, breakpoints and
		// trampolines included, until it calls exec or exits: keep it
		// traced, uncounted.
		t.threads[tid] = &thread{tid: tid, tgid: t.proc.tgid(tid), foreign: true}
		if err := t.parts.threadBorn(tid, true); err != nil && !ptrace.IsNoProcess(err) {
			return fmt.Errorf("give child %d its counters: %w", tid, err)
		}
		t.told.note(childEvent{tid, true})
		return t.resume(tid, 0)
	}
	// A forked child has its own copy of the memory: take the breakpoints
	// and the patches out of it and let it go, unprofiled and unharmed
	// (its trampolines would count into the program's counters).
	mem, err := t.childMem(tid)
	if err != nil {
		return fmt.Errorf("take the patches out of child %d: %w", tid, err)
	}
	t.parts.unpatch(mem)
	mem.Close()
	t.told.note(childEvent{tid, false})
	if err := t.proc.detach(tid, 0); err != nil && !ptrace.IsNoProcess(err) {
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
		t.parts.threadEnded(th.tid)
		if err := t.proc.detach(th.tid, 0); err != nil && !ptrace.IsNoProcess(err) {
			return fmt.Errorf("detach child %d: %w", th.tid, err)
		}
		return nil
	}
	if !t.tasks.execed {
		t.tasks.execed = true
		t.cfg.Warn(prf.ExecEnded())
		t.told.note(execEvent{})
	}
	t.parts.execed()
	return t.resume(th.tid, 0)
}

// releaseSurvivors lets go, unharmed, the processes still traced when the
// program has ended: children of clone(CLONE_VM) that share the memory of
// a program that is gone, and children whose first stop has not been
// handled yet.
// Each is stopped, the breakpoints are taken out of its memory, and it is
// detached. Without this, PROFILE's exit would kill them (EXITKILL), or
// they would trap on breakpoints nobody handles.
func (t *tracer) releaseSurvivors() {
	left := map[int]bool{}
	for tid := range t.threads {
		if tid != t.pid {
			left[tid] = true
			t.proc.interrupt(tid)
		}
	}
	for tid := range t.tasks.expected {
		left[tid] = true
		t.proc.interrupt(tid)
	}
	for tid := range t.tasks.early {
		// Stopped already, at its first stop.
		t.detachClean(tid, 0)
	}
	for len(left) > 0 {
		tid, ws, err := t.proc.wait(sleepWait(0))
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
		t.detachClean(tid, sig)
		delete(left, tid)
	}
}

// detachClean takes the breakpoints out of the memory of stopped task tid
// and detaches it, delivering sig. Trampolines stay: they need no tracer, and
// other tasks sharing that memory may be running through them.
func (t *tracer) detachClean(tid int, sig syscall.Signal) {
	if mem, err := t.proc.openMem(tid); err == nil {
		t.parts.takeOut(mem)
		mem.Close()
	} else if errors.Is(err, os.ErrPermission) {
		// A non-dumpable program: the tasks let go here share its
		// memory, which mem still reaches.
		t.parts.takeOut(t.mem)
	}
	t.parts.rings.pastFull(tid)
	t.proc.detach(tid, sig)
}

// takeOut takes the breakpoints out of mem and turns the rings' checks
// off (detachClean).
func (p *parts) takeOut(mem instr.Memory) {
	p.bp.takeOut(mem, false)
	p.counters.unchecked(mem)
}

// reapKilled reaps the killed program after a fatal tracer error.
func (t *tracer) reapKilled() {
	for {
		tid, ws, err := t.proc.wait(sleepWait(0))
		if err != nil || (tid == t.pid && (ws.Exited() || ws.Signaled())) {
			return
		}
		if ws.Stopped() {
			t.proc.cont(tid, 0)
		}
	}
}
