package instr

// Carrying a leaf: a small function that runs straight from its entry to
// its return, the commonest hot call (a getter, a comparison, a hash
// step), costs its trampoline two jumps, there and back, taken branches
// that cost more than the count does (docs/performance.md, "Counting at
// native speed"). Its trampoline can instead run the whole function, its
// return included, and never come back: one jump. The jump still writes
// over the entry's instruction alone (Patch.Own), and every other byte of
// the function stays the program's own, so a jump into its middle finds
// what it always found.

// maxLeaf is the most instructions a trampoline carries out after those
// of its patch, to a function's return.
const maxLeaf = 12

// leafRun returns run, the patch of a function's entry, carrying out
// the instructions after it to the function's return, where they run
// straight there and the layout lets it (Layout.Leaves): each, run's
// own too, goes on to the next, none is a call (whose copy would push a return
// address into the trampoline, which Go's unwinder and the CPU's return
// predictor both mind), a branch or a trap, and the run ends with a
// return or a jump (a tail call, or on into the function's own code: the
// copy goes where the jump went). Nothing of the run may be written
// by another patch or change during the run (a breakpoint's bytes): the
// copies stand for the program's own instructions only where nothing
// else was to run there. False where there is no such run.
func (l *Layout) leafRun(run Patch) (Patch, bool) {
	if !l.Leaves || run.Back != 0 || len(run.Insts) == 0 || !l.endsSoon(run) {
		return run, false
	}
	at := run.Site
	for _, in := range run.Insts {
		if !straight(in) || at < l.start || at+uint64(in.Len) > l.start+uint64(len(l.orig)) || !l.carriable(at, uint64(in.Len), in) {
			return run, false
		}
		at += uint64(in.Len)
	}
	decode := l.a.bareDecoder()
	prev, n0 := run.Insts[len(run.Insts)-1], len(run.Insts)
	end := l.start + uint64(len(l.orig))
	for at, k := run.End(), 0; fallsThrough(prev); k++ {
		if k == maxLeaf || at >= end {
			return run, false
		}
		in, err := decode(l.orig[at-l.start:], at)
		n := uint64(in.Len)
		if err != nil || in.Len <= 0 || at+n > end || !straight(in) && in.Kind != Ret && in.Kind != Jump ||
			l.any(l.written, at, in.Len) || l.any(l.unstable, at, in.Len) || !l.carriable(at, n, in) {
			return run, false
		}
		run = carry(run, Patch{Orig: l.orig[at-l.start : at-l.start+n], Insts: []Inst{in}}, true)
		prev, at = in, at+n
	}
	return run, (prev.Kind == Ret || prev.Kind == Jump) && len(run.Insts) > n0
}

// endsSoon reports whether the code after run, decoded as it is, goes
// straight to a return or a jump within maxLeaf instructions: the quick
// test that leaves leafRun's checks (each instruction relocated) to the
// few functions that can be carried. Planting 100,000 functions of
// 40 instructions took 2 s longer without it.
func (l *Layout) endsSoon(run Patch) bool {
	decode := l.a.bareDecoder()
	end := l.start + uint64(len(l.orig))
	prev := run.Insts[len(run.Insts)-1]
	for at, k := run.End(), 0; fallsThrough(prev); k++ {
		if k == maxLeaf || at < l.start || at >= end {
			return false
		}
		in, err := decode(l.orig[at-l.start:], at)
		if err != nil || in.Len <= 0 || !straight(in) && in.Kind != Ret && in.Kind != Jump {
			return false
		}
		prev, at = in, at+uint64(in.Len)
	}
	return prev.Kind == Ret || prev.Kind == Jump
}

// carryLeaf returns p, a whole jump, carrying out its function to the
// return (leafRun), and its trampoline's size; false where it cannot be
// carried or its trampoline cannot be built (what is not relocatable, a
// jump out of reach).
func (l *Layout) carryLeaf(p Patch, build Build) (Patch, int, bool) {
	if p.Own != 0 || p.Punned != nil {
		return p, 0, false
	}
	run, ok := l.leafRun(p)
	if !ok {
		return p, 0, false
	}
	tr, err := build(&run, run.Site)
	if err != nil {
		return p, 0, false
	}
	return run, len(tr.Code), true
}

// carriable reports whether the instruction in, of n bytes at addr, may
// run from a trampoline as one of many: relocatable as a patch's own
// instruction is (not a system call, whose signals PROFILE would step a
// thread out of a trampoline through, nor xbegin, whose fallback is
// relative), and nothing that stops the flow but a return or a jump.
func (l *Layout) carriable(addr, n uint64, in Inst) bool {
	code := l.orig[addr-l.start : addr-l.start+n]
	if _, err := l.a.relocateOne(code, addr, addr); err != nil {
		return false
	}
	return in.Kind == Ret || in.Kind == Jump || !l.a.breaksFlow(code, scanned{n: in.Len, kind: in.Kind, pcrel: in.PCRel, target: in.Target})
}

// straight reports whether in goes on to the next instruction, always.
func straight(in Inst) bool { return in.Kind == Other || in.Kind == Nop }
