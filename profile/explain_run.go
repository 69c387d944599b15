// The narration of a run (profile --explain) as the program runs: its
// threads, signals, libraries and sweeps (the first hits:
// explain_hits.go).

package profile

import (
	"fmt"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
)

// runNarrator narrates the run as it goes: the program let run, its
// threads and children, its signals (and those given back to the
// kernel, eintr.go), its libraries, its exec, line coverage's sweeps.
type runNarrator struct{ *narrator }

// running tells that the program runs now.
func (x *runNarrator) running() {
	if x == nil {
		return
	}
	t := x.t
	x.started = true
	line := "PROFILE lets the program run. Only a thread that hits a breakpoint stops: PROFILE handles the stop and lets it go on."
	switch c := t.parts.counters; {
	case t.parts.ledgers != nil:
		line += " The trampolines keep the books without stopping it: PROFILE reads them, in the memory it shares with the program, when a thread ends and at the end."
	case c != nil && !c.layout.Rings:
		line += " The trampolines count without stopping it: PROFILE reads their counters, in the memory it shares with the program, while it waits."
	}
	if t.parts.rings != nil {
		line += " The trampolines record without stopping it: PROFILE reads the rings while it waits."
	}
	x.say("%s %s", x.now(), line)
	if s := t.parts.sampling; s != nil && s.timing && !s.started {
		x.say("%s PROFILE does not sample the program: the kernel refused the main thread its clock event (perf_event_open); the book code's cost is the calibration's.", x.now())
	} else if s != nil && s.timing {
		x.say("%s PROFILE samples every %v of each thread's CPU time, where the kernel allows it (perf), the threads' program counters: those in its own code measure what the book code costs in the run.", x.now(), s.interval)
	} else if s != nil {
		how := "the kernel's clock event of each thread (perf), which writes the samples into a ring PROFILE reads"
		if s.stacks.tally != nil {
			how = fmt.Sprintf("the kernel's clock event of each thread (perf), which writes the samples into a ring PROFILE reads: with each, the thread's registers and the top %d KiB of its stack, which PROFILE unwinds through the call frame information of the program and its libraries, for the sample's callers", stackCopy>>10)
		}
		if s.kind == datafile.PtraceSampler {
			how = "PROFILE interrupting each thread and reading its program counter (the kernel refused its clock events)"
			if s.stacks.tally != nil {
				how = fmt.Sprintf("PROFILE interrupting each thread and reading its registers and the top %d KiB of its stack, which it unwinds for the sample's callers (the kernel refused its clock events)", stackCopy>>10)
			}
		}
		x.say("%s PROFILE samples every %v of each thread's CPU time, by %s.", x.now(), s.interval, how)
	}
}

// rendezvous tells the dynamic linker's breakpoint planted, which
// brings the libraries of the plan.
func (x *runNarrator) rendezvous(r rendezvous, interp string) {
	if x == nil {
		return
	}
	x.say("PROFILE plants the plan's libraries (%s) when the dynamic linker loads them: it keeps a breakpoint at _dl_debug_state, at %#x in %s, which the dynamic linker calls after each change to its list of libraries.",
		x.t.parts.modules.libNames(), r.brk, filepath.Base(interp))
}

// library tells a library of the plan loaded (before it is planted) or
// unloaded.
func (x *runNarrator) library(l *loaded, loaded bool) {
	if x == nil {
		return
	}
	name := x.t.plan.Modules[l.mi].Name
	switch {
	case loaded && x.t.parts.calls.lent == 0:
		// (Attached: a library the process had loaded already.)
		x.tell("library", "%s %s is loaded already, at %#x: PROFILE plants it now.", x.now(), name, l.Lo)
		return
	case loaded:
		x.tell("library", "%s the dynamic linker loaded %s at %#x: PROFILE plants it now, borrowing the thread stopped at the rendezvous for the system calls.", x.now(), name, l.Lo)
		return
	}
	x.tell("library", "%s %s at %#x was unloaded (dlclose): PROFILE forgets its sites and unmaps the areas it mapped beside it; its counts stay.", x.now(), name, l.Lo)
}

// signal tells a signal of the program passed on to thread th.
func (x *runNarrator) signal(th *thread, sig syscall.Signal) {
	if x == nil {
		return
	}
	x.tell("signal", "%s thread %d received %s: PROFILE passes it on unchanged.", x.now(), th.tid, describeSignal(sig))
}

// steppedOut tells a signal that found thread th in PROFILE's code, at
// from, delivered where it is back in the program's, at to, steps
// instructions later (deliverOutside).
func (x *runNarrator) steppedOut(th *thread, sig syscall.Signal, from, to uint64, steps int) {
	if x == nil {
		return
	}
	x.tell("signal", "%s the signal found thread %d in PROFILE's code at %#x: PROFILE holds %s, single-steps the thread back into the program's code (%d instructions, to %#x), and delivers it there.",
		x.now(), th.tid, from, signalName(sig), steps, to)
}

// forwarded tells a signal PROFILE received passed on to the program
// (from forwardSignals' goroutine).
func (x *runNarrator) forwarded(sig syscall.Signal) {
	if x == nil {
		return
	}
	x.tell("signal", "%s PROFILE received %s: it passes it on to the program.", x.now(), signalName(sig))
}

// thread tells a new thread of the program taken in.
func (x *runNarrator) thread(tid int) {
	if x == nil {
		return
	}
	if c := x.t.parts.counters; c != nil && c.layout.PerThread() && hasKey(c.blockOf, tid) {
		b, what := c.blockOf[tid], "counters"
		switch {
		case c.layout.Rings:
			what = "counters, with its ring of records"
		case c.layout.Books:
			what = "counters, with its book of timed calls"
		}
		x.tell("thread", "%s new thread %d: PROFILE traces it, and gives it its own block of %s, block %d at %#x.", x.now(), tid, what, b, c.layout.BlockAddr(b))
		return
	}
	x.tell("thread", "%s new thread %d: PROFILE traces it as the others.", x.now(), tid)
}

// child tells a child process taken in (vfork) or let go (fork).
func (x *runNarrator) child(tid int, vfork bool) {
	if x == nil {
		return
	}
	if vfork {
		x.tell("thread", "%s vfork child %d shares the program's memory until it calls exec: PROFILE traces it, and counts nothing of it.", x.now(), tid)
		return
	}
	x.tell("thread", "%s child process %d has its own copy of the memory: PROFILE takes its patches and breakpoints out and lets it go, unprofiled.", x.now(), tid)
}

// exec tells the program's exec: its image is gone.
func (x *runNarrator) exec() {
	if x == nil {
		return
	}
	x.say("%s the program called exec: its image, and PROFILE's work in it, are gone. Profiling ends here; what was counted is kept.", x.now())
}

// swept tells line coverage's jumps taken out, once covered, the
// program's threads stopped, which took that long.
func (x *runNarrator) swept(n, threads int, took time.Duration) {
	if x == nil || n == 0 {
		return
	}
	x.tell("sweep", "%s PROFILE stopped the program (%s, all stopped %.0f µs after the first interrupt) and wrote back the original bytes of %s whose lines are all covered: they run at native speed now.",
		x.now(), plural(threads, "thread"), float64(took)/float64(time.Microsecond), plural(n, "jump"))
}

// requeued tells a signal that thread tid took in the main thread's
// place, given back to the kernel.
func (x *runNarrator) requeued(tid int, sig syscall.Signal) {
	if x == nil {
		return
	}
	x.tell("requeued", "%s Thread %d took %s, a signal to the process, while PROFILE held the main thread, which takes it natively: PROFILE makes the thread block it and gives it back to the kernel, which gives it to the main thread, and the system call it interrupted restarts.", x.now(), tid, signalName(sig))
}
