package instr

import (
	"encoding/binary"
	"testing"
)

// TestGoRestartEnd: a line of Go's code on arm64 that begins with an
// expansion in x27 (the assembler's restartable sequences) has its count
// after the expansion, and after any that follows at once; a line that
// begins otherwise, or whose expansion is not seen to end, keeps pc. The
// words are from Go's own main.main (golines, GOARCH=arm64).
func TestGoRestartEnd(t *testing.T) {
	const (
		adrpX27  = 0xf000079b // adrp x27, ...
		addX27   = 0x912b437b // add x27, x27, #0xad0
		ldpX27   = 0xa9400b61 // ldp x1, x2, [x27]
		cmpX2    = 0xf100045f // cmp x2, #1
		ble      = 0x540000cd // b.le
		movzX27  = 0xd2800c1b // mov x27, #0x60
		ldrIdx   = 0xf87b6820 // ldr x0, [x1, x27]
		movX27X1 = 0xaa0103fb // mov x27, x1
		strX0    = 0xf9000020 // str x0, [x1]
	)
	const start = 0xa7630
	for _, c := range []struct {
		name  string
		words []uint32
		want  uint64 // instructions from pc
	}{
		{"adrp, add, ldp: after the ldp", []uint32{adrpX27, addX27, ldpX27, cmpX2, ble}, 3},
		{"two expansions at once: after both", []uint32{adrpX27, addX27, ldpX27, movzX27, ldrIdx, cmpX2}, 5},
		{"no x27: pc", []uint32{cmpX2, ble}, 0},
		{"a move into x27 that nothing reads: pc", []uint32{movX27X1, strX0, cmpX2}, 0},
		{"an expansion to the end of the code: pc", []uint32{adrpX27, addX27, ldpX27}, 0},
		{"a use of x27 first: pc", []uint32{ldpX27, cmpX2}, 0},
	} {
		text := make([]byte, 4) // (a word before pc)
		for _, w := range c.words {
			text = binary.LittleEndian.AppendUint32(text, w)
		}
		if got := ARM64.GoRestartEnd(text, start-4, start); got != start+4*c.want {
			t.Errorf("%s: %#x, want %#x", c.name, got, start+4*c.want)
		}
	}
	if got := AMD64.GoRestartEnd([]byte{0x90}, 0x1000, 0x1000); got != 0x1000 {
		t.Errorf("amd64: %#x, want pc", got)
	}
}
