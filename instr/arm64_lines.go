package instr

import "encoding/binary"

// The count of a line site on arm64: C's, which saves its registers on
// the stack, and Go's, which borrows two registers Go leaves free.

// LineCode returns, for CountShared, the count of a line site: CountCode
// between a push and a pop of x16 and x17, which a body may use as it
// likes (AAPCS64 frees them only at calls):
//
//	stp x16, x17, [sp, #-16]!     a9bf47f0 (C6.2 "STP", pre-index)
//	CountCode                     MOVZ/MOVK x16; MOVZ x17, #1; STADD
//	ldp x16, x17, [sp], #16       a8c147f0 ("LDP", post-index)
//
// The stack pointer moves before anything is written below it, so a
// signal frame lands below the saved pair, and Linux arm64 has no red
// zone for the push to spoil; the flags are not changed. Coverage counts
// the same way (any count is a cover). Nothing to roll back: the code
// keeps nothing in memory a signal handler's own count could change. It
// is not fit for Go code (GoStack): a goroutine's stack may end right
// below the stack pointer (a nosplit function may use all of the stack
// guard), and Go's own frames keep the caller's frame pointer just below
// it. Go's code counts in two registers no Go code keeps a value in at a
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
// Go assembly (GoAsm) may keep a value in x27 from one instruction to
// the next: false.
func (a arm64) LineCode(kind CountKind, s LineSite) (DepthCode, bool) {
	if s.GoStack {
		return a.goLineCode(kind, s)
	}
	count := a.CountCode(kind, s.Counter)
	if count == nil || s.Counter%8 != 0 {
		return DepthCode{}, false
	}
	c := binary.LittleEndian.AppendUint32(nil, 0xa9bf47f0)
	at := len(c)
	c = append(c, count...)
	return DepthCode{Code: binary.LittleEndian.AppendUint32(c, 0xa8c147f0), Count: at}, true
}

// goLineCode is LineCode's count of a line site in Go code.
func (arm64) goLineCode(kind CountKind, s LineSite) (DepthCode, bool) {
	if kind != CountShared || s.Counter%8 != 0 || s.GoAsm {
		return DepthCode{}, false
	}
	words := append(a64MovImm(a64X18, s.Counter), 0xd2800000|1<<5|a64X27)
	words = append(words, 0xf8200000|a64X27<<16|a64X18<<5|31)
	code := make([]byte, 0, len(words)*a64InstLen)
	for _, w := range words {
		code = binary.LittleEndian.AppendUint32(code, w)
	}
	return DepthCode{Code: code}, true
}
