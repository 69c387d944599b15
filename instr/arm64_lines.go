package instr

import "encoding/binary"

// goLineCode is LineCode's count of a line site in Go's code, which
// writes nothing on the goroutine's stack: a goroutine's stack may end
// right below the stack pointer (a nosplit function may use all of the
// stack guard), and Go's own frames keep the caller's frame pointer just
// below it. It counts in two registers no Go code keeps a value in at a
// line's first instruction, and writes nothing but the counter:
//
//	MOVZ/MOVK x18, counter        x18, the platform register, which Go
//	                              never uses on Linux (asm_arm64.s: "R18
//	                              is unused"); C treats it as a temporary,
//	                              dead across the calls between C and Go
//	MOVZ x27, #1                  x27, REGTMP: the Go assembler's
//	                              temporary within the expansion of one
//	                              instruction, never allocated, so dead
//	                              where a line starts
//	STADD x27, [x18]
//
// Without LSE (CountInArea) the count is kept in the thread's area, which
// the thread pointer names where PROFILE sets it (ThreadPointer: a Go
// program that has no other use for it), in the same two registers
// (goAreaCount). Go assembly (GoAsm) may keep a value in x27 from one
// instruction to the next: false, as without a thread pointer.
func (arm64) goLineCode(kind CountKind, s LineSite) (DepthCode, bool) {
	if s.Counter%8 != 0 || s.GoAsm {
		return DepthCode{}, false
	}
	var words []uint32
	var rollback []Rollback
	switch {
	case kind == CountShared:
		words = append(a64MovImm(a64X18, s.Counter), a64MovOne(a64X27))
		words = append(words, 0xf8200000|a64X27<<16|a64X18<<5|31) // STADD x27, [x18]
	case kind == CountInArea && s.ThreadPointer && s.inArea():
		var from, to int
		words, from, to = goAreaCount(s)
		if from < to {
			rollback = []Rollback{{From: from, To: to}}
		}
	default:
		return DepthCode{}, false
	}
	code := make([]byte, 0, len(words)*a64InstLen)
	for _, w := range words {
		code = binary.LittleEndian.AppendUint32(code, w)
	}
	return DepthCode{Code: code, Rollback: rollback}, true
}

// goAreaCount is goLineCode's count in the thread's area, whose address
// the thread pointer holds:
//
//	MRS x18, TPIDR_EL0            the thread's area
//	MOVZ/MOVK x27, counter        the counter's offset in it
//	ADD x18, x18, x27
//	LDR x27, [x18]                (for a cover: MOVZ x27, #1)
//	ADD x27, x27, #1
//	STR x27, [x18]
//
// It returns the offsets (in bytes) from the load's next instruction to
// the store's: a thread stopped there, whose handler of a signal could
// count in the same area, starts again from the beginning, which is
// idempotent (a cover's store is the same whenever it comes: none).
func goAreaCount(s LineSite) (words []uint32, from, to int) {
	words = append([]uint32{a64MrsTPIDR | a64X18}, a64MovImm(a64X27, s.Counter)...)
	words = append(words, a64AddReg(a64X18, a64X18, a64X27))
	if s.Cover {
		return append(words, a64MovOne(a64X27), a64Str(a64X27, a64X18, 0)), 0, 0
	}
	words = append(words, a64Ldr(a64X27, a64X18, 0))
	from = len(words) * a64InstLen
	words = append(words, a64AddImm(a64X27, a64X27, 1), a64Str(a64X27, a64X18, 0))
	return words, from, len(words) * a64InstLen
}

// a64MovOne is MOVZ Xd, #1.
func a64MovOne(rd uint32) uint32 { return 0xd2800000 | 1<<5 | rd }
