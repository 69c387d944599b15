package instr

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"golang.org/x/arch/x86/x86asm"
)

// amd64JumpLen is the length of jmp rel32 (e9 and a 32-bit displacement).
const amd64JumpLen = 5

// endbr64 is the CET landing pad (Intel SDM Vol. 2A "ENDBR64"): f3 0f 1e fa.
var endbr64 = []byte{0xf3, 0x0f, 0x1e, 0xfa}

// PlanPatch replaces at least 5 bytes of whole instructions at site (after
// an endbr64 there) with jmp rel32. The instructions must be relocatable:
// anything but a system call, a trap, a far or 16-bit transfer, jrcxz and
// the loops; a call only as the last (it returns after the patch), not
// through rsp. After a return or an unconditional jump the patch may go on
// only over padding (nops and traps), which nothing runs: a function of
// 4 bytes, lea and ret, followed by its alignment padding, is patched that
// way. No branch of the function may land inside the replaced bytes but
// on the first.
func (a amd64) PlanPatch(fn []byte, start, site uint64) (Patch, error) {
	return a.planPatch(fn, start, site, amd64JumpLen)
}

// amd64ShortLen is the length of jmp rel8 (eb and an 8-bit displacement).
const amd64ShortLen = 2

// ShortReach returns 126 and 129: jmp rel8 reaches 128 bytes back and 127
// forward from the address after it, 2 bytes on.
func (amd64) ShortReach() (back, fwd int64) { return 126, 129 }

// Jump returns jmp rel32 from one address to another.
func (amd64) Jump(from, to uint64) ([]byte, error) { return amd64Rel32(0xe9, nil, from, to) }

func (a amd64) planPatch(fn []byte, start, site uint64, jumpLen int) (Patch, error) {
	end := start + uint64(len(fn))
	if site < start || site >= end {
		return Patch{}, fmt.Errorf("site %#x outside the function [%#x, %#x): %w", site, start, end, ErrTooShort)
	}
	off := int(site - start)
	if bytes.HasPrefix(fn[off:], endbr64) {
		off += len(endbr64) // keep the landing pad where indirect calls land
	}
	p := Patch{Site: start + uint64(off)}
	n, ended := 0, false
	for n < jumpLen {
		pc := p.Site + uint64(n)
		if off+n >= len(fn) {
			return Patch{}, fmt.Errorf("%d bytes from %#x to the function's end: %w", n, p.Site, ErrTooShort)
		}
		x, err := decodeAMD64Bare(fn[off+n:], pc)
		if err != nil {
			return Patch{}, err
		}
		switch {
		case ended:
			// Dead bytes after the last instruction: padding only. They
			// are replaced, not copied.
			if x.Kind != Nop && x.Kind != Trap {
				return Patch{}, fmt.Errorf("%s at %#x ends the code after %d bytes: %w", x.text(pc), p.Site, n, ErrTooShort)
			}
		default:
			if err := x.relocatable(); err != nil {
				return Patch{}, fmt.Errorf("%s at %#x: %w", x.text(pc), pc, err)
			}
			p.Insts = append(p.Insts, x.Inst)
			ended = x.Kind == Jump || x.Kind == Ret
			if x.Kind == Call && n+x.Len < jumpLen {
				// It would return into the patched bytes.
				return Patch{}, fmt.Errorf("%s at %#x returns inside the patch: %w", x.text(pc), pc, ErrNotRelocatable)
			}
		}
		n += x.Len
	}
	p.Orig = append([]byte(nil), fn[off:off+n]...)
	into, err := branchTargets(a, fn, start, p.Site, p.End())
	if err != nil {
		return Patch{}, err
	}
	if len(into) > 0 {
		return Patch{}, fmt.Errorf("a branch to %#x, inside [%#x, %#x): %w", into[0], p.Site, p.End(), ErrBranchInto)
	}
	return p, nil
}

// relocatable says whether x can run from a trampoline.
func (x x86Inst) relocatable() error {
	op := x.asm.Op
	switch {
	case x.Kind == Trap:
		return ErrNotRelocatable
	case x.Kind == Call:
		return x.callRelocatable()
	case op == x86asm.SYSCALL || op == x86asm.SYSENTER || op == x86asm.LJMP || op == x86asm.LRET:
		return ErrNotRelocatable
	case x.Kind == Ret && op != x86asm.RET:
		return ErrNotRelocatable
	case x.Kind != Other && x.Kind != Nop && x.pre.opsize:
		return fmt.Errorf("operand-size prefix on a branch: %w", ErrNotRelocatable)
	case x.Kind == CondJump:
		if _, ok := x86Conds[op]; !ok {
			return fmt.Errorf("jrcxz or loop: %w", ErrNotRelocatable)
		}
	case x.Kind == Jump && !x.ripMem:
		// jmp rel becomes jmp rel32; jmp *reg and jmp *mem are copied.
	case x.relSize != 0:
		return x.ripRelocatable()
	}
	return nil
}

// callRelocatable says whether a call can run from a trampoline: as a
// push of its original return address and a jump, which needs a direct
// call, or an indirect one whose operand does not use rsp (the push moves
// it) and that is not fs- or gs-relative.
func (x x86Inst) callRelocatable() error {
	if x.asm.Op != x86asm.CALL || x.pre.opsize || x.pre.addrsize {
		return fmt.Errorf("far or 16-bit call: %w", ErrNotRelocatable)
	}
	switch a := x.asm.Args[0].(type) {
	case x86asm.Rel:
		return nil
	case x86asm.Reg:
		if a == x86asm.RSP || a == x86asm.ESP {
			return fmt.Errorf("call through rsp: %w", ErrNotRelocatable)
		}
	case x86asm.Mem:
		if a.Base == x86asm.RSP || a.Index == x86asm.RSP || a.Segment == x86asm.FS || a.Segment == x86asm.GS {
			return fmt.Errorf("call through rsp or a segment: %w", ErrNotRelocatable)
		}
		if x.ripMem {
			return x.ripRelocatable()
		}
	default:
		return ErrNotRelocatable
	}
	if x.modrmOffset() < 0 {
		return fmt.Errorf("no ModRM byte found: %w", ErrNotRelocatable)
	}
	return nil
}

// modrmOffset returns the offset of the ModRM byte of an FF /2 call,
// after its legacy prefixes, REX and opcode; -1 when not found.
func (x x86Inst) modrmOffset() int {
	for i, b := range x.code {
		switch {
		case b == 0x66 || b == 0x67 || b == 0xf2 || b == 0xf3 || b == 0x2e || b == 0x3e ||
			b == 0x26 || b == 0x64 || b == 0x65 || b == 0x36 || b == 0xf0 || b&0xf0 == 0x40:
			continue
		case b == 0xff && i+1 < len(x.code) && x.code[i+1]>>3&7 == 2:
			return i + 1
		}
		return -1
	}
	return -1
}

func (x x86Inst) ripRelocatable() error {
	if !x.ripMem || x.relSize != 4 || x.relOff < 0 || x.pre.addrsize {
		return fmt.Errorf("%d-byte PC-relative field: %w", x.relSize, ErrNotRelocatable)
	}
	return nil
}

// Trampoline lays out prelude, the replaced instructions relocated (jcc
// and jmp as their rel32 forms, RIP-relative operands adjusted), each
// after the code p.Before gives it, and jmp rel32 on to p.Return(): back
// after the patch.
func (amd64) Trampoline(p *Patch, addr uint64, prelude []byte) (Trampoline, error) {
	t := Trampoline{Code: append([]byte(nil), prelude...)}
	off := 0
	for i := range p.Insts {
		pc := p.Site + uint64(off)
		x, err := decodeTrampInst(p.Orig[off:], pc)
		if err != nil {
			return Trampoline{}, err
		}
		if b := p.before(i); len(b) > 0 {
			if i > 0 {
				// (A thread stopped in that code has not run this
				// instruction yet.)
				t.PCs = append(t.PCs, PCMap{Tramp: addr + uint64(len(t.Code)), Orig: pc})
			}
			t.Code = append(t.Code, b...)
		}
		at := addr + uint64(len(t.Code))
		t.PCs = append(t.PCs, PCMap{Tramp: at, Orig: pc})
		code, err := x.relocate(pc, at)
		if ways, ok := p.ways(i); ok && x.Kind == CondJump {
			var pcs []PCMap
			code, pcs, err = x.relocateWays(pc, at, ways)
			t.PCs = append(t.PCs, pcs...)
		}
		if err != nil {
			return Trampoline{}, fmt.Errorf("%s at %#x: %w", x.text(pc), pc, err)
		}
		t.Code = append(t.Code, code...)
		off += x.Len
	}
	back, err := amd64Rel32(0xe9, nil, addr+uint64(len(t.Code)), p.Return())
	if err != nil {
		return Trampoline{}, err
	}
	t.Code = append(t.Code, back...)
	return t, nil
}

// decodeTrampInst decodes the instruction at the start of code, at pc,
// for a patch or a trampoline: through the scans' table where that says
// it is plain, copied as it is and relocatable (no branch, no
// PC-relative operand, nothing that breaks the flow, such as a system
// call, nor anything x86asm might call a Nop or a Trap), else in full.
// A million line sites took a second of x86asm's decoding.
func decodeTrampInst(code []byte, pc uint64) (x86Inst, error) {
	if s, ok := scanAMD64Fast(code, pc); ok && s.kind == Other && !s.pcrel && s.n <= len(code) &&
		!x86MaybeNopOrTrap(code) && !(amd64{}).breaksFlow(code, s) {
		return x86Inst{Inst: Inst{Len: s.n, Kind: Other}, code: code[:s.n]}, nil
	}
	return decodeAMD64Bare(code, pc)
}

// relocate returns x's code to run at at instead of pc.
func (x x86Inst) relocate(pc, at uint64) ([]byte, error) {
	switch {
	case x.Kind == Call:
		return x.relocateCall(pc, at)
	case x.Kind == Jump && x.relSize > 0 && !x.ripMem:
		return amd64Rel32(0xe9, nil, at, x.Target)
	case x.Kind == CondJump:
		return amd64Rel32(0x0f, []byte{0x80 | x86Conds[x.asm.Op]}, at, x.Target)
	case x.ripMem:
		b := append([]byte(nil), x.code...)
		field := b[x.relOff : x.relOff+4]
		disp := int64(int32(binary.LittleEndian.Uint32(field))) + int64(pc-at)
		if disp != int64(int32(disp)) {
			return nil, fmt.Errorf("target %#x from %#x: %w: %w", x.Target, at, ErrOutOfReach, ErrNotRelocatable)
		}
		binary.LittleEndian.PutUint32(field, uint32(int32(disp)))
		return b, nil
	}
	return append([]byte(nil), x.code...), nil
}

// relocateWays carries out the conditional branch x from at, running
// ways[0] on the way to its target and ways[1] on the way on, with the
// PC map of the ways' code: a thread there has gone that way (and has
// not run its code yet, at its start):
//
//	j!cc on                 0f 8x rel32, the condition negated (its low bit)
//	ways[0]
//	jmp target              e9 rel32
//	on: ways[1]             (then the next instruction's copy)
func (x x86Inst) relocateWays(pc, at uint64, ways [2][]byte) ([]byte, []PCMap, error) {
	cc, ok := x86Conds[x.asm.Op]
	if !ok {
		return nil, nil, fmt.Errorf("no negated form: %w", ErrNotRelocatable)
	}
	const jccLen, jmpLen = 6, 5
	taken := at + jccLen
	on := taken + uint64(len(ways[0])) + jmpLen
	code, err := amd64Rel32(0x0f, []byte{0x80 | cc ^ 1}, at, on)
	if err != nil {
		return nil, nil, err
	}
	code = append(code, ways[0]...)
	jmp, err := amd64Rel32(0xe9, nil, on-jmpLen, x.Target)
	if err != nil {
		return nil, nil, err
	}
	code = append(append(code, jmp...), ways[1]...)
	pcs := []PCMap{{Tramp: taken, Orig: x.Target}}
	if len(ways[1]) > 0 {
		pcs = append(pcs, PCMap{Tramp: on, Orig: pc + uint64(x.Len)})
	}
	return code, pcs, nil
}

// relocateCall carries out a call from a trampoline: it pushes the
// original return address, written as the call would write it (rsp moved
// first, so that a signal frame cannot land on it), and jumps to the
// target, direct or through the call's own operand:
//
//	lea -8(%rsp),%rsp       48 8d 64 24 f8  (no flags changed)
//	movl $lo32,(%rsp)       c7 04 24 imm32
//	movl $hi32,4(%rsp)      c7 44 24 04 imm32
//	jmp target              e9 rel32, or the call's FF /2 as FF /4
func (x x86Inst) relocateCall(pc, at uint64) ([]byte, error) {
	ret := pc + uint64(x.Len)
	b := []byte{0x48, 0x8d, 0x64, 0x24, 0xf8, 0xc7, 0x04, 0x24}
	b = binary.LittleEndian.AppendUint32(b, uint32(ret))
	b = append(b, 0xc7, 0x44, 0x24, 0x04)
	b = binary.LittleEndian.AppendUint32(b, uint32(ret>>32))
	jumpAt := at + uint64(len(b))
	if _, ok := x.asm.Args[0].(x86asm.Rel); ok {
		j, err := amd64Rel32(0xe9, nil, jumpAt, x.Target)
		return append(b, j...), err
	}
	j := append([]byte(nil), x.code...)
	m := x.modrmOffset()
	j[m] = j[m]&^0x38 | 4<<3 // FF /2 call becomes FF /4 jmp, same operand
	if x.ripMem {
		field := j[x.relOff : x.relOff+4]
		disp := int64(int32(binary.LittleEndian.Uint32(field))) + int64(pc-jumpAt)
		if disp != int64(int32(disp)) {
			return nil, fmt.Errorf("target %#x from %#x: %w: %w", x.Target, jumpAt, ErrOutOfReach, ErrNotRelocatable)
		}
		binary.LittleEndian.PutUint32(field, uint32(int32(disp)))
	}
	return append(b, j...), nil
}

// amd64Rel32 encodes an instruction of opcode op (and more opcode bytes)
// with a rel32 to target, placed at at.
func amd64Rel32(op byte, more []byte, at, target uint64) ([]byte, error) {
	b := append([]byte{op}, more...)
	rel := int64(target - (at + uint64(len(b)) + 4))
	if rel != int64(int32(rel)) {
		return nil, &reachError{at, target}
	}
	return binary.LittleEndian.AppendUint32(b, uint32(int32(rel))), nil
}

// reachError is a jump from at that cannot reach target. Placing a
// trampoline tries places out of reach by the thousand: its message is
// written only when it is read.
type reachError struct{ at, target uint64 }

func (e *reachError) Error() string {
	return fmt.Sprintf("jump from %#x to %#x: %v: %v", e.at, e.target, ErrOutOfReach, ErrNotRelocatable)
}

func (e *reachError) Unwrap() []error { return []error{ErrOutOfReach, ErrNotRelocatable} }

// PatchJump returns jmp rel32 to tramp, or jmp rel8 to the hop of a short
// patch, padded with int3; for a punned patch, the bytes of jmp rel32
// before the ones it shares with the code after it.
func (amd64) PatchJump(p *Patch, tramp uint64) ([]byte, error) {
	var b []byte
	if p.Punned != nil {
		j, err := amd64Rel32(0xe9, nil, p.Site+uint64(len(p.Prefix)), tramp)
		if err != nil {
			return nil, err
		}
		j = append(slices.Clone(p.Prefix), j...)
		if !bytes.HasSuffix(j, p.Punned) {
			return nil, fmt.Errorf("jump from %#x to %#x does not end with the code's bytes %x: %w", p.Site, tramp, p.Punned, ErrOutOfReach)
		}
		return j[:p.Written()], nil
	}
	if p.Short {
		rel := int64(tramp - (p.Site + amd64ShortLen))
		if rel != int64(int8(rel)) {
			return nil, fmt.Errorf("short jump from %#x to %#x: %w", p.Site, tramp, ErrOutOfReach)
		}
		b = []byte{0xeb, byte(int8(rel))}
	} else {
		j, err := amd64Rel32(0xe9, nil, p.Site+uint64(len(p.Prefix)), tramp)
		if err != nil {
			return nil, err
		}
		b = append(slices.Clone(p.Prefix), j...)
	}
	return append(b, bytes.Repeat([]byte{0xcc}, p.Written()-len(b))...), nil
}

// relocateOne relocates the one instruction orig from pc to at.
func (amd64) relocateOne(orig []byte, pc, at uint64) ([]byte, error) {
	x, err := decodeAMD64Bare(orig, pc)
	if err != nil {
		return nil, err
	}
	if x.Len != len(orig) {
		return nil, fmt.Errorf("%d bytes at %#x are not one instruction", len(orig), pc)
	}
	if err := x.relocatable(); err != nil {
		return nil, fmt.Errorf("%s at %#x: %w", x.text(pc), pc, err)
	}
	return x.relocate(pc, at)
}
