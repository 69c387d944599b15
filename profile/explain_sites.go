// The narration of a module planted (profile --explain): each site, its
// bytes before and after, disassembled, and its trampoline's code with
// what each part does, or why it keeps a breakpoint.

package profile

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
)

// siteNarrator narrates each module planted: its sites, what is written
// over each and the trampoline's code, or why it keeps a breakpoint.
type siteNarrator struct {
	*narrator
	// aliases is how many line sites shared an earlier site's count, and
	// derived how many were counted by flow, when the last module was
	// planted.
	aliases, derived int
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
func (x *siteNarrator) planting(p *planting) {
	if x == nil {
		return
	}
	t := x.t
	m := &t.plan.Modules[p.mi]
	what := plural(len(p.items), "function")
	if p.lines {
		what = "its line sites"
	}
	x.say("Module %s, mapped at %#x (load bias %#x): PROFILE read its code from the process, decoded it once, and plants %s.", m.Name, p.in.Lo, p.bias, what)
	if a := p.area; a != nil && !a.mapped() {
		x.say("  No area could be mapped near its code: its sites keep breakpoints, those whose instruction needs a slot none.")
	} else if a != nil {
		dist, dir := a.base-p.in.Lo, "after"
		if a.base < p.in.Lo {
			dist, dir = p.in.Lo-a.base, "before"
		}
		x.say("  Its area for trampolines and slots: %s at %#x, %s %s its code, within reach of a jump from it.", bytesWords(a.size), a.base, bytesWords((dist+1023)&^1023), dir)
	}
	var views []siteView
	for i := range p.jumps {
		views = append(views, siteView{addr: p.jumps[i].addr, j: &p.jumps[i]})
	}
	for _, s := range t.parts.bp.unwritten {
		views = append(views, siteView{addr: s.addr, s: s})
	}
	for _, sp := range p.spans {
		if s := t.parts.bp.sites[sp.addr]; s != nil {
			views = append(views, siteView{addr: s.addr, s: s})
		}
	}
	slices.SortFunc(views, func(a, b siteView) int { return cmp.Compare(a.addr, b.addr) })
	reasons := x.reasons()
	jumps, bps, moved, more := 0, 0, 0, 0
	for _, v := range views {
		switch {
		case v.j != nil && v.j.movedOut:
			moved++
		case v.j != nil:
			jumps++
		default:
			bps++
		}
		if x.full("site") {
			more++
			continue
		}
		x.tell("site", "%s", x.describe(p, v, reasons))
	}
	shared, derived := 0, 0
	if lt := t.parts.lines; lt != nil {
		shared = len(lt.alias) - x.aliases
		x.aliases = len(lt.alias)
		derived = lt.numDerived() - x.derived
		x.derived = lt.numDerived()
	}
	if more > 0 {
		x.say("  ... and %s of %s, not described (the limit is %d; --explain-limit=0 describes every site).", plural(more, "more site"), m.Name, x.limit)
	}
	sum := fmt.Sprintf("Module %s: %s, %d %s, %d %s", m.Name, plural(jumps+bps, "site"), jumps, verb(jumps, "jumps to a trampoline", "jump to trampolines"), bps, verb(bps, "keeps a breakpoint", "keep breakpoints"))
	if moved > 0 {
		sum += fmt.Sprintf("; %s moved out of the way of a jump", plural(moved, "instruction"))
	}
	if shared > 0 {
		sum += fmt.Sprintf("; %s share the count of an earlier site in straight code, and need no probe", plural(shared, "more line site"))
	}
	if derived > 0 {
		sum += fmt.Sprintf("; %s counted by flow, their counts derived from the probed sites' after the run", plural(derived, "more line site"))
	}
	x.say("%s.", sum)
}

// reasons returns why each site of the module being planted that keeps
// a breakpoint does, by address, as --verbose lists them.
func (x *siteNarrator) reasons() map[uint64]error {
	t := x.t
	byAddr := map[uint64]error{}
	if et := t.parts.entries; et != nil && len(et.fellBack) > 0 {
		byItem := map[int]error{}
		for _, fb := range et.fellBack {
			byItem[fb.item] = fb.err
		}
		for _, s := range t.parts.bp.unwritten {
			if err, ok := byItem[s.item]; ok && s.item >= 0 {
				byAddr[s.addr] = err
			}
		}
	}
	if xp := t.parts.exits; xp != nil {
		for _, fb := range xp.left {
			byAddr[fb.pc] = fb.err
		}
	}
	if lt := t.parts.lines; lt != nil {
		for _, fb := range lt.fellBack {
			byAddr[fb.addr] = fb.err
		}
	}
	return byAddr
}

// jumpHeadline is the first line of the description of jump v, of
// planting p: what the jump replaces and what its trampoline runs.
func (x *siteNarrator) jumpHeadline(p *planting, v siteView) string {
	j := v.j
	pt := &j.tramp.patch
	own := disasm(x.t.arch, pt.Orig[:pt.Written()], j.addr)
	more := plural(len(pt.Insts)-1, "instruction")
	// (A straight run ends with the function's return, or with a jump,
	// whose copy goes where the jump went: a tail call, or on into the
	// function's own code.)
	to, rest := "to the function's return", "to its return"
	if carriesToReturn(pt) && pt.Insts[len(pt.Insts)-1].Kind == instr.Jump {
		to = "to the jump that ends them, whose copy goes where it went"
		rest = "to its jump, whose copy goes where it went"
	}
	switch {
	case j.movedOut && carriesToReturn(pt):
		return fmt.Sprintf("%s at %#x, moved out of the way of the jump before it: a jump to a trampoline that runs it replaces it, so that whatever lands there still runs it, and the rest of the function %s.\n", texts(own), j.addr, rest)
	case j.movedOut:
		return fmt.Sprintf("%s at %#x, moved out of the way of the jump before it: a jump to a trampoline that runs it replaces it, so that whatever lands there still runs it.\n", texts(own), j.addr)
	case len(own) < len(pt.Insts) && carriesToReturn(pt):
		return fmt.Sprintf("%s, at %#x: a jump to its trampoline replaces 1 instruction; the trampoline runs the next %s too, %s, and never comes back: the function runs straight there, and one jump costs less than two.\n", x.siteName(p, v), j.addr, more, to)
	case len(own) < len(pt.Insts) && j.evicts:
		return fmt.Sprintf("%s, at %#x: a jump to its trampoline replaces 1 instruction; the trampoline runs the next %s too, up to one moved out of the way, and goes on after it.\n", x.siteName(p, v), j.addr, more)
	case len(own) < len(pt.Insts):
		return fmt.Sprintf("%s, at %#x: a jump to its trampoline replaces 1 instruction; the trampoline runs the next %s too, those the jump's last bytes lie over, and goes on after them, where the jump left an instruction whole.\n", x.siteName(p, v), j.addr, more)
	}
	return fmt.Sprintf("%s, at %#x: a jump to its trampoline replaces %s.\n", x.siteName(p, v), j.addr, plural(len(pt.Insts), "instruction"))
}

// describe describes one site of planting p: what it is, the bytes
// before and after, and the trampoline's code, or why it keeps a
// breakpoint and how its instruction is carried out at a hit.
func (x *siteNarrator) describe(p *planting, v siteView, reasons map[uint64]error) string {
	t := x.t
	if v.j != nil {
		j := v.j
		pt := &j.tramp.patch
		var b strings.Builder
		b.WriteString(x.jumpHeadline(p, v))
		if len(pt.Punned) > 0 {
			fmt.Fprintf(&b, "  The jump is longer than the instruction: its last %s are those of the code after it, as they are or as the next jump makes them, so its trampoline lies where they make it land.\n", plural(len(pt.Punned), "byte"))
		}
		if pt.Back != 0 {
			fmt.Fprintf(&b, "  Its last bytes are the start of the next site's jump: the trampoline goes on to that one's trampoline, as the jump would.\n")
		}
		if j.farHop != 0 {
			fmt.Fprintf(&b, "  Its window has no room for the trampoline: the jump lands on a hop at %#x, a jump on to it.\n", j.farHop)
		}
		b.WriteString(beforeAfter(t.arch, j.addr, pt.Orig[:pt.Written()], j.jump))
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
		if err := t.parts.plant.readCode(s.addr, code); err != nil {
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
	case t.parts.counters == nil:
		why = "nothing is counted in-process in this run"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s, at %#x: keeps a breakpoint (%s).\n", x.siteName(p, v), s.addr, why)
	b.WriteString(breakpointBytes(t.arch, s.addr, code[:n], brk))
	switch d := &s.disp; {
	case t.parts.bp.removeAtHit:
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
func (x *siteNarrator) notes(p *planting, v siteView) map[uint64]string {
	t, tr := x.t, v.j.tramp
	notes := trampNotes(t.arch, tr)
	c := t.parts.counters
	if c == nil {
		return notes
	}
	first := notes[tr.addr] == "the instrumentation"
	item := x.entryItem(p, v.addr)
	switch {
	case p.lines && first:
		count := "the count of the line"
		switch {
		case c.layout.PerThread():
			count += ", in the thread's block"
		case c.layout.Kind == instr.CountInArea:
			count += ", in the thread's area, found from the stack pointer"
		}
		// The count proper may come after registers it saves first
		// (x86-64 where the flags are live, arm64's x16 and x17): the
		// note goes on the instruction that reads the counter.
		if n := v.j.count; n > 0 {
			notes[tr.addr] = "the register the count uses, saved first and put back after it: a line's count changes nothing the program can see"
			notes[tr.addr+uint64(n)] = count
			break
		}
		notes[tr.addr] = count
	case c.layout.Books:
		if first && item >= 0 {
			notes[tr.addr] = "the entry's book code: the time, and the call's frame pushed on the thread's stack of open calls"
		} else if first {
			notes[tr.addr] = "the exit's book code: the call's time, less PROFILE's holds and the code's cost, added to its function's figures and to its caller's"
		}
		if tr.code.Exit {
			notes[tr.addr+uint64(tr.code.At)] = "the exit's book code, before the exit"
		}
	case c.layout.Rings:
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
		if et := t.parts.entries; et != nil && c.keepsDepth() && f.Frame != datafile.FrameNone {
			if n := len(et.entryCount(item).Code); n < len(tr.code.Code) {
				notes[tr.addr+uint64(n)] = "the call depth: the thread's stack of calls, for the deepest nesting"
			}
		}
	}
	return notes
}

// entryItem returns the function of planting p whose entry is patched
// at addr (at the entry, or after its landing pad), or -1.
func (x *siteNarrator) entryItem(p *planting, addr uint64) int {
	for _, item := range p.items {
		f := &x.t.plan.Funcs[item]
		entry := f.Entry + p.bias
		// (A Go function's entry may be patched at its start, before
		// its stack check: Layout.PlanThrough.)
		if addr == entry || addr == afterLandingPad(x.t.arch, p.text, entry) || addr == f.Low+p.bias {
			return item
		}
	}
	return -1
}

// siteName names the site v of planting p: "function f, entry", "line
// 12 of counts.c (f)", "function g, exit".
func (x *siteNarrator) siteName(p *planting, v siteView) string {
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
		if v.s != nil && v.s.item >= 0 {
			lines = append([]int{v.s.item}, v.s.more...)
		} else if v.s != nil {
			// (A branch's site alone.)
		} else if lt := t.parts.lines; lt != nil {
			k, ok := lt.index.get(p.mi, v.addr-p.bias)
			if pad := v.addr - 4; !ok && afterLandingPad(t.arch, p.text, pad) == v.addr {
				// A site at a landing pad (BTI, PACIASP, endbr64) is
				// patched after it.
				k, ok = lt.index.get(p.mi, pad-p.bias)
			}
			if ok {
				lines = lt.lines[k]
			}
		}
		name := x.lineNames(lines)
		if b := branchAt(t.plan, p.mi, v.addr-p.bias); b >= 0 {
			what := "the branch of " + x.lineNames([]int{t.plan.Branches[b].Line})
			if name = what + ", at " + name; len(lines) == 0 {
				name = what
			}
		}
		if fn := funcAt(t.plan, p.mi, p.bias, v.addr); fn != "" {
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
	fn := funcAt(t.plan, p.mi, p.bias, v.addr)
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

// carriesToReturn reports whether the trampoline of p runs its function
// on to a return or a jump out (instr.Layout.Leaves).
func carriesToReturn(p *instr.Patch) bool {
	if len(p.Insts) < 2 {
		return false
	}
	k := p.Insts[len(p.Insts)-1].Kind
	return k == instr.Ret || k == instr.Jump
}
