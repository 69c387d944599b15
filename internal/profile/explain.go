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
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/instr"
	"github.com/sourceprofiler/sprof/internal/profile/ptrace"
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
// first instruction (the exec stop): where that is.
func (x *explainer) startedAt() {
	if x == nil {
		return
	}
	t := x.t
	x.start = t.clock()
	where := ""
	var regs ptrace.Regs
	if ptrace.GetRegs(t.pid, &regs) == nil {
		pc := regs.PC()
		where = fmt.Sprintf(", at %#x", pc)
		if maps, err := t.readMaps(); err == nil {
			for _, m := range maps {
				if pc >= m.Start && pc < m.End && m.Path != "" {
					who := "the dynamic linker"
					if filepath.Base(m.Path) == filepath.Base(t.cfg.Path) {
						who = "the program's entry point"
					}
					where += fmt.Sprintf(" in %s (%s)", filepath.Base(m.Path), who)
				}
			}
		}
	}
	x.say("PROFILE started %s under ptrace, as process %d. The kernel stopped it at its first instruction, before it ran anything (the exec stop)%s.",
		filepath.Base(t.cfg.Path), t.pid, where)
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
	if c.kind == instr.CountPerThread {
		x.say("The counters: %s of memory shared by PROFILE and the program, mapped into it at %#x. Each thread has a block of its own (%s), which its thread base register points at: the main thread's is at %#x.",
			bytesWords(size), c.progAddr, bytesWords(c.blockSize), c.blockAddr(1))
	} else {
		x.say("The counters: %s of memory shared by PROFILE and the program, mapped into it at %#x. Every thread adds to the same counters, at %#x, atomically.",
			bytesWords(size), c.progAddr, c.blockAddr(1))
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

// siteView is one site of a module being planted, as the narration
// describes it: a jump to a trampoline (j), or a breakpoint (s).
type siteView struct {
	addr uint64
	j    *patchWrite
	s    *site
}

// planting describes what planting p is about to write into the
// program: the module, its area, and each site, up to the limit; the
// rest are counted. It runs before anything is written, so the memory
// still holds the program's own code.
func (x *explainer) planting(p *planting) {
	if x == nil {
		return
	}
	t := x.t
	m := &t.plan.Modules[p.mi]
	what := plural(len(p.items), "function")
	if p.lines {
		what = "its line sites"
	}
	x.say("Module %s, mapped at %#x (load bias %#x): PROFILE read its code from the process, decoded it once, and plants %s.", m.Name, p.in.lo, p.bias, what)
	if a := p.area; a != nil && !a.mapped() {
		x.say("  No area could be mapped near its code: its sites keep breakpoints, those whose instruction needs a slot none.")
	} else if a != nil {
		dist, dir := a.base-p.in.lo, "after"
		if a.base < p.in.lo {
			dist, dir = p.in.lo-a.base, "before"
		}
		x.say("  Its area for trampolines and slots: %s at %#x, %s %s its code, within reach of a jump from it.", bytesWords(uint64(len(a.image))), a.base, bytesWords((dist+1023)&^1023), dir)
	}
	var views []siteView
	for i := range p.jumps {
		views = append(views, siteView{addr: p.jumps[i].addr, j: &p.jumps[i]})
	}
	for _, s := range t.bp.unwritten {
		views = append(views, siteView{addr: s.addr, s: s})
	}
	for _, sp := range p.spans {
		if s := t.bp.sites[sp.addr]; s != nil {
			views = append(views, siteView{addr: s.addr, s: s})
		}
	}
	slices.SortFunc(views, func(a, b siteView) int { return cmp.Compare(a.addr, b.addr) })
	reasons := x.reasons()
	jumps, bps, more := 0, 0, 0
	for _, v := range views {
		if v.j != nil {
			jumps++
		} else {
			bps++
		}
		if x.full("site") {
			more++
			continue
		}
		x.tell("site", "%s", x.describe(p, v, reasons))
	}
	shared := 0
	if t.lines != nil {
		shared = len(t.lines.alias) - x.aliases
		x.aliases = len(t.lines.alias)
	}
	if more > 0 {
		x.say("  ... and %s of %s, not described (the limit is %d; --explain-limit=0 describes every site).", plural(more, "more site"), m.Name, x.limit)
	}
	sum := fmt.Sprintf("Module %s: %s, %d %s, %d %s", m.Name, plural(jumps+bps, "site"), jumps, verb(jumps, "jumps to a trampoline", "jump to trampolines"), bps, verb(bps, "keeps a breakpoint", "keep breakpoints"))
	if shared > 0 {
		sum += fmt.Sprintf("; %s share the count of an earlier site in straight code, and need no probe", plural(shared, "more line site"))
	}
	x.say("%s.", sum)
}

// reasons returns why each site of the module being planted that keeps
// a breakpoint does, by address, as --verbose lists them.
func (x *explainer) reasons() map[uint64]error {
	t := x.t
	byAddr := map[uint64]error{}
	if et := t.entries; et != nil && len(et.fellBack) > 0 {
		byItem := map[int]error{}
		for _, fb := range et.fellBack {
			byItem[fb.item] = fb.err
		}
		for _, s := range t.bp.unwritten {
			if err, ok := byItem[s.item]; ok && s.item >= 0 {
				byAddr[s.addr] = err
			}
		}
	}
	if xp := t.exits; xp != nil {
		for _, fb := range xp.left {
			byAddr[fb.pc] = fb.err
		}
	}
	if lt := t.lines; lt != nil {
		for _, fb := range lt.fellBack {
			byAddr[fb.addr] = fb.err
		}
	}
	return byAddr
}

// describe describes one site of planting p: what it is, the bytes
// before and after, and the trampoline's code, or why it keeps a
// breakpoint and how its instruction is carried out at a hit.
func (x *explainer) describe(p *planting, v siteView, reasons map[uint64]error) string {
	t := x.t
	if v.j != nil {
		j := v.j
		pt := &j.tramp.patch
		var b strings.Builder
		fmt.Fprintf(&b, "%s, at %#x: a jump to its trampoline replaces %s.\n", x.siteName(p, v), j.addr, plural(len(pt.Insts), "instruction"))
		b.WriteString(beforeAfter(t.arch, j.addr, pt.Orig, j.jump))
		if j.hopCode != nil {
			fmt.Fprintf(&b, "  The jump is short: it goes to a hop in the padding at %#x, a full jump on to the trampoline.\n", j.hop)
			b.WriteString(listing(t.arch, "  hop", j.hop, j.hopCode, nil))
		}
		b.WriteString(listing(t.arch, fmt.Sprintf("  trampoline at %#x, %s", j.tramp.addr, bytesWords(uint64(len(j.code)))), j.tramp.addr, j.code, x.notes(p, v)))
		return strings.TrimSuffix(b.String(), "\n")
	}
	s := v.s
	brk := t.arch.Breakpoint()
	code := s.code
	if code == nil {
		code = make([]byte, t.arch.MaxInstLen())
		if err := t.readCode(s.addr, code); err != nil {
			code = s.orig
		}
	}
	n := len(brk)
	if in, err := t.arch.Decode(code, s.addr); err == nil && in.Len >= n {
		n = in.Len
	}
	n = min(n, len(code))
	why := "this run counts with breakpoints"
	switch err := reasons[s.addr]; {
	case err != nil:
		why = err.Error()
	case t.cfg.Breakpoints:
		why = "profile --breakpoints"
	case s.item < 0 && s.exit >= 0:
		why = "an exit of a timed function, timed with a breakpoint"
	case t.counters == nil:
		why = "nothing is counted in-process in this run"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s, at %#x: keeps a breakpoint (%s).\n", x.siteName(p, v), s.addr, why)
	b.WriteString(breakpointBytes(t.arch, s.addr, code[:n], brk))
	switch d := &s.disp; {
	case t.bp.removeAtHit:
		b.WriteString("  At its first hit PROFILE notes it, writes the original bytes back and lets the thread run them: the site is covered.")
	case s.pending:
		b.WriteString("  At each hit PROFILE counts, and the thread runs the instruction from a slot, relocated, which jumps back after it: the slot is written at the site's first hit (most lines never run).")
	case !s.displaced:
		b.WriteString("  Its instruction cannot be carried out with the breakpoint in place.")
	case d.Emulate != nil:
		fmt.Fprintf(&b, "  At each hit PROFILE emulates %s on the thread's registers, and the thread goes on after it: the breakpoint never leaves.", d.Inst.Text)
	case d.SingleStep:
		fmt.Fprintf(&b, "  At each hit the thread single-steps the instruction in its slot at %#x, relocated, and PROFILE moves it back after it.\n", s.slot)
		b.WriteString(strings.TrimSuffix(listing(t.arch, "  slot", s.slot, d.Slot, nil), "\n"))
	default:
		fmt.Fprintf(&b, "  At each hit the thread runs the instruction from its slot at %#x, relocated, which jumps back after it: the breakpoint never leaves.\n", s.slot)
		b.WriteString(strings.TrimSuffix(listing(t.arch, "  slot", s.slot, d.Slot, nil), "\n"))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// notes are the notes of the listing of jump v's trampoline, of
// planting p: what its instrumentation does, where it is known (an
// entry's count and call depth, a record), each instruction moved, the
// jump back.
func (x *explainer) notes(p *planting, v siteView) map[uint64]string {
	t, tr := x.t, v.j.tramp
	notes := trampNotes(t.arch, tr)
	c := t.counters
	if c == nil {
		return notes
	}
	first := notes[tr.addr] == "the instrumentation"
	item := x.entryItem(p, v.addr)
	switch {
	case p.lines && first:
		notes[tr.addr] = "the count of the line"
		if c.kind == instr.CountPerThread {
			notes[tr.addr] += ", in the thread's block"
		}
	case c.rings:
		if first && item >= 0 {
			notes[tr.addr] = "the record of the entry (the CPU's counter, the stack pointer, the function), into the thread's ring"
		} else if first {
			notes[tr.addr] = "the record of the return, into the thread's ring"
		}
		if tr.code.Exit {
			notes[tr.addr+uint64(tr.code.At)] = "the record of the exit, before the exit"
		}
	case first && item >= 0:
		f := &t.plan.Funcs[item]
		notes[tr.addr] = "the count: one more call of " + f.Name
		if c.keepsDepth() && f.Frame != datafile.FrameNone {
			if n := len(t.arch.CountCode(c.kind, c.counterRef(item))); n < len(tr.code.Code) {
				notes[tr.addr+uint64(n)] = "the call depth: the thread's stack of calls, for the deepest nesting"
			}
		}
	}
	return notes
}

// entryItem returns the function of planting p whose entry is patched
// at addr (at the entry, or after its landing pad), or -1.
func (x *explainer) entryItem(p *planting, addr uint64) int {
	for _, item := range p.items {
		entry := x.t.plan.Funcs[item].Entry + p.bias
		if addr == entry || addr == afterLandingPad(x.t.arch, p.text, entry) {
			return item
		}
	}
	return -1
}

// siteName names the site v of planting p: "function f, entry", "line
// 12 of counts.c (f)", "function g, exit".
func (x *explainer) siteName(p *planting, v siteView) string {
	t := x.t
	if v.s != nil && t.plan.Method.IsFunction() {
		switch {
		case v.s.item >= 0 && v.s.exit >= 0:
			return "function " + t.plan.Funcs[v.s.item].Name + ", entry and exit"
		case v.s.item >= 0:
			return "function " + t.plan.Funcs[v.s.item].Name + ", entry"
		case v.s.exit >= 0:
			return "function " + t.plan.Funcs[v.s.exit].Name + ", exit"
		}
	}
	if p.lines {
		var lines []int
		if v.s != nil {
			lines = append([]int{v.s.item}, v.s.more...)
		} else if lt := t.lines; lt != nil {
			k, ok := lt.index[siteKey{p.mi, v.addr - p.bias}]
			if pad := v.addr - 4; !ok && afterLandingPad(t.arch, p.text, pad) == v.addr {
				// A site at a landing pad (BTI, PACIASP, endbr64) is
				// patched after it.
				k, ok = lt.index[siteKey{p.mi, pad - p.bias}]
			}
			if ok {
				lines = lt.lines[k]
			}
		}
		name := x.lineNames(lines)
		if fn := t.funcAt(p.mi, p.bias, v.addr); fn != "" {
			name += " (" + fn + ")"
		}
		return name
	}
	if v.j == nil {
		return "a site" // (none but the above)
	}
	// A jump of a function profile: an entry, an exit, or a return site.
	if item := x.entryItem(p, v.addr); item >= 0 {
		if v.j.tramp.code.Exit {
			return "function " + t.plan.Funcs[item].Name + ", entry and exit"
		}
		return "function " + t.plan.Funcs[item].Name + ", entry"
	}
	fn := t.funcAt(p.mi, p.bias, v.addr)
	if v.j.tramp.code.Exit {
		return fn + ", exit"
	}
	return "a return site in " + fn + ", where a timed function's call returns"
}

// afterLandingPad returns where the instruction after a landing pad at
// entry (endbr64, BTI, PACIASP) begins, or 0 when the entry is none.
func afterLandingPad(d instr.Decoder, text moduleText, entry uint64) uint64 {
	if entry < text.start || entry >= text.start+uint64(len(text.b)) {
		return 0
	}
	in, err := d.Decode(text.b[entry-text.start:], entry)
	if err != nil || in.Kind != instr.Nop {
		return 0
	}
	return entry + uint64(in.Len)
}

// lineNames names lines of the plan: "line 12 of counts.c", "lines 12,
// 13 of counts.c".
func (x *explainer) lineNames(lines []int) string {
	t := x.t
	if len(lines) == 0 {
		return "a line site"
	}
	file := t.lineFile(&t.plan.Lines[lines[0]])
	var nums []string
	for _, i := range lines {
		l := &t.plan.Lines[i]
		nums = append(nums, strconv.Itoa(l.Line))
		if f := t.lineFile(l); f != file {
			file = ""
		}
	}
	word := "line "
	if len(nums) > 1 {
		word = "lines "
	}
	if file == "" {
		return word + strings.Join(nums, ", ")
	}
	return word + strings.Join(nums, ", ") + " of " + filepath.Base(file)
}

// asmLine is one instruction of a listing: its address, its bytes and
// its text.
type asmLine struct {
	pc   uint64
	b    []byte
	text string
}

// disasm decodes code at pc into instructions; bytes that do not decode
// are shown as such, one instruction's alignment at a time. A word that
// an instruction reads or jumps through (a PC-relative operand of a
// load, or of an indirect jump: "jmpq *(%rip)" and the address after
// it) is shown as data.
func disasm(d instr.Decoder, code []byte, pc uint64) []asmLine {
	var out []asmLine
	step := 1
	if d.MaxInstLen() == 4 {
		step = 4 // (fixed-length instructions: a word that does not decode)
	}
	data := map[uint64]bool{}
	for off := 0; off < len(code); {
		at := pc + uint64(off)
		if data[at] {
			n := min(8, len(code)-off)
			out = append(out, asmLine{at, code[off : off+n], fmt.Sprintf("(data: %#x)", leWord(code[off:off+n]))})
			off += n
			continue
		}
		in, err := d.Decode(code[off:], at)
		if err != nil || in.Len <= 0 || off+in.Len > len(code) {
			n := min(step, len(code)-off)
			out = append(out, asmLine{at, code[off : off+n], "(not an instruction)"})
			off += n
			continue
		}
		if in.PCRel && in.Target > at && in.Target < pc+uint64(len(code)) &&
			(in.Kind == instr.Other || strings.Contains(in.Text, "*")) {
			data[in.Target] = true
		}
		out = append(out, asmLine{at, code[off : off+in.Len], segmentZero.ReplaceAllString(in.Text, "$1:0x0$2")})
		off += in.Len
	}
	return out
}

// leWord reads up to 8 bytes as a little-endian number.
func leWord(b []byte) uint64 {
	var w [8]byte
	copy(w[:], b)
	return binary.LittleEndian.Uint64(w[:])
}

// segmentZero finds a segment-relative operand of displacement 0, which
// the GNU syntax of x86asm prints without its number ("%gs:").
var segmentZero = regexp.MustCompile(`(%[cdefgs]s):(,|$)`)

// hexBytes shows bytes as hexadecimal pairs: "55 48 89 e5".
func hexBytes(b []byte) string {
	var s strings.Builder
	for i, c := range b {
		if i > 0 {
			s.WriteByte(' ')
		}
		fmt.Fprintf(&s, "%02x", c)
	}
	return s.String()
}

// texts joins the instructions' texts: "push %rbp; mov %rsp,%rbp".
func texts(lines []asmLine) string {
	var out []string
	for _, l := range lines {
		out = append(out, l.text)
	}
	return strings.Join(out, "; ")
}

// beforeAfter shows the bytes at a site before and after PROFILE writes
// over them, with their instructions.
func beforeAfter(d instr.Decoder, site uint64, before, after []byte) string {
	b, a := hexBytes(before), hexBytes(after)
	w := max(len(b), len(a))
	return fmt.Sprintf("  before  %-*s  %s\n  after   %-*s  %s\n", w, b, texts(disasm(d, before, site)), w, a, texts(disasm(d, after, site)))
}

// breakpointBytes shows the bytes of the instruction at a site before
// and after a breakpoint is written over its first bytes: the rest of
// the instruction stays, never run.
func breakpointBytes(d instr.Decoder, site uint64, orig, brk []byte) string {
	after := append(slices.Clone(brk), orig[len(brk):]...)
	text := texts(disasm(d, brk, site))
	if len(orig) > len(brk) {
		text += " (the rest of the instruction's bytes stay, never run)"
	}
	b, a := hexBytes(orig), hexBytes(after)
	return fmt.Sprintf("  before  %s  %s\n  after   %-*s  %s\n", b, texts(disasm(d, orig, site)), len(b), a, text)
}

// listing shows code at pc, disassembled, under a title: one
// instruction a line, with its address and bytes, and the note of its
// address, if any.
func listing(d instr.Decoder, title string, pc uint64, code []byte, notes map[uint64]string) string {
	lines := disasm(d, code, pc)
	w, tw := 0, 0
	for _, l := range lines {
		w = max(w, len(hexBytes(l.b)))
		if notes[l.pc] != "" {
			tw = max(tw, len(l.text))
		}
	}
	var b strings.Builder
	b.WriteString(title + ":\n")
	for _, l := range lines {
		if note := notes[l.pc]; note != "" {
			fmt.Fprintf(&b, "    %#x  %-*s  %-*s  ; %s\n", l.pc, w, hexBytes(l.b), tw, l.text, note)
			continue
		}
		fmt.Fprintf(&b, "    %#x  %-*s  %s\n", l.pc, w, hexBytes(l.b), l.text)
	}
	return b.String()
}

// trampNotes notes, in trampoline tr's listing, where the instrumentation
// begins, each instruction moved (from where), and the jump back.
func trampNotes(d instr.Decoder, tr *tramp) map[uint64]string {
	notes := map[uint64]string{}
	code := &tr.code
	for _, m := range code.PCs {
		notes[m.Tramp] = fmt.Sprintf("moved from %#x", m.Orig)
	}
	if len(code.PCs) > 0 && code.PCs[0].Tramp > tr.addr {
		notes[tr.addr] = "the instrumentation"
	}
	lines := disasm(d, code.Code, tr.addr)
	if len(lines) == 0 {
		return notes
	}
	last := lines[len(lines)-1].pc
	if !code.Exit {
		notes[last] = fmt.Sprintf("back to %#x, after the patch", tr.patch.End())
		return notes
	}
	// An exit's trampoline: the instrumentation runs before the exit,
	// which is its last instruction (the PC map gives the exit's address
	// to the instrumentation).
	at := tr.addr + uint64(code.At)
	for _, m := range code.PCs {
		if m.Tramp == at {
			notes[last] = fmt.Sprintf("moved from %#x: the exit", m.Orig)
		}
	}
	notes[at] = "the instrumentation, before the exit"
	return notes
}

// calibrated tells what a stop, and a record, cost the program (timing).
func (x *explainer) calibrated() {
	if x == nil || x.t.books == nil || !x.t.plan.Method.IsTiming() {
		return
	}
	t := x.t
	if t.rings != nil {
		x.say("PROFILE measured what a record costs the program: %d ns, taken out of the times (at the exec stop, the main thread timed a block of work with records and without).", t.calculated)
		return
	}
	x.say("PROFILE measured what a stop costs the program beyond what its clock sees: %d ns (the overhead), taken out of the times (the thread hit a breakpoint at its first instruction %d times).", t.calculated, calibrationRounds)
	if t.forced {
		x.say("The plan imposes %d ns instead (prep /CB).", t.overhead)
	}
}

// running tells that the program runs now.
func (x *explainer) running() {
	if x == nil {
		return
	}
	t := x.t
	x.started = true
	line := "PROFILE lets the program run. Only a thread that hits a breakpoint stops: PROFILE handles the stop and lets it go on."
	if t.counters != nil && !t.counters.rings {
		line += " The trampolines count without stopping it: PROFILE reads their counters, in the memory it shares with the program, while it waits."
	}
	if t.rings != nil {
		line += " The trampolines record without stopping it: PROFILE reads the rings while it waits."
	}
	x.say("%s %s", x.now(), line)
	if s := t.sampling; s != nil {
		how := "the kernel's clock event of each thread (perf), which writes the samples into a ring PROFILE reads"
		if s.kind == datafile.PtraceSampler {
			how = "PROFILE interrupting each thread and reading its program counter (the kernel refused its clock events)"
		}
		x.say("%s PROFILE samples every %v of each thread's CPU time, by %s.", x.now(), s.interval, how)
	}
}

// firstHit tells the first hit of item, once, while first hits are
// told: an item told is seen; one past the limit is not, and counted at
// the end.
func (x *explainer) firstHit(item int, format string, args ...any) {
	if x.seen[item] || x.hitsDone {
		return
	}
	x.seen[item] = true
	x.tell("hit", format, args...)
	x.hitsDone = x.full("hit")
}

// itemName names an item: "f", "line 12 of counts.c".
func (x *explainer) itemName(item int) string {
	t := x.t
	if t.plan.Method.IsFunction() {
		return t.plan.Funcs[item].Name
	}
	return x.lineNames([]int{item})
}

// hit tells the first hit of a breakpoint site s by thread th (the hit
// counted, or booked).
func (x *explainer) hit(th *thread, s *site) {
	if x == nil || x.hitsDone || th.foreign || s.item < 0 || x.seen[s.item] {
		return
	}
	t := x.t
	n := t.hits[s.item]
	if n == 0 {
		n = 1 // (booked, or covered)
	}
	what := "first hit, at its breakpoint"
	if t.books != nil {
		what = "first entered, at its breakpoint"
	}
	cover := ""
	if t.bp.removeAtHit {
		cover = "; covered, its breakpoint taken out"
	}
	if note := x.startNote(); note != "" {
		x.firstHit(s.item, "%s thread %d: %s %s%s", x.now(), th.tid, x.itemName(s.item), what, note)
		return
	}
	x.firstHit(s.item, "%s thread %d: %s %s (count %d%s)", x.now(), th.tid, x.itemName(s.item), what, n, cover)
	for _, i := range s.more {
		x.firstHit(i, "%s thread %d: %s %s (count %d%s)", x.now(), th.tid, x.itemName(i), what, max(t.hits[i], 1), cover)
	}
}

// booksFor says what the books of an untimed run are kept for.
func (x *explainer) booksFor() string {
	p := x.t.plan
	switch {
	case p.StartFunc != "" && p.Attribution:
		return "the start function (/SF) and the callers (/AT)"
	case p.StartFunc != "":
		return "the start function (/SF): only the calls made while it runs count"
	}
	return "the callers of each call (/AT)"
}

// record tells the first entry of a timed function, from a record of
// thread tid's ring.
func (x *explainer) record(tid int, rec *instr.Record) {
	if x != nil && !x.hitsDone && !rec.Exit && !x.seen[rec.Item] {
		x.firstRecord(tid, rec)
	}
}

// firstRecord is record's work.
func (x *explainer) firstRecord(tid int, rec *instr.Record) {
	who := fmt.Sprintf("thread %d", tid)
	if rec.G != 0 {
		who += fmt.Sprintf(", goroutine %#x", rec.G)
	}
	x.firstHit(rec.Item, "%s %s: %s first entered, a record of its ring%s", x.at(x.t.ctr.ns(rec.Time)), who, x.itemName(rec.Item), x.startNote())
}

// startNote is what a first entry's line says of its count: with a start
// function, whether the call counts is the books' to say (the start
// function must be running), and its count is not known yet.
func (x *explainer) startNote() string {
	if x.t.plan.StartFunc != "" {
		return " (counted if the start function is running)"
	}
	return " (count 1)"
}

// drained tells a thread's ring read, with the records it held.
func (x *explainer) drained(tid, n int) {
	if x == nil || n == 0 {
		return
	}
	x.tell("drain", "%s the ring of thread %d drained: %s booked", x.now(), tid, plural(n, "record"))
}

// watching reports whether the narrator reads the in-process counters
// for first hits.
func (x *explainer) watching() bool {
	c := x.t.counters
	return c != nil && !c.rings && x.started && !x.hitsDone
}

// stop reads the counters at a stop, at most every scanEvery.
func (x *explainer) stop() {
	if x == nil || !x.watching() || x.t.clock()-x.scanned < scanEvery {
		return
	}
	x.scan()
}

// idle returns what PROFILE does while it waits, when the narrator reads
// the counters (nil when it does not): a scan every scanEvery.
func (x *explainer) idle() func() bool {
	if x == nil || !x.watching() {
		return nil
	}
	return func() bool {
		if !x.watching() || x.t.clock()-x.scanned < scanEvery {
			return false
		}
		return x.scan()
	}
}

// threadExiting reads the counters at a thread's exit stop, while its
// block is still its own.
func (x *explainer) threadExiting() {
	if x != nil && x.watching() {
		x.scan()
	}
}

// scan reads the in-process counters, and tells the first hit of each
// counter seen above zero: the thread whose block holds it (where each
// has one), and the count so far. It reports whether it told any.
func (x *explainer) scan() bool {
	t, c := x.t, x.t.counters
	x.scanned = t.clock()
	lt := t.lines
	if x.unseen == nil {
		n := t.plan.NumItems()
		if lt != nil {
			n = len(lt.lines)
		}
		x.unseen = make([]int, n)
		for k := range x.unseen {
			x.unseen[k] = k
		}
	}
	var sharers map[int][]int // a counter, the sites that share its count
	if lt != nil && len(lt.alias) > 0 {
		sharers = map[int][]int{}
		for b, a := range lt.alias {
			sharers[a] = append(sharers[a], b)
		}
	}
	owner := map[int]int{}
	for tid, b := range c.blockOf {
		owner[b] = tid
	}
	last := c.next
	if c.kind != instr.CountPerThread {
		last = 2
	}
	mem := c.shared.Bytes()
	told := false
	left := x.unseen[:0]
	for _, k := range x.unseen {
		if lt != nil && hasKey(lt.alias, k) {
			continue // (never counted: it shares another's count)
		}
		sum, tid := uint64(0), 0
		for b := 1; b < last; b++ {
			n := binary.LittleEndian.Uint64(mem[uint64(b)*c.blockSize+uint64(k)*8:])
			if n != 0 && tid == 0 && c.kind == instr.CountPerThread {
				tid = owner[b]
			}
			sum += n
		}
		if sum == 0 {
			left = append(left, k)
			continue
		}
		told = true
		who := ""
		if tid != 0 {
			who = fmt.Sprintf(" thread %d:", tid)
		}
		items := []int{k}
		if lt != nil {
			items = slices.Clone(lt.lines[k])
			for _, b := range sharers[k] {
				items = append(items, lt.lines[b]...)
			}
		}
		for _, i := range items {
			x.firstHit(i, "%s%s %s first hit, seen in its counter (count %d so far)", x.now(), who, x.itemName(i), sum)
		}
	}
	x.unseen = left
	return told
}

// hasKey reports whether m has key k.
func hasKey(m map[int]int, k int) bool {
	_, ok := m[k]
	return ok
}

// rendezvous tells the dynamic linker's breakpoint planted, which
// brings the libraries of the plan.
func (x *explainer) rendezvous(r rendezvous, interp string) {
	if x == nil {
		return
	}
	x.say("PROFILE plants the plan's libraries (%s) when the dynamic linker loads them: it keeps a breakpoint at _dl_debug_state, at %#x in %s, which the dynamic linker calls after each change to its list of libraries.",
		x.t.libNames(), r.brk, filepath.Base(interp))
}

// library tells a library of the plan loaded (before it is planted) or
// unloaded.
func (x *explainer) library(l *loaded, loaded bool) {
	if x == nil {
		return
	}
	name := x.t.plan.Modules[l.mi].Name
	if loaded {
		x.tell("library", "%s the dynamic linker loaded %s at %#x: PROFILE plants it now, borrowing the thread stopped at the rendezvous for the system calls.", x.now(), name, l.lo)
		return
	}
	x.tell("library", "%s %s at %#x was unloaded (dlclose): PROFILE forgets its sites and unmaps the areas it mapped beside it; its counts stay.", x.now(), name, l.lo)
}

// signal tells a signal of the program passed on to thread th.
func (x *explainer) signal(th *thread, sig syscall.Signal) {
	if x == nil {
		return
	}
	x.tell("signal", "%s thread %d received %s: PROFILE passes it on unchanged.", x.now(), th.tid, describeSignal(sig))
}

// steppedOut tells a signal that found thread th in PROFILE's code, at
// from, delivered where it is back in the program's, at to, steps
// instructions later (deliverOutside).
func (x *explainer) steppedOut(th *thread, sig syscall.Signal, from, to uint64, steps int) {
	if x == nil {
		return
	}
	x.tell("signal", "%s the signal found thread %d in PROFILE's code at %#x: PROFILE holds %s, single-steps the thread back into the program's code (%d instructions, to %#x), and delivers it there.",
		x.now(), th.tid, from, signalName(sig), steps, to)
}

// forwarded tells a signal PROFILE received passed on to the program
// (from forwardSignals' goroutine).
func (x *explainer) forwarded(sig syscall.Signal) {
	if x == nil {
		return
	}
	x.tell("signal", "%s PROFILE received %s: it passes it on to the program.", x.now(), signalName(sig))
}

// thread tells a new thread of the program taken in.
func (x *explainer) thread(tid int) {
	if x == nil {
		return
	}
	if c := x.t.counters; c != nil && c.kind == instr.CountPerThread && hasKey(c.blockOf, tid) {
		b, what := c.blockOf[tid], "counters"
		if c.rings {
			what = "counters, with its ring of records"
		}
		x.tell("thread", "%s new thread %d: PROFILE traces it, and gives it its own block of %s, block %d at %#x.", x.now(), tid, what, b, c.blockAddr(b))
		return
	}
	x.tell("thread", "%s new thread %d: PROFILE traces it as the others.", x.now(), tid)
}

// child tells a child process taken in (vfork) or let go (fork).
func (x *explainer) child(tid int, vfork bool) {
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
func (x *explainer) exec() {
	if x == nil {
		return
	}
	x.say("%s the program called exec: its image, and PROFILE's work in it, are gone. Profiling ends here; what was counted is kept.", x.now())
}

// swept tells line coverage's jumps taken out, once covered.
func (x *explainer) swept(n int) {
	if x == nil || n == 0 {
		return
	}
	x.tell("sweep", "%s PROFILE interrupted the program and wrote back the original bytes of %s whose lines are all covered: they run at native speed now.", x.now(), plural(n, "jump"))
}

// ended tells the program's end, and what the limit left untold.
func (x *explainer) ended(res *Result) {
	if x == nil {
		return
	}
	switch {
	case res.Exited:
		x.say("%s the program exited with status %d.", x.now(), res.ExitCode)
	default:
		x.say("%s the program was killed by %s.", x.now(), describeSignal(res.Signal))
	}
	untold := 0
	if res.Counts != nil {
		for i, n := range res.Counts.Stats.Hits {
			if n != 0 && i < len(x.seen) && !x.seen[i] {
				untold++
			}
		}
	}
	hit := 0
	if res.Counts != nil {
		for _, n := range res.Counts.Stats.Hits {
			if n != 0 {
				hit++
			}
		}
	}
	what := "functions"
	if !x.t.plan.Method.IsFunction() {
		what = "lines"
	}
	ran := "ran"
	if x.t.plan.StartFunc != "" {
		ran = "were counted, called while the start function ran"
	}
	x.say("PROFILE collected the counts: %d of %d %s %s; threads stopped %s at PROFILE's breakpoints.", hit, x.t.plan.NumItems(), what, ran, plural(int(x.t.bp.hits), "time"))
	x.mu.Lock()
	x.untold["hit"] = untold
	var more []string
	for _, k := range []struct{ kind, words string }{
		{"hit", "first hit"}, {"drain", "ring drain"}, {"thread", "new task"}, {"signal", "signal"},
		{"library", "library event"}, {"sweep", "sweep"},
	} {
		if n := x.untold[k.kind]; n > 0 {
			more = append(more, plural(n, "more "+k.words))
		}
	}
	x.mu.Unlock()
	if len(more) > 0 {
		x.say("... and %s, not told (the limit is %d; --explain-limit=0 tells everything).", strings.Join(more, ", "), x.limit)
	}
}

// ExplainSaved tells, for profile --explain, the run written to path.
func ExplainSaved(w io.Writer, path string, c *datafile.Counts) {
	what := "complete"
	if c.Run.Incomplete {
		what = "incomplete (" + c.Run.Reason + ")"
	}
	fmt.Fprintf(w, "PROFILE wrote the run to %s: its counts, %s. prep /M adds it into the database, for PLIST.\n", path, what)
}
