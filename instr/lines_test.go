package instr

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/arch/x86/x86asm"
)

// TestFlagsFastAgrees: the opcode table of flagsFast says what x86asm
// says, at every byte offset of the host's libc, of what an instruction
// does to the flags (written, or left), and of its length.
func TestFlagsFastAgrees(t *testing.T) {
	f, err := elf.Open("/usr/lib/x86_64-linux-gnu/libc.so.6")
	if err != nil {
		t.Skip("no host libc to read")
	}
	defer f.Close()
	code, err := f.Section(".text").Data()
	if err != nil {
		t.Fatal(err)
	}
	code = code[:min(len(code), 1<<18)]
	known := 0
	for off := range code {
		b := code[off:min(len(code), off+15)]
		n, flags := flagsFast(b, 0x1000+uint64(off))
		if flags == flagsUnknown {
			continue
		}
		known++
		x, err := decodeAMD64Bare(b, 0x1000+uint64(off))
		if err != nil {
			t.Fatalf("% x: fast path %d bytes, x86asm: %v", b, n, err)
		}
		want := flagsUnknown
		switch {
		case flagsWritten[x.asm.Op]:
			want = flagsKilled
		case flagsUntouched[x.asm.Op]:
			want = flagsKept
		}
		if n != x.Len || flags != want {
			t.Fatalf("% x (%v): fast path %d bytes, flags %d; x86asm %d bytes, flags %d", b[:x.Len], x.asm, n, flags, x.Len, want)
		}
	}
	if known < len(code)/10 {
		t.Errorf("the fast path knew %d of %d offsets", known, len(code))
	}
}

// TestFlagsDead: the flags are dead where a comparison or an ALU
// operation writes them before anything reads them, on the path through
// direct jumps and calls; not known (false) at a branch that reads
// them, a return (hand-written assembly may return a result in the
// flags: cmp; ret), an indirect call, setcc, cmov or the end of the
// code.
func TestFlagsDead(t *testing.T) {
	for _, c := range []struct {
		name string
		code []byte
		dead bool
	}{
		{"mov then cmp", []byte{0x48, 0x89, 0xc7, 0x48, 0x39, 0xf7}, true},
		{"lea then test", []byte{0x48, 0x8d, 0x40, 0x01, 0x85, 0xc0}, true},
		{"a call to a function that compares", []byte{0xe8, 0x01, 0, 0, 0, 0xc3, 0x55, 0x48, 0x39, 0xf7}, true},
		{"a call to a function that returns", []byte{0xe8, 0x00, 0, 0, 0, 0xc3}, false},
		{"a call out of the code", []byte{0xe8, 0x00, 0x10, 0, 0}, false},
		{"an indirect call", []byte{0xff, 0xd0}, false},
		{"a jump to a comparison", []byte{0xeb, 0x01, 0xc3, 0x48, 0x39, 0xf7}, true},
		{"a return after a pop", []byte{0x5d, 0xc3}, false},
		{"cmp; ret: a result in the flags", []byte{0x48, 0x89, 0xc7, 0xc3}, false},
		{"jcc", []byte{0x74, 0x02}, false},
		{"mov then setcc", []byte{0x48, 0x89, 0xc7, 0x0f, 0x94, 0xc0}, false},
		{"mov then cmov", []byte{0x48, 0x89, 0xc7, 0x48, 0x0f, 0x44, 0xc1}, false},
		{"the end of the code", []byte{0x48, 0x89, 0xc7}, false},
		{"shl then sete", []byte{0x48, 0xc1, 0xe0, 0x03, 0x0f, 0x94, 0xc0}, false},
		{"adc reads only CF, which incq keeps", []byte{0x48, 0x11, 0xc0}, true},
		{"a loop of jumps", []byte{0xeb, 0xfe}, false},
	} {
		if got := AMD64.FlagsDead(c.code, 0x1000, 0x1000); got != c.dead {
			t.Errorf("%s (% x): dead %v, want %v", c.name, c.code, got, c.dead)
		}
	}
	if ARM64.FlagsDead([]byte{0x1f, 0x20, 0x03, 0xd5}, 0x1000, 0x1000) {
		t.Error("arm64: flags dead, where its count changes none")
	}
}

// TestLineCodeAMD64: a count where the flags may be live saves rax in
// the block and restores it, changing no flag (no instruction of it is
// one that writes them), with a rollback for a thread stopped before the
// store (back to the start) and after it (on past the code); where the
// flags are dead, incq; coverage, one movq of 1.
func TestLineCodeAMD64(t *testing.T) {
	const counter, save = 0x40, 0x800
	dc, ok := AMD64.LineCode(CountPerThread, LineSite{Counter: counter, Save: save})
	if !ok {
		t.Fatal("no line code")
	}
	var ops []x86asm.Op
	for off := 0; off < len(dc.Code); {
		x, err := decodeAMD64Bare(dc.Code[off:], 0)
		if err != nil {
			t.Fatal(err)
		}
		if flagsWritten[x.asm.Op] {
			t.Errorf("%v writes the flags", x.asm)
		}
		ops = append(ops, x.asm.Op)
		off += x.Len
	}
	if want := []x86asm.Op{x86asm.MOV, x86asm.MOV, x86asm.LEA, x86asm.MOV, x86asm.MOV}; !slices.Equal(ops, want) {
		t.Errorf("ops %v, want %v", ops, want)
	}
	if len(dc.Rollback) != 2 || dc.Rollback[0].Resume != 0 || dc.Rollback[1].Resume != len(dc.Code) ||
		dc.Rollback[0].To != dc.Rollback[1].From || dc.Rollback[1].To != len(dc.Code) ||
		dc.Rollback[0].Restore[0] != (SavedReg{Reg: 0, Offset: save}) {
		t.Errorf("rollback %+v", dc.Rollback)
	}
	if disp := binary.LittleEndian.Uint32(dc.Code[5:]); disp != save {
		t.Errorf("rax saved at %#x, want %#x", disp, save)
	}
	inc, _ := AMD64.LineCode(CountPerThread, LineSite{Counter: counter, Save: save, NoFlags: true})
	if !bytes.Equal(inc.Code, AMD64.CountCode(CountPerThread, counter)) || inc.Rollback != nil {
		t.Errorf("flags dead: % x, want incq", inc.Code)
	}
	cover, _ := AMD64.LineCode(CountPerThread, LineSite{Counter: counter, Save: save, Cover: true})
	if x, err := decodeAMD64Bare(cover.Code, 0); err != nil || x.asm.Op != x86asm.MOV || x.Len != len(cover.Code) {
		t.Errorf("coverage: % x (%v)", cover.Code, err)
	}
	if _, ok := AMD64.LineCode(CountShared, LineSite{Counter: counter}); ok {
		t.Error("a shared count on amd64")
	}
}

// TestLineCodeARM64: x16 and x17 pushed, CountCode, popped; refused for
// Go code, whose stack may end below the stack pointer, and without LSE.
func TestLineCodeARM64(t *testing.T) {
	const counter = 0x7f0000001000
	dc, ok := ARM64.LineCode(CountShared, LineSite{Counter: counter})
	if !ok {
		t.Fatal("no line code")
	}
	words := len(dc.Code) / 4
	if binary.LittleEndian.Uint32(dc.Code) != 0xa9bf47f0 || binary.LittleEndian.Uint32(dc.Code[len(dc.Code)-4:]) != 0xa8c147f0 {
		t.Errorf("not between stp x16, x17, [sp, #-16]! and ldp x16, x17, [sp], #16: % x", dc.Code)
	}
	if !bytes.Equal(dc.Code[4:len(dc.Code)-4], ARM64.CountCode(CountShared, counter)) || words < 5 {
		t.Errorf("the count is not CountCode's: % x", dc.Code)
	}
	if _, ok := ARM64.LineCode(CountShared, LineSite{Counter: counter, GoStack: true, GoAsm: true}); ok {
		t.Error("line code for Go assembly")
	}
	if _, ok := ARM64.LineCode(CountPerThread, LineSite{Counter: counter}); ok {
		t.Error("line code without LSE")
	}
}

// TestGoLineCodeARM64 runs the count of a line in Go code: it adds one
// to the counter, three times over, and changes nothing but x18 and x27,
// Go's free registers: not sp, not the stack (nothing is written but the
// counter), not the flags.
func TestGoLineCodeARM64(t *testing.T) {
	const counter = 0x7f0000001000
	dc, ok := ARM64.LineCode(CountShared, LineSite{Counter: counter, GoStack: true})
	if !ok || len(dc.Rollback) != 0 {
		t.Fatalf("no Go line code, or one with a rollback: %+v", dc)
	}
	runGoLineCode(t, "count", dc.Code, 0, counter, false)
	if _, ok := ARM64.LineCode(CountPerThread, LineSite{Counter: counter, GoStack: true}); ok {
		t.Error("Go line code in per-thread blocks")
	}
}

// runGoLineCode runs a Go line's count code three times in the A64
// interpreter, the thread pointer tp, and checks that the counter at
// addr counts each run (a cover: is one), and that nothing changed but
// x18, x27 and the counter: not sp, not the stack, not the flags.
func runGoLineCode(t *testing.T, what string, code []byte, tp, addr uint64, cover bool) {
	t.Helper()
	const at = 0x40000
	m := newMem().poke64(addr, 0)
	r := &fakeRegs{flags: 0x60000000, tp: tp}
	for i := range r.r {
		r.r[i] = 0x1111 * uint64(i+1)
	}
	r.r[31] = 0x7ffff000 // sp
	want := r.r
	for n := uint64(1); n <= 3; n++ {
		r.pc = at
		if err := a64Exec(code, at, r, m); err != nil {
			t.Fatal(err)
		}
		if got := m.peek64(addr); got != n && !(cover && got == 1) {
			t.Fatalf("%s: counter %d after %d runs", what, got, n)
		}
	}
	for i := range r.r {
		if i != a64X18 && i != a64X27 && r.r[i] != want[i] {
			t.Errorf("%s: x%d changed: %#x, was %#x", what, i, r.r[i], want[i])
		}
	}
	if r.flags != 0x60000000 || r.pc != at+uint64(len(code)) || len(m.b) != 8 {
		t.Errorf("%s: flags %#x, pc %#x, %d bytes written (want the counter's 8)", what, r.flags, r.pc, len(m.b))
	}
}

// TestGoLineAreaCodeARM64 runs the count of a line in Go code without LSE:
// in the thread's area, which the thread pointer names, it adds one to
// the counter three times over (or a cover stores one) and changes
// nothing but x18 and x27, not sp, not the stack, not the flags; a thread
// stopped between the load and the store starts again from the
// beginning. Without a thread pointer, or in Go assembly, there is none.
func TestGoLineAreaCodeARM64(t *testing.T) {
	const area, counter = 0x7f0000040000, 0x2468
	site := LineSite{Counter: counter, GoStack: true, ThreadPointer: true, Table: 0x7f0000000000, Areas: 0x10000}
	for _, cover := range []bool{false, true} {
		site.Cover = cover
		dc, ok := ARM64.LineCode(CountInArea, site)
		if !ok {
			t.Fatalf("cover %v: no Go line code in the thread's area", cover)
		}
		what := map[bool]string{false: "count", true: "cover"}[cover]
		runGoLineCode(t, what, dc.Code, area, area+counter, cover)
		text := gnuDisasm(t, dc.Code, 0)
		if cover {
			if len(dc.Rollback) != 0 {
				t.Errorf("a cover's rollback %+v", dc.Rollback)
			}
			continue
		}
		load := slices.Index(text, "ldr x27, [x18]")
		if load < 0 || len(dc.Rollback) != 1 || !cmp.Equal(dc.Rollback[0], Rollback{From: 4 * (load + 1), To: len(dc.Code)}) {
			t.Errorf("rollback %+v of\n%s", dc.Rollback, strings.Join(text, "\n"))
		}
	}
	for _, s := range []LineSite{
		{Counter: counter, GoStack: true, Table: 0x7f0000000000, Areas: 0x10000},
		{Counter: counter, GoStack: true, GoAsm: true, ThreadPointer: true, Table: 0x7f0000000000, Areas: 0x10000},
	} {
		if _, ok := ARM64.LineCode(CountInArea, s); ok {
			t.Errorf("Go line code in the thread's area for %+v", s)
		}
	}
}

// TestStraightTo: code runs straight on over moves and arithmetic, not
// over a branch, a call, a return, a system call or a trap, nor to an
// address inside an instruction.
func TestStraightTo(t *testing.T) {
	const at = 0x1000
	movs := []byte{0x48, 0x89, 0xf8, 0x48, 0x01, 0xf0} // mov; add
	for _, c := range []struct {
		name string
		code []byte
		to   uint64
		want bool
	}{
		{"moves", movs, at + 6, true},
		{"into an instruction", movs, at + 4, false},
		{"a conditional jump", append([]byte{0x74, 0x00}, movs...), at + 5, false},
		{"a call", append([]byte{0xe8, 0, 0, 0, 0}, movs...), at + 8, false},
		{"a return", append([]byte{0xc3}, movs...), at + 4, false},
		{"a system call", append([]byte{0x0f, 0x05}, movs...), at + 5, false},
		{"an indirect jump", append([]byte{0xff, 0xe0}, movs...), at + 5, false},
		{"ud2", append([]byte{0x0f, 0x0b}, movs...), at + 5, false},
		{"the end of the code", movs[:3], at + 6, false},
	} {
		if got := StraightTo(AMD64, c.code, at, c.to); got != c.want {
			t.Errorf("amd64 %s: %v, want %v", c.name, got, c.want)
		}
	}
	le := func(ws ...uint32) []byte {
		var b []byte
		for _, w := range ws {
			b = binary.LittleEndian.AppendUint32(b, w)
		}
		return b
	}
	const add, svc, ret, b = 0x8b010000, 0xd4000001, 0xd65f03c0, 0x14000002
	for _, c := range []struct {
		name string
		code []byte
		want bool
	}{
		{"adds", le(add, add, add), true},
		{"svc", le(add, svc, add), false},
		{"ret", le(ret, add, add), false},
		{"b", le(b, add, add), false},
	} {
		if got := StraightTo(ARM64, c.code, at, at+8); got != c.want {
			t.Errorf("arm64 %s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestPatchBefore: the code of Patch.Before runs before its instruction's
// relocated copy, after the ones before it, on both architectures, and
// the copies' addresses map back to the original ones.
func TestPatchBefore(t *testing.T) {
	code := []byte{0x48, 0x89, 0xf8, 0x48, 0x01, 0xf0, 0xc3}
	p, err := AMD64.PlanPatch(code, 0x1000, 0x1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Insts) != 2 {
		t.Fatalf("%d instructions, want 2", len(p.Insts))
	}
	p.Before = [][]byte{{0x90}, {0x90, 0x90}}
	tr, err := AMD64.Trampoline(&p, 0x2000, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{0x90, 0x48, 0x89, 0xf8, 0x90, 0x90, 0x48, 0x01, 0xf0}
	// (The code before the second instruction maps to it too: a thread
	// stopped there has not run it.)
	if !bytes.HasPrefix(tr.Code, want) || tr.PCs[0].Tramp != 0x2001 || tr.PCs[1].Tramp != 0x2004 || tr.PCs[1].Orig != 0x1003 ||
		tr.PCs[2].Tramp != 0x2006 || tr.PCs[2].Orig != 0x1003 {
		t.Errorf("code % x, pcs %+v", tr.Code, tr.PCs)
	}
	a := binary.LittleEndian.AppendUint32(nil, 0x8b010000)
	pa, err := ARM64.PlanPatch(append(a, a...), 0x1000, 0x1000)
	if err != nil {
		t.Fatal(err)
	}
	nop := binary.LittleEndian.AppendUint32(nil, a64NOPWord)
	pa.Before = [][]byte{nop}
	ta, err := ARM64.Trampoline(&pa, 0x2000, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(ta.Code, append(nop, a...)) || ta.PCs[0].Tramp != 0x2004 {
		t.Errorf("arm64 code % x, pcs %+v", ta.Code, ta.PCs)
	}
}

// TestScanRefs: the scan notes where PC-relative operands of other
// instructions point (lea of a table), not branch targets.
func TestScanRefs(t *testing.T) {
	code := []byte{
		0x48, 0x8d, 0x05, 0x10, 0x00, 0x00, 0x00, // lea 0x10(%rip),%rax -> 0x1017
		0xe8, 0x00, 0x01, 0x00, 0x00, // call 0x110c
		0xc3,
	}
	s := ScanCode(AMD64, code, 0x1000)
	if len(s.Refs) != 1 || s.Refs[0] != 0x1017 {
		t.Errorf("refs %#x, want [0x1017]", s.Refs)
	}
	m := MapCode(AMD64, code, 0x1000, [][2]uint64{{0x1000, 0x100d}})
	if len(m.Refs) != 1 || m.Refs[0] != 0x1017 {
		t.Errorf("map refs %#x, want [0x1017]", m.Refs)
	}
}
