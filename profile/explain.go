// Narration (profile --explain): PROFILE tells what it does as it does
// it, in plain words, for a student reading along: the plan it read; the
// program started and stopped before its first instruction; for each
// module, where the counters and the trampolines go; for each site, its
// function and address, the bytes before and after the patch and the
// trampoline's code, disassembled, or why it keeps a breakpoint; the first
// hits of each site as they happen; each ring drained, each library loaded
// or unloaded, each signal passed on; the end.
//
// The narrator is called from where PROFILE does each thing. Every method
// is a no-op on a nil narrator, which a run without --explain has: nothing
// changes then, in cost or in output. A limit (Config.ExplainLimit) keeps
// big programs readable: so many sites are described in full, so many
// first hits, ring drains, threads and signals told, and the rest counted
// and summarised.

package profile

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// DefaultExplainLimit is how many sites profile --explain describes in
// full, and how many first hits (and ring drains, threads, signals) it
// tells, when no other limit is given.
const DefaultExplainLimit = 10

// explainer narrates one run (profile --explain); nil narrates nothing.
type explainer struct {
	t     *tracer
	limit int // 0: no limit
	// mu guards the writer and the tallies: PROFILE's signals are passed
	// on from a goroutine of their own (forwardSignals).
	mu     sync.Mutex
	w      io.Writer
	told   map[string]int
	untold map[string]int
	// start is the clock when the program started: narration's times are
	// from there.
	start int64
	// seen marks the items (functions or lines) whose first hit was
	// told, and hitsDone is set once the limit of first hits is reached
	// (the others are counted at the end, from the run's hits); unseen are the in-process counters not yet seen
	// above zero, scanned (scan) while first hits are still told, at most
	// every scanEvery at the stops and while PROFILE waits.
	seen     []bool
	hitsDone bool
	unseen   []int
	scanned  int64
	started  bool
	// aliases is how many line sites shared an earlier site's count when
	// the last module was planted.
	aliases int
}

// scanEvery is how often, at most, the narrator reads the counters at
// stops and while PROFILE waits (a millisecond).
const scanEvery = 1e6

// newExplainer returns the narrator of t's run, or nil when the run is
// not narrated.
func newExplainer(t *tracer) *explainer {
	if t.cfg.Explain == nil {
		return nil
	}
	return &explainer{t: t, w: t.cfg.Explain, limit: max(t.cfg.ExplainLimit, 0), told: map[string]int{}, untold: map[string]int{},
		seen: make([]bool, t.plan.NumItems())}
}

// say writes one line of narration.
func (x *explainer) say(format string, args ...any) {
	x.mu.Lock()
	defer x.mu.Unlock()
	fmt.Fprintf(x.w, format+"\n", args...)
}

// tell writes one line of narration of kind (a first hit, a ring
// drained...), unless the limit of its kind is reached: it is counted
// then, and summarised at the end.
func (x *explainer) tell(kind, format string, args ...any) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.limit > 0 && x.told[kind] >= x.limit {
		x.untold[kind]++
		return
	}
	x.told[kind]++
	fmt.Fprintf(x.w, format+"\n", args...)
}

// full reports whether the limit of kind is reached.
func (x *explainer) full(kind string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.limit > 0 && x.told[kind] >= x.limit
}

// now is the time since the program started, for narration: "[1.234 ms]".
func (x *explainer) now() string { return x.at(x.t.clock()) }

// at is clock time ns as narration shows it.
func (x *explainer) at(ns int64) string {
	return fmt.Sprintf("[%.3f ms]", float64(ns-x.start)/1e6)
}

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
func (x *explainer) plan() {
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
func (x *explainer) startedAt() {
	if x == nil {
		return
	}
	t := x.t
	x.start = t.clock()
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
func (x *explainer) mainPC() (uint64, string) {
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

// mechanism tells how the run counts or times, once the counters are
// set up (startCounters), and where they are.
func (x *explainer) mechanism() {
	if x == nil {
		return
	}
	t := x.t
	m := t.plan.Method
	c := t.counters
	why := ""
	if t.cfg.Breakpoints {
		why = " (profile --breakpoints)"
	}
	switch {
	case t.rings != nil && t.timed:
		x.say("PROFILE times in-process: each timed function's entry and exits jump to trampolines that append a record (the CPU's counter, the stack pointer, the function) to the thread's ring of %d records, without stopping the program. PROFILE reads the rings while it waits, and books the calls from them.", ringRecords)
	case t.rings != nil:
		x.say("PROFILE records calls in-process: each function's entry jumps to a trampoline that appends a record (the CPU's counter, the stack pointer, the function) to the thread's ring of %d records, without stopping the program. PROFILE reads the rings while it waits, and books the calls from them, for %s.", ringRecords, x.booksFor())
	case t.books != nil && t.timed:
		x.say("PROFILE times with breakpoints%s: a breakpoint at each function's entry and exits. At each hit the thread stops, PROFILE books the call or the return at that time, and lets the thread go on.", why)
	case t.books != nil:
		x.say("PROFILE records calls with breakpoints%s: a breakpoint at each function's entry. At each hit the thread stops, PROFILE books the call, for %s, and lets the thread go on.", why, x.booksFor())
	case c != nil && m.IsFunction():
		x.say("PROFILE counts in-process: each function entry it can patch jumps to a trampoline that adds one to the function's counter, without stopping the program. An entry no jump fits keeps a breakpoint, a stop per call.")
	case c != nil && m.IsCoverage():
		x.say("PROFILE covers lines in-process: each line site it can patch jumps to a trampoline that sets the site's counter to one, without stopping the program. A site no jump fits keeps a breakpoint, taken out at its first hit.")
	case c != nil:
		x.say("PROFILE counts lines in-process: each line site it can patch jumps to a trampoline that adds one to the site's counter, without stopping the program. A site no jump fits keeps a breakpoint, a stop per pass.")
	case t.bp.removeAtHit:
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
	if c.layout.perThread() {
		x.say("The counters: %s of memory shared by PROFILE and the program, mapped into it at %#x. Each thread has a block of its own (%s), which its thread base register points at: the main thread's is at %#x.",
			bytesWords(size), c.layout.progAddr, bytesWords(c.layout.blockSize), c.layout.blockAddr(1))
	} else {
		x.say("The counters: %s of memory shared by PROFILE and the program, mapped into it at %#x. Every thread adds to the same counters, at %#x, atomically.",
			bytesWords(size), c.layout.progAddr, c.layout.blockAddr(1))
	}
}

// bytesWords says a size: "96 bytes", "4 KiB", "32.5 MiB".
func bytesWords(n uint64) string {
	unit := func(n, u uint64, name string) string {
		if n%u == 0 {
			return fmt.Sprintf("%d %s", n/u, name)
		}
		return fmt.Sprintf("%.1f %s", float64(n)/float64(u), name)
	}
	switch {
	case n >= 1<<20:
		return unit(n, 1<<20, "MiB")
	case n >= 1<<12:
		return unit(n, 1<<10, "KiB")
	}
	return plural(int(n), "byte")
}

// verb is one or many's form of a verb, for n subjects.
func verb(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// plural says n things: "1 function", "7 functions".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}
