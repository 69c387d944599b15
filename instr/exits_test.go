package instr

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// The amd64 code of the exit tests, at 0x401000: a function with an
// early return, an epilogue reached by a jump, a tail call and a jump
// table's jump, then int3 padding to 0x401040.
//
//	401000: 55                   push %rbp
//	401001: 48 89 e5             mov %rsp,%rbp
//	401004: 85 ff                test %edi,%edi
//	401006: 74 0a                je 401012
//	401008: 83 ff 01             cmp $0x1,%edi
//	40100b: 74 03                je 401010           (lands on the ret)
//	40100d: ff e0                jmp *%rax           (or 66 90, a nop)
//	40100f: 5d                   pop %rbp
//	401010: c3                   ret
//	401011: 90                   nop
//	401012: 48 83 c4 08          add $0x8,%rsp       (the je lands here)
//	401016: 5b                   pop %rbx
//	401017: 5d                   pop %rbp
//	401018: c3                   ret
//	401019: 5d                   pop %rbp
//	40101a: e9 e1 0f 00 00       jmp 402000          a tail call
//	40101f: c3                   ret                 the last exit
//	401020: cc ...               padding
const exitStart, exitEnd = 0x401000, 0x401020

// exitCode returns the fixture, with its jump through rax (indirect) or a
// two-byte nop in its place.
func exitCode(t *testing.T, indirect bool) []byte {
	jmp := "6690"
	if indirect {
		jmp = "ffe0"
	}
	code := hexs(t, "55 4889e5 85ff 740a 83ff01 7403 "+jmp+" 5d c3 90 4883c408 5b 5d c3 5d e9e10f0000 c3")
	if len(code) != exitEnd-exitStart {
		t.Fatalf("exit fixture: %d bytes", len(code))
	}
	return append(code, []byte(strings.Repeat("\xcc", 0x20))...)
}

func TestFindExits(t *testing.T) {
	exits, err := FindExits(AMD64, exitCode(t, true), exitStart, exitEnd)
	if err != nil {
		t.Fatal(err)
	}
	want := []Exit{
		{PC: 0x40100d, Len: 2, Kind: Jump, Indirect: true},
		{PC: 0x401010, Len: 1, Kind: Ret},
		{PC: 0x401018, Len: 1, Kind: Ret},
		{PC: 0x40101a, Len: 5, Kind: Jump},
		{PC: 0x40101f, Len: 1, Kind: Ret},
	}
	if len(exits) != len(want) {
		t.Fatalf("exits %+v, want %+v", exits, want)
	}
	for i := range want {
		if exits[i] != want[i] {
			t.Errorf("exit %d: %+v, want %+v", i, exits[i], want[i])
		}
	}
	// A jump inside the function is no exit; arm64 RET and B out are.
	a64 := a64Words(0xd503233f, 0x14000002, 0xd65f03c0, 0x14000040, 0xd65f0bff) // paciasp; b +8; ret; b +0x100; retaa
	exits, err = FindExits(ARM64, a64, 0x1000, 0x1014)
	if err != nil {
		t.Fatal(err)
	}
	if len(exits) != 3 || exits[0].PC != 0x1008 || exits[1] != (Exit{PC: 0x100c, Len: 4, Kind: Jump}) || exits[2].PC != 0x1010 || exits[2].Kind != Ret {
		t.Errorf("arm64 exits %+v", exits)
	}
}

// planExit returns the plan of the exit at exit among the function's.
func planExit(t *testing.T, a Arch, fn []byte, start, end, exit uint64, short bool) (Patch, error) {
	t.Helper()
	plans, err := a.PlanExits(fn, start, end, short)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range plans {
		if p.Exit.PC == exit {
			return p.Patch, p.Err
		}
	}
	t.Fatalf("no exit at %#x among %+v", exit, plans)
	return Patch{}, nil
}

func TestPlanExitsAMD64(t *testing.T) {
	for _, c := range []struct {
		name     string
		indirect bool // the fixture with its jump through rax
		exit     uint64
		short    bool
		site     uint64
		n        int    // bytes replaced
		why      error  // or the fall-back reason
		insts    string // the replaced instructions, by the GNU disassembler
	}{
		{name: "a return a je lands on, after a pop and before a nop", exit: 0x401010, why: ErrBranchInto},
		{name: "the same, a short jump over the nop", exit: 0x401010, short: true, site: 0x401010, n: 2, insts: "ret"},
		{name: "a short jump over pop and ret", exit: 0x401018, short: true, site: 0x401017, n: 2, insts: "pop %rbp|ret"},
		{name: "an epilogue of three instructions", exit: 0x401018, site: 0x401012, n: 7, insts: "add $0x8,%rsp|pop %rbx|pop %rbp|ret"},
		{name: "a tail call", exit: 0x40101a, site: 0x40101a, n: 5, insts: "jmp 0x402000"},
		{name: "the last return, over the padding", exit: 0x40101f, site: 0x40101f, n: 5, insts: "ret"},
		{name: "a jump through a register", indirect: true, exit: 0x40100d, why: ErrNotRelocatable},
		{name: "no epilogue where a jump table may land", indirect: true, exit: 0x401018, why: ErrBranchInto},
		{name: "but the exit itself and padding", indirect: true, exit: 0x40101f, site: 0x40101f, n: 5, insts: "ret"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := planExit(t, AMD64, exitCode(t, c.indirect), exitStart, exitEnd, c.exit, c.short)
			if c.n == 0 {
				if err == nil || (c.why != nil && !errors.Is(err, c.why)) {
					t.Fatalf("patch %+v, err %v; want %v", p, err, c.why)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Site != c.site || len(p.Orig) != c.n || p.Short != c.short {
				t.Fatalf("patch at %#x of %d bytes (short %v), want %#x, %d", p.Site, len(p.Orig), p.Short, c.site, c.n)
			}
			var texts []string
			code := p.Orig
			for _, in := range p.Insts {
				texts = append(texts, strings.Join(strings.Fields(disassemble(t, code[:in.Len], 0x401000)[0]), " "))
				code = code[in.Len:]
			}
			if got := strings.Join(texts, "|"); got != c.insts && !(strings.HasPrefix(got, "jmp") && strings.HasPrefix(c.insts, "jmp")) {
				t.Errorf("instructions %q, want %q", got, c.insts)
			}
		})
	}
}

// TestExitTrampolineAMD64 builds the trampoline of an epilogue and of a
// tail call and reads them back: the epilogue, the instrumentation, the
// exit; a PC in the instrumentation is at the exit.
func TestExitTrampolineAMD64(t *testing.T) {
	fn := exitCode(t, false)
	const tramp = 0x7f0000
	instr := []byte{0x0f, 0x31} // rdtsc, for the test
	p, err := planExit(t, AMD64, fn, exitStart, exitEnd, 0x401018, false)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := ExitTrampoline(AMD64, &p, tramp, instr)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"add $0x8,%rsp", "pop %rbx", "pop %rbp", "rdtsc", "ret"}
	var got []string
	for _, l := range disassemble(t, tr.Code, tramp) {
		got = append(got, strings.Join(strings.Fields(l), " "))
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("trampoline %q, want %q", got, want)
	}
	for pc, orig := range map[uint64]uint64{tramp: 0x401012, tramp + 4: 0x401016, tramp + 6: 0x401018, tramp + 8: 0x401018} {
		if o := tr.OrigPC(tramp, p.End(), pc); o != orig {
			t.Errorf("PC %#x maps to %#x, want %#x", pc, o, orig)
		}
	}
	// The tail call keeps its target from the trampoline.
	p, err = planExit(t, AMD64, fn, exitStart, exitEnd, 0x40101a, false)
	if err != nil {
		t.Fatal(err)
	}
	tr, err = ExitTrampoline(AMD64, &p, tramp, instr)
	if err != nil {
		t.Fatal(err)
	}
	if got := disassemble(t, tr.Code, tramp); len(got) != 2 || !strings.HasPrefix(got[1], "jmp") || !strings.Contains(got[1], "0x402000") {
		t.Errorf("tail call trampoline %q", got)
	}
}

// TestExitARM64: a return and a tail call each take one word, and run
// again after the instrumentation.
func TestExitARM64(t *testing.T) {
	const start, tramp = 0x1000, 0x2000000
	fn := a64Words(0xa8c17bfd, 0xd65f03c0, 0x14000400) // ldp x29, x30, [sp], #16; ret; b +0x1000
	instr := a64Words(0xd503201f)                      // nop, for the test
	for _, c := range []struct {
		exit uint64
		want []uint32
	}{
		{start + 4, []uint32{0xd503201f, 0xd65f03c0}},
		{start + 8, []uint32{0xd503201f, 0}}, // the B, relocated below
	} {
		p, err := planExit(t, ARM64, fn, start, start+12, c.exit, false)
		if err != nil {
			t.Fatal(err)
		}
		if p.Site != c.exit || len(p.Orig) != 4 {
			t.Fatalf("patch %+v", p)
		}
		tr, err := ExitTrampoline(ARM64, &p, tramp, instr)
		if err != nil {
			t.Fatal(err)
		}
		if len(tr.Code) != 8 {
			t.Fatalf("trampoline of %d bytes", len(tr.Code))
		}
		last := uint32(tr.Code[4]) | uint32(tr.Code[5])<<8 | uint32(tr.Code[6])<<16 | uint32(tr.Code[7])<<24
		if c.want[1] != 0 && last != c.want[1] {
			t.Errorf("exit %#x: last word %#08x, want %#08x", c.exit, last, c.want[1])
		}
		if c.want[1] == 0 {
			b, _ := a64Branch(tramp+4, start+8+0x1000)
			if last != b {
				t.Errorf("tail call: %#08x, want B to %#x (%#08x)", last, start+8+0x1000, b)
			}
		}
	}
	if _, err := ARM64.PlanExits(fn, start, start+12, true); !errors.Is(err, ErrTooShort) {
		t.Errorf("a short exit patch on arm64: %v", err)
	}
}

// TestScanCode: the direct jumps' targets of a piece of code, a cold
// part's jump back into its function among them (calls and indirect
// jumps are not jumps to a place inside code), and where direct calls
// return.
func TestScanCode(t *testing.T) {
	const start = 0x401000
	// jne +2; call +0; jmp +3; jmp *%rax; nop; jmp -15
	code := hexs(t, "7502 e8 00000000 e9 03000000 ffe0 90 ebf1")
	got := ScanCode(AMD64, code, start)
	if want := []uint64{start + 2, start + 4, start + 0xf}; fmt.Sprint(got.Jumps) != fmt.Sprint(want) {
		t.Errorf("targets %#x, want %#x", got.Jumps, want)
	}
	if want := map[uint64][]uint64{start + 7: {start + 7}}; fmt.Sprint(got.Returns) != fmt.Sprint(want) {
		t.Errorf("returns %#x, want %#x", got.Returns, want)
	}
}
