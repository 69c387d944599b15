package instr

import (
	"encoding/binary"
	"testing"
)

// fakeStack is one stack mapping [lo, hi) and code in [codeLo, codeHi).
type fakeStack struct{ lo, hi, codeLo, codeHi uint64 }

func (s fakeStack) StackEnd(a uint64) uint64 {
	if a >= s.lo && a < s.hi {
		return s.hi
	}
	return 0
}

func (s fakeStack) Executable(a uint64) bool { return a >= s.codeLo && a < s.codeHi }

// TestSignalFramesAMD64 finds the kernel's frame of a signal on a stack
// of x86-64 as the kernel lays it out, and not a word that merely holds
// the restorer's address; the saved PC moved is written into the frame.
func TestSignalFramesAMD64(t *testing.T) {
	s := fakeStack{lo: 0x7000_0000, hi: 0x7000_4000, codeLo: 0x40_0000, codeHi: 0x50_0000}
	const restorer, at, pc = 0x40_1000, 0x7000_2008, 0x55_0010
	m := newMem()
	m.lenient = true
	m.poke(restorer, amd64Restorers[0])
	m.poke64(0x7000_1808, restorer) // a word holding it, in no frame
	m.poke64(at, restorer)
	m.poke64(at+8, 0x7) // uc_flags
	sc := uint64(at + 48)
	m.poke64(sc+128, pc)
	m.poke64(sc+120, 0x7000_3000) // rsp
	m.poke64(sc+104, 42)          // rax
	m.poke(sc+amd64FrameCS, []byte{0x33, 0})
	m.poke(sc+amd64FrameSS, []byte{0x2b, 0})
	m.poke64(sc+amd64FrameFPU, at+0x400)
	regs := &fakeRegs{}
	regs.SetReg(amd64RSP, 0x7000_1000)
	frames := SignalFrames(AMD64, m, regs, s)
	if len(frames) != 1 {
		t.Fatalf("%d frames, want 1", len(frames))
	}
	f := frames[0]
	if f.At != at || f.PC() != pc || AMD64.SP(f) != 0x7000_3000 || f.Reg(amd64RAX) != 42 {
		t.Fatalf("frame at %#x: pc %#x sp %#x rax %d", f.At, f.PC(), AMD64.SP(f), f.Reg(amd64RAX))
	}
	f.SetPC(0x40_2000)
	f.SetReg(amd64RAX, 7)
	if err := f.Write(m); err != nil {
		t.Fatal(err)
	}
	if m.peek64(sc+128) != 0x40_2000 || m.peek64(sc+104) != 7 {
		t.Errorf("written: pc %#x rax %d", m.peek64(sc+128), m.peek64(sc+104))
	}
}

// TestSignalFramesARM64 finds an arm64 frame from the frame record a
// handler saved (its return address signed with a pointer authentication
// code) and from the thread's own x29 and x30 (a handler that calls
// nothing): the frame is the one below the kernel's record whose saved
// x29 and x30 are the record's.
func TestSignalFramesARM64(t *testing.T) {
	s := fakeStack{lo: 0x7000_0000, hi: 0x7002_0000, codeLo: 0x40_0000, codeHi: 0x50_0000}
	const restorer, rec, pc = 0x40_1000, 0x7001_f000, 0x55_0004
	const at = rec - 4752
	build := func() *fakeMem {
		m := newMem()
		m.lenient = true
		m.poke(restorer, arm64Restorer)
		m.poke64(rec, 0x7001_ff00) // the interrupted x29
		m.poke64(rec+8, 0x40_5678) // and x30
		sc := uint64(at + 304)
		m.poke64(sc+8+8*29, 0x7001_ff00)
		m.poke64(sc+8+8*30, 0x40_5678)
		m.poke64(sc+256, 0x7001_ff80) // sp
		m.poke64(sc+264, pc)
		m.poke(sc+arm64FrameMagic, binary.LittleEndian.AppendUint32(nil, arm64FPSIMDMagic))
		return m
	}
	for _, c := range []struct {
		name string
		set  func(m *fakeMem, r *fakeRegs)
	}{
		{"saved", func(m *fakeMem, r *fakeRegs) {
			m.poke64(0x7000_8000, rec)
			m.poke64(0x7000_8008, restorer|0x002a_0000_0000_0000) // signed
			r.SetReg(29, 0x7000_8000)
		}},
		{"leaf", func(m *fakeMem, r *fakeRegs) {
			r.SetReg(29, rec)
			r.SetReg(a64LR, restorer)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, regs := build(), &fakeRegs{}
			regs.SetReg(a64SP, 0x7000_7000)
			c.set(m, regs)
			frames := SignalFrames(ARM64, m, regs, s)
			if len(frames) != 1 {
				t.Fatalf("%d frames, want 1", len(frames))
			}
			if f := frames[0]; f.At != at || f.PC() != pc || ARM64.SP(f) != 0x7001_ff80 {
				t.Fatalf("frame at %#x: pc %#x sp %#x", f.At, f.PC(), ARM64.SP(f))
			}
		})
	}
}

// TestExactPC: the program's address a thread inside a trampoline goes
// on from exactly, and none inside a copy that relocation made longer.
func TestExactPC(t *testing.T) {
	const site, tramp = 0x1000, 0x9000
	// An entry's: 9 bytes of instrumentation, a copy of 1 byte (site), one
	// of 3 bytes made into 8 (site+1), the jump back (5).
	entry := Trampoline{Code: make([]byte, 9+1+8+5), PCs: []PCMap{{tramp + 9, site}, {tramp + 10, site + 1}}}
	// An exit's: a copy of 1 byte (site), 20 bytes of instrumentation, the
	// exit's copy (site+1).
	exit := Trampoline{Code: make([]byte, 1+20+1), PCs: []PCMap{{tramp, site}, {tramp + 1, site + 1}}, Exit: true, At: 1, Tail: 21}
	for _, c := range []struct {
		tr   *Trampoline
		pc   uint64
		want uint64
		ok   bool
	}{
		{&entry, tramp, site, true},
		{&entry, tramp + 5, site, true},
		{&entry, tramp + 9, site, true},
		{&entry, tramp + 10, site + 1, true},
		{&entry, tramp + 14, 0, false}, // inside the longer copy
		{&entry, tramp + 18, site + 4, true},
		{&entry, tramp + 23, 0, false},
		{&exit, tramp, site, true},
		{&exit, tramp + 1, site + 1, true},
		{&exit, tramp + 12, site + 1, true},
		{&exit, tramp + 21, site + 1, true},
	} {
		got, ok := c.tr.ExactPC(tramp, site+4, c.pc)
		if got != c.want || ok != c.ok {
			t.Errorf("exit %v, pc %#x: %#x %v, want %#x %v", c.tr.Exit, c.pc, got, ok, c.want, c.ok)
		}
	}
}
