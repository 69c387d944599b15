package instr

import (
	"encoding/binary"
	"strings"

	"golang.org/x/arch/arm64/arm64asm"
)

// Go's restartable sequences. Where one instruction of Go's assembly
// needs a constant or an offset no arm64 instruction holds, the
// assembler expands it into a few, with the constant built in REGTMP,
// x27 (adrp x27, sym; add x27, x27, #lo; ldp x1, x2, [x27]), and marks
// the expansion restartable (cmd/internal/obj/arm64, isRestartable): a
// goroutine that Go's asynchronous preemption stops inside it resumes at
// its first instruction, since asyncPreempt returns through x27
// (runtime.preempt_arm64.s) and the constant must be built again. A line
// that begins with such a sequence runs its first instruction twice when
// a preemption lands there, and a count on it would count the line twice:
// its count belongs after the sequence, which the line always runs on to.

// goRestartMax is how many instructions, at most, an expansion holds
// (a 64-bit constant: movz and three movk, then its use).
const goRestartMax = 8

// a64RestartStarts are the instructions that begin an expansion in x27.
var a64RestartStarts = map[arm64asm.Op]bool{
	arm64asm.ADRP: true, arm64asm.ADR: true, arm64asm.MOVZ: true, arm64asm.MOVN: true,
	arm64asm.MOV: true, arm64asm.ORR: true, arm64asm.ADD: true, arm64asm.SUB: true, arm64asm.LDR: true,
}

// GoRestartEnd returns, where the instruction at pc begins an expansion
// in x27, the address after the expansion and any that follows at once
// (a preemption there would start that one again, at its first
// instruction); else pc. An expansion is its first instruction and those
// after it that name x27 and begin none; one longer than goRestartMax,
// or cut by the end of text, is not known to have ended: pc, or the end
// of the expansions before it.
func (arm64) GoRestartEnd(text []byte, start, pc uint64) uint64 {
	end := pc
	for {
		in, ok := a64DecodeAt(text, start, end)
		if !ok || !a64StartsRestart(in) {
			return end
		}
		x, n := end+a64InstLen, 1
		for ; n <= goRestartMax; n++ {
			in, ok := a64DecodeAt(text, start, x)
			if !ok {
				return end
			}
			if !a64UsesRegTmp(in) || a64StartsRestart(in) {
				break
			}
			x += a64InstLen
		}
		if n == 1 || n > goRestartMax {
			// (One instruction alone is no expansion.)
			return end
		}
		end = x
	}
}

// a64DecodeAt decodes the instruction at pc of text (at start).
func a64DecodeAt(text []byte, start, pc uint64) (arm64asm.Inst, bool) {
	off := pc - start
	if pc < start || off+a64InstLen > uint64(len(text)) {
		return arm64asm.Inst{}, false
	}
	in, err := a64Decode(text[off : off+a64InstLen])
	return in, err == nil && binary.LittleEndian.Uint32(text[off:]) != 0
}

// a64StartsRestart reports whether in writes x27 from nothing but
// constants and other registers: the first of an expansion.
func a64StartsRestart(in arm64asm.Inst) bool {
	if !a64RestartStarts[in.Op] || in.Args[0] == nil || !a64IsRegTmp(in.Args[0].String()) {
		return false
	}
	for _, a := range in.Args[1:] {
		if a != nil && a64IsRegTmp(a.String()) {
			return false
		}
	}
	return true
}

// a64UsesRegTmp reports whether any operand of in names x27 or w27.
func a64UsesRegTmp(in arm64asm.Inst) bool {
	for _, a := range in.Args {
		if a != nil && a64IsRegTmp(a.String()) {
			return true
		}
	}
	return false
}

// a64IsRegTmp reports whether an operand's text names x27 or w27 (as a
// register, a base or an index).
func a64IsRegTmp(text string) bool {
	for _, f := range strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == '[' || r == ']' || r == ' ' || r == '!' }) {
		if f == "X27" || f == "W27" {
			return true
		}
	}
	return false
}
