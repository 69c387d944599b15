package instr

import (
	"encoding/binary"
	"fmt"
)

// Displace prepares the instruction at pc for a thread stopped on its
// breakpoint:
//
//   - every PC-relative instruction is emulated: ADR, ADRP, LDR and LDRSW
//     (literal) into general registers, B, BL, B.cond, CBZ/CBNZ, TBZ/TBNZ;
//     so are BR, BLR and RET, NOP, BTI and PRFM (literal);
//   - any other instruction, PACIASP and AUTIASP included, runs from the
//     slot followed by a B back to pc+4 (±128 MiB, else [ErrOutOfReach]);
//     RETAA, BRAA and the like leave the slot by themselves;
//   - BLRAA and the like run from the slot under single-step and AfterStep
//     moves the link register back to pc+4;
//   - LDR (literal) into a SIMD&FP register, traps (BRK, UDF, HLT...) and
//     unknown encodings among the branches are [ErrUnsupported].
func (arm64) Displace(code []byte, pc, slot uint64) (Displaced, error) {
	x, err := decodeARM64(code, pc)
	if err != nil {
		return Displaced{}, fmt.Errorf("displace at %#x: %w", pc, err)
	}
	if pc%a64InstLen != 0 || slot%a64InstLen != 0 {
		return Displaced{}, fmt.Errorf("displace at %#x: instruction or slot %#x not 4-byte aligned", pc, slot)
	}
	d, err := x.displace(pc, slot)
	if err != nil {
		return Displaced{}, fmt.Errorf("displace %q at %#x: %w", x.Text, pc, err)
	}
	if d.Emulate != nil {
		d.Emulate = clearBTYPE(d.Emulate)
	}
	d.Inst = x.Inst
	return d, nil
}

// pstateBTYPE is PSTATE.BTYPE, bits 11-10 (Arm ARM D1.4.5).
const pstateBTYPE = 3 << 10

// clearBTYPE wraps an emulation so it clears PSTATE.BTYPE when the
// registers allow it (see [FlagsSetter]).
func clearBTYPE(e emulation) emulation {
	return func(r Regs, m Memory) error {
		if err := e(r, m); err != nil {
			return err
		}
		if fs, ok := r.(FlagsSetter); ok {
			if f := r.Flags(); f&pstateBTYPE != 0 {
				fs.SetFlags(f &^ pstateBTYPE)
			}
		}
		return nil
	}
}

func (x a64Inst) displace(pc, slot uint64) (Displaced, error) {
	next := pc + a64InstLen
	switch x.op {
	case a64Trap, a64UnknownBranch:
		return Displaced{}, ErrUnsupported
	case a64LDRLitFP:
		return Displaced{}, fmt.Errorf("load into a SIMD&FP register: %w", ErrUnsupported)
	case a64Nop:
		return Displaced{Emulate: jumpTo(next)}, nil
	case a64B:
		return Displaced{Emulate: jumpTo(x.Target)}, nil
	case a64BL:
		return Displaced{Emulate: a64Link(func(Regs) uint64 { return x.Target }, next)}, nil
	case a64BCond:
		return Displaced{Emulate: branchIf(func(r Regs) bool { return a64CondHolds(x.cond, r.Flags()) }, x.Target, next)}, nil
	case a64CBZ, a64TBZ:
		return Displaced{Emulate: branchIf(x.testTaken, x.Target, next)}, nil
	case a64ADR:
		return Displaced{Emulate: x.setAndNext(func(Regs, Memory) (uint64, error) { return x.Target, nil }, next)}, nil
	case a64LDRLit:
		return Displaced{Emulate: x.setAndNext(x.loadLiteral, next)}, nil
	case a64BR:
		return Displaced{Emulate: func(r Regs, _ Memory) error {
			r.SetPC(a64Xreg(r, x.reg))
			return nil
		}}, nil
	case a64BLR:
		return Displaced{Emulate: a64Link(func(r Regs) uint64 { return a64Xreg(r, x.reg) }, next)}, nil
	}
	slotCode, err := x.outOfLine(pc, slot)
	if err != nil {
		return Displaced{}, err
	}
	if x.op == a64PACCall {
		return Displaced{Slot: slotCode, SingleStep: true, AfterStep: a64LinkBack(slot+a64InstLen, next)}, nil
	}
	return Displaced{Slot: slotCode}, nil
}

// a64Xreg reads general register n of an instruction field, where 31 is
// XZR, not SP.
func a64Xreg(r Regs, n int) uint64 {
	if n == 31 {
		return 0
	}
	return r.Reg(n)
}

// a64Link branches to target and links x30 to next; the target is read
// first, so BLR x30 branches to the old x30.
func a64Link(target func(Regs) uint64, next uint64) emulation {
	return func(r Regs, _ Memory) error {
		t := target(r)
		r.SetReg(a64LR, next)
		r.SetPC(t)
		return nil
	}
}

// testTaken evaluates CBZ, CBNZ, TBZ and TBNZ.
func (x a64Inst) testTaken(r Regs) bool {
	v := a64Xreg(r, x.reg)
	var zero bool
	switch {
	case x.op == a64TBZ:
		zero = v>>x.bit&1 == 0
	case x.sf:
		zero = v == 0
	default:
		zero = uint32(v) == 0
	}
	return zero != x.neg
}

// setAndNext writes the value to the destination register (none when it
// is XZR) and moves to the next instruction.
func (x a64Inst) setAndNext(value func(Regs, Memory) (uint64, error), next uint64) emulation {
	return func(r Regs, m Memory) error {
		v, err := value(r, m)
		if err != nil {
			return err
		}
		if x.reg != 31 {
			r.SetReg(x.reg, v)
		}
		r.SetPC(next)
		return nil
	}
}

// loadLiteral reads the literal of LDR (32-bit zero-extended or 64-bit)
// or LDRSW (32-bit sign-extended).
func (x a64Inst) loadLiteral(_ Regs, m Memory) (uint64, error) {
	var b [8]byte
	if err := m.ReadMem(x.Target, b[:x.size]); err != nil {
		return 0, fmt.Errorf("load literal at %#x: %w", x.Target, err)
	}
	v := binary.LittleEndian.Uint64(b[:])
	if x.sext {
		v = uint64(int64(int32(v)))
	}
	return v, nil
}

// PSTATE condition flags (Arm ARM D1.4.1).
const (
	pstateN = 1 << 31
	pstateZ = 1 << 30
	pstateC = 1 << 29
	pstateV = 1 << 28
)

// a64CondHolds evaluates condition cond on PSTATE (Arm ARM C1.2.4): even
// codes test a predicate, odd codes its negation, AL and NV always hold.
func a64CondHolds(cond uint8, pstate uint64) bool {
	n, z, c, v := pstate&pstateN != 0, pstate&pstateZ != 0, pstate&pstateC != 0, pstate&pstateV != 0
	var r bool
	switch cond >> 1 {
	case 0:
		r = z
	case 1:
		r = c
	case 2:
		r = n
	case 3:
		r = v
	case 4:
		r = c && !z
	case 5:
		r = n == v
	case 6:
		r = !z && n == v
	case 7:
		return true
	}
	return r != (cond&1 == 1)
}

// a64LinkBack is the AfterStep of BLRAA and the like single-stepped in the
// slot: the link register pointing past the slot's copy (back) becomes
// next.
func a64LinkBack(back, next uint64) emulation {
	return func(r Regs, _ Memory) error {
		if r.PC() == back {
			r.SetPC(next)
		}
		if r.Reg(a64LR) == back {
			r.SetReg(a64LR, next)
		}
		return nil
	}
}

// outOfLine builds the slot: the instruction, then B pc+4.
func (x a64Inst) outOfLine(pc, slot uint64) ([]byte, error) {
	b, err := a64Branch(slot+a64InstLen, pc+a64InstLen)
	if err != nil {
		return nil, err
	}
	out := binary.LittleEndian.AppendUint32(make([]byte, 0, a64SlotSize), x.word)
	return binary.LittleEndian.AppendUint32(out, b), nil
}

// a64Branch encodes B from one address to another: imm26 words, ±128 MiB.
func a64Branch(from, to uint64) (uint32, error) {
	off := int64(to - from)
	if off < -1<<27 || off >= 1<<27 {
		return 0, fmt.Errorf("branch from %#x to %#x: %w", from, to, ErrOutOfReach)
	}
	return 0x14000000 | uint32(off>>2)&0x3ffffff, nil
}
