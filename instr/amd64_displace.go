package instr

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/arch/x86/x86asm"
)

// Displace prepares the instruction at pc for a thread stopped on its
// breakpoint:
//
//   - nop and endbr64/32, direct jmp, the 16 jcc, jrcxz/jecxz,
//     loop/loope/loopne, direct call, call *reg, call *mem (no fs/gs
//     override) and ret/ret imm16 are emulated;
//   - any other instruction runs from the slot, followed by an absolute
//     jump back to the next instruction (ff 25 00000000 and its address),
//     its RIP-relative displacement, if any, relocated for the slot;
//   - call *mem with an fs/gs override runs from the slot under single-step
//     and AfterStep moves the pushed return address back to the original
//     code;
//   - traps (int3, int n, ud2, hlt...), far transfers and branches with an
//     operand-size prefix are [ErrUnsupported].
func (amd64) Displace(code []byte, pc, slot uint64) (Displaced, error) {
	x, err := decodeAMD64(code, pc)
	if err != nil {
		return Displaced{}, fmt.Errorf("displace at %#x: %w", pc, err)
	}
	d, err := x.displace(pc, slot)
	if err != nil {
		return Displaced{}, fmt.Errorf("displace %q at %#x: %w", x.Text, pc, err)
	}
	d.Inst = x.Inst
	return d, nil
}

func (x x86Inst) displace(pc, slot uint64) (Displaced, error) {
	next := pc + uint64(x.Len)
	op := x.asm.Op
	switch {
	case x.Kind == Trap:
		return Displaced{}, ErrUnsupported
	case x.Kind == Nop:
		return Displaced{Emulate: jumpTo(next)}, nil
	case op == x86asm.LCALL || op == x86asm.LJMP || op == x86asm.LRET || x.Kind == Ret && op != x86asm.RET:
		return Displaced{}, fmt.Errorf("far transfer: %w", ErrUnsupported)
	case x.Kind != Other && x.pre.opsize:
		// A 16-bit branch truncates the PC on AMD and not on Intel.
		return Displaced{}, fmt.Errorf("operand-size prefix on a branch: %w", ErrUnsupported)
	case op == x86asm.JMP && x.relSize > 0 && !x.ripMem:
		return Displaced{Emulate: jumpTo(x.Target)}, nil
	case x.Kind == CondJump:
		e, err := x.condJump(next)
		return Displaced{Emulate: e}, err
	case op == x86asm.CALL && x.relSize > 0 && !x.ripMem:
		return Displaced{Emulate: x86Call(constTarget(x.Target), next)}, nil
	case op == x86asm.CALL:
		if target, ok := x.indirectTarget(next); ok {
			return Displaced{Emulate: x86Call(target, next)}, nil
		}
		slotCode, err := x.outOfLine(pc, slot)
		if err != nil {
			return Displaced{}, err
		}
		return Displaced{Slot: slotCode, SingleStep: true, AfterStep: x86CallBack(slot+uint64(x.Len), next)}, nil
	case op == x86asm.RET:
		return Displaced{Emulate: x86Ret(x.asm.Args[0])}, nil
	}
	slotCode, err := x.outOfLine(pc, slot)
	return Displaced{Slot: slotCode}, err
}

// condJump emulates jcc, jrcxz, jecxz and the loops.
func (x x86Inst) condJump(next uint64) (emulation, error) {
	op := x.asm.Op
	if cc, ok := x86Conds[op]; ok {
		return branchIf(func(r Regs) bool { return x86CondHolds(cc, r.Flags()) }, x.Target, next), nil
	}
	switch op {
	case x86asm.JRCXZ:
		return branchIf(func(r Regs) bool { return r.Reg(amd64RCX) == 0 }, x.Target, next), nil
	case x86asm.JECXZ:
		return branchIf(func(r Regs) bool { return uint32(r.Reg(amd64RCX)) == 0 }, x.Target, next), nil
	case x86asm.LOOP, x86asm.LOOPE, x86asm.LOOPNE:
		if x.pre.addrsize {
			return nil, fmt.Errorf("loop on ecx: %w", ErrUnsupported)
		}
		target := x.Target
		return func(r Regs, _ Memory) error {
			rcx := r.Reg(amd64RCX) - 1
			zf := r.Flags()&flagZF != 0
			taken := rcx != 0 && (op == x86asm.LOOP || zf == (op == x86asm.LOOPE))
			r.SetReg(amd64RCX, rcx)
			if taken {
				r.SetPC(target)
			} else {
				r.SetPC(next)
			}
			return nil
		}, nil
	}
	return nil, ErrUnsupported
}

// constTarget is the target of a direct call.
func constTarget(target uint64) func(Regs, Memory) (uint64, error) {
	return func(Regs, Memory) (uint64, error) { return target, nil }
}

// x86Call pushes next and jumps to the target.
func x86Call(target func(Regs, Memory) (uint64, error), next uint64) emulation {
	return func(r Regs, m Memory) error {
		t, err := target(r, m)
		if err != nil {
			return fmt.Errorf("read call target: %w", err)
		}
		sp := r.Reg(amd64RSP) - 8
		if err := writeU64(m, sp, next); err != nil {
			return fmt.Errorf("push return address at %#x: %w", sp, err)
		}
		r.SetReg(amd64RSP, sp)
		r.SetPC(t)
		return nil
	}
}

// x86Ret pops the return address and, for ret imm16, the arguments.
func x86Ret(arg x86asm.Arg) emulation {
	var extra uint64
	if imm, ok := arg.(x86asm.Imm); ok {
		extra = uint64(imm) & 0xffff
	}
	return func(r Regs, m Memory) error {
		sp := r.Reg(amd64RSP)
		ret, err := readU64(m, sp)
		if err != nil {
			return fmt.Errorf("pop return address at %#x: %w", sp, err)
		}
		r.SetReg(amd64RSP, sp+8+extra)
		r.SetPC(ret)
		return nil
	}
}

// indirectTarget returns how to read the target of call *reg or call *mem;
// ok is false for an operand it does not compute (fs/gs-relative, 32-bit
// addressing).
func (x x86Inst) indirectTarget(next uint64) (target func(Regs, Memory) (uint64, error), ok bool) {
	switch a := x.asm.Args[0].(type) {
	case x86asm.Reg:
		n, ok := x86RegNum(a)
		if !ok {
			return nil, false
		}
		return func(r Regs, _ Memory) (uint64, error) { return r.Reg(n), nil }, true
	case x86asm.Mem:
		if a.Segment == x86asm.FS || a.Segment == x86asm.GS || x.pre.addrsize {
			return nil, false
		}
		ea, ok := x86EffectiveAddr(a, next)
		if !ok {
			return nil, false
		}
		return func(r Regs, m Memory) (uint64, error) { return readU64(m, ea(r)) }, true
	}
	return nil, false
}

// x86EffectiveAddr returns how to compute the address of a 64-bit memory
// operand: base + index*scale + disp, RIP being the next instruction.
func x86EffectiveAddr(a x86asm.Mem, next uint64) (func(Regs) uint64, bool) {
	base, index := -1, -1
	var fixed uint64
	switch a.Base {
	case 0:
	case x86asm.RIP:
		fixed = next
	default:
		n, ok := x86RegNum(a.Base)
		if !ok {
			return nil, false
		}
		base = n
	}
	if a.Index != 0 {
		n, ok := x86RegNum(a.Index)
		if !ok {
			return nil, false
		}
		index = n
	}
	disp, scale := uint64(int64(int32(a.Disp))), uint64(a.Scale) // disp32 comes zero-extended
	return func(r Regs) uint64 {
		ea := fixed + disp
		if base >= 0 {
			ea += r.Reg(base)
		}
		if index >= 0 {
			ea += r.Reg(index) * scale
		}
		return ea
	}, true
}

// x86CallBack is the AfterStep of a call single-stepped in its slot: the
// return address it pushed (back, the end of the slot's copy) becomes next.
func x86CallBack(back, next uint64) emulation {
	return func(r Regs, m Memory) error {
		if r.PC() == back {
			r.SetPC(next)
		}
		sp := r.Reg(amd64RSP)
		ret, err := readU64(m, sp)
		if err != nil {
			return fmt.Errorf("read return address at %#x: %w", sp, err)
		}
		if ret == back {
			if err := writeU64(m, sp, next); err != nil {
				return fmt.Errorf("rewrite return address at %#x: %w", sp, err)
			}
		}
		return nil
	}
}

// outOfLine builds the slot: the instruction, its PC-relative field
// relocated so it refers to the same address from the slot, then
// jmp *0(%rip) with the address of the next instruction.
func (x x86Inst) outOfLine(pc, slot uint64) ([]byte, error) {
	b := make([]byte, 0, amd64SlotSize)
	b = append(b, x.code...)
	if x.relSize != 0 {
		if x.relSize != 4 || x.pre.addrsize {
			return nil, fmt.Errorf("%d-byte PC-relative field: %w", x.relSize, ErrUnsupported)
		}
		field := b[x.relOff : x.relOff+4]
		disp := int64(int32(binary.LittleEndian.Uint32(field))) + int64(pc-slot)
		if disp != int64(int32(disp)) {
			return nil, fmt.Errorf("target %#x from slot %#x: %w", x.Target, slot, ErrOutOfReach)
		}
		binary.LittleEndian.PutUint32(field, uint32(int32(disp)))
	}
	b = append(b, 0xff, 0x25, 0, 0, 0, 0)
	return binary.LittleEndian.AppendUint64(b, pc+uint64(x.Len)), nil
}
