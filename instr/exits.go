package instr

import (
	"errors"
	"fmt"
	"slices"
)

// Exits, for function timing: where a function is left, a trampoline
// takes its time before the exit instruction runs (after the epilogue, so
// that the stack pointer is the one of the function's entry again). An
// exit's patch replaces the exit and, where the exit is shorter than a
// jump, the instructions of the epilogue before it or the alignment
// padding after it ([Patcher.PlanExits]); its trampoline runs the
// epilogue's instructions relocated, then the instrumentation, then the
// exit, which never comes back ([ExitTrampoline]).

// Exit is a way out of a function.
type Exit struct {
	// PC is the address of the exit instruction.
	PC uint64
	// Len is its length in bytes.
	Len int
	// Kind is Ret, or Jump for a jump out of the function (a tail call).
	Kind Kind
	// Indirect marks a jump through a register or memory: it may be a
	// tail call or a jump table's jump inside the function, which
	// decoding cannot tell apart. Not patched: a frame left that way is
	// closed from the stack pointer at the thread's next event.
	Indirect bool
}

// FindExits decodes fn, the code of the function [start, end) (fn may go
// on past end, over padding), and returns its exits in address order:
// returns, direct jumps to outside [start, end), indirect jumps.
func FindExits(a Decoder, fn []byte, start, end uint64) ([]Exit, error) {
	scan := a.scanDecoder()
	n := min(int(end-start), len(fn))
	var exits []Exit
	for off := 0; off < n; {
		pc := start + uint64(off)
		in, err := scan(fn[off:n], pc)
		if err != nil {
			return nil, err
		}
		if in.n <= 0 {
			return nil, decodeError(a, fn[off:], pc, ErrTruncated) // never: a guard against a loop
		}
		if e, ok := exitAt(pc, in.n, in.kind, in.target, start, end); ok {
			exits = append(exits, e)
		}
		off += in.n
	}
	return exits, nil
}

// exitAt returns the exit an instruction of n bytes at pc, of kind and
// (for a direct branch) target, is in the function [start, end): a
// return, an indirect jump, or a direct jump out of the function; false
// for any other.
func exitAt(pc uint64, n int, kind Kind, target, start, end uint64) (Exit, bool) {
	switch {
	case kind == Ret:
		return Exit{PC: pc, Len: n, Kind: Ret}, true
	case kind == Jump && target == 0:
		return Exit{PC: pc, Len: n, Kind: Jump, Indirect: true}, true
	case kind == Jump && (target < start || target >= end):
		return Exit{PC: pc, Len: n, Kind: Jump}, true
	}
	return Exit{}, false
}

// ExitPlan is the plan of one exit's patch.
type ExitPlan struct {
	Exit  Exit
	Patch Patch
	// Err says why the exit cannot be patched (Patch is then empty).
	Err error
}

// errIndirect is why an indirect jump is not patched.
var errIndirect = errors.New("an indirect jump, maybe inside the function")

// ExitTrampoline builds the trampoline at addr for the exit patch p:
// the instructions before the exit relocated, then instrumentation
// (position-independent), then the exit relocated. There is no jump
// back: the exit leaves. A PC in the instrumentation maps to the exit.
func ExitTrampoline(a Patcher, p *Patch, addr uint64, instrumentation []byte) (Trampoline, error) {
	if len(p.Insts) == 0 {
		return Trampoline{}, fmt.Errorf("exit trampoline for %#x: no instruction", p.Site)
	}
	t := Trampoline{Exit: true}
	off := 0
	for i, in := range p.Insts {
		pc := p.Site + uint64(off)
		if i == len(p.Insts)-1 {
			t.PCs = append(t.PCs, PCMap{Tramp: addr + uint64(len(t.Code)), Orig: pc})
			t.At = len(t.Code)
			t.Code = append(t.Code, instrumentation...)
			t.Tail = len(t.Code)
		}
		at := addr + uint64(len(t.Code))
		code, err := a.relocateOne(p.Orig[off:off+in.Len], pc, at)
		if err != nil {
			return Trampoline{}, fmt.Errorf("exit trampoline for %#x: %w", p.Site, err)
		}
		if i < len(p.Insts)-1 || len(instrumentation) == 0 {
			t.PCs = append(t.PCs, PCMap{Tramp: at, Orig: pc})
		}
		t.Code = append(t.Code, code...)
		off += in.Len
	}
	return t, nil
}

// ExitIndex returns the index in p's instructions of the first that
// leaves the function [start, end): a return, or a direct jump out (a
// tail call); -1 for none.
func ExitIndex(p *Patch, start, end uint64) int {
	return slices.IndexFunc(p.Insts, func(in Inst) bool { return isExit(in, start, end) })
}

func isExit(in Inst, start, end uint64) bool {
	return in.Kind == Ret || (in.Kind == Jump && in.Target != 0 && (in.Target < start || in.Target >= end))
}

// CodeScan is what decoding a module's code from end to end finds.
type CodeScan struct {
	// Jumps are the targets of its direct jumps, conditional or not,
	// sorted: the places other code lands, among them those of a
	// function's cold part (GCC's f.cold) in the function itself, which
	// decoding the function alone does not see.
	Jumps []uint64
	// Returns has, for the target of each direct call, the addresses
	// where its calls return.
	Returns map[uint64][]uint64
	// AfterCalls are the addresses after every call, direct or not,
	// sorted: where a thread inside a callee returns (a landing for a
	// process attached to, whose stacks hold such addresses already).
	AfterCalls []uint64
	// Refs are the addresses the PC-relative operands of its other
	// instructions refer to (lea of a switch's jump table, of a code
	// label; ADR, ADRP, a literal), sorted: where jump tables and code
	// pointers may be found.
	Refs []uint64
}

// ScanCode decodes code (at start) from end to end. Bytes that do not
// decode are stepped over.
func ScanCode(a Decoder, code []byte, start uint64) CodeScan {
	decode := a.scanDecoder()
	step := a.instAlign()
	s := CodeScan{Returns: map[uint64][]uint64{}}
	for off := 0; off < len(code); {
		pc := start + uint64(off)
		in, err := decode(code[off:], pc)
		if err != nil || in.n <= 0 {
			off += step
			continue
		}
		switch {
		case (in.kind == Jump || in.kind == CondJump) && in.target != 0:
			s.Jumps = append(s.Jumps, in.target)
		case in.kind == Call && in.target != 0:
			s.Returns[in.target] = append(s.Returns[in.target], pc+uint64(in.n))
		case in.pcrel && in.target != 0 && in.kind != Jump && in.kind != CondJump && in.kind != Call:
			s.Refs = append(s.Refs, in.target)
		}
		off += in.n
	}
	slices.Sort(s.Jumps)
	s.Jumps = slices.Compact(s.Jumps)
	slices.Sort(s.Refs)
	s.Refs = slices.Compact(s.Refs)
	return s
}
