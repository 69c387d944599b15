package instr

import (
	"errors"
	"testing"
)

// seedDecode adds every instruction of a decoder data file to a corpus.
func seedDecode(f *testing.F, name string) {
	for _, c := range readDecodeCases(f, name) {
		f.Add(c.code, uint64(0x1000))
	}
}

// checkDecode holds for any input: an instruction within the input and the
// architecture's limit, or a DecodeError at pc.
func checkDecode(t *testing.T, a Arch, code []byte, pc uint64) {
	in, err := a.Decode(code, pc)
	if err != nil {
		var de *DecodeError
		if !errors.As(err, &de) || de.Addr != pc || !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrUnrecognized) {
			t.Fatalf("% x: error %v is not a DecodeError at %#x", code, err, pc)
		}
		return
	}
	if in.Len < 1 || in.Len > len(code) || in.Len > a.MaxInstLen() {
		t.Fatalf("% x: length %d", code, in.Len)
	}
	if !in.PCRel && in.Target != 0 {
		t.Fatalf("% x: target %#x without PCRel", code, in.Target)
	}
	// Decoding depends only on the instruction's own bytes.
	again, err := a.Decode(code[:in.Len], pc)
	if err != nil || again != in {
		t.Fatalf("% x: decoding the %d bytes alone gives %+v, %v; want %+v", code, in.Len, again, err, in)
	}
}

func FuzzDecodeAMD64(f *testing.F) {
	seedDecode(f, "amd64.txt")
	f.Fuzz(func(t *testing.T, code []byte, pc uint64) { checkDecode(t, AMD64, code, pc) })
}

func FuzzDecodeARM64(f *testing.F) {
	seedDecode(f, "arm64.txt")
	f.Fuzz(func(t *testing.T, code []byte, pc uint64) { checkDecode(t, ARM64, code, pc) })
}

// FuzzDisplace displaces any bytes at any addresses on either
// architecture and runs what it gets on random registers and a memory that
// reads zeros: nothing panics, and the result is one of the three ways.
func FuzzDisplace(f *testing.F) {
	for _, name := range []string{"amd64.txt", "arm64.txt"} {
		arm := name == "arm64.txt"
		for _, c := range readDecodeCases(f, name) {
			f.Add(arm, c.code, uint64(0x401000), uint64(0x500000), uint64(0x7ffe0000))
		}
	}
	f.Fuzz(func(t *testing.T, arm bool, code []byte, pc, slot, seed uint64) {
		a := AMD64
		if arm {
			a = ARM64
		}
		d, err := a.Displace(code, pc, slot)
		if err != nil {
			return
		}
		switch {
		case d.Emulate != nil && d.Slot != nil:
			t.Fatalf("% x: both emulation and slot", code)
		case d.Emulate == nil && d.Slot == nil:
			t.Fatalf("% x: neither emulation nor slot", code)
		case len(d.Slot) > a.SlotSize():
			t.Fatalf("% x: slot of %d bytes", code, len(d.Slot))
		case d.SingleStep != (d.AfterStep != nil):
			t.Fatalf("% x: SingleStep %v with AfterStep %v", code, d.SingleStep, d.AfterStep != nil)
		case d.Inst.Len == 0:
			t.Fatalf("% x: no instruction", code)
		}
		r := &fakeRegs{pc: pc, flags: seed}
		for i := range r.r {
			r.r[i] = seed * uint64(i+1)
		}
		mem := &fakeMem{b: map[uint64]byte{}, lenient: true}
		if d.Emulate != nil {
			if err := d.Emulate(r, mem); err != nil {
				t.Fatalf("% x: emulation on readable memory: %v", code, err)
			}
		}
		if d.AfterStep != nil {
			if err := d.AfterStep(r, mem); err != nil {
				t.Fatalf("% x: AfterStep on readable memory: %v", code, err)
			}
		}
	})
}
