package instr

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestPlanPatchAMD64(t *testing.T) {
	const start = 0x401000
	tests := []struct {
		name string
		code string // the function, hex
		site uint64
		orig string // the bytes replaced, hex; empty for a refusal
		err  error
	}{
		{"O0 prologue", "55 4889e5 4883ec10 897dfc c9 c3", start, "55 4889e5 4883ec10", nil},
		{"endbr64 stays", "f30f1efa 55 4889e5 4883ec10 c3", start, "55 4889e5 4883ec10", nil},
		{"long first instruction", "488b05 10000000 c3", start, "488b05 10000000", nil},
		{"jcc rel8 relocated", "85ff 7403 31c0 c3 b801000000 c3", start, "85ff 7403 31c0", nil},
		{"lea and ret then padding", "8d047f c3 cc cc cc cc", start, "8d047f c3 cc", nil},
		{"ret then nop padding", "89f8 c3 0f1f4000", start, "89f8 c3 0f1f4000", nil},
		{"jmp ends the patch", "eb00 c3", start, "", ErrTooShort},
		{"too short", "31c0 c3", start, "", ErrTooShort},
		{"code after ret", "31c0 c3 31c0 c3", start, "", ErrTooShort},
		{"call ends the patch", "55 e8 00000000 c3", start, "55 e8 00000000", nil},
		{"call through the GOT", "ff15 10000000 c3", start, "ff15 10000000", nil},
		{"call returns inside the patch", "ffd0 31c0 31c0 c3", start, "", ErrNotRelocatable},
		{"call through rsp", "55 ff542408 c3", start, "", ErrNotRelocatable},
		{"syscall in the patch", "0f05 31c0 31c0 c3", start, "", ErrNotRelocatable},
		{"int3 in the patch", "cc 31c0 31c0 c3", start, "", ErrNotRelocatable},
		{"loop back into the patch", "31c0 ffc0 83f80a 75f9 c3", start, "", ErrBranchInto},
		{"loop to the first byte", "ffc0 83f80a 75f9 c3", start, "ffc0 83f80a", nil},
		{"jrcxz", "e3 00 31c0 31c0 c3", start, "", ErrNotRelocatable},
		{"site at a later entry", "4c8d6424f8 4d3b6610 76f5 55 4889e5 4883ec10 c3", start + 11, "55 4889e5 4883ec10", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := AMD64.PlanPatch(hexs(t, tt.code), start, tt.site)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("PlanPatch = %x, %v; want %v", p.Orig, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := hexs(t, tt.orig); !bytes.Equal(p.Orig, want) {
				t.Errorf("replaced %x, want %x", p.Orig, want)
			}
			if p.Site < tt.site {
				t.Errorf("site %#x before %#x", p.Site, tt.site)
			}
		})
	}
}

// TestTrampolineAMD64 checks a trampoline's code with the GNU disassembler:
// the count, the relocated instructions with their targets unchanged, the
// jump back, and the jump written over the site.
func TestTrampolineAMD64(t *testing.T) {
	need(t, "objdump")
	const (
		start = 0x401000
		tramp = 0x400000
	)
	fn := hexs(t, "85ff 740a 488b0510000000 31c0 c3 b801000000 c3")
	p, err := AMD64.PlanPatch(fn, start, start)
	if err != nil {
		t.Fatal(err)
	}
	kind, err := AMD64.Counting(0)
	if err != nil || kind != CountPerThread {
		t.Fatalf("Counting = %v, %v", kind, err)
	}
	tr, err := AMD64.Trampoline(&p, tramp, AMD64.CountCode(kind, 24))
	if err != nil {
		t.Fatal(err)
	}
	got := disassemble(t, tr.Code, tramp)
	want := []string{
		"incq   %gs:0x18",
		"test   %edi,%edi",
		"je     0x40100e", // the jcc's target, from its new place
		"mov    0x1003(%rip),%rax        # 0x40101b", // the same address
		"jmp    0x40100b", // back after the patch
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("trampoline:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	wantPCs := []PCMap{{tramp + 9, start}, {tramp + 11, start + 2}, {tramp + 17, start + 4}}
	if len(tr.PCs) != len(wantPCs) {
		t.Fatalf("PCs %x, want %x", tr.PCs, wantPCs)
	}
	for i := range wantPCs {
		if tr.PCs[i] != wantPCs[i] {
			t.Errorf("PCs[%d] = %x, want %x", i, tr.PCs[i], wantPCs[i])
		}
	}
	for _, c := range []struct{ pc, want uint64 }{
		{tramp, start}, {tramp + 4, start}, {tramp + 9, start}, {tramp + 12, start + 2},
		{tramp + 17, start + 4}, {tramp + uint64(len(tr.Code)) - 2, p.End()},
	} {
		if got := tr.OrigPC(tramp, p.End(), c.pc); got != c.want {
			t.Errorf("OrigPC(%#x) = %#x, want %#x", c.pc, got, c.want)
		}
	}
	jump, err := AMD64.PatchJump(&p, tramp)
	if err != nil {
		t.Fatal(err)
	}
	if len(jump) != len(p.Orig) {
		t.Fatalf("jump of %d bytes over %d", len(jump), len(p.Orig))
	}
	got = disassemble(t, jump, start)
	if got[0] != "jmp    0x400000" || !strings.HasPrefix(got[1], "int3") {
		t.Errorf("patch: %q", got)
	}
}

// TestTrampolineCallAMD64: a call in a patch pushes its original return
// address and jumps, directly or through its own operand.
func TestTrampolineCallAMD64(t *testing.T) {
	need(t, "objdump")
	const start, tramp = 0x555555554000, 0x555555550000
	for _, c := range []struct {
		name, code string
		jump       string
	}{
		{"direct", "55 e8 10000000 c3", "jmp    0x555555554016"},
		{"through a register", "55 4889e5 41ffd3 c3", "jmp    *%r11"},
		{"through the GOT", "ff15 10000000 c3", "jmp    *0x3ffc(%rip)        # 0x555555554016"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := AMD64.PlanPatch(hexs(t, c.code), start, start)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := AMD64.Trampoline(&p, tramp, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := disassemble(t, tr.Code, tramp)
			ret := p.End()
			want := []string{
				"lea    -0x8(%rsp),%rsp",
				fmt.Sprintf("movl   $0x%x,(%%rsp)", uint32(ret)),
				fmt.Sprintf("movl   $0x%x,0x4(%%rsp)", uint32(ret>>32)),
				c.jump,
			}
			got = got[len(got)-5 : len(got)-1] // the call's expansion, before the jump back
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("call relocated as:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

func TestTrampolineReachAMD64(t *testing.T) {
	p, err := AMD64.PlanPatch(hexs(t, "488b0510000000 c3"), 0x401000, 0x401000)
	if err != nil {
		t.Fatal(err)
	}
	_, err = AMD64.Trampoline(&p, 0x401000+3<<30, nil)
	if !errors.Is(err, ErrOutOfReach) || !errors.Is(err, ErrNotRelocatable) {
		t.Errorf("trampoline 3 GiB away: %v, want out of reach", err)
	}
	if _, err := AMD64.PatchJump(&p, 0x401000+3<<30); !errors.Is(err, ErrOutOfReach) {
		t.Errorf("jump 3 GiB away: %v, want out of reach", err)
	}
}

func TestPaddingAfter(t *testing.T) {
	for _, c := range []struct {
		code string
		end  uint64
		want int
	}{
		{"cccccccc cccccccc cccccccc cccccccc", 0x1004, 12},
		{"0f1f4000 662e0f1f840000000000 90 90", 0x1000, 0}, // aligned already
		{"0f1f4000 662e0f1f840000000000 90 90", 0x1010 - 14, 14},
		{"cc cc 55 cc", 0x100c, 0}, // push: the next function
	} {
		if got := PaddingAfter(AMD64, hexs(t, c.code), c.end); got != c.want {
			t.Errorf("PaddingAfter(%s, %#x) = %d, want %d", c.code, c.end, got, c.want)
		}
	}
}

// disassemble returns objdump's text of code at addr, one line per
// instruction.
func disassemble(t *testing.T, code []byte, addr uint64) []string {
	_, lines := disassembleAt(t, code, addr)
	return lines
}

// disassembleAt returns the address ("0x..." as objdump prints it) and the
// text of each instruction of code at addr, by the GNU disassembler.
func disassembleAt(t *testing.T, code []byte, addr uint64) (addrs, lines []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "code.bin")
	if err := os.WriteFile(path, code, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("objdump", "-D", "-b", "binary", "-m", "i386:x86-64",
		"--adjust-vma="+strconv.FormatUint(addr, 10), path).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.SplitN(l, "\t", 3)
		if len(f) == 3 && strings.HasSuffix(f[0], ":") {
			addrs = append(addrs, "0x"+strings.TrimSpace(strings.TrimSuffix(f[0], ":")))
			lines = append(lines, strings.TrimSpace(f[2]))
		}
	}
	return addrs, lines
}

// hexs decodes hex with spaces between the instructions.
func hexs(t *testing.T, s string) []byte {
	t.Helper()
	return unhex(t, strings.ReplaceAll(s, " ", ""))
}

// TestPunWindowAMD64: push %rbx (1 byte) and mov %rsi,%rbx (3) before
// a loop's head: the patch of push %rbx replaces it alone; the jump's
// last bytes are mov's and the loop head's first, unchanged, so its
// trampoline can go at one address only; mov's jump (its own 3 bytes,
// the loop head's first 2 after) lands in a window of 64 KiB (below it:
// those bytes make the displacement negative), and with a REX prefix, in
// one of 256 bytes above it.
func TestPunWindowAMD64(t *testing.T) {
	const start = 0x55555555daf0
	// push %rbx; mov %rsi,%rbx; loop: movzbl 8(%rbx),%edx; ...; jmp loop
	fn := hexs(t, "53 4889f3 0fb65308 85d2 75f8 5b c3")
	p, err := AMD64.PlanOwn(fn, start, start)
	if err != nil || !bytes.Equal(p.Orig, fn[:1]) || p.End() != start+1 {
		t.Fatalf("PlanOwn: %x, end %#x, %v; want push %%rbx alone", p.Orig, p.End(), err)
	}
	lo, hi, ok := AMD64.PunWindow(&p, fn[1:5])
	rel := uint64(int64(int32(0x0ff38948))) // 48 89 f3 0f
	if !ok || lo != start+5+rel || hi != lo+1 {
		t.Errorf("window [%#x, %#x) %v, want %#x alone", lo, hi, ok, start+5+rel)
	}
	m, err := AMD64.PlanOwn(fn, start, start+1)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi, ok = AMD64.PunWindow(&m, fn[4:6])
	// (0f b6: a displacement of 0xb60fXXXX, below the jump.)
	below := int64(-0x49f10000)
	if want := uint64(int64(start+1+5) + below); !ok || lo != want || hi != want+1<<16 {
		t.Errorf("mov's window [%#x, %#x) %v, want [%#x, %#x)", lo, hi, ok, want, want+1<<16)
	}
	for _, tramp := range []uint64{lo, lo + 0x1234, hi - 1} {
		m.Punned = fn[4:6]
		j, err := AMD64.PatchJump(&m, tramp)
		if err != nil {
			t.Fatal(err)
		}
		// The jump as the CPU reads it: the 3 bytes written, then the
		// code's own two.
		full := append(j, fn[4:6]...)
		if len(j) != 3 || full[0] != 0xe9 {
			t.Fatalf("jump %x", j)
		}
		if got := disassemble(t, full, start+1); got[0] != fmt.Sprintf("jmp    0x%x", tramp) {
			t.Errorf("jump to %#x reads %q", tramp, got[0])
		}
	}
	if _, err := AMD64.PatchJump(&m, hi); err == nil {
		t.Errorf("jump to %#x, past the window, accepted", hi)
	}
	m.Prefix = []byte{0x48}
	lo, hi, ok = AMD64.PunWindow(&m, fn[4:7])
	if want := start + 1 + 6 + uint64(0x53b60f)<<8; !ok || lo != want || hi != want+256 {
		t.Errorf("prefixed window [%#x, %#x) %v, want [%#x, %#x)", lo, hi, ok, want, want+256)
	}
	m.Punned = fn[4:7]
	j, err := AMD64.PatchJump(&m, lo+7)
	if err != nil || !bytes.Equal(j[:2], []byte{0x48, 0xe9}) {
		t.Fatalf("prefixed jump % x, %v", j, err)
	}
	if got := disassemble(t, append(j, fn[4:7]...), start+1); !strings.HasSuffix(got[0], fmt.Sprintf("jmp 0x%x", lo+7)) {
		t.Errorf("prefixed jump reads %q", got[0])
	}
	if _, _, ok := ARM64.PunWindow(&p, fn[1:5]); ok {
		t.Error("a punned jump on arm64")
	}
}

// TestShortPatchAMD64: a short jump over push %rbx; mov %rsi,%rbx's
// first instruction reaches a hop 126 bytes back or 129 on, padded with
// int3 over the rest of the instruction, and no further; the hop is a
// jump of full reach.
func TestShortPatchAMD64(t *testing.T) {
	const start = 0x401000
	fn := hexs(t, "4889f3 0fb65308 85d2 75f8 5b c3")
	p, err := AMD64.PlanOwn(fn, start, start)
	if err != nil {
		t.Fatal(err)
	}
	p.Short = true
	back, fwd := AMD64.ShortReach()
	for _, hop := range []uint64{start - uint64(back), start + uint64(fwd)} {
		j, err := AMD64.PatchJump(&p, hop)
		if err != nil {
			t.Fatalf("hop %#x: %v", hop, err)
		}
		if got := disassemble(t, j, start); got[0] != fmt.Sprintf("jmp    0x%x", hop) || len(j) != len(p.Orig) || j[2] != 0xcc {
			t.Errorf("short jump %x reads %q", j, got)
		}
	}
	if _, err := AMD64.PatchJump(&p, start+uint64(fwd)+1); !errors.Is(err, ErrOutOfReach) {
		t.Errorf("hop out of reach: %v", err)
	}
	hop, err := AMD64.Jump(start+0x80, 0x400000)
	if err != nil {
		t.Fatal(err)
	}
	if got := disassemble(t, hop, start+0x80); got[0] != "jmp    0x400000" {
		t.Errorf("hop reads %q", got)
	}
}

// TestDepthCodeAMD64 checks the shadow-stack code of both forms with the
// GNU disassembler (branch targets by the instruction they land on), and
// its rollback ranges.
func TestDepthCodeAMD64(t *testing.T) {
	need(t, "objdump")
	loop := []string{
		"mov    %gs:0x1010,%rcx",
		"test   %rcx,%rcx",
		"je     <push>",
	}
	cForm := func(done ...string) []string {
		return append(append([]string{
			"mov    %rcx,%gs:0x1000",
		}, loop...),
			append([]string{
				"cmp    %gs:0x1028(,%rcx,8),%rsp",
				"je     <done>",
				"jb     <push> <loop>",
				"dec    %rcx",
				"je     <push>",
				"cmp    %gs:0x1028(,%rcx,8),%rsp",
				"jmp    <loop>",
				"cmp    $0x400,%rcx <push>",
				"jae    <done>",
				"mov    %rsp,%gs:0x1030(,%rcx,8)",
				"inc    %rcx",
				"mov    %rcx,%gs:0x1010",
				"cmp    %gs:0x1018,%rcx",
				"jbe    <done>",
				"mov    %rcx,%gs:0x1018",
			}, done...)...)
	}
	for _, c := range []struct {
		goABI, top bool
		want       []string
	}{
		{false, false, cForm("mov    %gs:0x1000,%rcx <done>")},
		{false, true, append([]string{
			"cmp    %rsp,%gs:0x1028",
			"je     <end>",
		}, cForm(
			"mov    %rsp,%gs:0x1028 <done>",
			"mov    %gs:0x1000,%rcx",
		)...)},
		{true, true, append(append([]string{ // (Top is the C form's alone)
			"mov    %rcx,%gs:0x1000",
			"mov    %rax,%gs:0x1008",
			"cmp    %gs:0x1020,%r14",
			"je     <key>",
			"mov    %r14,%gs:0x1020",
			"movq   $0x0,%gs:0x1010",
			"mov    0x8(%r14),%rax <key>",
			"sub    %rsp,%rax",
		}, loop...),
			"cmp    %gs:0x1028(,%rcx,8),%rax",
			"je     <done>",
			"ja     <push> <loop>",
			"dec    %rcx",
			"je     <push>",
			"cmp    %gs:0x1028(,%rcx,8),%rax",
			"jmp    <loop>",
			"cmp    $0x400,%rcx <push>",
			"jae    <done>",
			"mov    %rax,%gs:0x1030(,%rcx,8)",
			"inc    %rcx",
			"mov    %rcx,%gs:0x1010",
			"cmp    %gs:0x1018,%rcx",
			"jbe    <done>",
			"mov    %rcx,%gs:0x1018",
			"mov    %gs:0x1008,%rax <done>",
			"mov    %gs:0x1000,%rcx",
		)},
	} {
		d, ok := AMD64.DepthCode(Depth{Offset: 0x1000, Slots: 1024, GoABI: c.goABI, Top: c.top})
		if !ok {
			t.Fatal("no depth code")
		}
		code, rollback := d.Code, d.Rollback
		got := labelTargets(t, code)
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("Go %v, top %v:\n%s\nwant:\n%s", c.goABI, c.top, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
		}
		// Rollback: nothing saved before the first save (nor in the
		// top's test before it), then rcx, then (Go) rax too, to the
		// end.
		wantSaved := []int{0, 1}
		if c.goABI {
			wantSaved = append(wantSaved, 2)
		} else if c.top {
			wantSaved = []int{0, 0, 1}
		}
		if len(rollback) != len(wantSaved) || rollback[0].From != 0 || rollback[len(rollback)-1].To != len(code) {
			t.Fatalf("rollback %+v", rollback)
		}
		for i, r := range rollback {
			if len(r.Restore) != wantSaved[i] || (i > 0 && r.From != rollback[i-1].To) || r.Resume != 0 {
				t.Errorf("rollback %d: %+v", i, r)
			}
		}
	}
}

// labelTargets disassembles code at 0 and writes each branch's target as
// the label of the instruction it lands on (<loop>, <push>, <key>,
// <done>: the popping loop, the slots check, the key's load, the top's
// store or else the first restore), which is appended to that
// instruction's line; <end> is the code's end.
func labelTargets(t *testing.T, code []byte) []string {
	t.Helper()
	addrs, lines := disassembleAt(t, code, 0)
	label := map[string]string{"end": fmt.Sprintf("0x%x", len(code))}
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "mov    %rsp,%gs:0x1028"):
			label["done"] = addrs[i]
		case (strings.HasPrefix(l, "jb ") || strings.HasPrefix(l, "ja ")) && label["loop"] == "":
			label["loop"] = addrs[i]
		case strings.HasPrefix(l, "cmp    $0x400"):
			label["push"] = addrs[i]
		case strings.HasPrefix(l, "mov    0x8(%r14)"):
			label["key"] = addrs[i]
		case strings.HasPrefix(l, "mov    %gs:0x100") && i > len(lines)-3 && label["done"] == "":
			label["done"] = addrs[i]
		}
	}
	for i, l := range lines {
		for name, a := range label {
			if f := strings.Fields(l); len(f) == 2 && strings.HasPrefix(f[0], "j") && f[1] == a {
				lines[i] = fmt.Sprintf("%-6s <%s>", f[0], name)
			}
		}
	}
	for i := range lines {
		for name, a := range label {
			if a == addrs[i] {
				lines[i] += " <" + name + ">"
			}
		}
	}
	return lines
}

// TestRecordCodeAMD64 checks the ring's record code with the GNU
// disassembler, where its ring-full breakpoint is, and its rollback
// ranges: nothing to restore before the saves, every register until the
// commit (start again), every register after it (go on after the code).
func TestRecordCodeAMD64(t *testing.T) {
	need(t, "objdump")
	rc, ok := AMD64.RecordCode(Ring{Offset: 0x1000, Records: 4096}, RecordTag(7, true))
	if !ok {
		t.Fatal("no record code")
	}
	want := []string{
		"mov    %rax,%gs:0x1000",
		"mov    %rdx,%gs:0x1008",
		"lfence",
		"rdtsc",
		"shl    $0x20,%rdx",
		"or     %rdx,%rax",
		"mov    %gs:0x1018,%rdx",
		"sub    %gs:0x1040,%rdx",
		"cmp    $0x1000,%rdx",
		"jb     0x45",
		"mov    %rax,%gs:0x1010",
		"int3",
		"jmp    0x12",
		"mov    %gs:0x1018,%rdx",
		"and    $0xfff,%edx",
		"shl    $0x5,%edx",
		"mov    %rax,%gs:0x1080(%rdx)",
		"mov    %rsp,%gs:0x1088(%rdx)",
		"movq   $0x1d,%gs:0x1090(%rdx)",
		"incq   %gs:0x1018",
		"mov    %gs:0x1000,%rax",
		"mov    %gs:0x1008,%rdx",
	}
	addrs, got := disassembleAt(t, rc.Code, 0)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("record code:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if rc.Code[rc.Full-1] != 0xcc || fmt.Sprintf("%x", rc.Full) != strings.TrimPrefix(addrs[12], "0x") {
		t.Errorf("ring-full breakpoint ends at %#x, want before the jmp at %s", rc.Full, addrs[9])
	}
	if rc.Code[rc.Skip] != 0x72 || fmt.Sprintf("%x", rc.Skip) != strings.TrimPrefix(addrs[9], "0x") {
		t.Errorf("the branch over the breakpoint is at %#x, want the jb at %s", rc.Skip, addrs[9])
	}
	rb := rc.Rollback
	if len(rb) != 3 || rb[0].From != 0 || rb[0].To != rb[1].From || rb[1].To != rb[2].From || rb[2].To != len(rc.Code) {
		t.Fatalf("rollback ranges %+v", rb)
	}
	if len(rb[0].Restore) != 0 || len(rb[1].Restore) != 2 || rb[1].Resume != 0 || len(rb[2].Restore) != 2 || rb[2].Resume != len(rc.Code) {
		t.Errorf("rollback %+v", rb)
	}
	if _, ok := AMD64.RecordCode(Ring{Offset: 0x1000, Records: 1000}, 0); ok {
		t.Error("a ring of 1000 records (not a power of two) accepted")
	}
	// An entry's reading of the counter goes without the fence.
	entry, _ := AMD64.RecordCode(Ring{Offset: 0x1000, Records: 4096}, RecordTag(7, false))
	_, got = disassembleAt(t, entry.Code, 0)
	if slices.Contains(got, "lfence") || !slices.Contains(got, "rdtsc") || len(entry.Code) != len(rc.Code)-3 {
		t.Errorf("entry's record code:\n%s\nwant the exit's without its lfence", strings.Join(got, "\n"))
	}
}

// TestCalibrationWorkAMD64 checks the calibration's work with the GNU
// disassembler.
func TestCalibrationWorkAMD64(t *testing.T) {
	need(t, "objdump")
	_, got := disassembleAt(t, CalibrationWork(AMD64), 0)
	if len(got) != 8 || got[0] != "imul   $0x2c1b3c6d,%r8,%r8" {
		t.Errorf("calibration work: %q", got)
	}
}

// TestGoRecordCodeAMD64 checks the record code of Go code with the GNU
// disassembler: where r14 is a goroutine, the frame's key is its
// distance from g.stack.hi and the record names the goroutine, with the
// tag marked; where r14 is 0, the record has the stack pointer and no
// goroutine, the thread's.
func TestGoRecordCodeAMD64(t *testing.T) {
	need(t, "objdump")
	rc, ok := AMD64.RecordCode(Ring{Offset: 0x1000, Records: 4096, Goroutine: true}, RecordTag(7, true))
	if !ok {
		t.Fatal("no record code")
	}
	want := []string{
		"mov    %rax,%gs:0x1080(%rdx)",
		"test   %r14,%r14",
		"je     0x6d",
		"mov    0x8(%r14),%rax",
		"sub    %rsp,%rax",
		"jmp    0x70",
		"mov    %rsp,%rax",
		"mov    %rax,%gs:0x1088(%rdx)",
		"mov    %r14,%gs:0x1098(%rdx)",
		"movq   $0x4000001d,%gs:0x1090(%rdx)",
		"incq   %gs:0x1018",
	}
	_, got := disassembleAt(t, rc.Code, 0)
	at := slices.Index(got, want[0])
	if at < 0 || at+len(want) > len(got) || strings.Join(got[at:at+len(want)], "\n") != strings.Join(want, "\n") {
		t.Errorf("record code:\n%s\nwant, from the time's store:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The record a goroutine's code made, and a thread's.
	slot := make([]byte, RingRecordSize)
	binary.LittleEndian.PutUint64(slot[8:], 0x40)
	binary.LittleEndian.PutUint64(slot[16:], RecordTag(7, true)|recordGoroutine)
	binary.LittleEndian.PutUint64(slot[24:], 0xc000001000)
	if r := ReadRecord(slot); r.G != 0xc000001000 || r.Item != 7 || !r.Exit || r.SP != 0x40 {
		t.Errorf("goroutine's record read as %+v", r)
	}
	binary.LittleEndian.PutUint64(slot[16:], RecordTag(7, true))
	if r := ReadRecord(slot); r.G != 0 || r.Item != 7 {
		t.Errorf("C's record (a stale goroutine word) read as %+v", r)
	}
	binary.LittleEndian.PutUint64(slot[16:], RecordTag(7, true)|recordGoroutine)
	binary.LittleEndian.PutUint64(slot[24:], 0)
	if r := ReadRecord(slot); r.G != 0 || r.Item != 7 || r.SP != 0x40 {
		t.Errorf("Go code's record without a goroutine read as %+v", r)
	}
}

// TestDepthCodeRunsAMD64 runs the C form of the shadow-stack code on this
// machine (x86-64): a C driver maps it as a function (the code, then ret),
// sets GS to a block, and walks random trees of nested calls, each node
// calling the code first, as a profiled entry's trampoline does; after
// each call the frames on the shadow stack must be the node's depth (its
// live ancestors and itself: siblings, and subtrees returned from, popped
// by one, two or many at once), and at the end the deepest nesting must
// be the trees' deepest. The word below the stack (the last entry's
// stack pointer, DepthTop, which a code testing the top frames without a
// branch would read once every frame has returned), holds 0, then all
// ones, then a stack address above every frame, which no entry's
// matches: the depth must not depend on it.
// Both forms: with Depth.Top (a sibling call skips the rest after one
// compare) and without.
// (A branch-free test of the top two frames measured no faster here
// than the code's branches, 2-3 ns a call either way, and was not kept.)
func TestDepthCodeRunsAMD64(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("runs x86-64 code")
	}
	need(t, "gcc")
	const offset = 0x40
	for _, top := range []bool{false, true} {
		d, ok := AMD64.DepthCode(Depth{Offset: offset, Slots: 64, Top: top})
		if !ok {
			t.Fatal("no depth code")
		}
		code := append(slices.Clone(d.Code), 0xc3)
		for _, below := range []string{"0", "~0ull", "(uint64_t)__builtin_frame_address(0) + 4096"} {
			src := fmt.Sprintf(depthDriver, cArray(code), offset+DepthAreaSize(64), below, offset+DepthStack-8, offset+DepthCurrent, offset+DepthMax)
			out, err := exec.Command(buildDriver(t, src)).CombinedOutput()
			if err != nil {
				t.Fatalf("top %v, below the stack %s: driver: %v\n%s", top, below, err, out)
			}
			var calls, bad, deepest, maxDepth int
			if _, err := fmt.Sscanf(string(out), "calls=%d bad=%d deepest=%d max=%d", &calls, &bad, &deepest, &maxDepth); err != nil {
				t.Fatalf("driver said %q: %v", out, err)
			}
			t.Logf("top %v, below the stack %s: %s", top, below, strings.TrimSpace(string(out)))
			if calls < 1000 || bad != 0 || maxDepth != deepest {
				t.Errorf("top %v, below the stack %s: %d calls, %d with the wrong depth; deepest nesting %d, want %d", top, below, calls, bad, maxDepth, deepest)
			}
		}
	}
}

// depthDriver is the C driver of TestDepthCodeRunsAMD64. Its arguments:
// the code, the block's size, the value of the words below the stack,
// the offset of the word below the stack, the count's and the maximum's.
const depthDriver = `#define _GNU_SOURCE
#include <asm/prctl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static unsigned char code[] = {%s};
static uint64_t block[(%d + 7) / 8] __attribute__((aligned(64)));
static void (*depth)(void);
static int calls, bad, deepest;
static uint64_t seed = 88172645463325252ull;

static unsigned next(void) {
	seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17;
	return (unsigned)seed;
}

/* node is a profiled function at nesting k: its entry's code, then its
 * children, up to a nesting of 40. */
__attribute__((noinline)) static void node(int k) {
	volatile char pad[32];
	pad[0] = 0;
	depth();
	calls++;
	if (block[%[5]d / 8] != (uint64_t)k) bad++;
	if (k > deepest) deepest = k;
	static const int spread[8] = {0, 0, 0, 0, 1, 1, 2, 3}; /* a mean under one: trees end */
	int kids = k < 40 && calls < 1000000 ? spread[next() %% 8] : 0;
	for (int i = 0; i < kids; i++) node(k + 1);
	pad[1] = 0;
}

int main(void) {
	unsigned char *x = mmap(0, sizeof code, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (x == MAP_FAILED) return 1;
	memcpy(x, code, sizeof code);
	depth = (void (*)(void))x;
	block[%[4]d / 8] = %[3]s;
	if (syscall(SYS_arch_prctl, ARCH_SET_GS, block)) return 2;
	for (int tree = 0; tree < 20000; tree++) node(1);
	printf("calls=%%d bad=%%d deepest=%%d max=%%lu\n", calls, bad, deepest, (unsigned long)block[%[6]d / 8]);
	return 0;
}
`
