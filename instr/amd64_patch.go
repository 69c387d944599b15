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
		x, err := decodeAMD64Bare(p.Orig[off:], pc)
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
		return nil, fmt.Errorf("jump from %#x to %#x: %w: %w", at, target, ErrOutOfReach, ErrNotRelocatable)
	}
	return binary.LittleEndian.AppendUint32(b, uint32(int32(rel))), nil
}

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

// Counting returns CountPerThread: every x86-64 CPU has GS, and Linux user
// space leaves it unused (docs/design/inprocess.md).
func (amd64) Counting(uint64) (CountKind, error) { return CountPerThread, nil }

// CountCode returns incq %gs:counter (65 48 ff 04 25 disp32: GS override,
// REX.W, FF /0 with a SIB byte of no base and no index; Intel SDM Vol. 2A
// "INC" and Table 2-3). It changes the flags, which are dead at an entry.
func (amd64) CountCode(kind CountKind, counter uint64) []byte {
	if kind != CountPerThread || counter > 1<<31-1 {
		return nil
	}
	return binary.LittleEndian.AppendUint32([]byte{0x65, 0x48, 0xff, 0x04, 0x25}, uint32(counter))
}

// LineCode returns the count of a line site, which changes neither the
// flags (live inside a body: a cmp before the line's first instruction,
// a jcc after it) nor any register, and writes nothing on the stack (the
// red zone of C, a Go stack's end):
//
//	mov %rax,%gs:save        65 48 89 04 25 disp32
//	mov %gs:counter,%rax     65 48 8b 04 25 disp32
//	lea 1(%rax),%rax         48 8d 40 01 (lea adds without flags)
//	mov %rax,%gs:counter
//	mov %gs:save,%rax
//
// A thread stopped before the store gets rax back from the block and
// starts again; one stopped after it gets rax back and goes on past the
// code (a signal handler may count lines too, through the same slot).
// Coverage is one instruction, movq $1,%gs:counter (65 48 c7 04 25
// disp32 imm32), with nothing to roll back; and where the flags are dead
// (s.NoFlags), the count is CountCode's incq, one instruction. Go code is
// no different: the code touches no stack.
func (a amd64) LineCode(kind CountKind, s LineSite) (DepthCode, bool) {
	counter, save, cover := s.Counter, s.Save, s.Cover
	if kind != CountPerThread || counter > 1<<31-1 || save > 1<<31-1 {
		return DepthCode{}, false
	}
	if s.NoFlags && !cover {
		return DepthCode{Code: a.CountCode(kind, counter)}, true
	}
	gs := func(c []byte, op byte, disp uint64) []byte {
		return binary.LittleEndian.AppendUint32(append(c, 0x65, 0x48, op, 0x04, 0x25), uint32(disp))
	}
	if cover {
		return DepthCode{Code: binary.LittleEndian.AppendUint32(gs(nil, 0xc7, counter), 1)}, true
	}
	const movStore, movLoad = 0x89, 0x8b
	c := gs(nil, movStore, save)
	saved := len(c)
	c = gs(c, movLoad, counter)
	c = append(c, 0x48, 0x8d, 0x40, 0x01)
	c = gs(c, movStore, counter)
	stored := len(c)
	c = gs(c, movLoad, save)
	rax := []SavedReg{{Reg: 0, Offset: save}}
	return DepthCode{Code: c, Count: saved, Rollback: []Rollback{
		{From: saved, To: stored, Restore: rax, Resume: 0},
		{From: stored, To: len(c), Restore: rax, Resume: len(c)},
	}}, true
}

// flagsWritten are the instructions that write OF, SF, ZF, AF and PF
// (some leave AF or more undefined, which no program reads) and read none
// of them: incq's flags are dead before one (it keeps CF, which ADC and
// SBB read). Intel SDM Vol. 1, Appendix A, Table A-2.
var flagsWritten = map[x86asm.Op]bool{
	x86asm.ADD: true, x86asm.ADC: true, x86asm.SUB: true, x86asm.SBB: true, x86asm.CMP: true,
	x86asm.TEST: true, x86asm.AND: true, x86asm.OR: true, x86asm.XOR: true, x86asm.NEG: true,
	x86asm.INC: true, x86asm.DEC: true, x86asm.IMUL: true,
	x86asm.UCOMISD: true, x86asm.UCOMISS: true, x86asm.COMISD: true, x86asm.COMISS: true,
}

// flagsUntouched are instructions that read no flag (the shifts may
// write them, or not for a count of 0: the flags go on to the next
// instruction either way).
var flagsUntouched = map[x86asm.Op]bool{
	x86asm.MOV: true, x86asm.MOVZX: true, x86asm.MOVSX: true, x86asm.MOVSXD: true, x86asm.LEA: true,
	x86asm.PUSH: true, x86asm.POP: true, x86asm.NOP: true, x86asm.NOT: true, x86asm.BSWAP: true,
	x86asm.SHL: true, x86asm.SHR: true, x86asm.SAR: true, x86asm.XCHG: true,
	x86asm.MOVSS: true, x86asm.MOVSD_XMM: true, x86asm.MOVAPS: true, x86asm.MOVAPD: true, x86asm.MOVUPS: true,
	x86asm.MOVDQA: true, x86asm.MOVDQU: true, x86asm.MOVQ: true, x86asm.MOVD: true, x86asm.PXOR: true,
	x86asm.CVTSI2SD: true, x86asm.CVTSI2SS: true,
}

// FlagsDead reports whether the arithmetic flags are dead at pc, in
// text (at start): on the one path from there, at most 32 instructions,
// one in flagsWritten comes before any that might read them. The path
// follows direct jumps and calls into the code they lead to (a callee
// that writes the flags before it reads them), inside text; anything
// else first (a conditional branch, a return, an indirect jump or call,
// an instruction of another kind, the end of text) is not known: false.
// A return ends nothing: hand-written assembly may return a result in
// the flags (cmp; ret, its caller then jne), and a count before it
// would change it.
func (amd64) FlagsDead(text []byte, start, pc uint64) bool {
	for range 32 {
		if pc < start || pc-start >= uint64(len(text)) {
			return false
		}
		code := text[pc-start:]
		n, flags := flagsFast(code, pc)
		if flags == flagsUnknown {
			x, err := decodeAMD64Bare(code, pc)
			switch {
			case err != nil:
				return false
			case (x.Kind == Call || x.Kind == Jump) && x.Target != 0 && x.asm.Op != x86asm.LJMP:
				pc = x.Target // (what runs next)
				continue
			case flagsWritten[x.asm.Op]:
				flags = flagsKilled
			case flagsUntouched[x.asm.Op]:
				flags = flagsKept
			default:
				return false
			}
			n = x.Len
		}
		if flags == flagsKilled {
			return true
		}
		pc += uint64(n)
	}
	return false
}

// What an instruction does to the flags, for FlagsDead.
const (
	flagsUnknown = iota // ask x86asm
	flagsKilled         // written before read
	flagsKept           // neither read nor (always) written
)

// flagsFast classifies the commonest instructions by their opcode byte,
// after a REX or operand-size prefix, with their length from the scan's
// fast path: the ALU operations (00-3D, 80-85, A8, A9: add, or, adc,
// sbb, and, sub, xor, cmp, test) write the flags; mov, lea, movsxd, push
// and pop (50-5F, 63, 88-8B, 8D, B0-BF, C6, C7) leave them. A branch, a
// call or a return is x86asm's to decode. TestFlagsFastAgrees holds it
// to x86asm.
func flagsFast(code []byte, pc uint64) (int, int) {
	in, ok := scanAMD64Fast(code, pc)
	if !ok || len(code) == 0 {
		return 0, flagsUnknown
	}
	b := code
	for len(b) > 1 && (b[0]&0xf0 == 0x40 || b[0] == 0x66) {
		b = b[1:]
	}
	op := b[0]
	switch {
	case op < 0x40 && op&7 <= 5 && op != 0x0f, op >= 0x80 && op <= 0x85 && op != 0x82, op == 0xa8, op == 0xa9:
		return in.n, flagsKilled
	case op >= 0x50 && op <= 0x5f, op == 0x63, op >= 0x88 && op <= 0x8b, op == 0x8d, op >= 0xb0 && op <= 0xbf:
		return in.n, flagsKept
	case (op == 0xc6 || op == 0xc7) && len(b) > 1 && b[1]>>3&7 == 0:
		return in.n, flagsKept
	}
	return 0, flagsUnknown
}

// DepthCode returns the shadow-stack code of a trampoline (see [Depth]),
// with rcx (and rax in the Go form) saved in the block around it:
//
//	mov %rcx,%gs:D+0             C form: the key is rsp itself
//	mov %gs:D+16,%rcx            n, the frames on the shadow stack
//	test %rcx,%rcx; jz push
//	cmp %gs:D+32(,%rcx,8),%rsp   stack[n-1] against rsp
//	je done                      the same level: a sibling call (a loop
//	                             calling one function), nothing changes
//	1: jb push                   stack[n-1] is above: still live
//	dec %rcx; jz push            it has returned: pop it
//	cmp %gs:D+32(,%rcx,8),%rsp; jmp 1b
//	push: cmp $slots,%rcx; jae done
//	mov %rsp,%gs:D+40(,%rcx,8)
//	inc %rcx; mov %rcx,%gs:D+16
//	cmp %gs:D+24,%rcx; jbe done
//	mov %rcx,%gs:D+24            a new deepest nesting
//	done: mov %gs:D+0,%rcx
//
// The Go form keys frames by their distance from the goroutine's stack
// top (g.stack.hi, at 8(%r14)), in rax, and starts afresh when the
// goroutine is not the one of the frames. Only the flags change.
func (amd64) DepthCode(d Depth) (DepthCode, bool) {
	var c []byte
	gs := func(op []byte, modrm byte, sib byte, disp uint64) {
		c = append(c, 0x65)
		c = append(c, op...)
		c = append(c, modrm, sib)
		c = binary.LittleEndian.AppendUint32(c, uint32(d.Offset+disp))
	}
	const sibAbs, sibRCX8 = 0x25, 0xcd // [disp32], [disp32+rcx*8]
	// Short forward branches, their rel8 filled in at their target.
	var toPush, toDone []int
	branch := func(op byte, to *[]int) {
		c = append(c, op, 0)
		*to = append(*to, len(c)-1)
	}
	land := func(from []int) {
		for _, at := range from {
			c[at] = byte(len(c) - (at + 1))
		}
	}
	var rb []Rollback
	var restore []SavedReg
	mark := func() { rb = append(rb, Rollback{From: len(c), Restore: append([]SavedReg(nil), restore...)}) }
	mark()
	gs([]byte{0x48, 0x89}, 0x0c, sibAbs, DepthSave) // mov %rcx,%gs:D
	restore = append(restore, SavedReg{Reg: amd64RCX, Offset: d.Offset + DepthSave})
	mark()
	// compare is cmp stack[n-1] with the key: rsp, or rax in the Go form.
	compare := func() {
		if d.GoABI {
			gs([]byte{0x48, 0x3b}, 0x04, sibRCX8, DepthStack-8) // cmp stack[n-1],%rax: rax - stored
		} else {
			gs([]byte{0x48, 0x3b}, 0x24, sibRCX8, DepthStack-8) // cmp stack[n-1],%rsp: rsp - stored
		}
	}
	// live jumps when stack[n-1] is still live: its key shows it above.
	live := byte(0x72) // jb: rsp below the frame's
	if d.GoABI {
		gs([]byte{0x48, 0x89}, 0x04, sibAbs, DepthSave+8) // mov %rax,%gs:D+8
		restore = append(restore, SavedReg{Reg: amd64RAX, Offset: d.Offset + DepthSave + 8})
		mark()
		gs([]byte{0x4c, 0x3b}, 0x34, sibAbs, DepthG) // cmp %gs:D+32,%r14
		var same []int
		branch(0x74, &same)                          // je: the same goroutine
		gs([]byte{0x4c, 0x89}, 0x34, sibAbs, DepthG) // mov %r14,%gs:D+32
		gs([]byte{0x48, 0xc7}, 0x04, sibAbs, DepthCurrent)
		c = append(c, 0, 0, 0, 0) // movq $0,%gs:D+16: a new shadow stack
		land(same)
		c = append(c, 0x49, 0x8b, 0x46, 0x08) // mov 8(%r14),%rax
		c = append(c, 0x48, 0x29, 0xe0)       // sub %rsp,%rax
		live = 0x77                           // ja: deeper than the frame
	}
	gs([]byte{0x48, 0x8b}, 0x0c, sibAbs, DepthCurrent) // mov %gs:D+16,%rcx
	c = append(c, 0x48, 0x85, 0xc9)                    // test %rcx,%rcx
	branch(0x74, &toPush)                              // jz push
	compare()
	branch(0x74, &toDone) // je done: a sibling call
	loop := len(c)
	branch(live, &toPush)           // j(b|a) push: live
	c = append(c, 0x48, 0xff, 0xc9) // dec %rcx
	branch(0x74, &toPush)           // jz push
	compare()
	c = append(c, 0xeb, byte(int8(loop-(len(c)+2)))) // jmp 1b
	land(toPush)
	c = append(c, 0x48, 0x81, 0xf9) // cmp $slots,%rcx
	c = binary.LittleEndian.AppendUint32(c, uint32(d.Slots))
	branch(0x73, &toDone) // jae done
	if d.GoABI {
		gs([]byte{0x48, 0x89}, 0x04, sibRCX8, DepthStack) // mov %rax,stack[n]
	} else {
		gs([]byte{0x48, 0x89}, 0x24, sibRCX8, DepthStack) // mov %rsp,stack[n]
	}
	c = append(c, 0x48, 0xff, 0xc1)                    // inc %rcx
	gs([]byte{0x48, 0x89}, 0x0c, sibAbs, DepthCurrent) // mov %rcx,%gs:D+16
	gs([]byte{0x48, 0x3b}, 0x0c, sibAbs, DepthMax)     // cmp %gs:D+24,%rcx
	branch(0x76, &toDone)                              // jbe done
	gs([]byte{0x48, 0x89}, 0x0c, sibAbs, DepthMax)     // mov %rcx,%gs:D+24
	land(toDone)
	if d.GoABI {
		gs([]byte{0x48, 0x8b}, 0x04, sibAbs, DepthSave+8) // mov %gs:D+8,%rax
	}
	gs([]byte{0x48, 0x8b}, 0x0c, sibAbs, DepthSave) // mov %gs:D,%rcx
	for i := range rb {
		if i+1 < len(rb) {
			rb[i].To = rb[i+1].From
		} else {
			rb[i].To = len(c)
		}
	}
	return DepthCode{Code: c, Rollback: rb}, true
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

// PlanExits plans the patch of each exit: the smallest window of whole
// instructions ending with it, starting at most four instructions before
// it (pop, leave, add to rsp...: an epilogue), extended where still too
// short over the padding after it, nops and traps up to the next
// function, which nothing runs. A ret is one byte: pop %rbp; ret and
// three bytes of padding, or add $8,%rsp; pop %rbx; pop %rbp; ret, make
// room for jmp rel32 (with short, 2 bytes for jmp rel8: repz ret, or pop
// %rbx; ret). In a function with an indirect jump, which may be a jump
// table's, the window starts at the exit: a table's target cannot be seen,
// and one on the exit lands on the jump. The function is decoded once.
func (a amd64) PlanExits(fn []byte, start, end uint64, short bool) ([]ExitPlan, error) {
	jumpLen := amd64JumpLen
	if short {
		jumpLen = amd64ShortLen
	}
	if end < start || end-start > uint64(len(fn)) {
		return nil, fmt.Errorf("function [%#x, %#x) longer than its %d bytes of code", start, end, len(fn))
	}
	var insts []x86Inst
	var pcs []uint64
	var plain []Inst
	for pc := start; pc < end; {
		x, err := decodeAMD64Bare(fn[pc-start:end-start], pc)
		if err != nil {
			return nil, err
		}
		if x.Len <= 0 {
			return nil, decodeError(a, fn[pc-start:], pc, ErrTruncated) // never: a guard against a loop
		}
		insts, pcs, plain = append(insts, x), append(pcs, pc), append(plain, x.Inst)
		pc += uint64(x.Len)
	}
	targets := codeTargets(plain, start, end)
	// A jump through a register or memory may be a jump table's, whose
	// targets decoding does not see: in a function that has one, an
	// exit's window starts at the exit (a target there lands on the
	// jump), not on the epilogue before it.
	indirect := slices.ContainsFunc(plain, func(in Inst) bool { return in.Kind == Jump && in.Target == 0 })
	var plans []ExitPlan
	for e, x := range insts {
		exit := Exit{PC: pcs[e], Len: x.Len, Kind: x.Kind}
		switch {
		case x.Kind == Ret:
		case x.Kind == Jump && x.Target == 0:
			exit.Indirect = true
			plans = append(plans, ExitPlan{Exit: exit, Err: fmt.Errorf("%s at %#x: %w: %w", x.text(pcs[e]), pcs[e], errIndirect, ErrNotRelocatable)})
			continue
		case x.Kind == Jump && (x.Target < start || x.Target >= end):
		default:
			continue
		}
		p, err := a.planExit(fn, start, insts, pcs, targets, e, jumpLen, indirect)
		p.Short = short && err == nil
		plans = append(plans, ExitPlan{Exit: exit, Patch: p, Err: err})
	}
	return plans, nil
}

// planExit plans the window of exit insts[e] (see PlanExits).
func (a amd64) planExit(fn []byte, start uint64, insts []x86Inst, pcs []uint64, targets map[uint64]bool, e, jumpLen int, exitOnly bool) (Patch, error) {
	exit := pcs[e]
	if err := insts[e].relocatable(); err != nil {
		return Patch{}, fmt.Errorf("%s at %#x: %w", insts[e].text(exit), exit, err)
	}
	exitEnd := exit + uint64(insts[e].Len)
	// The ends of the padding's instructions after the exit, as far as a
	// jump could need them.
	var padEnds []uint64
	for at := exitEnd; at-exitEnd < uint64(jumpLen) && at < start+uint64(len(fn)) && !targets[at]; {
		x, err := decodeAMD64Bare(fn[at-start:], at)
		if err != nil || x.Len <= 0 || (x.Kind != Nop && x.Kind != Trap) {
			break
		}
		at += uint64(x.Len)
		padEnds = append(padEnds, at)
	}
	last := fmt.Errorf("the exit at %#x and what precedes it: %w", exit, ErrTooShort)
	for first := e; first >= 0 && first >= e-4; first-- {
		if first < e {
			x := insts[first]
			if exitOnly {
				last = fmt.Errorf("%s at %#x, in a function with an indirect jump, might be a jump table's target: %w", insts[e].text(exit), exit, ErrBranchInto)
				break
			}
			if x.Kind != Other && x.Kind != Nop {
				break // the epilogue starts after a branch, a call or a return
			}
			if err := x.relocatable(); err != nil {
				last = fmt.Errorf("%s at %#x: %w", x.text(pcs[first]), pcs[first], err)
				break
			}
			if targets[pcs[first+1]] {
				// A branch lands inside any window starting here or before.
				last = fmt.Errorf("a branch to %#x, inside the exit's window from %#x: %w", pcs[first+1], pcs[first], ErrBranchInto)
				break
			}
		}
		// The window: from site to the exit's end, and on over whole
		// instructions of padding until a jump fits.
		site, hi := pcs[first], exitEnd
		for _, end := range padEnds {
			if hi-site >= uint64(jumpLen) {
				break
			}
			hi = end
		}
		if hi-site < uint64(jumpLen) {
			last = fmt.Errorf("%d bytes from %#x to the exit's end and its padding: %w", hi-site, site, ErrTooShort)
			continue
		}
		p := Patch{Site: site, Orig: append([]byte(nil), fn[site-start:hi-start]...)}
		for _, x := range insts[first : e+1] {
			p.Insts = append(p.Insts, x.Inst)
		}
		return p, nil
	}
	return Patch{}, last
}
