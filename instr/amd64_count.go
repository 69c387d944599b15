package instr

import (
	"encoding/binary"

	"golang.org/x/arch/x86/x86asm"
)

// The counting code of amd64's trampolines: an entry's count, a line site's
// count that keeps the flags, and FlagsDead, which tells where the flags are
// dead and a line's count may be one incq.

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

// EntryCount returns CountCode's code, of s.Counter: one instruction,
// nothing to roll back.
func (a amd64) EntryCount(kind CountKind, s LineSite) (DepthCode, bool) {
	code := a.CountCode(kind, s.Counter)
	return DepthCode{Code: code}, code != nil
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

// GoRestartEnd returns pc: Go's assembler for x86-64 makes no sequence
// that a preemption starts again (its instructions take any constant).
func (amd64) GoRestartEnd(_ []byte, _, pc uint64) uint64 { return pc }
