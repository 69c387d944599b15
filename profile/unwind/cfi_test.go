package unwind

import (
	"bytes"
	"testing"
)

func TestRewriteCFA(t *testing.T) {
	cie := cieRules([]byte{0x0c, 7, 8, 0x90, 1, 0x86, 2}) // CFA rsp+8, r16 at CFA-8, rbp at CFA-16
	for _, tc := range []struct {
		name string
		arch Arch
		in   []byte
		want []byte
	}{
		{"unchanged", AMD64, []byte{0x41, 0x0e, 16, 0x86, 2, 0x0a, 0x0b}, []byte{0x41, 0x0e, 16, 0x86, 2, 0x0a, 0x0b}},
		{"restore-cie-rule", AMD64, []byte{0x41, 0xc6, 0x41}, []byte{0x41, 0x86, 2, 0x41}},
		{"restore-extended", AMD64, []byte{0x06, 16}, []byte{0x90, 1}},
		{"restore-no-rule", AMD64, []byte{0xc3}, []byte{0x08, 3}},
		{"restore-extended-no-rule", ARM64, []byte{0x06, 0x9e, 0x01}, []byte{0x08, 0x9e, 0x01}},
		{"val-offset", AMD64, []byte{0x14, 6, 0x82, 0x01}, []byte{0x15, 6, 0x82, 0x01}},
		{"negate-ra-state", ARM64, []byte{0x41, 0x2d, 0x44, 0x2d}, []byte{0x41, 0x44}},
		{"window-save", AMD64, []byte{0x41, 0x2d, 0x44}, []byte{0x41, opInvalid}},
		{"unknown", AMD64, []byte{0x41, 0x30, 0x44}, []byte{0x41, opInvalid}},
		{"lo-user", AMD64, []byte{0x1c, 0x44}, []byte{opInvalid}},
		{"cut-leb", AMD64, []byte{0x41, 0x05, 0x80}, []byte{0x41, opInvalid}},
		{"cut-block", AMD64, []byte{0x0f, 5, 0x77}, []byte{opInvalid}},
		{"cut-advance", AMD64, []byte{0x04, 1, 2}, []byte{opInvalid}},
		{"long-leb", AMD64, append([]byte{0x0e}, bytes.Repeat([]byte{0x80}, 11)...), []byte{opInvalid}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := rewriteCFA(tc.in, cie, tc.arch)
			if !bytes.Equal(got, tc.want) {
				t.Errorf("rewriteCFA(% x) = % x, want % x", tc.in, got, tc.want)
			}
		})
	}
}

func TestLEB(t *testing.T) {
	for _, v := range []int64{0, 1, 63, 64, -1, -64, -65, 127, 128, 1 << 40, -1 << 40, 1<<63 - 1, -1 << 63} {
		b := appendSLEB(nil, v)
		got, n, ok := sleb(b, 0)
		if !ok || got != v || n != len(b) {
			t.Errorf("sleb %d: % x reads %d, %d bytes, %v", v, b, got, n, ok)
		}
	}
	for _, v := range []uint64{0, 1, 127, 128, 1 << 63} {
		got, n, ok := uleb(appendULEB(nil, v), 0)
		if !ok || got != v || n != len(appendULEB(nil, v)) {
			t.Errorf("uleb %d: %d, %d, %v", v, got, n, ok)
		}
	}
}
