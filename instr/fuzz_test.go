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

// FuzzPatch plans every kind of patch over any bytes as a function's code,
// on either architecture, builds the trampoline and the jump, and checks
// what holds for any input: no panic; a patch replaces bytes of the code
// from its site on, which its trampoline maps back; a jump as long as
// what it replaces.
func FuzzPatch(f *testing.F) {
	f.Add([]byte{0x55, 0x48, 0x89, 0xe5, 0x89, 0x7d, 0xfc, 0xc3}, uint64(0x401000), uint8(0), false)
	f.Add([]byte{0x53, 0x48, 0x89, 0xf3, 0x0f, 0xb6, 0x53, 0x08, 0x85, 0xd2, 0x75, 0xf8, 0x5b, 0xc3}, uint64(0x55555555daf0), uint8(0), false)
	f.Add([]byte{0x3f, 0x23, 0x03, 0xd5, 0xfd, 0x7b, 0xbe, 0xa9, 0xc0, 0x03, 0x5f, 0xd6}, uint64(0xaaaaaaaa0754), uint8(0), true)
	f.Fuzz(func(t *testing.T, fn []byte, start uint64, siteOff uint8, onARM64 bool) {
		a := AMD64
		if onARM64 {
			a = ARM64
			start &^= 3
		}
		if len(fn) == 0 || start > 1<<47 {
			return
		}
		site := start + uint64(siteOff)%uint64(len(fn))
		tramp := start - 1<<20
		check := func(kind string, p Patch, err error, to uint64) {
			if err != nil {
				return
			}
			if p.Site < site || p.End() > start+uint64(len(fn))+uint64(len(p.Punned)) || len(p.Orig) == 0 {
				t.Fatalf("%s: patch %#x+%d outside the code [%#x, %#x)", kind, p.Site, len(p.Orig), start, start+uint64(len(fn)))
			}
			tr, err := a.Trampoline(&p, to, a.CountCode(CountPerThread, 8))
			if err != nil {
				return
			}
			if len(tr.PCs) != len(p.Insts) {
				t.Fatalf("%s: %d PCs for %d instructions", kind, len(tr.PCs), len(p.Insts))
			}
			for pc := to; pc < to+uint64(len(tr.Code)); pc++ {
				if o := tr.OrigPC(to, p.End(), pc); o < p.Site || o > p.End() {
					t.Fatalf("%s: trampoline PC %#x maps to %#x, outside the patch", kind, pc, o)
				}
			}
			jump, err := a.PatchJump(&p, to)
			if err == nil && len(jump) != len(p.Orig) {
				t.Fatalf("%s: a jump of %d bytes over %d", kind, len(jump), len(p.Orig))
			}
		}
		p, err := a.PlanPatch(fn, start, site)
		check("patch", p, err, tramp)
		// Exits: the function ends where the exit search says, half way.
		end := start + uint64(len(fn)+1)/2
		exits, err := FindExits(a, fn, start, end)
		if err == nil {
			for _, x := range exits {
				if x.PC < start || x.PC+uint64(x.Len) > end {
					t.Fatalf("exit %+v outside [%#x, %#x)", x, start, end)
				}
			}
		}
		for _, short := range []bool{false, true} {
			plans, err := a.PlanExits(fn, start, end, short)
			if err != nil {
				continue
			}
			if len(plans) != len(exits) {
				t.Fatalf("%d exits planned of %d", len(plans), len(exits))
			}
			for _, plan := range plans {
				x, p := plan.Exit, plan.Patch
				if plan.Err != nil {
					continue
				}
				if p.Site > x.PC || p.End() < x.PC+uint64(x.Len) || p.End() > start+uint64(len(fn)) {
					t.Fatalf("exit patch %#x+%d does not hold the exit %+v", p.Site, len(p.Orig), x)
				}
				if tr, err := ExitTrampoline(a, &p, tramp, []byte{0x90, 0x90, 0x90, 0x90}); err == nil {
					for pc := tramp; pc < tramp+uint64(len(tr.Code)); pc++ {
						if o := tr.OrigPC(tramp, p.End(), pc); o < p.Site || o > x.PC {
							t.Fatalf("exit trampoline PC %#x maps to %#x, outside [%#x, %#x]", pc, o, p.Site, x.PC)
						}
					}
				}
			}
		}
		// A layout's: one instruction, punned over the code after it.
		p, err = a.PlanOwn(fn, start, site)
		if err == nil {
			if lo, _, ok := a.PunWindow(&p, fn[min(p.End()-start, uint64(len(fn))):]); ok {
				p.Punned = fn[p.End()-start : min(p.Site-start+uint64(a.JumpLen()), uint64(len(fn)))]
				check("pun", p, nil, lo)
			}
		}
		code := fn[site-start:]
		StraightTo(a, code, site, site+uint64(siteOff)%16)
		a.FlagsDead(fn, start, site)
		if lc, ok := a.LineCode(CountPerThread, LineSite{Counter: uint64(siteOff) * 8, Save: 0x800, NoFlags: onARM64}); ok {
			for _, r := range lc.Rollback {
				if r.From < 0 || r.To > len(lc.Code) || r.From > r.To || r.Resume < 0 || r.Resume > len(lc.Code) {
					t.Fatalf("line count rollback %+v outside %d bytes", r, len(lc.Code))
				}
			}
		}
		ring := Ring{Offset: uint64(siteOff) * 64, Records: 1 << (siteOff % 16), Table: uint64(start), Areas: uint64(site)}
		if rc, ok := a.RecordCode(ring, uint64(len(fn))); ok {
			if rc.Full <= 0 || rc.Full > len(rc.Code) {
				t.Fatalf("ring-full breakpoint at %d of %d bytes", rc.Full, len(rc.Code))
			}
			if rc.Skip < 0 || rc.Skip+len(rc.Unchecked) > len(rc.Code) || len(rc.Unchecked) == 0 {
				t.Fatalf("unchecked branch %x at %d of %d bytes", rc.Unchecked, rc.Skip, len(rc.Code))
			}
			for _, r := range rc.Rollback {
				if r.From < 0 || r.To > len(rc.Code) || r.From > r.To || r.Resume < 0 || r.Resume > len(rc.Code) {
					t.Fatalf("record rollback %+v outside %d bytes", r, len(rc.Code))
				}
			}
		}
		for _, goABI := range []bool{false, true} {
			if d, ok := a.DepthCode(Depth{Offset: 0x1000, Slots: 64, GoABI: goABI, Table: 0x10000, Areas: 0x20000}); ok {
				for _, r := range d.Rollback {
					if r.From < 0 || r.To > len(d.Code) || r.From > r.To {
						t.Fatalf("rollback %+v outside %d bytes", r, len(d.Code))
					}
				}
			}
		}
	})
}
