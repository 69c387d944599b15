// The threads of a sweep (linesweep.go): every thread of the program
// stopped before a byte of its code is written back, and let go after.
//
// A sweep interrupts each thread (PTRACE_INTERRUPT) and holds it at its
// interrupt's stop (holds), where the loop would have let it go; a
// thread that stops for anything else on the way (a breakpoint, a
// signal, a clone, its exit) is handled as always, and its interrupt's
// stop comes after, the interrupt still pending. A thread in a group
// stop (SIGSTOP), left listening, runs nothing until PROFILE lets it go:
// it counts as stopped (parked). A thread past its exit stop runs
// nothing either; a thread born meanwhile is interrupted in turn. Once
// no thread runs, the covered patches are written back and the held
// threads let go, the main thread first, each as the loop would have let
// it go: a thread stepping through a breakpoint's slot steps on, a
// system call the interrupt made fail restarts (x86-64: restartCall),
// and a signal that came meanwhile waits in the kernel for its thread
// to go on. A thread whose
// interrupt's stop another of PROFILE's waits took is interrupted again;
// a sweep whose threads have not all stopped within sweepLimit (one in a
// wait no signal ends) is given up, its threads let go, and the next
// looked for a second later. A vfork child, which shares the memory,
// gives it up at once.

package profile

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// sweepAsk is how long a thread interrupted for a sweep is waited for
// before it is interrupted again; sweepLimit how long a sweep waits for
// all to stop before it is given up, and sweepBackoff how long it is
// then before the next look.
const (
	sweepAsk     = 10 * time.Millisecond
	sweepLimit   = 100 * time.Millisecond
	sweepBackoff = time.Second
)

// sweepHold is a sweep under way: when it began, the threads interrupted
// whose interrupt's stop has not come yet (asked, with when), those held
// at it, and those in a group stop (parked).
type sweepHold struct {
	began  time.Time
	asked  map[int]time.Time
	held   map[int]*thread
	parked map[int]bool
}

// begin begins a sweep: every thread is interrupted.
func (s *sweeper) begin(e *lineEnv) {
	s.hold = &sweepHold{began: s.now(), asked: map[int]time.Time{}, held: map[int]*thread{}, parked: map[int]bool{}}
	s.ask(e)
}

// ask interrupts each thread of the sweep under way that may still run
// code: neither held, parked nor past its exit stop, and not asked within
// sweepAsk.
func (s *sweeper) ask(e *lineEnv) {
	h, now := s.hold, s.now()
	for _, tid := range slices.Sorted(maps.Keys(e.threads)) {
		at, asked := h.asked[tid]
		if e.threads[tid].exiting || h.held[tid] != nil || h.parked[tid] || asked && now.Sub(at) < sweepAsk {
			continue
		}
		if e.proc.interrupt(tid) == nil {
			h.asked[tid] = now
		}
	}
}

// stopped reports whether no thread of threads runs code: each is held,
// parked or past its exit stop.
func (h *sweepHold) stopped(threads map[int]*thread) bool {
	for tid, th := range threads {
		if !th.exiting && h.held[tid] == nil && !h.parked[tid] {
			return false
		}
	}
	return true
}

// holds holds thread th at an interrupt's stop for the sweep under way,
// and reports whether it did: the loop leaves it stopped. A system call
// the interrupt made fail restarts when it goes on (restartCall).
func (lt *lineTrampolines) holds(th *thread) bool {
	if lt == nil || lt.sweep == nil || lt.sweep.hold == nil || th.foreign {
		return false
	}
	h := lt.sweep.hold
	delete(h.asked, th.tid)
	delete(h.parked, th.tid)
	h.held[th.tid] = th
	restartCall(lt.env.proc, th.tid)
	return true
}

// interrupted notes that thread th's interrupt has stopped it, wherever
// the stop was taken (interruptStop): not held there, it is asked again.
func (lt *lineTrampolines) interrupted(th *thread) {
	if lt != nil && lt.sweep != nil && lt.sweep.hold != nil {
		delete(lt.sweep.hold.asked, th.tid)
	}
}

// parked notes that thread tid is in a group stop, left listening: it
// runs nothing until PROFILE lets it go, at its next stop (stopSeen).
func (lt *lineTrampolines) parked(tid int) {
	if lt != nil && lt.sweep != nil && lt.sweep.hold != nil {
		delete(lt.sweep.hold.asked, tid)
		lt.sweep.hold.parked[tid] = true
	}
}

// stopSeen notes that thread th, if parked, stopped for something else:
// handled, it may go on (seenHook).
func (lt *lineTrampolines) stopSeen(th *thread) {
	if s := lt.sweep; s != nil && s.hold != nil {
		delete(s.hold.parked, th.tid)
	}
}

// stopHandled sees to the sweep under way after each stop (handledHook):
// carried out once every thread is stopped (settle).
func (lt *lineTrampolines) stopHandled(int) {
	if s := lt.sweep; s != nil && s.hold != nil {
		lt.settle()
	}
}

// settle carries out the sweep under way once no thread runs: the PCs
// of the held threads read, the covered patches written back, every held
// thread let go. It gives the sweep up where another process shares the
// memory, or past sweepLimit; else it asks again the threads that may
// still run.
func (lt *lineTrampolines) settle() {
	e, s := &lt.env, lt.sweep
	h := s.hold
	switch {
	case sharesMemory(e.threads):
		s.release(e)
	case h.stopped(e.threads):
		n := lt.sweepNow(h.pcs(e))
		s.sweeps++
		e.told.note(sweptEvent{n: n, threads: len(h.held) + len(h.parked), took: s.now().Sub(h.began)})
		s.release(e)
	case s.now().Sub(h.began) > sweepLimit:
		s.gaveUp++
		s.release(e)
		s.looked = s.now().Add(sweepBackoff)
	default:
		s.ask(e)
	}
}

// pcs are the PCs of the threads held, as far as they can be read (a
// thread whose registers cannot be read has been killed meanwhile).
func (h *sweepHold) pcs(e *lineEnv) []uint64 {
	var pcs []uint64
	for tid := range h.held {
		var regs ptrace.Regs
		if e.proc.getRegs(tid, &regs) == nil {
			pcs = append(pcs, regs.PC())
		}
	}
	return pcs
}

// release ends the sweep under way: the threads held are let go, the
// program's main thread first (the first to go takes a signal to the
// process that came meanwhile, as natively the main thread would). A
// thread gone meanwhile is not. The next look is sweepGap from now.
func (s *sweeper) release(e *lineEnv) {
	h := s.hold
	s.hold, s.looked = nil, s.now()
	held := slices.SortedFunc(maps.Values(h.held), func(a, b *thread) int {
		return cmp.Or(cmp.Compare(btoi(a.tid != a.tgid), btoi(b.tid != b.tgid)), cmp.Compare(a.tid, b.tid))
	})
	for _, th := range held {
		if e.threads[th.tid] == th {
			e.goOn(th)
		}
	}
}

// btoi is 1 for true, 0 for false.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// endSweep gives up the sweep under way, its held threads let go: the
// run's end takes the threads over (detachAll).
func (lt *lineTrampolines) endSweep() {
	if lt != nil && lt.sweep != nil && lt.sweep.hold != nil {
		lt.sweep.release(&lt.env)
	}
}
