package instr

import (
	"errors"
	"slices"
	"testing"
)

// TestMapCodeAMD64 decodes a module of three functions the way the
// tracer does before it plants: g, h, which jumps into g's second
// instruction (an alternate entry, as hand-written assembly has), the
// padding after h, and k, which calls g. Where the jump lands is a
// landing; an instruction's first byte is a boundary, its other bytes
// are not, whichever function's extent holds them; a function whose
// code does not decode to its end, or runs past it, is not decoded.
func TestMapCodeAMD64(t *testing.T) {
	code := unhex(t, "89f8"+"83c001"+"c3"+ // g: mov %edi,%eax; add $1,%eax; ret
		"89f8"+"ebf8"+ // h: mov %edi,%eax; jmp g+2
		"660f1f440000"+ // padding: nopw 0(%rax,%rax,1)
		"e8ebffffff"+"c3"+ // k: call g; ret
		"06"+"c3") // bad: an opcode invalid in 64-bit mode
	const g, h, pad, k, bad = 0x1000, 0x1006, 0x100a, 0x1010, 0x1016
	funcs := [][2]uint64{{g, h}, {h, pad}, {k, bad}, {bad, bad + 2}, {g, g + 4}, {g + 1, h}}
	m := MapCode(AMD64, code, g, funcs)
	if !slices.Equal(m.Jumps, []uint64{g + 2}) {
		t.Errorf("jumps %#x, want g+2", m.Jumps)
	}
	if rs := m.Returns[g]; !slices.Equal(rs, []uint64{k + 5}) {
		t.Errorf("returns of g %#x, want k+5", rs)
	}
	for _, c := range []struct {
		addr uint64
		ok   bool
	}{
		{g, true}, {g + 1, false}, {g + 2, true}, {g + 3, false}, {g + 5, true},
		{h, true}, {h + 2, true}, {h + 3, false},
		{pad, true}, {pad + 2, false}, // the padding: decoded linearly
		{k, true}, {k + 1, false}, {k + 5, true},
		{0xfff, false}, {bad + 2, false}, // not in the code
	} {
		err := m.Boundary(c.addr)
		if (err == nil) != c.ok || err != nil && !errors.Is(err, ErrNotBoundary) {
			t.Errorf("Boundary(%#x) = %v, want ok %v", c.addr, err, c.ok)
		}
	}
	for _, c := range []struct {
		f  [2]uint64
		ok bool
	}{
		{[2]uint64{g, h}, true}, {[2]uint64{h, pad}, true}, {[2]uint64{k, bad}, true},
		{[2]uint64{bad, bad + 2}, false}, // undecodable
		{[2]uint64{g, g + 4}, false},     // its last instruction runs past its end
		// Shifted by a byte, it decodes to its end (clc, add, ret), but
		// begins inside g's instruction: Boundary says so.
		{[2]uint64{g + 1, h}, true},
		{[2]uint64{0x2000, 0x2010}, false}, // not in the code
	} {
		if err := m.Decoded(c.f[0], c.f[1]); (err == nil) != c.ok || err != nil && !errors.Is(err, ErrNotDecoded) {
			t.Errorf("Decoded(%#x) = %v, want ok %v", c.f, err, c.ok)
		}
	}
}

// TestMapCodeARM64: the same module on arm64, where h's jump into g
// lands on g's second instruction, and a site is a boundary when it is
// aligned and decodes.
func TestMapCodeARM64(t *testing.T) {
	code := a64Words(
		0x2a0003e1, 0x11000420, 0xd65f03c0, // g: mov w1, w0; add w0, w1, #1; ret
		0x2a0003e1, 0x17fffffd, // h: mov w1, w0; b g+4
		0x97fffffb, 0xd65f03c0, // k: bl g; ret
		0x00000000, // bad: udf #0's encoding, or not an instruction
	)
	const g, h, k, bad = 0x4000, 0x400c, 0x4014, 0x401c
	m := MapCode(ARM64, code, g, [][2]uint64{{g, h}, {h, k}, {k, bad}, {g + 2, h}})
	if !slices.Equal(m.Jumps, []uint64{g + 4}) {
		t.Errorf("jumps %#x, want g+4", m.Jumps)
	}
	if rs := m.Returns[g]; !slices.Equal(rs, []uint64{k + 4}) {
		t.Errorf("returns of g %#x, want k+4", rs)
	}
	_, undecodable := ARM64.Decode(code[bad-g:], bad)
	for _, c := range []struct {
		addr uint64
		ok   bool
	}{
		{g, true}, {g + 2, false}, {g + 4, true}, {h + 4, true}, {k + 6, false},
		{bad, undecodable == nil}, {bad + 4, false},
	} {
		err := m.Boundary(c.addr)
		if (err == nil) != c.ok || err != nil && !errors.Is(err, ErrNotBoundary) {
			t.Errorf("Boundary(%#x) = %v, want ok %v", c.addr, err, c.ok)
		}
	}
	if err := m.Decoded(g, h); err != nil {
		t.Errorf("Decoded(g) = %v", err)
	}
	if err := m.Decoded(g+2, h); !errors.Is(err, ErrNotDecoded) {
		t.Errorf("Decoded of a misaligned extent = %v, want %v", err, ErrNotDecoded)
	}
}

// TestMapCodeShared: the decoding shared among CPUs finds what one CPU
// finds, on a module of 200 copies of TestMapCodeAMD64's functions, each
// with a jump and a call into its neighbour's code.
func TestMapCodeShared(t *testing.T) {
	one := unhex(t, "89f8"+"83c001"+"c3"+"89f8"+"ebf8"+"660f1f440000"+"e8ebffffff"+"c3"+"06"+"c3")
	var code []byte
	var funcs [][2]uint64
	const start = 0x10000
	for i := range 200 {
		at := start + uint64(len(code))
		code = append(code, one...)
		funcs = append(funcs, [2]uint64{at, at + 6}, [2]uint64{at + 6, at + 10}, [2]uint64{at + 16, at + 22}, [2]uint64{at + 22, at + 24})
		if i%7 == 0 {
			funcs = append(funcs, [2]uint64{at + 1, at + 6}) // overlapping
		}
	}
	defer func(n int) { mapShare = n }(mapShare)
	mapShare = 1 << 30
	whole := MapCode(AMD64, code, start, funcs)
	mapShare = 64
	shared := MapCode(AMD64, code, start, funcs)
	if !slices.Equal(whole.begins, shared.begins) || !slices.Equal(whole.inside, shared.inside) {
		t.Error("the bitmaps differ")
	}
	if !slices.Equal(whole.Jumps, shared.Jumps) || len(whole.Jumps) != 200 {
		t.Errorf("jumps: %d shared, %d whole, want 200", len(shared.Jumps), len(whole.Jumps))
	}
	if len(whole.Returns) != 200 || len(shared.Returns) != 200 || len(whole.failed) != len(shared.failed) || len(whole.failed) != 200 {
		t.Errorf("returns %d and %d, failed %d and %d; want 200 each", len(whole.Returns), len(shared.Returns), len(whole.failed), len(shared.failed))
	}
	for target, rs := range whole.Returns {
		if !slices.Equal(rs, shared.Returns[target]) {
			t.Errorf("returns of %#x: %#x shared, %#x whole", target, shared.Returns[target], rs)
		}
	}
}
