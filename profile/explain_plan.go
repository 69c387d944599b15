// The narration of a run's start (profile --explain): the plan read,
// the program started or the process attached to, how the run counts or
// times, and what a stop or a record costs.

package profile

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// planNarrator narrates the plan and the start, before the program
// runs; and the processes that share an attached process's memory
// (sharers.go), and a seccomp filter PROFILE suspends (seccomp.go).
type planNarrator struct{ *narrator }

// methodWords says what a profile of method m measures.
func methodWords(m datafile.Method) string {
	switch m {
	case datafile.FuncCounting:
		return "how many times each function is called"
	case datafile.FuncCoverage:
		return "which functions run"
	case datafile.FuncTiming:
		return "how long each function takes, with and without the functions it calls"
	case datafile.FuncSampling:
		return "where the program spends its time, from samples of its program counter, and how many times each function is called"
	case datafile.LineCounting:
		return "how many times each line runs"
	case datafile.LineCoverage:
		return "which lines run"
	}
	return "what the plan asks"
}

// plan tells the plan read, before the program starts.
func (x *planNarrator) plan() {
	if x == nil {
		return
	}
	p := x.t.plan
	var names []string
	for _, m := range p.Modules {
		names = append(names, m.Name)
	}
	what := plural(len(p.Funcs), "function")
	if !p.Method.IsFunction() {
		what = plural(len(p.Lines), "line")
	}
	x.say("PROFILE read the plan %s: %s, %s in %s (%s). It measures %s.",
		x.t.cfg.PlanPath, strings.ToLower(p.Method.Words()), what, plural(len(p.Modules), "module"), strings.Join(names, ", "), methodWords(p.Method))
}

// startedAt tells the program started, stopped by the kernel at its
// first instruction (the exec stop): where that is. A process attached
// to (profile --pid) was not started: its threads were stopped wherever
// they were.
func (x *planNarrator) startedAt() {
	if x == nil {
		return
	}
	t := x.t
	x.start = t.clocks.clock()
	pc, file := x.mainPC()
	if t.attach != nil {
		where := ""
		if file != "" {
			where = fmt.Sprintf(", the main thread at %#x in %s", pc, file)
		}
		x.say("PROFILE attached to process %d (%s), which was running: it took its %s under ptrace (PTRACE_SEIZE) and stopped each where it was%s. What the program did before is not seen: the counts begin when PROFILE lets it go on.",
			t.pid, filepath.Base(t.cfg.Path), plural(len(t.threads), "thread"), where)
		return
	}
	where := ""
	if file != "" {
		who := "the dynamic linker"
		if file == filepath.Base(t.cfg.Path) {
			who = "the program's entry point"
		}
		where = fmt.Sprintf(", at %#x in %s (%s)", pc, file, who)
	}
	x.say("PROFILE started %s under ptrace, as process %d. The kernel stopped it at its first instruction, before it ran anything (the exec stop)%s.",
		filepath.Base(t.cfg.Path), t.pid, where)
}

// mainPC returns where the main thread is stopped, and the base name of
// the file mapped there ("" when unknown).
func (x *planNarrator) mainPC() (uint64, string) {
	var regs ptrace.Regs
	if x.t.proc.getRegs(x.t.pid, &regs) != nil {
		return 0, ""
	}
	pc := regs.PC()
	maps, err := x.t.readMaps()
	if err != nil {
		return pc, ""
	}
	for _, m := range maps {
		if pc >= m.Start && pc < m.End && m.Path != "" {
			return pc, filepath.Base(m.Path)
		}
	}
	return pc, ""
}

// clockChecked tells how PROFILE found the CPUs' counters agree, where
// it checked them itself (oneClock).
func (x *planNarrator) clockChecked() {
	if x != nil && x.t.clocks.ctr.agreed != "" {
		x.say("%s", x.t.clocks.ctr.agreed)
	}
}

// mechanism tells how the run counts or times, once the counters are
// set up (startCounters), and where they are.
func (x *planNarrator) mechanism() {
	if x == nil {
		return
	}
	t := x.t
	m := t.plan.Method
	c := t.parts.counters
	why := ""
	if t.cfg.Breakpoints {
		why = " (profile --breakpoints)"
	}
	switch {
	case t.parts.ledgers != nil:
		where := "the thread's block of the memory it shares with the program"
		stacks := ""
		if t.plan.Attribution {
			stacks = fmt.Sprintf(" With attribution (/AT), each open call also names its caller stack, a node of a table of %d in the book, found (or added) from its caller's, and each node has the figures of the calls made along its path: PROFILE makes them the report's caller stacks at the end.", nodesPerBook)
		}
		if c != nil && c.layout.Table {
			where = "the thread's area of the memory it shares with the program, found from the stack pointer through the stack table"
		}
		if t.parts.ledgers.gos.on {
			goBooks := goBooksPerRun
			if c != nil {
				goBooks = c.layout.GoBooks
			}
			block := "the thread's block of the memory it shares with the program"
			if c != nil && c.layout.Table {
				block = "the thread's area of the memory it shares with the program, which its thread pointer (TPIDR_EL0) names"
			}
			x.say("PROFILE times in-process, with the books kept in the program, each goroutine's in a book of its own: each timed Go function's entry and exits jump to trampolines whose code keeps, in the book of the goroutine that runs it (found through %s, which holds the goroutine the thread ran last and its book), the goroutine's stack of open calls (%d deep, keyed by the distance from the goroutine's stack top, which Go's moving of stacks keeps) and each function's calls, own time and time with its children, without stopping the program. Where a thread runs another goroutine than its block names, the event is PROFILE's, which finds or gives the goroutine its book (a table of %d) and writes both in the block. PROFILE reads the books at the end.%s", block, depthSlots, goBooks, stacks)
			break
		}
		verb, figures := "times", "calls, own time and time with its children"
		if !t.timed {
			verb, figures = "records calls", "calls, for "+x.booksFor()+","
		}
		if t.parts.ledgers.cpu.on {
			stacks += " Where the kernel allows it, each thread also opens a task clock, whose page (mapped at a fixed distance from its block) the kernel updates each time the thread comes back onto a CPU: the code compares the page's count of updates with the one its book noted, and where they differ the thread was off its CPU, and stops once for PROFILE to measure the wait, which plist --time=cpu leaves out."
		}
		x.say("PROFILE %s in-process, with the books kept in the program: each function's entry and exits jump to trampolines whose code keeps, in %s, the thread's stack of open calls (%d deep, more moved out by PROFILE) and each function's %s without stopping the program: nothing is read per call. PROFILE reads the books when a thread ends and at the end. A call a longjmp left open the code closes at the thread's next event; what it leaves to PROFILE (a call on another stack, a stack full), PROFILE books at a stop.%s", verb, where, depthSlots, figures, stacks)
	case t.parts.rings != nil && t.timed:
		x.say("PROFILE times in-process: each timed function's entry and exits jump to trampolines that append a record (the CPU's counter, the stack pointer, the function) to the thread's ring of %d records, without stopping the program. PROFILE reads the rings while it waits, and books the calls from them.", ringRecords)
	case t.parts.rings != nil:
		x.say("PROFILE records calls in-process: each function's entry jumps to a trampoline that appends a record (the CPU's counter, the stack pointer, the function) to the thread's ring of %d records, without stopping the program. PROFILE reads the rings while it waits, and books the calls from them, for %s.", ringRecords, x.booksFor())
	case t.parts.books != nil && t.timed:
		x.say("PROFILE times with breakpoints%s: a breakpoint at each function's entry and exits. At each hit the thread stops, PROFILE books the call or the return at that time, and lets the thread go on.", why)
	case t.parts.books != nil:
		x.say("PROFILE records calls with breakpoints%s: a breakpoint at each function's entry. At each hit the thread stops, PROFILE books the call, for %s, and lets the thread go on.", why, x.booksFor())
	case c != nil && m.IsFunction():
		x.say("PROFILE counts in-process: each function entry it can patch jumps to a trampoline that adds one to the function's counter, without stopping the program. An entry no jump fits keeps a breakpoint, a stop per call.")
	case c != nil && m.IsCoverage():
		x.say("PROFILE covers lines in-process: each line site it can patch jumps to a trampoline that sets the site's counter to one, without stopping the program. A site no jump fits keeps a breakpoint, taken out at its first hit.")
	case c != nil:
		x.say("PROFILE counts lines in-process: each line site it can patch jumps to a trampoline that adds one to the site's counter, without stopping the program. A site no jump fits keeps a breakpoint, a stop per pass.")
	case t.parts.bp.removeAtHit:
		x.say("PROFILE covers with breakpoints%s: a breakpoint at each site, taken out at its first hit.", why)
	case m.IsFunction():
		x.say("PROFILE counts with breakpoints%s: a breakpoint at each function entry. Each call stops its thread once, for PROFILE to count it.", why)
	default:
		x.say("PROFILE counts lines with breakpoints%s: a breakpoint at each line site. Each pass stops its thread once, for PROFILE to count it.", why)
	}
	if c == nil {
		return
	}
	size := uint64(len(c.shared.Bytes()))
	if c.layout.PerThread() {
		x.say("The counters: %s of memory shared by PROFILE and the program, mapped into it at %#x. Each thread has a block of its own (%s), which its thread base register points at: the main thread's is at %#x.",
			bytesWords(size), c.layout.ProgAddr, bytesWords(c.layout.BlockSize), c.layout.BlockAddr(1))
	} else if c.layout.Kind == instr.CountInArea {
		x.say("The counters: %s of memory shared by PROFILE and the program, mapped into it at %#x. Each thread counts in an area of its own (%s, the first at %#x, its counters at %#x in it), found from its stack pointer through the stack table at %#x, a word for each page of stack addresses, which PROFILE points at the area of the thread whose stack holds the page: the CPU has no atomic add (arm64 without LSE), and a count is a load and a store in the thread's own area. A stack no thread owns (an alternate signal stack) counts in area 0, which counts too.",
			bytesWords(size), c.layout.ProgAddr, bytesWords(c.layout.Stride), c.layout.AreaAddr(1), c.layout.CountAt(), c.layout.ProgAddr+c.layout.TableAt)
	} else if c.layout.Books {
		x.say("The books: %s of memory shared by PROFILE and the program, mapped into it at %#x: an area of %s for each thread, the first at %#x, and the stack table at %#x, a word for each page of stack addresses, which PROFILE points at the area of the thread whose stack holds the page.",
			bytesWords(size), c.layout.ProgAddr, bytesWords(c.layout.Stride), c.layout.AreaAddr(1), c.layout.ProgAddr+c.layout.TableAt)
	} else {
		x.say("The counters: %s of memory shared by PROFILE and the program, mapped into it at %#x. Every thread adds to the same counters, at %#x, atomically.",
			bytesWords(size), c.layout.ProgAddr, c.layout.BlockAddr(1))
	}
}

// booksFor says what the books of an untimed run are kept for.
func (x *planNarrator) booksFor() string {
	p := x.t.plan
	switch {
	case p.StartFunc != "" && p.Attribution:
		return "the start function (/SF) and the callers (/AT)"
	case p.StartFunc != "":
		return "the start function (/SF): only the calls made while it runs count"
	}
	return "the callers of each call (/AT)"
}

// calibrated tells what a stop, and a record, cost the program (timing).
func (x *planNarrator) calibrated() {
	if x == nil || x.t.parts.books == nil || !x.t.plan.Method.IsTiming() {
		return
	}
	t := x.t
	when, where := "at the exec stop", "at its first instruction"
	if t.attach != nil {
		when, where = "before the window", "where PROFILE stopped it"
	}
	if l := t.parts.ledgers; l != nil {
		x.say("PROFILE measured what the book code costs the program: %.0f ns a call within the time it measures, %.0f ns in all, taken out of the times (%s, the main thread timed a block of work with empty timed calls and without), unless the run measures it itself: the samples of the threads' program counters in PROFILE's code, over the calls, taken out at the end.", l.calibrated.In, l.calibrated.Call(), when)
		return
	}
	if t.parts.rings != nil {
		x.say("PROFILE measured what a record costs the program: %d ns, taken out of the times (%s, the main thread timed a block of work with records and without).", t.clocks.calculated, when)
		return
	}
	x.say("PROFILE measured what a stop costs the program beyond what its clock sees: %d ns (the overhead), taken out of the times (the thread hit a breakpoint %s %d times).", t.clocks.calculated, where, calibrationRounds)
	if t.clocks.forced {
		x.say("The plan imposes %d ns instead (prep /CB).", t.clocks.overhead)
	}
}

// seccomp tells that thread tid runs under a seccomp filter of its own,
// which PROFILE suspends for its calls.
func (x *planNarrator) seccomp(tid int, st ptrace.Seccomp) {
	if x == nil {
		return
	}
	what := "a seccomp filter of its own"
	if st.Mode == 1 {
		what = "seccomp's strict mode"
	}
	x.say("Thread %d runs under %s, which might kill the program for a system call PROFILE has it make: PROFILE suspends it for each of those calls alone (PTRACE_O_SUSPEND_SECCOMP), and the program's own calls meet it as ever.", tid, what)
}

// sharers tells the processes found sharing the memory of the process
// PROFILE attached to.
func (x *planNarrator) sharers(pids []int) {
	if x == nil || len(pids) == 0 {
		return
	}
	names := make([]string, len(pids))
	for i, pid := range pids {
		names[i] = strconv.Itoa(pid)
	}
	if len(pids) == 1 {
		x.say("Process %d shares its memory with process %s, made by clone with CLONE_VM (a process of its own, not a thread): it runs the code PROFILE patches, so PROFILE traces its threads with the process's, and counts its calls as the program's.",
			x.t.pid, names[0])
		return
	}
	x.say("Process %d shares its memory with processes %s, made by clone with CLONE_VM (processes of their own, not threads): they run the code PROFILE patches, so PROFILE traces their threads with the process's, and counts their calls as the program's.",
		x.t.pid, strings.Join(names, ", "))
}
