package instr

import (
	"errors"
	"fmt"
	"slices"
	"sort"
)

// Flow is the control-flow graph of one function, as its decoded code
// proves it: its blocks, each a run of instructions that control enters
// at the first and leaves at the last, and the ways between them. A
// line profile counts by it (counting by flow, docs/architecture.md):
// every time control enters a block it leaves it once, so a block's
// count is the sum of the ways in and the sum of the ways out, and the
// counts of a few blocks give the others'.
//
// The ways out of the function that name their place (a direct call, a
// jump elsewhere, the fall off its end) are kept as addresses, for the
// caller to join the functions of a module; the others leave for
// anywhere. A call's block goes to the function called; the block after
// the call is entered afresh, from anywhere: whether, and how often, a
// call returns (exit, longjmp, an exception, setjmp's second return) no
// decoding knows.
type Flow struct {
	Blocks []FlowBlock
}

// FlowBlock is a block of a [Flow]: the instructions of [Start, End).
type FlowBlock struct {
	Start, End uint64
	// Succs are the blocks of the function control goes to from this
	// one: its fall-through and its branch's target, each once. Far are
	// the places outside the function's own flow it goes to: the
	// target of a direct call (its own entry too), of a jump elsewhere,
	// or the function's end, fallen off.
	Succs []int
	Far   []uint64
	// Entered: control may come in from anywhere (after a call, a trap
	// or a system call); the entry and the landings of jumps from
	// elsewhere are the caller's to know. Leaves: control may go
	// anywhere (a return, an indirect call, a trap, a system call).
	Entered, Leaves bool
}

// ErrFlowIndirect: the function has an indirect jump, whose targets its
// decoding does not know.
var ErrFlowIndirect = errors.New("an indirect jump")

// errFlow is why a function's flow is not proven.
func errFlow(pc uint64, why string) error { return fmt.Errorf("flow at %#x: %s", pc, why) }

// Block returns the index of the block holding addr, or -1.
func (f *Flow) Block(addr uint64) int {
	i := sort.Search(len(f.Blocks), func(i int) bool { return f.Blocks[i].End > addr })
	if i < len(f.Blocks) && f.Blocks[i].Start <= addr {
		return i
	}
	return -1
}

// flowInst is an instruction of a function being graphed.
type flowInst struct {
	pc     uint64
	target uint64
	n      uint8 // (no instruction is longer than 15 bytes)
	kind   Kind
	breaks bool
}

// FuncFlow returns the flow graph of the function [lo, hi) of code (at
// start), its blocks cut where its own branches land, after every
// instruction that breaks the flow, and at cuts (sorted: the places
// where anything else may land). It fails where the code does not
// decode from lo to exactly hi, where a branch of the function lands
// inside an instruction, and on an indirect jump ([ErrFlowIndirect]).
func FuncFlow(a Decoder, code []byte, start, lo, hi uint64, cuts []uint64) (*Flow, error) {
	if lo >= hi || lo < start || hi-start > uint64(len(code)) {
		return nil, errFlow(lo, "not in the code")
	}
	insts, err := flowDecode(a, code[lo-start:hi-start], lo)
	if err != nil {
		return nil, err
	}
	begins := func(t uint64) bool {
		_, ok := slices.BinarySearchFunc(insts, t, func(x flowInst, t uint64) int { return cmpU64(x.pc, t) })
		return ok
	}
	leaders := map[uint64]bool{lo: true}
	entered := map[uint64]bool{}
	for _, x := range insts {
		next := x.pc + uint64(x.n)
		if x.kind == Jump && x.target == 0 {
			return nil, fmt.Errorf("%w: %w", errFlow(x.pc, "not proven"), ErrFlowIndirect)
		}
		if x.target != 0 && x.target >= lo && x.target < hi && (x.kind == Jump || x.kind == CondJump || x.kind == Call) {
			if !begins(x.target) {
				return nil, errFlow(x.pc, "a branch lands inside an instruction")
			}
			leaders[x.target] = true
		}
		if x.breaks && next < hi {
			leaders[next] = true
			if x.kind != Jump && x.kind != CondJump && x.kind != Ret {
				entered[next] = true // after a call, a trap, a system call
			}
		}
	}
	for _, t := range inRange(cuts, lo, hi) {
		if begins(t) {
			leaders[t] = true
		}
	}
	return linkFlow(insts, leaders, entered, lo, hi), nil
}

// flowDecode decodes code, at pc, to its end.
func flowDecode(a Decoder, code []byte, pc uint64) ([]flowInst, error) {
	decode := a.scanDecoder()
	insts := make([]flowInst, 0, len(code)/3+1) // (most instructions are 3 bytes or more)
	for off := 0; off < len(code); {
		x, err := decode(code[off:], pc+uint64(off))
		if err != nil || x.n <= 0 || x.n > len(code)-off || x.n > 255 {
			return nil, errFlow(pc+uint64(off), "does not decode to the function's end")
		}
		insts = append(insts, flowInst{pc: pc + uint64(off), n: uint8(x.n), kind: x.kind, target: x.target, breaks: a.breaksFlow(code[off:], x)})
		off += x.n
	}
	return insts, nil
}

// linkFlow cuts insts, of [lo, hi), into blocks at leaders and links
// them; entered are the leaders control may come to from outside.
func linkFlow(insts []flowInst, leaders, entered map[uint64]bool, lo, hi uint64) *Flow {
	f := &Flow{}
	var lasts []flowInst
	for i, x := range insts {
		if leaders[x.pc] {
			f.Blocks = append(f.Blocks, FlowBlock{Start: x.pc, Entered: entered[x.pc]})
		}
		b := &f.Blocks[len(f.Blocks)-1]
		b.End = x.pc + uint64(x.n)
		if i+1 == len(insts) || leaders[insts[i+1].pc] {
			lasts = append(lasts, x)
		}
	}
	for i := range f.Blocks {
		b, x := &f.Blocks[i], lasts[i]
		to := func(t uint64) {
			if t < lo || t >= hi {
				b.Far = append(b.Far, t)
				return
			}
			if k := f.Block(t); !slices.Contains(b.Succs, k) {
				b.Succs = append(b.Succs, k)
			}
		}
		switch {
		case x.kind == Jump:
			to(x.target)
		case x.kind == CondJump:
			to(x.target)
			to(b.End)
		case x.kind == Call && x.target != 0:
			b.Far = append(b.Far, x.target)
		case x.breaks: // a return, an indirect call, a trap, a system call
			b.Leaves = true
		default:
			to(b.End)
		}
	}
	return f
}

// inRange returns the part of sorted addrs in [lo, hi).
func inRange(addrs []uint64, lo, hi uint64) []uint64 {
	i, _ := slices.BinarySearch(addrs, lo)
	j, _ := slices.BinarySearch(addrs, hi)
	return addrs[i:j]
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Flow returns the flow graph of the function [lo, hi) of the code
// mapped (see [FuncFlow]).
func (m *CodeMap) Flow(lo, hi uint64, cuts []uint64) (*Flow, error) {
	if !m.Contains(lo) || hi > m.start+uint64(len(m.code)) {
		return nil, errFlow(lo, "not in the module's code")
	}
	return FuncFlow(m.arch, m.code, m.start, lo, hi, cuts)
}

// CrossJumps returns the direct jumps and calls of the code that land
// outside the function of funcs they are in, or come from code of no
// function, and the falls into a function from the code before it (the
// last instruction before its start, when it may run, reached from a
// function's start, a landing or a fall, and does not jump, return or
// trap): each its
// instruction's address and where it lands, sorted by the latter. They
// are the ways into a function that its own decoding does not see (a
// call, a cold part's jump back). Each function is decoded from its
// start to its end and the code between linearly, as [MapCode] does.
func (m *CodeMap) CrossJumps(funcs [][2]uint64) [][2]uint64 {
	fns := slices.Clone(funcs)
	slices.SortFunc(fns, func(x, y [2]uint64) int { return cmpU64(x[0], y[0]) })
	end := m.start + uint64(len(m.code))
	step := uint64(m.arch.instAlign())
	landing := func(pc uint64) bool {
		_, jumped := slices.BinarySearch(m.Jumps, pc)
		_, called := m.Returns[pc]
		return jumped || called
	}
	var out [][2]uint64
	live := false // whether the last instruction may run and falls through
	walk := func(lo, hi uint64, own bool) {
		last := uint64(0)
		for pc := lo; pc < hi; {
			x, err := m.scan(m.code[pc-m.start:hi-m.start], pc)
			if err != nil || x.n <= 0 {
				pc += step
				live = false
				continue
			}
			if (x.kind == Jump || x.kind == CondJump || x.kind == Call) && x.target != 0 && (!own || x.target < lo || x.target >= hi) {
				out = append(out, [2]uint64{pc, x.target})
			}
			// (A call returns, a system call too: the instruction after
			// runs. A jump, a return or a trap goes on elsewhere.)
			live = (live || landing(pc) || own && pc == lo) && x.kind != Jump && x.kind != Ret && x.kind != Trap
			last = pc
			pc += uint64(x.n)
		}
		if live && last != 0 && hi < end {
			out = append(out, [2]uint64{last, hi})
		}
	}
	pos := m.start
	for _, f := range fns {
		if f[0] < m.start || f[1] > end || f[0] >= f[1] {
			continue
		}
		if f[0] > pos {
			walk(pos, f[0], false)
		}
		walk(f[0], f[1], true)
		pos = max(pos, f[1])
	}
	walk(pos, end, false)
	slices.SortFunc(out, func(x, y [2]uint64) int { return cmpU64(x[1], y[1]) })
	return out
}
