package unwind

import (
	"encoding/binary"
	"errors"
	"strings"

	"github.com/go-delve/delve/pkg/dwarf/frame"
	"github.com/go-delve/delve/pkg/dwarf/op"
)

// frameRegs is the register file of one frame: values by DWARF number and
// which of them are known.
type frameRegs struct {
	val   [nregs]uint64
	known uint64 // bit r: val[r] is known
}

func (f *frameRegs) get(r uint64) (uint64, bool) {
	if r >= nregs || f.known&(1<<r) == 0 {
		return 0, false
	}
	return f.val[r], true
}

func (f *frameRegs) set(r, v uint64) {
	if r < nregs {
		f.val[r], f.known = v, f.known|1<<r
	}
}

// unwinder holds one unwind's state.
type unwinder struct {
	ar      archRegs
	stack   Stack
	pacMask uint64
	regs    frameRegs // the current frame's
	exact   bool      // the current frame's PC is not a return address
}

// Unwind walks the stack of a sampled thread from its registers and a copy
// of the top of its stack, finding the module of each PC with modules
// (nil for none). It returns the PCs of at most max frames, innermost
// first: regs.PC, then the return addresses of the callers (for a frame
// interrupted by a signal, the interrupted PC), and why it stopped. It
// stops rather than guess: a stack that ends early ends at the last frame
// its CFI vouches for.
//
// The FDE of a caller is looked up at its return address minus one, in
// the call instruction: a call may be a function's last instruction (a
// call to a function that does not return), its return address the first
// of the next function.
func Unwind(regs Regs, stack Stack, modules func(pc uint64) *Module, max int) ([]uint64, Stop) {
	ar, ok := regs.Arch.regs()
	if !ok {
		return nil, StopBadRegs
	}
	u := unwinder{ar: ar, stack: stack, exact: true}
	if ar.link {
		u.pacMask = regs.PACMask
		u.regs.set(ar.lr, regs.LR)
	}
	u.regs.set(ar.sp, regs.SP)
	u.regs.set(ar.fp, regs.FP)
	u.regs.set(ar.pc, regs.PC)
	if max <= 0 {
		return nil, StopMaxFrames
	}
	pcs := make([]uint64, 1, min(max, 64))
	pcs[0] = regs.PC
	if regs.PC == 0 {
		return pcs, StopEnd
	}
	for len(pcs) < max {
		ra, stop := u.step(modules)
		if stop != stopNone {
			return pcs, stop
		}
		pcs = append(pcs, ra)
	}
	return pcs, StopMaxFrames
}

// stopNone is the result of a step that found the caller.
const stopNone Stop = 255

// step unwinds one frame: from the current frame's registers to its
// caller's, returning the caller's PC.
func (u *unwinder) step(modules func(pc uint64) *Module) (uint64, Stop) {
	pc, _ := u.regs.get(u.ar.pc)
	look := pc
	if !u.exact {
		look--
	}
	m := modules(look)
	if m == nil {
		return 0, StopNoModule
	}
	r := m.row(look)
	if r.stop != stopNone {
		return 0, r.stop
	}
	if r.raRule >= 0 && r.regs[r.raRule].rule.Rule == frame.RuleUndefined {
		return 0, StopEnd // the outermost frame, whatever its CFA (arm64's _start: SP's)
	}
	cfa, stop := u.cfa(r.cfa)
	if stop != stopNone {
		return 0, stop
	}
	sp, _ := u.regs.get(u.ar.sp)
	if cfa < sp || (cfa == sp && !u.exact) { // a leaf at its entry has CFA = SP on arm64
		return 0, StopNotGrowing
	}
	caller, stop := u.callerRegs(r, cfa)
	if stop != stopNone {
		return 0, stop
	}
	ra, stop := u.returnAddress(r, caller)
	if stop != stopNone {
		return 0, stop
	}
	newSP := cfa // the CFA is the caller's SP before the call (both ABIs)
	if r.spRule {
		var ok bool
		if newSP, ok = caller.get(u.ar.sp); !ok {
			return 0, StopRegister
		}
	}
	caller.set(u.ar.sp, newSP)
	if newSP < sp || (newSP == sp && !u.exact) {
		return 0, StopNotGrowing
	}
	caller.set(u.ar.pc, ra)
	if u.ar.link && !r.signal {
		// The call wrote its return address into the link register: the
		// caller's own value there is lost, and a caller whose CFI says
		// its return address is still there (a call that never returns)
		// has none to give.
		caller.known &^= 1 << u.ar.lr
	}
	u.regs = caller
	u.exact = r.signal // a signal frame's caller was interrupted, not calling
	return ra, stopNone
}

// cfa computes the canonical frame address of the current frame.
func (u *unwinder) cfa(rule frame.DWRule) (uint64, Stop) {
	switch rule.Rule {
	case frame.RuleCFA:
		v, ok := u.regs.get(rule.Reg)
		if !ok {
			return 0, StopRegister
		}
		return v + uint64(rule.Offset), stopNone
	case frame.RuleExpression:
		return u.eval(rule.Expression, 0, false)
	}
	return 0, StopUnsupported
}

// callerRegs applies the FDE row's register rules to the current frame's
// registers: the caller's. A register without a rule keeps its value
// (DWARF's "same value", as libgcc and gdb take it). A register whose
// value cannot be had (saved outside the copy of the stack: below the
// stack pointer, in an epilogue that popped it, for which gcc writes no
// rule) is unknown to the caller, and stops the walk only where a rule
// needs it; the return address must be had.
func (u *unwinder) callerRegs(r *row, cfa uint64) (frameRegs, Stop) {
	caller := u.regs
	for _, rr := range r.regs {
		v, stop := u.apply(rr.rule, cfa)
		switch {
		case stop == stopNone:
			caller.set(rr.reg, v)
		case stop == StopEnd: // undefined
			caller.known &^= 1 << rr.reg
		case rr.reg == r.ra || stop != StopOutsideStack && stop != StopRegister:
			return caller, stop
		default:
			caller.known &^= 1 << rr.reg
		}
	}
	return caller, stopNone
}

// apply returns the caller's value of a register under rule, or StopEnd
// for an undefined one.
func (u *unwinder) apply(rule frame.DWRule, cfa uint64) (uint64, Stop) {
	switch rule.Rule {
	case frame.RuleUndefined:
		return 0, StopEnd
	case frame.RuleOffset:
		return u.load(cfa + uint64(rule.Offset))
	case frame.RuleValOffset:
		return cfa + uint64(rule.Offset), stopNone
	case frame.RuleRegister:
		v, ok := u.regs.get(rule.Reg)
		if !ok {
			return 0, StopRegister
		}
		return v, stopNone
	case frame.RuleExpression:
		addr, stop := u.eval(rule.Expression, cfa, true)
		if stop != stopNone {
			return 0, stop
		}
		return u.load(addr)
	case frame.RuleValExpression:
		return u.eval(rule.Expression, cfa, true)
	}
	return 0, StopUnsupported
}

// load reads a saved register from the copy of the stack.
func (u *unwinder) load(addr uint64) (uint64, Stop) {
	v, ok := u.stack.read(addr)
	if !ok {
		return 0, StopOutsideStack
	}
	return v, stopNone
}

// returnAddress returns the caller's PC from its registers: the return
// address column, stripped of pointer-authentication bits.
func (u *unwinder) returnAddress(r *row, caller frameRegs) (uint64, Stop) {
	if r.raRule < 0 && r.ra == u.ar.pc {
		return 0, StopRegister // amd64's column 16 is no register of the frame
	}
	ra, known := caller.get(r.ra)
	if !known {
		return 0, StopRegister
	}
	ra &^= u.pacMask
	if ra == 0 {
		return 0, StopEnd
	}
	return ra, stopNone
}

// errOutside is the error the expressions' memory reads give outside the
// copy of the stack.
var errOutside = errors.New("outside the stack copy")

// eval evaluates a DWARF expression with delve's op package over the
// current frame's registers, cfa pushed first when push (DW_CFA_expression
// and DW_CFA_val_expression rules; DWARF 5, 6.4.2.3).
func (u *unwinder) eval(expr []byte, cfa uint64, push bool) (v uint64, stop Stop) {
	defer func() {
		if recover() != nil {
			v, stop = 0, StopBadCFI
		}
	}()
	regs := make([]*op.DwarfRegister, u.ar.n)
	for r := range regs {
		if val, ok := u.regs.get(uint64(r)); ok {
			regs[r] = &op.DwarfRegister{Uint64Val: val}
		}
	}
	dr := op.NewDwarfRegisters(0, regs, binary.LittleEndian, u.ar.pc, u.ar.sp, u.ar.fp, u.ar.lr)
	if push {
		dr.CFA = int64(cfa)
		expr = append([]byte{byte(op.DW_OP_call_frame_cfa)}, expr...)
	}
	read := func(buf []byte, addr uint64) (int, error) {
		if addr < u.stack.Addr || addr-u.stack.Addr > uint64(len(u.stack.Data)) ||
			uint64(len(buf)) > uint64(len(u.stack.Data))-(addr-u.stack.Addr) {
			return 0, errOutside
		}
		return copy(buf, u.stack.Data[addr-u.stack.Addr:]), nil
	}
	res, pieces, err := op.ExecuteStackProgram(*dr, expr, addrSize, read)
	switch {
	case errors.Is(err, errOutside):
		return 0, StopOutsideStack
	case err != nil && strings.Contains(err.Error(), "not available"):
		return 0, StopRegister
	case err != nil, pieces != nil:
		return 0, StopUnsupported
	}
	return uint64(res), stopNone
}
