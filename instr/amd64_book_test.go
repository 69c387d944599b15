package instr

import (
	"strings"
	"testing"
)

// TestBookCodeAMD64 checks the book code of an entry and of an exit (at
// a return site: the stack pointer 8 above the entry's) with the GNU
// disassembler, where each stops for PROFILE, and its rollback ranges.
func TestBookCodeAMD64(t *testing.T) {
	need(t, "objdump")
	if 1<<figureShift != BookFigureSize {
		t.Fatalf("the closer shifts a function's number by %d, for figures of %d bytes", figureShift, BookFigureSize)
	}
	b := Book{Offset: 0x1000, Frames: 4, Funcs: 8, Clock: 0x10000}
	entry, ok := amd64{}.BookEntryCode(b, 3)
	if !ok {
		t.Fatal("no entry code")
	}
	want := []string{
		"mov    %rax,%gs:0x1000",
		"mov    %rdx,%gs:0x1008",
		"rdtsc",
		"shl    $0x20,%rdx",
		"or     %rdx,%rax",
		"mulq   %gs:0x1068",
		"shrd   $0x20,%rdx,%rax",
		"mov    %gs:0x10008,%edx",
		"cmp    %edx,%gs:0x1088",
		"je     0x45",
		"mov    %edx,%gs:0x1088",
		"jmp    0x6a",
		"mov    %gs:0x1040,%rdx",
		"cmp    $0x1100,%rdx",
		"jb     0x6a",
		"cmp    $0x11c0,%rdx",
		"jae    0x6a",
		"cmp    %rsp,%gs:-0x30(%rdx)",
		"ja     0x6b",
		"int3",
		"mov    %rax,%gs:0x0(%rdx)",
		"movq   $0x0,%gs:0x8(%rdx)",
		"mov    %rsp,%gs:0x10(%rdx)",
		"mov    %gs:0x1048,%rax",
		"mov    %rax,%gs:0x18(%rdx)",
		"movq   $0x0,%gs:0x20(%rdx)",
		"movq   $0x0,%gs:0x30(%rdx)",
		"movq   $0x3,%gs:0x28(%rdx)",
		"add    $0x40,%rdx",
		"mov    %rdx,%gs:0x1040",
		"incq   %gs:0x1298",
		"cmp    %rdx,%gs:0x1060",
		"jae    0xe6",
		"mov    %rdx,%gs:0x1060",
		"mov    %gs:0x1000,%rax",
		"mov    %gs:0x1008,%rdx",
	}
	addrs, got := disassembleAt(t, entry.Code, 0)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("entry code:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if entry.Code[entry.Stop-1] != 0xcc || addrs[20] != "0x6b" || entry.Stop != 0x6b || len(entry.Saved) != 2 {
		t.Errorf("entry's stop ends at %#x, want 0x6b, after its int3", entry.Stop)
	}
	exit, ok := amd64{}.BookExitCode(b, 3, 8)
	if !ok {
		t.Fatal("no exit code")
	}
	want = []string{
		"mov    %rax,%gs:0x1000",
		"mov    %rdx,%gs:0x1008",
		"mov    %rcx,%gs:0x1010",
		"lfence",
		"rdtsc",
		"shl    $0x20,%rdx",
		"or     %rdx,%rax",
		"mulq   %gs:0x1068",
		"shrd   $0x20,%rdx,%rax",
		"mov    %gs:0x10008,%edx",
		"cmp    %edx,%gs:0x1088",
		"je     0x51",
		"mov    %edx,%gs:0x1088",
		"jmp    0x8c",
		"mov    %rax,%gs:0x1070",
		"mov    %gs:0x1040,%rdx",
		"cmp    $0x1100,%rdx",
		"jb     0x8c",
		"cmp    $0x11c0,%rdx",
		"ja     0x8c",
		"lea    -0x8(%rsp),%rcx",
		"cmp    %rcx,%gs:-0x30(%rdx)",
		"je     0x8d",
		"ja     0x147",
		"je     0x8d",
		"int3",
		"cmpq   $0x3,%gs:-0x18(%rdx)",
		"jne    0x147",
		"sub    $0x40,%rdx",
		"mov    %rdx,%gs:0x1040",
		"sub    %gs:0x0(%rdx),%rax",
		"mov    %gs:0x1048,%rcx",
		"sub    %gs:0x18(%rdx),%rcx",
		"sub    %rcx,%rax",
		"add    %rax,%gs:-0x38(%rdx)",
		"mov    %gs:0x20(%rdx),%rcx",
		"inc    %rcx",
		"add    %rcx,%gs:-0x20(%rdx)",
		"incq   %gs:-0x10(%rdx)",
		"mov    %rax,%rcx",
		"sub    %gs:0x8(%rdx),%rcx",
		"incq   %gs:0x1280",
		"add    %rcx,%gs:0x1288",
		"mov    %gs:0x30(%rdx),%rcx",
		"add    %rcx,%gs:0x12a0",
		"decq   %gs:0x1298",
		"jne    0x147",
		"add    %rax,%gs:0x1290",
		"incq   %gs:0x12a8",
		"mov    %gs:0x20(%rdx),%rcx",
		"add    %rcx,%gs:0x12b0",
		"mov    %gs:0x1000,%rax",
		"mov    %gs:0x1008,%rdx",
		"mov    %gs:0x1010,%rcx",
	}
	_, got = disassembleAt(t, exit.Code, 0)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("exit code:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, c := range []BookCode{entry, exit} {
		rb := c.Rollback
		if len(rb) != 3 || rb[0].From != 0 || rb[0].To != rb[1].From || rb[1].To != rb[2].From || rb[2].To != len(c.Code) ||
			len(rb[0].Restore) != 0 || len(rb[1].Restore) == 0 || rb[1].Resume != 0 || rb[1].Finish || !rb[2].Finish {
			t.Errorf("rollback %+v: want nothing saved, then start again, then finish from the commit", rb)
		}
	}
	// With a closer, a check that fails calls it, then checks again.
	b.Closer = 0x7ff00000
	for _, c := range []func() (BookCode, bool){
		func() (BookCode, bool) { return amd64{}.BookEntryCode(b, 3) },
		func() (BookCode, bool) { return amd64{}.BookExitCode(b, 3, 8) },
	} {
		code, _ := c()
		_, got := disassembleAt(t, code.Code, 0)
		listing := strings.Join(got, "\n")
		if !strings.Contains(listing, "call   *0x7ff00000") || strings.Count(listing, ",%gs:-0x30(%rdx)") != 2 {
			t.Errorf("code with a closer:\n%s\nwant the closer called, and the check made again", listing)
		}
	}
	b.Closer = 0
	for _, bad := range []Book{{Offset: 0x1000, Frames: 4, Funcs: 8, Closer: 1 << 31}, {Offset: 0x1000, Frames: 1, Funcs: 8}, {Offset: 0x1001, Frames: 4, Funcs: 8}, {Offset: 1 << 31, Frames: 4, Funcs: 8}} {
		if _, ok := (amd64{}).BookEntryCode(bad, 3); ok {
			t.Errorf("book %+v accepted", bad)
		}
	}
	if _, ok := (amd64{}).BookExitCode(b, 8, 0); ok {
		t.Error("an exit of function 8 of a book of 8 accepted")
	}
}
