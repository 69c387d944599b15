package unwind_test

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/sourceprofiler/sprof/profile/unwind"
)

// Hand-made .debug_frame sections: one CIE (code alignment 1, data
// alignment -8, return address column 16: x86-64's) and FDEs, each rule
// of the unwinder on a small stack whose every word is known.

// fdeSpec is one FDE: the addresses [lo, lo+size) and its CFA program.
type fdeSpec struct {
	lo, size uint64
	prog     []byte
}

// debugFrame builds a .debug_frame section (DWARF 5, 6.4.1; 32-bit
// format) of a CIE with the initial instructions cie and the FDEs.
func debugFrame(cie []byte, fdes ...fdeSpec) []byte {
	// CIE id, version 1, "", caf 1, daf -8, ra 16
	return frameSection([]byte{0xff, 0xff, 0xff, 0xff, 1, 0, 1, 0x78, 16}, cie, fdes...)
}

// debugFrame4 is [debugFrame] with a CIE of version 4 (DWARF 4 and 5, as
// clang writes it): an address size and a segment selector size after
// the augmentation.
func debugFrame4(segSize byte, cie []byte, fdes ...fdeSpec) []byte {
	return frameSection([]byte{0xff, 0xff, 0xff, 0xff, 4, 0, 8, segSize, 1, 0x78, 16}, cie, fdes...)
}

// frameSection builds a .debug_frame section of a CIE (its fields up to
// its initial instructions in header) and the FDEs.
func frameSection(header, cie []byte, fdes ...fdeSpec) []byte {
	entry := func(out, body []byte) []byte {
		for len(body)%8 != 4 { // pad to the address size with DW_CFA_nop
			body = append(body, 0)
		}
		out = binary.LittleEndian.AppendUint32(out, uint32(len(body)))
		return append(out, body...)
	}
	out := entry(nil, append(slices.Clone(header), cie...))
	for _, f := range fdes {
		b := binary.LittleEndian.AppendUint32(nil, 0) // the CIE at offset 0
		b = binary.LittleEndian.AppendUint64(b, f.lo)
		b = binary.LittleEndian.AppendUint64(b, f.size)
		out = entry(out, append(b, f.prog...))
	}
	return out
}

// x86-64's CIE: CFA = rsp+8, return address at CFA-8.
var cieAMD64 = []byte{0x0c, 7, 8, 0x80 | 16, 1}

// restoreProg: advance 1, CFA = rsp+16, return address at CFA-16;
// advance 1, DW_CFA_restore_extended of the return address column.
var restoreProg = []byte{0x41, 0x0e, 16, 0x05, 16, 2, 0x41, 0x06, 16}

const (
	synthSP    = 0x7000
	synthOuter = 0x9999 // a return address no FDE covers
)

// synthStack returns a stack copy of n words at synthSP, each the marker
// 0x7777 but those given.
func synthStack(n int, words map[int]uint64) unwind.Stack {
	data := make([]byte, 8*n)
	for i := range n {
		v, ok := words[i]
		if !ok {
			v = 0x7777
		}
		binary.LittleEndian.PutUint64(data[8*i:], v)
	}
	return unwind.Stack{Addr: synthSP, Data: data}
}

func TestUnwindRules(t *testing.T) {
	caller := fdeSpec{0x2000, 0x100, []byte{0x0c, 6, 32}} // CFA = rbp+32, return address at CFA-8
	for _, tc := range []struct {
		name  string
		fdes  []fdeSpec
		regs  unwind.Regs
		words map[int]uint64
		want  []uint64
		stop  unwind.Stop
	}{
		{"cie", []fdeSpec{{0x1000, 0x100, nil}}, unwind.Regs{PC: 0x1010},
			map[int]uint64{0: synthOuter}, []uint64{0x1010, synthOuter}, unwind.StopNoFDE},
		// DW_CFA_restore_extended sets the CIE's rule again (delve makes
		// it undefined: an end of the stack). From 0x1001 the CFA is
		// rsp+16 and the return address at CFA-16; from 0x1002, at
		// CFA-8 again.
		{"restore", []fdeSpec{{0x1000, 0x100, restoreProg}}, unwind.Regs{PC: 0x1003},
			map[int]uint64{0: 0x1234, 1: synthOuter}, []uint64{0x1003, synthOuter}, unwind.StopNoFDE},
		{"restore-before", []fdeSpec{{0x1000, 0x100, restoreProg}}, unwind.Regs{PC: 0x1001},
			map[int]uint64{0: synthOuter, 1: 0x1234}, []uint64{0x1001, synthOuter}, unwind.StopNoFDE},
		// DW_CFA_val_offset rbp, 2: the caller's rbp is CFA-16 (delve
		// forgets the data alignment factor); the caller's CFA is rbp+32.
		{"val-offset", []fdeSpec{{0x1000, 0x100, []byte{0x14, 6, 2}}, caller}, unwind.Regs{PC: 0x1000},
			map[int]uint64{0: 0x2001, 2: 0}, []uint64{0x1000, 0x2001}, unwind.StopEnd},
		{"undefined-ra", []fdeSpec{{0x1000, 0x100, []byte{0x07, 16}}}, unwind.Regs{PC: 0x1000},
			nil, []uint64{0x1000}, unwind.StopEnd},
		{"zero-ra", []fdeSpec{{0x1000, 0x100, nil}}, unwind.Regs{PC: 0x1000},
			map[int]uint64{0: 0}, []uint64{0x1000}, unwind.StopEnd},
		{"pc-zero", nil, unwind.Regs{PC: 0}, nil, []uint64{0}, unwind.StopEnd},
		{"no-fde", []fdeSpec{{0x1000, 0x100, nil}}, unwind.Regs{PC: 0x5000}, nil, []uint64{0x5000}, unwind.StopNoFDE},
		{"not-growing", []fdeSpec{{0x1000, 0x100, []byte{0x12, 7, 1}}}, unwind.Regs{PC: 0x1000}, // CFA = rsp-8
			map[int]uint64{0: synthOuter}, []uint64{0x1000}, unwind.StopNotGrowing},
		{"outside", []fdeSpec{{0x1000, 0x100, []byte{0x0e, 64}}}, unwind.Regs{PC: 0x1000}, // RA at rsp+56
			nil, []uint64{0x1000}, unwind.StopOutsideStack},
		// An epilogue: rbx popped, its rule still "at CFA-24", below the
		// stack pointer and the copy (gcc writes no DW_CFA_restore for a
		// pop). The caller's rbx is unknown, not a stop: the walk goes
		// on, and stops only where a rule needs it (the caller's CFA is
		// rbx+8).
		{"saved-below-sp", []fdeSpec{{0x1000, 0x100, []byte{0x0e, 16, 0x83, 3}}}, unwind.Regs{PC: 0x1000},
			map[int]uint64{1: synthOuter}, []uint64{0x1000, synthOuter}, unwind.StopNoFDE},
		{"saved-below-sp-needed", []fdeSpec{{0x1000, 0x100, []byte{0x0e, 16, 0x83, 3}}, {0x2000, 0x100, []byte{0x0c, 3, 8}}}, unwind.Regs{PC: 0x1000},
			map[int]uint64{1: 0x2001}, []uint64{0x1000, 0x2001}, unwind.StopRegister},
		{"register-unknown", []fdeSpec{{0x1000, 0x100, []byte{0x0c, 3, 8}}}, unwind.Regs{PC: 0x1000}, // CFA = rbx+8
			nil, []uint64{0x1000}, unwind.StopRegister},
		{"cfa-expression", []fdeSpec{{0x1000, 0x100, []byte{0x0f, 2, 0x77, 16}}}, unwind.Regs{PC: 0x1000}, // CFA = rsp+16
			map[int]uint64{1: synthOuter}, []uint64{0x1000, synthOuter}, unwind.StopNoFDE},
		{"cfa-deref", []fdeSpec{{0x1000, 0x100, []byte{0x0f, 3, 0x77, 0, 0x06}}}, unwind.Regs{PC: 0x1000}, // CFA = [rsp]
			map[int]uint64{0: synthSP + 24, 2: synthOuter}, []uint64{0x1000, synthOuter}, unwind.StopNoFDE},
		{"deref-outside", []fdeSpec{{0x1000, 0x100, []byte{0x0f, 3, 0x77, 0x38, 0x06}}}, unwind.Regs{PC: 0x1000}, // CFA = [rsp+56]
			nil, []uint64{0x1000}, unwind.StopOutsideStack},
		{"cfa-below-sp", []fdeSpec{{0x1000, 0x100, []byte{0x0f, 3, 0x77, 0, 0x06}}}, unwind.Regs{PC: 0x1000}, // CFA = [rsp]
			map[int]uint64{0: 0x100}, []uint64{0x1000}, unwind.StopNotGrowing},
		{"ra-expression", []fdeSpec{{0x1000, 0x100, []byte{0x10, 16, 2, 0x77, 8}}}, unwind.Regs{PC: 0x1000}, // RA at rsp+8
			map[int]uint64{1: synthOuter}, []uint64{0x1000, synthOuter}, unwind.StopNoFDE},
		{"ra-val-expression", []fdeSpec{{0x1000, 0x100, []byte{0x16, 16, 3, 0x23, 0x99, 0x01}}}, unwind.Regs{PC: 0x1000}, // RA = CFA+0x99
			nil, []uint64{0x1000, synthSP + 8 + 0x99}, unwind.StopNoFDE},
		{"expression-piece", []fdeSpec{{0x1000, 0x100, []byte{0x0f, 1, 0x53}}}, unwind.Regs{PC: 0x1000}, // CFA in rbx: a location
			nil, []uint64{0x1000}, unwind.StopUnsupported},
		{"expression-unknown-op", []fdeSpec{{0x1000, 0x100, []byte{0x0f, 1, 0xe0}}}, unwind.Regs{PC: 0x1000},
			nil, []uint64{0x1000}, unwind.StopUnsupported},
		{"window-save", []fdeSpec{{0x1000, 0x100, []byte{0x2d}}}, unwind.Regs{PC: 0x1000}, nil, []uint64{0x1000}, unwind.StopBadCFI},
		{"cut-short", []fdeSpec{{0x1000, 0x100, []byte{0x41, 0x0f, 0x7f}}}, unwind.Regs{PC: 0x1008}, nil, []uint64{0x1008}, unwind.StopBadCFI},
		{"rows-before-bad", []fdeSpec{{0x1000, 0x100, []byte{0x48, 0x0f, 0x7f}}}, unwind.Regs{PC: 0x1001},
			map[int]uint64{0: synthOuter}, []uint64{0x1001, synthOuter}, unwind.StopNoFDE},
		{"restore-state-empty", []fdeSpec{{0x1000, 0x100, []byte{0x0b}}}, unwind.Regs{PC: 0x1000}, nil, []uint64{0x1000}, unwind.StopBadCFI},
		{"bad-arch", nil, unwind.Regs{Arch: 9, PC: 0x1000}, nil, nil, unwind.StopBadRegs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := unwind.Parse([]unwind.Section{{Data: debugFrame(cieAMD64, tc.fdes...)}}, 0, unwind.AMD64)
			if err != nil {
				t.Fatal(err)
			}
			regs := tc.regs
			if regs.Arch == 0 {
				regs.Arch = unwind.AMD64
			}
			regs.SP, regs.FP = synthSP, 0x6000
			pcs, stop := unwind.Unwind(regs, synthStack(4, tc.words), func(uint64) *unwind.Module { return m }, 8)
			if !slices.Equal(pcs, tc.want) || stop != tc.stop {
				t.Errorf("frames %x, %v; want %x, %v", pcs, stop, tc.want, tc.stop)
			}
		})
	}
}

// TestVersion4 unwinds through a .debug_frame CIE of version 4, whose
// fields delve misreads and Parse mends; one with a segment selector is
// dropped.
func TestVersion4(t *testing.T) {
	stack := synthStack(4, map[int]uint64{0: 0x1234, 1: synthOuter})
	regs := unwind.Regs{Arch: unwind.AMD64, PC: 0x1003, SP: synthSP}
	for _, tc := range []struct {
		seg  byte
		want []uint64
		stop unwind.Stop
	}{
		{0, []uint64{0x1003, synthOuter}, unwind.StopNoFDE},
		{1, []uint64{0x1003}, unwind.StopNoFDE},
	} {
		m, err := unwind.Parse([]unwind.Section{{Data: debugFrame4(tc.seg, cieAMD64, fdeSpec{0x1000, 0x100, restoreProg})}}, 0, unwind.AMD64)
		if err != nil {
			t.Fatal(err)
		}
		pcs, stop := unwind.Unwind(regs, stack, func(uint64) *unwind.Module { return m }, 8)
		if !slices.Equal(pcs, tc.want) || stop != tc.stop {
			t.Errorf("segment selector size %d: frames %x, %v; want %x, %v", tc.seg, pcs, stop, tc.want, tc.stop)
		}
	}
}

// TestLinkRegisterLost: on arm64 a leaf returns through x30 to a caller
// whose CFI says its own return address is still in x30 (a call that
// never returns, made without saving it). The call overwrote x30: the
// walk stops there rather than give the leaf's return address again.
func TestLinkRegisterLost(t *testing.T) {
	header := []byte{0xff, 0xff, 0xff, 0xff, 1, 0, 4, 0x78, 30} // caf 4, daf -8, ra x30
	cfi := frameSection(header, []byte{0x0c, 31, 0},            // CFA = sp
		fdeSpec{0x1000, 0x100, nil},              // the leaf
		fdeSpec{0x2000, 0x100, []byte{0x0e, 16}}) // CFA = sp+16, x30 unchanged
	m, err := unwind.Parse([]unwind.Section{{Data: cfi}}, 0, unwind.ARM64)
	if err != nil {
		t.Fatal(err)
	}
	regs := unwind.Regs{Arch: unwind.ARM64, PC: 0x1000, SP: synthSP, LR: 0x2010}
	pcs, stop := unwind.Unwind(regs, synthStack(4, nil), func(uint64) *unwind.Module { return m }, 8)
	if !slices.Equal(pcs, []uint64{0x1000, 0x2010}) || stop != unwind.StopRegister {
		t.Errorf("frames %x, %v; want [1000 2010], %v", pcs, stop, unwind.StopRegister)
	}
}
