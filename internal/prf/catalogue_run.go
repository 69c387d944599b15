// The catalogue's diagnostics of a run under PROFILE (46xx): what it could not do in-process, and what the program did behind its back.

package prf

import (
	"fmt"
	"strings"
	"time"
)

// PtraceSampler warns, once, that the kernel refused its clock events
// (perf_event_open): PROFILE samples by stopping every thread in turn.
func PtraceSampler(err error, every time.Duration) *Diagnostic {
	d := newDiag(4675, Warning, err, "cannot sample with the kernel's clock events: PROFILE stops each thread every %v to read its program counter", every)
	d.Hint = "this costs each running thread some 50 to 100 microseconds per sample, and a thread's samples are taken at its stops, weighed by the CPU time it used since the last one; allow perf_event_open (perf_event_paranoid at most 2, no seccomp filter refusing it) for cheaper and finer samples"
	return d
}

// LostSamples warns that the kernel dropped samples: its buffer was full
// before PROFILE read it.
func LostSamples(lost, taken uint64) *Diagnostic {
	return newDiag(4676, Warning, nil, "%d samples were lost (the kernel's buffer was full), %d were taken: the times are estimated from fewer samples", lost, taken)
}

// UnsampledThreads warns that n threads were not sampled: the kernel
// refused their clock events after it had given the main thread one.
func UnsampledThreads(n int, err error) *Diagnostic {
	d := newDiag(4678, Warning, err, "%d threads were not sampled: the kernel refused their clock events", n)
	d.Hint = "each sampled thread takes a ring of the kernel's locked memory: raise RLIMIT_MEMLOCK (ulimit -l) or perf_event_mlock_kb, or sample less often (profile /S)"
	return d
}

// SamplesUnreadable warns that a thread's samples could no longer be
// read: its ring held a record the reader does not take.
func SamplesUnreadable(err error) *Diagnostic {
	return newDiag(4679, Warning, err, "the samples of a thread could not be read to the end: its later samples are missing")
}

// IntervalIgnored warns that /S was given for a profile that does not
// sample.
func IntervalIgnored(method string) *Diagnostic {
	return newDiag(4677, Warning, nil, "/S ignored: the sampling interval applies to function sampling (prep /FS), not to %s", method)
}

// ExportsOnly warns that a module has neither debugging information nor
// a symbol table, but exports functions (a stripped program that exports
// a few, such as /usr/bin/sort, or a stripped library): only those n are
// profiled, and the calls its code makes inside itself are not seen.
// The hint is Stripped's.
func ExportsOnly(module, buildID string, n int) *Diagnostic {
	what := fmt.Sprintf("the %d functions it exports are", n)
	if n == 1 {
		what = "the one function it exports is"
	}
	d := newDiag(4625, Warning, nil, "%s has no debugging information and no symbol table (stripped): only %s known, and the rest of its code is not profiled", module, what)
	d.Hint = debugInfoHint(module, buildID)
	return d
}

// CannotProfileLine is warning PRF4624: an address of a line's statement
// rows cannot take a breakpoint (not on an instruction boundary).
func CannotProfileLine(line int, file, module string, err error) *Diagnostic {
	return newDiag(4624, Warning, err, "cannot profile line %d of %s in file %s", line, file, module)
}

// DebugInfo passes on a warning of the ELF and DWARF reader, which says
// what it could not read and what it did instead.
func DebugInfo(text string) *Diagnostic { return newDiag(4623, Warning, nil, "%s", text) }

// NoSlots warns that PROFILE found no memory for relocated instructions:
// the functions whose first instruction needs one are not counted.
func NoSlots(err error) *Diagnostic {
	return newDiag(4644, Warning, err, "no out-of-line slots: instructions that need one are not profiled")
}

// OwnTraps warns that the program uses SIGTRAP itself while breakpoints
// were hit: where a thread blocks or ignores SIGTRAP, Linux unblocks it and
// resets its handler when the thread hits a breakpoint (a trap signal is
// forced), so the program's own SIGTRAP may behave otherwise than natively.
func OwnTraps() *Diagnostic {
	d := newDiag(4645, Warning, nil, "the program uses SIGTRAP itself: a breakpoint hit where it blocks or ignores SIGTRAP resets that to the default")
	d.Hint = "see docs/linux.md, \"Signals\", for what breakpoints can change"
	return d
}

// BreakpointEntries warns that some function entries could not be
// patched in-process and are counted with breakpoints, a stop each; why,
// by reason ("too short: 2, branch into: 1").
func BreakpointEntries(n, total int, reasons string) *Diagnostic {
	d := newDiag(4646, Warning, nil, "%d of %d function entries are counted with breakpoints, a stop per call (%s)", n, total, reasons)
	d.Hint = "profile --verbose lists them"
	return d
}

// EntryNotPatched is one entry counted with a breakpoint, listed by
// profile --verbose.
func EntryNotPatched(fn, file string, err error) *Diagnostic {
	return newDiag(4647, Warning, err, "function %s in file %s is counted with a breakpoint", fn, file)
}

// BreakpointLines warns that some line sites could not be patched
// in-process and are counted with breakpoints, a stop each; why, by
// reason.
func BreakpointLines(n, total int, reasons string) *Diagnostic {
	d := newDiag(4673, Warning, nil, "%d of %d line sites are counted with breakpoints, a stop per pass (%s)", n, total, reasons)
	d.Hint = "profile --verbose lists them"
	return d
}

// BranchesUnprobed warns that n of the total branches of a module keep
// breakpoints, no jump fitting at the branch: each stops the program at
// most stops times, and one that went one way only that long is not
// counted in the run.
func BranchesUnprobed(n, total int, module string, stops int, reasons string) *Diagnostic {
	d := newDiag(4687, Warning, nil, "%d of %d branches of %s are counted with breakpoints, at most %d stops each (%s)", n, total, module, stops, reasons)
	d.Hint = "a branch that goes one way only that long is not counted, and the reports leave it out"
	return d
}

// LineNotPatched is one line site counted with a breakpoint, listed by
// profile --verbose.
func LineNotPatched(line int, file, module string, addr uint64, err error) *Diagnostic {
	return newDiag(4674, Warning, err, "line %d of file %s in %s is counted with a breakpoint at %#x", line, file, module, addr)
}

// NoInProcess warns that the program cannot be counted in-process at all:
// every entry gets a breakpoint.
func NoInProcess(err error) *Diagnostic {
	return newDiag(4648, Warning, err, "cannot count in-process: every function entry is counted with a breakpoint")
}

// SharedBlocks warns that more threads ran at once than there are counter
// blocks: the threads beyond shared one, and may have lost counts.
func SharedBlocks(n int) *Diagnostic {
	return newDiag(4649, Warning, nil, "more than %d threads ran at once: the threads beyond shared counters, and counts may be missing", n-1)
}

// BooksWithBreakpoints warns that what the run keeps (function timing,
// a start function, attribution) is taken with breakpoints in this
// version: a stop at every profiled call's entry, and with timing at its
// exit too.
func BooksWithBreakpoints(what string, exits bool) *Diagnostic {
	where := "entry"
	if exits {
		where = "entry and at its exit"
	}
	d := newDiag(4650, Warning, nil, "%s is kept with breakpoints in this version: every profiled call stops the program at its %s", what, where)
	d.Hint = "expect the program to run much slower than natively; see docs/performance.md"
	return d
}

// BreakpointExits warns that some exits of timed functions keep a
// breakpoint, with how many and why.
func BreakpointExits(n, total int, reasons string) *Diagnostic {
	d := newDiag(4651, Warning, nil, "%d of %d function exits are timed with breakpoints, a stop per return (%s)", n, total, reasons)
	d.Hint = "profile --verbose lists them"
	return d
}

// ExitNotPatched is one exit timed with a breakpoint, listed by profile
// --verbose.
func ExitNotPatched(fn, file string, pc uint64, err error) *Diagnostic {
	return newDiag(4652, Warning, err, "the exit of function %s at %#x in file %s is timed with a breakpoint", fn, pc, file)
}

// ExitTakenOut warns that a hot exit's breakpoint was taken out.
func ExitTakenOut(fn string, n int) *Diagnostic {
	return newDiag(4653, Warning, nil, "an exit of function %s kept a breakpoint and was hit %d times: it is taken out, the function's calls end at their thread's next event", fn, n)
}

// LibraryChanged warns that a shared library of the plan, loaded by the
// program, is not the file PREP read: it is not profiled.
func LibraryChanged(path, pbi string) *Diagnostic {
	d := newDiag(4654, Warning, nil, "timestamp of %s has changed since PREP was run: it is not profiled", path)
	d.Hint = fmt.Sprintf("%s was rebuilt or replaced since prep read it: run prep again to write a new %s", path, pbi)
	return d
}

// LibrariesNotFollowed warns that the libraries of the plan cannot be
// followed as the program loads them (no dynamic linker, or none PROFILE
// knows): their counts stay zero.
func LibrariesNotFollowed(names string, err error) *Diagnostic {
	return newDiag(4655, Warning, err, "shared libraries %s are not profiled: cannot follow the dynamic linker", names)
}

// BreakpointBack warns that a breakpoint PROFILE had removed was found in
// the program's memory again, and removed again: a fault of PROFILE's or
// of the machine's, reported so that it is not silent.
func BreakpointBack(addr uint64) *Diagnostic {
	return newDiag(4656, Warning, nil, "a breakpoint removed at %#x was found in memory again: removed again", addr)
}

// ThreadBaseChanged warns that a thread of the program set its own GS
// base (x86-64), which in-process counting points at the thread's
// counter block: its counts went to the program's own memory.
func ThreadBaseChanged(tid int, base uint64) *Diagnostic {
	d := newDiag(4666, Warning, nil, "thread %d set its own GS base (%#x): its calls were counted into the program's own memory, not PROFILE's", tid, base)
	d.Hint = "profile a program that uses GS with 'profile --breakpoints'; see docs/linux.md, \"What PROFILE cannot see\""
	return d
}

// CodeChanged warns that the program wrote its own code where PROFILE
// had patched it: the instructions PROFILE moved ran as they were.
func CodeChanged(addr uint64, what string) *Diagnostic {
	d := newDiag(4667, Warning, nil, "the program changed its own code at %#x%s, where PROFILE had patched it: the instructions PROFILE moved ran as they were before", addr, aside(what))
	d.Hint = "exclude the code the program changes (prep /EXC NAME); see docs/linux.md, \"What PROFILE cannot see\""
	return d
}

// CodeWritable warns that the program made code PROFILE patched
// writable (mprotect), as a program does to change its own code.
func CodeWritable(path string, addr uint64) *Diagnostic {
	d := newDiag(4668, Warning, nil, "the program made its code in %s at %#x writable: if it changed code PROFILE had patched, the instructions PROFILE moved ran as they were before", path, addr)
	d.Hint = "exclude the code the program changes (prep /EXC NAME); see docs/linux.md, \"What PROFILE cannot see\""
	return d
}

// CodeCopied warns that the program ran a copy of code PROFILE had
// patched: the copy's jump or breakpoint does not work where it is.
func CodeCopied(copyAt, from uint64, what string) *Diagnostic {
	d := newDiag(4669, Warning, nil, "the program ran, at %#x, a copy of code PROFILE had patched at %#x%s", copyAt, from, aside(what))
	d.Hint = "exclude the code the program copies (prep /EXC NAME); see docs/linux.md, \"What PROFILE cannot see\""
	return d
}

// UntracedChild warns that the program made a child PROFILE was never
// told of (clone with CLONE_UNTRACED): it ran with PROFILE's patches.
func UntracedChild(pid int, killed string) *Diagnostic {
	how := ""
	if killed != "" {
		how = "; it was killed by " + killed
	}
	d := newDiag(4670, Warning, nil, "child process %d was made out of PROFILE's sight (clone with CLONE_UNTRACED): it ran with PROFILE's patches, and its calls may be counted as the program's%s", pid, how)
	d.Hint = "see docs/linux.md, \"What PROFILE cannot see\""
	return d
}

// SignalStops warns that the program received signals fast: each is a
// stop for PROFILE, of about stop each, which took some share of the run.
func SignalStops(n int, rate float64, stop time.Duration, share float64) *Diagnostic {
	d := newDiag(4671, Warning, nil, "the program received %d signals, %.0f a second: each stopped it for PROFILE (about %d µs), some %.0f%% of the run",
		n, rate, (stop+time.Microsecond/2)/time.Microsecond, 100*share)
	d.Hint = "every signal to a traced program is a stop: see docs/performance.md, \"Signals\""
	return d
}

// StacksCut warns that of the taken stacks of function sampling, cut
// could not be unwound to their end, counts[i] for reasons[i]: their
// outermost profiled function stands at the stack base.
func StacksCut(cut, taken uint64, reasons []string, counts []uint64) *Diagnostic {
	var b strings.Builder
	for i, r := range reasons {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", r, counts[i])
	}
	d := newDiag(4685, Warning, nil, "%d of %d sampled stacks were not unwound to their end (%s): their outermost profiled function is shown at the stack base", cut, taken, b.String())
	d.Hint = "code without call frame information (.eh_frame, .debug_frame) stops the unwinding, and so does a stack deeper than the kernel's copy of it; see docs/course/7-sampling.md"
	return d
}

// StacklessThreads warns that n threads were sampled without their
// stacks: the kernel refused the memory of rings large enough for them,
// and gave rings of program counters.
func StacklessThreads(n int, err error) *Diagnostic {
	d := newDiag(4686, Warning, err, "%d threads were sampled without their call stacks: the kernel refused rings large enough for them", n)
	d.Hint = "each thread's ring of stacks takes half a MiB of the kernel's locked memory: raise RLIMIT_MEMLOCK (ulimit -l) or perf_event_mlock_kb"
	return d
}

// SharedDamaged warns that the program wrote over the memory it shares
// with PROFILE (a wild write): what showed it (rings of records not as
// their protocol leaves them, a guard PROFILE keeps) is what. The run
// went on, and ended; what the write reached is wrong.
func SharedDamaged(what string) *Diagnostic {
	d := newDiag(4690, Warning, nil, "the program wrote over the memory it shares with PROFILE: %s", what)
	d.Hint = "a stray pointer or an overrun of the program's reached PROFILE's counters (/memfd:sprof-counters in its memory map): the counts and times there may be wrong, and the program's own data near it too; see docs/linux.md, \"What PROFILE cannot see\""
	return d
}

// StaleCode warns that the processor ran a breakpoint PROFILE had
// removed, again and again, though the memory holds the original
// instruction: it runs a stale copy of the code. The instruction is then
// carried out of line at each pass, a stop each: the counts stay right,
// the run is slower.
func StaleCode(addr uint64) *Diagnostic {
	d := newDiag(4672, Warning, nil, "the processor still runs the breakpoint removed at %#x (a stale copy of the code): each pass there stops the thread", addr)
	d.Hint = "seen under qemu's emulation of arm64; see docs/linux.md, \"What PROFILE cannot see\""
	return d
}

// EntryRefused is warning PRF4657: the plan puts a function's entry
// where the program's code, decoded, has no instruction boundary (inside
// an instruction, of its function or of another), or its code does not
// decode from the start to the end the plan gives: nothing is planted
// there, and the function counts nothing.
func EntryRefused(fn, file string, err error) *Diagnostic {
	d := newDiag(4657, Warning, err, "function %s in file %s is not profiled: the plan does not match the program's code", fn, file)
	d.Hint = "the plan was written for other code than this program's: run prep again"
	return d
}

// SiteRefused is warning PRF4658: an exit or return site PROFILE would
// plant is not on an instruction boundary of the program's code.
func SiteRefused(what string, addr uint64, fn, file string, err error) *Diagnostic {
	return newDiag(4658, Warning, err, "the %s at %#x of function %s in file %s is not planted: it is not on an instruction boundary", what, addr, fn, file)
}

// SeccompFiltered is warning PRF4659: a thread of the program runs under a
// seccomp filter of its own that PROFILE cannot suspend, which might kill
// the program for a system call PROFILE would have the thread make (the
// mmap of a library's area): the call is not made, and what needs it is
// not profiled.
func SeccompFiltered(tid int, err error) *Diagnostic {
	d := newDiag(4659, Warning, err, "thread %d runs under a seccomp filter of its own, which PROFILE cannot suspend: PROFILE makes no system call in it, and what needs one is not profiled", tid)
	d.Hint = "suspending the filter for PROFILE's own calls needs CAP_SYS_ADMIN, and PROFILE under no filter of its own: run profile as root, or have the program load its libraries before it installs its filter"
	return d
}

// ExecEnded warns that the program replaced itself with exec.
func ExecEnded() *Diagnostic {
	return newDiag(4643, Warning, nil, "the program called exec: profiling ended there, the counts up to it are kept")
}

// CounterNotShared warns that the CPUs' counter is not known to be one
// clock across CPUs, so that a goroutine's records, made on several CPUs,
// cannot be put in order by their times.
func CounterNotShared(source, why string) *Diagnostic {
	d := newDiag(4680, Warning, nil, "Go functions are timed with breakpoints: the kernel's clock source is %s, not the time stamp counter, and %s", source, why)
	d.Hint = "a goroutine's calls are in the rings of every thread that ran it, put in order by the counter's times"
	return d
}

// TraceLines warns that /TRACE was given for a line profile: a trace is of
// function calls.
func TraceLines(method string) *Diagnostic {
	d := newDiag(4681, Warning, nil, "/TRACE ignored: an execution trace is of function calls, and this is a %s profile", method)
	d.Hint = "prepare a function profile (prep /FT, /FC, /FV or /FS) to trace the calls"
	return d
}

// TraceCut warns that the execution trace reached its size limit: the
// calls after it are counted, not traced.
func TraceCut(path string, limit int64) *Diagnostic {
	d := newDiag(4682, Warning, nil, "the execution trace %s was cut at its limit of %d MiB: the later calls are counted but not in it", path, limit>>20)
	d.Hint = "raise the limit with --trace-limit=MIB (0: none)"
	return d
}

// TraceWrite warns that the execution trace could not be written to the
// end: what was written before stays readable.
func TraceWrite(path string, err error) *Diagnostic {
	return newDiag(4683, Warning, err, "cannot write the execution trace %s to the end: it holds the calls before the failure", path)
}

// TraceBusy warns that another PROFILE is writing the trace: this run
// writes none.
func TraceBusy(path string) *Diagnostic {
	d := newDiag(4684, Warning, nil, "another PROFILE is writing the execution trace %s: this run writes none", path)
	d.Hint = "name another .pbo with /O: its trace goes beside it"
	return d
}
