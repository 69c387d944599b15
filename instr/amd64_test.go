package instr

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
)

// Addresses of the amd64 displacement tests.
const (
	xPC   = 0x401000 // the instruction under the breakpoint
	xSlot = 0x500000 // its slot, within ±2 GiB
	xSP   = 0x7ffe1000
)

// DWARF numbers and RFLAGS bits, written out here from the ABI and the SDM
// rather than taken from the package.
const (
	xRAX, xRDX, xRCX, xRBX, xRSI, xRDI, xRBP, xRSP = 0, 1, 2, 3, 4, 5, 6, 7
	xR8, xR9, xR10, xR11                           = 8, 9, 10, 11
	rfCF, rfPF, rfZF, rfSF, rfOF                   = 0x1, 0x4, 0x40, 0x80, 0x800
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// le64 is the little-endian encoding of v.
func le64(v uint64) []byte {
	return []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24), byte(v >> 32), byte(v >> 40), byte(v >> 48), byte(v >> 56)}
}

// emuCase is an instruction emulated on fake registers and memory.
type emuCase struct {
	name string
	code string    // hex
	in   *fakeRegs // registers before (PC set by the runner)
	mem  *fakeMem  // memory before, nil for none
	out  *fakeRegs // registers after
	word [2]uint64 // if word[0] != 0: memory word at word[0] after is word[1]
	err  bool      // Emulate fails and changes nothing
	pc   uint64    // 0: xPC or aPC
}

// runEmu displaces and emulates one case.
func runEmu(t *testing.T, a Arch, defPC, slot uint64, c emuCase) {
	t.Helper()
	pc := c.pc
	if pc == 0 {
		pc = defPC
	}
	d, err := a.Displace(unhex(t, c.code), pc, slot)
	if err != nil {
		t.Fatalf("Displace: %v", err)
	}
	if d.Emulate == nil || d.Slot != nil {
		t.Fatalf("Displace = %+v, want emulation only", d)
	}
	r := c.in.clone()
	r.pc = pc
	mem := c.mem
	if mem == nil {
		mem = newMem()
	}
	before := mem.clone()
	err = d.Emulate(r, mem)
	if c.err {
		if err == nil {
			t.Fatalf("Emulate succeeded, want an error")
		}
		want := c.in.clone()
		want.pc = pc
		if *r != *want || !equalMem(mem, before) {
			t.Errorf("failed Emulate changed state: regs %+v, want %+v", *r, *want)
		}
		return
	}
	if err != nil {
		t.Fatalf("Emulate: %v", err)
	}
	if *r != *c.out {
		t.Errorf("registers after:\n got %+v\nwant %+v", *r, *c.out)
	}
	if c.word[0] != 0 {
		if got := mem.peek64(c.word[0]); got != c.word[1] {
			t.Errorf("memory at %#x = %#x, want %#x", c.word[0], got, c.word[1])
		}
	}
}

func equalMem(a, b *fakeMem) bool {
	if len(a.b) != len(b.b) {
		return false
	}
	for k, v := range a.b {
		if b.b[k] != v {
			return false
		}
	}
	return true
}

// rg builds registers from (DWARF number, value) pairs.
func rg(pairs ...uint64) *fakeRegs {
	r := &fakeRegs{}
	for i := 0; i+1 < len(pairs); i += 2 {
		r.r[pairs[i]] = pairs[i+1]
	}
	return r
}

// at returns r with the PC set.
func (f *fakeRegs) at(pc uint64) *fakeRegs { c := f.clone(); c.pc = pc; return c }

// fl returns r with the flags set.
func (f *fakeRegs) fl(v uint64) *fakeRegs { c := f.clone(); c.flags = v; return c }

func TestEmulateAMD64(t *testing.T) {
	stack := func() *fakeMem { return newMem().poke(xSP-16, make([]byte, 32)) }
	cases := []emuCase{
		{name: "endbr64", code: "f30f1efa", in: rg(xRAX, 1), out: rg(xRAX, 1).at(xPC + 4)},
		{name: "nopl", code: "0f1f440000", in: rg(), out: rg().at(xPC + 5)},
		{name: "nop rip", code: "0f1f0500000000", in: rg(), out: rg().at(xPC + 7)},
		{name: "jmp rel8", code: "eb10", in: rg(), out: rg().at(xPC + 2 + 0x10)},
		{name: "jmp rel32 back", code: "e900f0ffff", in: rg(), out: rg().at(xPC + 5 - 0x1000)},
		{name: "jrcxz taken", code: "e310", in: rg(xRCX, 0), out: rg(xRCX, 0).at(xPC + 0x12)},
		{name: "jrcxz not", code: "e310", in: rg(xRCX, 1), out: rg(xRCX, 1).at(xPC + 2)},
		{name: "jecxz taken high", code: "67e310", in: rg(xRCX, 1<<32), out: rg(xRCX, 1<<32).at(xPC + 0x13)},
		{name: "jecxz not", code: "67e310", in: rg(xRCX, 1), out: rg(xRCX, 1).at(xPC + 3)},
		{name: "loop taken", code: "e2fe", in: rg(xRCX, 2), out: rg(xRCX, 1).at(xPC)},
		{name: "loop done", code: "e2fe", in: rg(xRCX, 1), out: rg(xRCX, 0).at(xPC + 2)},
		{name: "loop wraps", code: "e2fe", in: rg(xRCX, 0), out: rg(xRCX, ^uint64(0)).at(xPC)},
		{name: "loope taken", code: "e1fe", in: rg(xRCX, 5).fl(rfZF), out: rg(xRCX, 4).fl(rfZF).at(xPC)},
		{name: "loope not", code: "e1fe", in: rg(xRCX, 5), out: rg(xRCX, 4).at(xPC + 2)},
		{name: "loopne taken", code: "e0fe", in: rg(xRCX, 5), out: rg(xRCX, 4).at(xPC)},
		{name: "loopne not", code: "e0fe", in: rg(xRCX, 5).fl(rfZF), out: rg(xRCX, 4).fl(rfZF).at(xPC + 2)},
		{
			name: "call rel32", code: "e8fb0f0000", mem: stack(),
			in: rg(xRSP, xSP, xRAX, 7), out: rg(xRSP, xSP-8, xRAX, 7).at(xPC + 0x1000),
			word: [2]uint64{xSP - 8, xPC + 5},
		},
		{
			name: "addr32 call", code: "67e8fa0f0000", mem: stack(),
			in: rg(xRSP, xSP), out: rg(xRSP, xSP-8).at(xPC + 0x1000),
			word: [2]uint64{xSP - 8, xPC + 6},
		},
		{name: "bnd jmp", code: "f2eb10", in: rg(), out: rg().at(xPC + 3 + 0x10)},
		{name: "call unmapped stack", code: "e8fb0f0000", in: rg(xRSP, 0x10), err: true},
		{
			name: "call *rax", code: "ffd0", mem: stack(),
			in: rg(xRSP, xSP, xRAX, 0x402000), out: rg(xRSP, xSP-8, xRAX, 0x402000).at(0x402000),
			word: [2]uint64{xSP - 8, xPC + 2},
		},
		{
			name: "call *r11", code: "41ffd3", mem: stack(),
			in: rg(xRSP, xSP, xR11, 0x402000), out: rg(xRSP, xSP-8, xR11, 0x402000).at(0x402000),
			word: [2]uint64{xSP - 8, xPC + 3},
		},
		{
			name: "call *rip", code: "ff1500010000", mem: stack().poke64(xPC+6+0x100, 0x403000),
			in: rg(xRSP, xSP), out: rg(xRSP, xSP-8).at(0x403000),
			word: [2]uint64{xSP - 8, xPC + 6},
		},
		{
			name: "call *8(rax,rcx,8)", code: "ff54c808", mem: stack().poke64(0x600000+3*8+8, 0x404000),
			in: rg(xRSP, xSP, xRAX, 0x600000, xRCX, 3), out: rg(xRSP, xSP-8, xRAX, 0x600000, xRCX, 3).at(0x404000),
			word: [2]uint64{xSP - 8, xPC + 4},
		},
		{
			name: "call *-0x10(rbp) disp32", code: "ff95f0ffffff", mem: stack().poke64(0x600000-0x10, 0x405000),
			in: rg(xRSP, xSP, xRBP, 0x600000), out: rg(xRSP, xSP-8, xRBP, 0x600000).at(0x405000),
			word: [2]uint64{xSP - 8, xPC + 6},
		},
		{
			name: "call *-8(rbp) disp8", code: "ff55f8", mem: stack().poke64(0x600000-8, 0x406000),
			in: rg(xRSP, xSP, xRBP, 0x600000), out: rg(xRSP, xSP-8, xRBP, 0x600000).at(0x406000),
			word: [2]uint64{xSP - 8, xPC + 3},
		},
		{name: "call *unmapped", code: "ff10", mem: stack(), in: rg(xRSP, xSP, xRAX, 0x10), err: true},
		{name: "ret", code: "c3", mem: newMem().poke64(xSP, 0x401234), in: rg(xRSP, xSP), out: rg(xRSP, xSP+8).at(0x401234)},
		{name: "rep ret", code: "f3c3", mem: newMem().poke64(xSP, 0x401234), in: rg(xRSP, xSP), out: rg(xRSP, xSP+8).at(0x401234)},
		{name: "ret imm16", code: "c21000", mem: newMem().poke64(xSP, 0x401234), in: rg(xRSP, xSP), out: rg(xRSP, xSP+0x18).at(0x401234)},
		{name: "ret unmapped", code: "c3", in: rg(xRSP, xSP), err: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runEmu(t, AMD64, xPC, xSlot, c) })
	}
}

func TestEmulateJccAMD64(t *testing.T) {
	// Flags under which each condition holds and does not (Intel SDM Vol.
	// 1 Appendix B, "EFLAGS Condition Codes").
	conds := []struct {
		cc            byte
		name          string
		taken, notTkn []uint64
	}{
		{0x0, "o", []uint64{rfOF}, []uint64{0, rfCF | rfZF | rfSF | rfPF}},
		{0x1, "no", []uint64{0}, []uint64{rfOF}},
		{0x2, "b", []uint64{rfCF}, []uint64{0, rfZF}},
		{0x3, "ae", []uint64{0, rfZF}, []uint64{rfCF}},
		{0x4, "e", []uint64{rfZF}, []uint64{0}},
		{0x5, "ne", []uint64{0}, []uint64{rfZF}},
		{0x6, "be", []uint64{rfCF, rfZF}, []uint64{0}},
		{0x7, "a", []uint64{0}, []uint64{rfCF, rfZF}},
		{0x8, "s", []uint64{rfSF}, []uint64{0}},
		{0x9, "ns", []uint64{0}, []uint64{rfSF}},
		{0xa, "p", []uint64{rfPF}, []uint64{0}},
		{0xb, "np", []uint64{0}, []uint64{rfPF}},
		{0xc, "l", []uint64{rfSF, rfOF}, []uint64{0, rfSF | rfOF}},
		{0xd, "ge", []uint64{0, rfSF | rfOF}, []uint64{rfSF, rfOF}},
		{0xe, "le", []uint64{rfZF, rfSF, rfOF | rfZF}, []uint64{0, rfSF | rfOF}},
		{0xf, "g", []uint64{0, rfSF | rfOF}, []uint64{rfZF, rfSF, rfOF}},
	}
	for _, c := range conds {
		forms := []struct {
			code         string
			target, next uint64
		}{
			{fmt.Sprintf("%02x10", 0x70+c.cc), xPC + 2 + 0x10, xPC + 2},
			{fmt.Sprintf("0f%02x00010000", 0x80+c.cc), xPC + 6 + 0x100, xPC + 6},
		}
		for _, f := range forms {
			for _, flags := range c.taken {
				t.Run(fmt.Sprintf("j%s/%s/taken/%#x", c.name, f.code, flags), func(t *testing.T) {
					runEmu(t, AMD64, xPC, xSlot, emuCase{code: f.code, in: rg().fl(flags), out: rg().fl(flags).at(f.target)})
				})
			}
			for _, flags := range c.notTkn {
				t.Run(fmt.Sprintf("j%s/%s/not/%#x", c.name, f.code, flags), func(t *testing.T) {
					runEmu(t, AMD64, xPC, xSlot, emuCase{code: f.code, in: rg().fl(flags), out: rg().fl(flags).at(f.next)})
				})
			}
		}
	}
}

func TestSlotAMD64(t *testing.T) {
	// jmp *0(%rip) followed by the address to go back to.
	back := func(addr uint64) string { return "ff2500000000" + hex.EncodeToString(le64(addr)) }
	cases := []struct {
		name, code string
		slot       uint64
		want       string // slot bytes, hex
		single     bool
	}{
		{"push rbp", "55", xSlot, "55" + back(xPC+1), false},
		{"sub rsp", "4883ec10", xSlot, "4883ec10" + back(xPC+4), false},
		{"syscall", "0f05", xSlot, "0f05" + back(xPC+2), false},
		{"jmp *rax", "ffe0", xSlot, "ffe0" + back(xPC+2), false},
		{"notrack jmp *rax", "3effe0", xSlot, "3effe0" + back(xPC+3), false},
		{"far slot, not pc-relative", "55", 0x7f0000000000, "55" + back(xPC+1), false},
		// mov 0x100(%rip),%rax at 0x401000 reads 0x401107; from the slot
		// 0x500000 the displacement is 0x401107 - 0x500007 = -0xfef00.
		{"mov rip", "488b0500010000", xSlot, "488b05" + "0011f0ff" + back(xPC+7), false},
		// From a slot below the code the displacement grows.
		{"mov rip, slot below", "488b0500010000", 0x300000, "488b05" + "00111000" + back(xPC+7), false},
		{"lea rip", "488d3df9ffffff", xSlot, "488d3d" + "f90ff0ff" + back(xPC+7), false},
		// VEX and EVEX operands x86asm does not see as RIP-relative.
		{"vmovdqa rip", "c5fd6f0500010000", xSlot, "c5fd6f05" + "0011f0ff" + back(xPC+8), false},
		{"vmovaps zmm rip", "62f17c482915b62d0000", xSlot, "62f17c482915" + "b63df0ff" + back(xPC+10), false},
		// The imm8 after the displacement stays.
		{"vpshufd rip imm8", "c5f970050000000001", xSlot, "c5f97005" + "0010f0ff" + "01" + back(xPC+9), false},
		{"adcx rip", "66480f38f60510000000", xSlot, "66480f38f605" + "1010f0ff" + back(xPC+10), false},
		{"cmpl rip imm", "833d0001000007", xSlot, "833d" + "0011f0ff" + "07" + back(xPC+7), false},
		{"jmp *rip", "ff2500010000", xSlot, "ff25" + "0011f0ff" + back(xPC+6), false},
		{"xbegin", "c7f800010000", xSlot, "c7f8" + "0011f0ff" + back(xPC+6), false},
		// call *%fs:0x10 cannot be emulated: single-step it in the slot.
		{"call *fs", "64ff142510000000", xSlot, "64ff142510000000" + back(xPC+8), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := AMD64.Displace(unhex(t, c.code), xPC, c.slot)
			if err != nil {
				t.Fatal(err)
			}
			if d.Emulate != nil || d.SingleStep != c.single || (d.AfterStep != nil) != c.single {
				t.Fatalf("Displace = %+v, want a slot (single-step %v)", d, c.single)
			}
			if got := hex.EncodeToString(d.Slot); got != c.want {
				t.Errorf("slot\n got %s\nwant %s", got, c.want)
			}
			if len(d.Slot) > AMD64.SlotSize() {
				t.Errorf("slot of %d bytes, SlotSize %d", len(d.Slot), AMD64.SlotSize())
			}
		})
	}
}

func TestSlotReachAMD64(t *testing.T) {
	// mov 0x100(%rip),%rax (7 bytes) at pc reads target; from slot S the
	// displacement is target - (S+7), which must fit in an int32.
	const pc = 0x7f0000001000
	const target = pc + 7 + 0x100
	code := unhex(t, "488b0500010000")
	for _, c := range []struct {
		disp int64
		ok   bool
	}{
		{0x7fffffff, true},
		{0x80000000, false},
		{-0x80000000, true},
		{-0x80000001, false},
		{0, true},
		{1 << 32, false},
		{-1 << 32, false},
		{-1 << 62, false},
	} {
		slot := target - 7 - uint64(c.disp)
		d, err := AMD64.Displace(code, pc, slot)
		switch {
		case c.ok && err != nil:
			t.Errorf("disp %#x: %v", c.disp, err)
		case c.ok && hex.EncodeToString(d.Slot[3:7]) != hex.EncodeToString(le64(uint64(c.disp))[:4]):
			t.Errorf("disp %#x: slot % x", c.disp, d.Slot)
		case !c.ok && !errors.Is(err, ErrOutOfReach):
			t.Errorf("disp %#x: %v, want ErrOutOfReach", c.disp, err)
		}
	}
}

func TestAfterStepAMD64(t *testing.T) {
	// call *%fs:0x10 (8 bytes) single-stepped from the slot pushed
	// slot+8 and went to the target; AfterStep makes it xPC+8.
	d, err := AMD64.Displace(unhex(t, "64ff142510000000"), xPC, xSlot)
	if err != nil {
		t.Fatal(err)
	}
	mem := newMem().poke64(xSP-8, xSlot+8)
	r := rg(xRSP, xSP-8).at(0x407000)
	if err := d.AfterStep(r, mem); err != nil {
		t.Fatal(err)
	}
	if got := mem.peek64(xSP - 8); got != xPC+8 {
		t.Errorf("return address %#x, want %#x", got, xPC+8)
	}
	if *r != *rg(xRSP, xSP-8).at(0x407000) {
		t.Errorf("registers changed: %+v", *r)
	}

	// A word that is not the slot's return address is left alone, and a
	// PC left at the end of the copy goes back to the original code.
	mem = newMem().poke64(xSP, 0x1234)
	r = rg(xRSP, xSP).at(xSlot + 8)
	if err := d.AfterStep(r, mem); err != nil {
		t.Fatal(err)
	}
	if mem.peek64(xSP) != 0x1234 || r.pc != xPC+8 {
		t.Errorf("got [rsp] %#x, pc %#x; want 0x1234, %#x", mem.peek64(xSP), r.pc, xPC+8)
	}
	if err := d.AfterStep(rg(xRSP, 0x10), newMem()); err == nil {
		t.Error("AfterStep with an unmapped stack succeeded")
	}
}

func TestDisplaceUnsupportedAMD64(t *testing.T) {
	cases := []struct {
		name, code string
		want       error
	}{
		{"int3", "cc", ErrUnsupported},
		{"int 0x80", "cd80", ErrUnsupported},
		{"ud2", "0f0b", ErrUnsupported},
		{"hlt", "f4", ErrUnsupported},
		{"lret", "cb", ErrUnsupported},
		{"ljmp *mem", "ff28", ErrUnsupported},
		{"iretq", "48cf", ErrUnsupported},
		{"jmp with 66", "66e910000000", ErrUnsupported},
		{"ret 16-bit", "66c3", ErrUnsupported},
		{"loop ecx", "67e2fe", ErrUnsupported},
		{"mov eip-relative", "678b0500010000", ErrUnsupported},
		{"truncated", "e800", ErrTruncated},
		{"empty", "", ErrTruncated},
		{"unrecognized", "06", ErrUnrecognized},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := AMD64.Displace(unhex(t, c.code), xPC, xSlot)
			if !errors.Is(err, c.want) {
				t.Errorf("Displace = %+v, %v; want %v", d, err, c.want)
			}
		})
	}
}

func TestArchAMD64(t *testing.T) {
	a := AMD64
	if a.Name() != "amd64" || a.MaxInstLen() != 15 || a.SlotSize() != 32 || a.SyscallNumber(SysMmap) != 9 || a.SyscallNumber(SysMemfdCreate) != 319 || a.SyscallNumber(SysFtruncate) != 77 || a.SyscallNumber(SysClose) != 3 || a.SyscallNumber(SysMunmap) != 11 || a.SyscallNumber(SysPrctl) != 157 || a.SyscallNumber(SysFutex) != 202 || a.SyscallNumber(SysFutexWaitv) != 449 {
		t.Errorf("Name %q MaxInstLen %d SlotSize %d mmap %d", a.Name(), a.MaxInstLen(), a.SlotSize(), a.SyscallNumber(SysMmap))
	}
	if !bytes.Equal(a.Breakpoint(), []byte{0xcc}) || a.BreakpointAddr(0x401001) != 0x401000 {
		t.Errorf("Breakpoint % x, BreakpointAddr(0x401001) = %#x", a.Breakpoint(), a.BreakpointAddr(0x401001))
	}
	if !bytes.Equal(a.SyscallInst(), []byte{0x0f, 0x05}) {
		t.Errorf("SyscallInst % x", a.SyscallInst())
	}
	r := rg()
	a.SetSyscall(r, 9, 1, 2, 3, 4, 5, 6, 7)
	want := rg(xRAX, 9, xRDI, 1, xRSI, 2, xRDX, 3, xR10, 4, xR8, 5, xR9, 6)
	if *r != *want {
		t.Errorf("SetSyscall: %+v, want %+v", *r, *want)
	}
	r.r[xRAX] = 0x7f0000001000
	if a.SyscallResult(r) != 0x7f0000001000 {
		t.Errorf("SyscallResult %#x", a.SyscallResult(r))
	}
	r = rg(xRSP, xSP)
	ret, err := a.ReturnAddress(r, newMem().poke64(xSP, 0x401234))
	if err != nil || ret != 0x401234 || a.SP(r) != xSP {
		t.Errorf("ReturnAddress %#x, %v; SP %#x", ret, err, a.SP(r))
	}
	if g := a.Goroutine(rg(14, 0xc000002380)); g != 0xc000002380 {
		t.Errorf("Goroutine = %#x, want r14's 0xc000002380", g)
	}
	if _, err := a.ReturnAddress(r, newMem()); err == nil {
		t.Error("ReturnAddress from unmapped stack succeeded")
	}
}
