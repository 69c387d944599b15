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
// Go assembly (GoAsm) may keep a value in x27 from one instruction to
// the next, and without LSE (CountInArea) the count needs a third
// register: false.
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
