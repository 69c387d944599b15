package instr

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
)

// Addresses of the arm64 displacement tests: the PC is inside its 4 KiB
// page (0x412000) so ADRP's page arithmetic shows.
const (
	aPC   = 0x412344
	aSlot = 0x500000
	aSP   = 0x7fff0000
)

// Register numbers and PSTATE bits, written out from the ABI and the Arm
// ARM rather than taken from the package.
const (
	aX0, aX1, aX2, aX3, aX8, aX16, aX17, aLR, aSPReg = 0, 1, 2, 3, 8, 16, 17, 30, 31
	psN, psZ, psC, psV                               = 1 << 31, 1 << 30, 1 << 29, 1 << 28
)

// w is the memory image of an instruction word, in hex.
func w(word uint32) string { return hex.EncodeToString(binary.LittleEndian.AppendUint32(nil, word)) }

func TestEmulateARM64(t *testing.T) {
	word4 := func(addr uint64, v uint32) *fakeMem {
		return newMem().poke(addr, binary.LittleEndian.AppendUint32(nil, v))
	}
	cases := []emuCase{
		{name: "b forward", code: w(0x14000010), in: rg(), out: rg().at(aPC + 0x40)},
		{name: "b back", code: w(0x17ffffff), in: rg(), out: rg().at(aPC - 4)},
		{name: "bl", code: w(0x97fffff0), in: rg(aLR, 7), out: rg(aLR, aPC+4).at(aPC - 0x40)},
		{name: "cbz x taken", code: w(0xb4000080), in: rg(aX0, 0), out: rg(aX0, 0).at(aPC + 0x10)},
		{name: "cbz x not", code: w(0xb4000080), in: rg(aX0, 1<<40), out: rg(aX0, 1<<40).at(aPC + 4)},
		{name: "cbz w high bits", code: w(0x34000080), in: rg(aX0, 1<<40), out: rg(aX0, 1<<40).at(aPC + 0x10)},
		{name: "cbz w not", code: w(0x34000080), in: rg(aX0, 1), out: rg(aX0, 1).at(aPC + 4)},
		{name: "cbnz w not", code: w(0x35ffffe1), in: rg(aX1, 1<<32), out: rg(aX1, 1<<32).at(aPC + 4)},
		{name: "cbnz w taken", code: w(0x35ffffe1), in: rg(aX1, 5), out: rg(aX1, 5).at(aPC - 4)},
		{name: "cbz xzr not sp", code: w(0xb400009f), in: rg(aSPReg, aSP), out: rg(aSPReg, aSP).at(aPC + 0x10)},
		{name: "cbnz xzr not sp", code: w(0xb500009f), in: rg(aSPReg, aSP), out: rg(aSPReg, aSP).at(aPC + 4)},
		{name: "tbz bit 1 set", code: w(0x36080080), in: rg(aX0, 2), out: rg(aX0, 2).at(aPC + 4)},
		{name: "tbz bit 1 clear", code: w(0x36080080), in: rg(aX0, 0xfffd), out: rg(aX0, 0xfffd).at(aPC + 0x10)},
		{name: "tbnz bit 63 set", code: w(0xb7f80041), in: rg(aX1, 1<<63), out: rg(aX1, 1<<63).at(aPC + 8)},
		{name: "tbnz bit 63 clear", code: w(0xb7f80041), in: rg(aX1, 1<<62), out: rg(aX1, 1<<62).at(aPC + 4)},
		{name: "adr back", code: w(0x10ffffe2), in: rg(), out: rg(aX2, aPC-4).at(aPC + 4)},
		{name: "adrp next page", code: w(0xb0000001), in: rg(), out: rg(aX1, 0x413000).at(aPC + 4)},
		{name: "adrp +16 pages", code: w(0x90000080), in: rg(), out: rg(aX0, 0x422000).at(aPC + 4)},
		{name: "adrp previous page", code: w(0xf0ffffe3), in: rg(), out: rg(aX3, 0x411000).at(aPC + 4)},
		{name: "adrp xzr", code: w(0xb000001f), in: rg(aSPReg, aSP), out: rg(aSPReg, aSP).at(aPC + 4)},
		{
			name: "ldr x", code: w(0x58000080), mem: newMem().poke64(aPC+0x10, 0x1122334455667788),
			in: rg(), out: rg(aX0, 0x1122334455667788).at(aPC + 4),
		},
		{
			name: "ldr w zero-extends", code: w(0x18000080), mem: word4(aPC+0x10, 0x80000001),
			in: rg(aX0, ^uint64(0)), out: rg(aX0, 0x80000001).at(aPC + 4),
		},
		{
			name: "ldrsw sign-extends", code: w(0x98000080), mem: word4(aPC+0x10, 0x80000001),
			in: rg(), out: rg(aX0, 0xffffffff80000001).at(aPC + 4),
		},
		{
			name: "ldr xzr", code: w(0x5800009f), mem: newMem().poke64(aPC+0x10, 5),
			in: rg(aSPReg, aSP), out: rg(aSPReg, aSP).at(aPC + 4),
		},
		{name: "ldr unmapped", code: w(0x58000080), in: rg(aX0, 3), err: true},
		{name: "prfm reads nothing", code: w(0xd8000080), in: rg(), out: rg().at(aPC + 4)},
		{name: "br", code: w(0xd61f0200), in: rg(aX16, 0x420000), out: rg(aX16, 0x420000).at(0x420000)},
		{name: "br xzr", code: w(0xd61f03e0), in: rg(aSPReg, aSP), out: rg(aSPReg, aSP).at(0)},
		{name: "blr", code: w(0xd63f0200), in: rg(aX16, 0x420000), out: rg(aX16, 0x420000, aLR, aPC+4).at(0x420000)},
		{name: "blr x30", code: w(0xd63f03c0), in: rg(aLR, 0x430000), out: rg(aLR, aPC+4).at(0x430000)},
		{name: "ret", code: w(0xd65f03c0), in: rg(aLR, 0x430000), out: rg(aLR, 0x430000).at(0x430000)},
		{name: "ret x17", code: w(0xd65f0220), in: rg(aX17, 0x440000), out: rg(aX17, 0x440000).at(0x440000)},
		{name: "nop", code: w(0xd503201f), in: rg(aX0, 1), out: rg(aX0, 1).at(aPC + 4)},
		{name: "bti c", code: w(0xd503245f), in: rg(), out: rg().at(aPC + 4)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runEmu(t, ARM64, aPC, aSlot, c) })
	}
}

func TestEmulateBTYPE(t *testing.T) {
	// BTYPE (PSTATE bits 11-10) set by the BLR that reached "bti c" is
	// cleared by the emulation, through SetFlags; NZCV stays.
	const btype = 2 << 10
	for _, word := range []uint32{0xd503245f, 0x14000010, 0xd61f0200} {
		d, err := ARM64.Displace(unhex(t, w(word)), aPC, aSlot)
		if err != nil {
			t.Fatal(err)
		}
		r := rg(aX16, 0x420000).fl(psZ | psC | btype).at(aPC)
		if err := d.Emulate(r, newMem()); err != nil {
			t.Fatal(err)
		}
		if r.flags != psZ|psC {
			t.Errorf("%#08x: flags %#x after, want %#x", word, r.flags, psZ|psC)
		}
		// Registers that cannot set flags are emulated all the same.
		var plain struct{ Regs }
		plain.Regs = rg(aX16, 0x420000).fl(btype).at(aPC)
		if err := d.Emulate(plain, newMem()); err != nil || plain.PC() == aPC {
			t.Errorf("%#08x: emulation without SetFlags: pc %#x, %v", word, plain.PC(), err)
		}
	}
}

func TestEmulateBCondARM64(t *testing.T) {
	// NZCV values under which each condition holds and does not (Arm ARM
	// C1.2.4, "Condition code").
	conds := []struct {
		name          string
		taken, notTkn []uint64
	}{
		{"eq", []uint64{psZ}, []uint64{0}},
		{"ne", []uint64{0}, []uint64{psZ}},
		{"cs", []uint64{psC}, []uint64{0}},
		{"cc", []uint64{0}, []uint64{psC}},
		{"mi", []uint64{psN}, []uint64{0}},
		{"pl", []uint64{0}, []uint64{psN}},
		{"vs", []uint64{psV}, []uint64{0}},
		{"vc", []uint64{0}, []uint64{psV}},
		{"hi", []uint64{psC}, []uint64{0, psC | psZ}},
		{"ls", []uint64{0, psC | psZ, psZ}, []uint64{psC}},
		{"ge", []uint64{0, psN | psV}, []uint64{psN, psV}},
		{"lt", []uint64{psN, psV}, []uint64{0, psN | psV}},
		{"gt", []uint64{0, psN | psV}, []uint64{psZ, psN, psZ | psN | psV}},
		{"le", []uint64{psZ, psN, psV}, []uint64{0, psN | psV}},
		{"al", []uint64{0, psN | psZ | psC | psV}, nil},
		{"nv", []uint64{0, psZ}, nil},
	}
	for cc, c := range conds {
		code := w(0x54000080 | uint32(cc)) // b.cond .+0x10
		for _, f := range c.taken {
			t.Run(fmt.Sprintf("b.%s/taken/%#x", c.name, f), func(t *testing.T) {
				runEmu(t, ARM64, aPC, aSlot, emuCase{code: code, in: rg().fl(f), out: rg().fl(f).at(aPC + 0x10)})
			})
		}
		for _, f := range c.notTkn {
			t.Run(fmt.Sprintf("b.%s/not/%#x", c.name, f), func(t *testing.T) {
				runEmu(t, ARM64, aPC, aSlot, emuCase{code: code, in: rg().fl(f), out: rg().fl(f).at(aPC + 4)})
			})
		}
	}
}

func TestSlotARM64(t *testing.T) {
	// B from aSlot+4 back to aPC+4: (0x412348-0x500004)/4 = -0x3b72f.
	const back = 0x17fc48d1
	cases := []struct {
		name   string
		word   uint32
		single bool
	}{
		{"paciasp", 0xd503233f, false},
		{"autiasp", 0xd50323bf, false},
		{"add sp", 0x9100c3ff, false},
		{"stp", 0xa9bf7bfd, false},
		{"svc", 0xd4000001, false},
		{"lse swp", 0xf8208020, false},
		{"retaa", 0xd65f0bff, false},
		{"braa", 0xd71f0a11, false},
		{"blraa", 0xd73f0a11, true},
		{"blraaz", 0xd63f0a1f, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := ARM64.Displace(unhex(t, w(c.word)), aPC, aSlot)
			if err != nil {
				t.Fatal(err)
			}
			if d.Emulate != nil || d.SingleStep != c.single || (d.AfterStep != nil) != c.single {
				t.Fatalf("Displace = %+v, want a slot (single-step %v)", d, c.single)
			}
			if got, want := hex.EncodeToString(d.Slot), w(c.word)+w(back); got != want {
				t.Errorf("slot %s, want %s", got, want)
			}
		})
	}
}

func TestSlotReachARM64(t *testing.T) {
	// The B back spans (pc+4) - (slot+4): imm26 words, [-2^27, 2^27-4].
	const pc = 0x40412344
	for _, c := range []struct {
		slot uint64
		back uint32 // 0: ErrOutOfReach
	}{
		{pc - 0x7fffffc, 0x15ffffff},
		{pc - 0x8000000, 0},
		{pc + 0x8000000, 0x16000000},
		{pc + 0x8000004, 0},
		{pc, 0x14000000},
		{0x7f0000000000, 0},
	} {
		d, err := ARM64.Displace(unhex(t, w(0xd503233f)), pc, c.slot)
		switch {
		case c.back == 0 && !errors.Is(err, ErrOutOfReach):
			t.Errorf("slot %#x: %v, want ErrOutOfReach", c.slot, err)
		case c.back != 0 && err != nil:
			t.Errorf("slot %#x: %v", c.slot, err)
		case c.back != 0 && hex.EncodeToString(d.Slot[4:]) != w(c.back):
			t.Errorf("slot %#x: % x, want B %#08x", c.slot, d.Slot, c.back)
		}
	}
}

func TestAfterStepARM64(t *testing.T) {
	d, err := ARM64.Displace(unhex(t, w(0xd73f0a11)), aPC, aSlot) // blraa x16, x17
	if err != nil {
		t.Fatal(err)
	}
	// The step branched to x16 and linked x30 to the slot.
	r := rg(aX16, 0x420000, aLR, aSlot+4).at(0x420000)
	if err := d.AfterStep(r, newMem()); err != nil {
		t.Fatal(err)
	}
	if want := rg(aX16, 0x420000, aLR, aPC+4).at(0x420000); *r != *want {
		t.Errorf("after step %+v, want %+v", *r, *want)
	}
	// Left at the end of the copy, the PC goes back to the code.
	r = rg(aLR, 0x1234).at(aSlot + 4)
	if err := d.AfterStep(r, newMem()); err != nil {
		t.Fatal(err)
	}
	if want := rg(aLR, 0x1234).at(aPC + 4); *r != *want {
		t.Errorf("after step %+v, want %+v", *r, *want)
	}
}

func TestDisplaceUnsupportedARM64(t *testing.T) {
	cases := []struct {
		name string
		code string
		want error
	}{
		{"brk", w(0xd4200000), ErrUnsupported},
		{"udf", w(0x00000000), ErrUnsupported},
		{"hlt", w(0xd4400000), ErrUnsupported},
		{"eret", w(0xd69f03e0), ErrUnsupported},
		{"ldr s0 literal", w(0x1c000080), ErrUnsupported},
		{"cmpbr", w(0x74000000), ErrUnsupported},
		{"pauth_lr", w(0x55000000), ErrUnsupported},
		{"truncated", "1f2003", ErrTruncated},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := ARM64.Displace(unhex(t, c.code), aPC, aSlot)
			if !errors.Is(err, c.want) {
				t.Errorf("Displace = %+v, %v; want %v", d, err, c.want)
			}
		})
	}
	for _, c := range []struct{ pc, slot uint64 }{{aPC + 2, aSlot}, {aPC, aSlot + 1}} {
		if _, err := ARM64.Displace(unhex(t, w(0xd503233f)), c.pc, c.slot); err == nil {
			t.Errorf("pc %#x slot %#x: misaligned, want an error", c.pc, c.slot)
		}
	}
}

func TestArchARM64(t *testing.T) {
	a := ARM64
	if a.Name() != "arm64" || a.MaxInstLen() != 4 || a.SlotSize() != 8 || a.SyscallNumber(SysMmap) != 222 || a.SyscallNumber(SysMemfdCreate) != 279 || a.SyscallNumber(SysFtruncate) != 46 || a.SyscallNumber(SysClose) != 57 || a.SyscallNumber(SysMunmap) != 215 || a.SyscallNumber(SysPrctl) != 167 || a.SyscallNumber(SysFutex) != 98 || a.SyscallNumber(SysFutexWaitv) != 449 {
		t.Errorf("Name %q MaxInstLen %d SlotSize %d mmap %d", a.Name(), a.MaxInstLen(), a.SlotSize(), a.SyscallNumber(SysMmap))
	}
	if !bytes.Equal(a.Breakpoint(), []byte{0x00, 0x00, 0x20, 0xd4}) || a.BreakpointAddr(aPC) != aPC {
		t.Errorf("Breakpoint % x, BreakpointAddr(%#x) = %#x", a.Breakpoint(), aPC, a.BreakpointAddr(aPC))
	}
	if !bytes.Equal(a.SyscallInst(), []byte{0x01, 0x00, 0x00, 0xd4}) {
		t.Errorf("SyscallInst % x", a.SyscallInst())
	}
	r := rg()
	a.SetSyscall(r, 222, 10, 11, 12, 13, 14, 15, 16)
	want := rg(aX8, 222, 0, 10, 1, 11, 2, 12, 3, 13, 4, 14, 5, 15)
	if *r != *want {
		t.Errorf("SetSyscall: %+v, want %+v", *r, *want)
	}
	if a.SyscallResult(r) != 10 {
		t.Errorf("SyscallResult %d", a.SyscallResult(r))
	}
	r = rg(aLR, 0x002a000000401234, aSPReg, aSP)
	ret, err := a.ReturnAddress(r, newMem())
	if err != nil || ret != 0x401234 || a.SP(r) != aSP {
		t.Errorf("ReturnAddress %#x, %v; SP %#x", ret, err, a.SP(r))
	}
	if g := a.Goroutine(rg(28, 0x4000002380)); g != 0x4000002380 {
		t.Errorf("Goroutine = %#x, want x28's 0x4000002380", g)
	}
}

func TestStripPAC(t *testing.T) {
	for _, c := range []struct{ addr, mask, want uint64 }{
		{0x002a000000401234, DefaultPACMask, 0x401234},
		{0xff7f000000401234, DefaultPACMask, 0x401234},
		{0xff7f000000401234, 0x007f000000000000, 0xff00000000401234},
		{0x0000ffffa0001234, 0xff80000000000000, 0x0000ffffa0001234},
	} {
		if got := StripPAC(c.addr, c.mask); got != c.want {
			t.Errorf("StripPAC(%#x, %#x) = %#x, want %#x", c.addr, c.mask, got, c.want)
		}
	}
}
