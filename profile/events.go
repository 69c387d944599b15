package profile

import (
	"syscall"
	"time"

	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// The events: what the loop and the parts tell of a run as it goes, for
// whoever observes it. A part notes an event where it happens
// (observers.note) and knows no more of who listens: today the narration
// of profile --explain (explain.go), which tells each in plain words. A
// run nobody observes has no observers, and noting costs a test of an
// empty list; where an event would be made at every stop or record, its
// maker tests observers.on first, so that a run without --explain makes
// none.

// event is one thing that happened in the run.
type event interface{ isEvent() }

// observer is told every event of the run, in the order they happened,
// on the locked thread (but forwardedEvent, told from the goroutine that
// passes PROFILE's signals on).
type observer interface{ observe(e event) }

// observers are a run's observers, in order; nil when nobody observes.
type observers []observer

// on reports whether anyone observes the run.
func (o observers) on() bool { return len(o) > 0 }

// note tells e to every observer.
func (o observers) note(e event) {
	for _, x := range o {
		x.observe(e)
	}
}

// The run's start and end (target.go, tracer.go).
type (
	// planReadEvent: the plan read, before the program starts.
	planReadEvent struct{}
	// startedEvent: the program stopped before its first instruction
	// (or, attached, where it was).
	startedEvent struct{}
	// calibratedEvent: what a stop and a record cost, measured.
	calibratedEvent struct{}
	// runningEvent: the program let go.
	runningEvent struct{}
	// endedEvent: the run's result, at its end.
	endedEvent struct{ res *Result }
)

// Planting (plant.go, sharers.go, inject.go).
type (
	// mechanismsEvent: the mechanisms chosen for the run.
	mechanismsEvent struct{}
	// plantingEvent: a module's sites planted.
	plantingEvent struct{ p *planting }
	// sharersEvent: the processes found sharing an attached process's
	// memory.
	sharersEvent struct{ pids []int }
	// seccompEvent: thread tid runs under a seccomp filter of its own,
	// suspended for PROFILE's system calls.
	seccompEvent struct {
		tid int
		st  ptrace.Seccomp
	}
)

// The run as it goes: threads, children, libraries, signals (tasks.go,
// modules.go, signals.go, eintr.go, watch.go, linesweep.go).
type (
	// stopEvent: a stop of a thread seen by the loop.
	stopEvent struct{}
	// threadEvent: a new thread of the program, tid.
	threadEvent struct{ tid int }
	// threadExitingEvent: a thread's exit stop.
	threadExitingEvent struct{}
	// childEvent: a child process, made by fork or vfork.
	childEvent struct {
		tid   int
		vfork bool
	}
	// execEvent: the program's image replaced.
	execEvent struct{}
	// rendezvousEvent: the dynamic linker's rendezvous found.
	rendezvousEvent struct {
		r      rendezvous
		interp string
	}
	// libraryEvent: a library loaded, or unloaded.
	libraryEvent struct {
		l      *loaded
		loaded bool
	}
	// signalEvent: a signal for the program, passed on at th's stop.
	signalEvent struct {
		th  *thread
		sig syscall.Signal
	}
	// steppedOutEvent: th, with a signal, stepped out of PROFILE's code
	// from from to to in steps steps, before the signal is delivered.
	steppedOutEvent struct {
		th       *thread
		sig      syscall.Signal
		from, to uint64
		steps    int
	}
	// forwardedEvent: a signal PROFILE received, passed on to the
	// program.
	forwardedEvent struct{ sig syscall.Signal }
	// requeuedEvent: thread tid took a signal meant for the main thread,
	// given back to the kernel.
	requeuedEvent struct {
		tid int
		sig syscall.Signal
	}
	// sweptEvent: n covered line sites taken out, the program's threads
	// stopped, the first interrupted took before the last stopped.
	sweptEvent struct {
		n, threads int
		took       time.Duration
	}
	// frameSettledEvent: a signal frame of thread tid returned into
	// PROFILE's code at pc; moved to the program's orig, or not.
	frameSettledEvent struct {
		tid      int
		pc, orig uint64
		moved    bool
	}
)

// Hits (breakpoints.go, ring.go): made only when observers.on.
type (
	// hitEvent: thread th hit breakpoint site s.
	hitEvent struct {
		th *thread
		s  *site
	}
	// recordEvent: a record of thread tid's ring read.
	// (The record by value: a pointer to the reader's record would
	// move it to the heap, one allocation a record, observed or not.)
	recordEvent struct {
		tid int
		rec instr.Record
	}
	// drainedEvent: n records of thread tid's ring read.
	drainedEvent struct{ tid, n int }
)

func (planReadEvent) isEvent()      {}
func (startedEvent) isEvent()       {}
func (calibratedEvent) isEvent()    {}
func (runningEvent) isEvent()       {}
func (endedEvent) isEvent()         {}
func (mechanismsEvent) isEvent()    {}
func (plantingEvent) isEvent()      {}
func (sharersEvent) isEvent()       {}
func (seccompEvent) isEvent()       {}
func (stopEvent) isEvent()          {}
func (threadEvent) isEvent()        {}
func (threadExitingEvent) isEvent() {}
func (childEvent) isEvent()         {}
func (execEvent) isEvent()          {}
func (rendezvousEvent) isEvent()    {}
func (libraryEvent) isEvent()       {}
func (signalEvent) isEvent()        {}
func (steppedOutEvent) isEvent()    {}
func (forwardedEvent) isEvent()     {}
func (requeuedEvent) isEvent()      {}
func (sweptEvent) isEvent()         {}
func (frameSettledEvent) isEvent()  {}
func (hitEvent) isEvent()           {}
func (recordEvent) isEvent()        {}
func (drainedEvent) isEvent()       {}
