package elfid

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestLoadSpan(t *testing.T) {
	seg := func(vaddr, memsz uint64) *elf.Prog {
		return &elf.Prog{ProgHeader: elf.ProgHeader{Type: elf.PT_LOAD, Vaddr: vaddr, Memsz: memsz}}
	}
	tests := []struct {
		name  string
		progs []*elf.Prog
		page  uint64
		want  uint64
	}{
		{"PIE, two segments", []*elf.Prog{seg(0, 0x1234), seg(0x3010, 0x500)}, 0x1000, 0x4000},
		{"16K pages", []*elf.Prog{seg(0, 0x1234), seg(0x3010, 0x500)}, 0x4000, 0x4000},
		{"non-PIE, first not page-aligned", []*elf.Prog{seg(0x400040, 0x100), seg(0x401000, 0x2001)}, 0x1000, 0x4000},
		{"no loadable segment", []*elf.Prog{{ProgHeader: elf.ProgHeader{Type: elf.PT_NOTE}}}, 0x1000, 0},
		{"a page size that is none", []*elf.Prog{seg(0, 0x1000)}, 0x1800, 0},
		{"a segment to the top of memory", []*elf.Prog{seg(0, 0x1000), seg(^uint64(0)-0x10, 0x8)}, 0x1000, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LoadSpan(&elf.File{Progs: tt.progs}, tt.page); got != tt.want {
				t.Errorf("LoadSpan = %#x, want %#x", got, tt.want)
			}
		})
	}
}

// buildC compiles a C program of two functions with gcc, or skips.
func buildC(t *testing.T, flags ...string) string {
	t.Helper()
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "p.c")
	code := "int twice(int x) { return 2 * x; }\nint main(void) { return twice(0); }\n"
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "p")
	if b, err := exec.Command(cc, append(flags, "-o", out, src)...).CombinedOutput(); err != nil {
		t.Skipf("gcc %v: %v\n%s", flags, err, b)
	}
	return out
}

// readelfSymbols returns, as readelf -s prints them, the values of the
// symbols of the file at path of the given type, by name (the version
// cut off), or skips when readelf is not installed.
func readelfSymbols(t *testing.T, path, typ string) map[string][]uint64 {
	t.Helper()
	out, err := exec.Command("readelf", "-s", "-W", path).Output()
	if err != nil {
		t.Skip("readelf:", err)
	}
	syms := map[string][]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 8 || f[3] != typ {
			continue
		}
		v, err := strconv.ParseUint(f[1], 16, 64)
		if err != nil {
			continue
		}
		name, _, _ := strings.Cut(f[7], "@")
		syms[name] = append(syms[name], v)
	}
	return syms
}

// TestRendezvous reads the dynamic linker a program names, as the kernel
// would, and finds its rendezvous where readelf sees _dl_debug_state and
// _r_debug; a static program names none.
func TestRendezvous(t *testing.T) {
	interp, err := ReadInterpreter(buildC(t))
	if err != nil || interp == "" {
		t.Fatalf("interpreter %q, %v: want the dynamic linker", interp, err)
	}
	r, err := ReadRendezvous(interp)
	if err != nil {
		t.Fatal(err)
	}
	funcs, objects := readelfSymbols(t, interp, "FUNC"), readelfSymbols(t, interp, "OBJECT")
	if !slices.Contains(funcs["_dl_debug_state"], r.Brk) {
		t.Errorf("Brk %#x, readelf has _dl_debug_state at %#x", r.Brk, funcs["_dl_debug_state"])
	}
	if !slices.Contains(objects["_r_debug"], r.RDebug) {
		t.Errorf("RDebug %#x, readelf has _r_debug at %#x", r.RDebug, objects["_r_debug"])
	}
	if _, err := ReadRendezvous(buildC(t)); err == nil {
		t.Error("a program's rendezvous found: want an error, it has no _dl_debug_state")
	}
	if interp, err := ReadInterpreter(buildC(t, "-static")); err != nil || interp != "" {
		t.Errorf("static program: interpreter %q, %v; want none", interp, err)
	}
}

// TestReadFuncStarts: a program's function starts are the values of the
// FUNC symbols readelf lists, defined ones.
func TestReadFuncStarts(t *testing.T) {
	prog := buildC(t, "-O1")
	var want []uint64
	for _, vs := range readelfSymbols(t, prog, "FUNC") {
		for _, v := range vs {
			if v != 0 {
				want = append(want, v)
			}
		}
	}
	slices.Sort(want)
	want = slices.Compact(want)
	if got := ReadFuncStarts(prog); !slices.Equal(got, want) {
		t.Errorf("starts %#x, want %#x", got, want)
	}
	if got := ReadFuncStarts(filepath.Join(t.TempDir(), "none")); got != nil {
		t.Errorf("a missing file's starts: %#x, want none", got)
	}
}

// TestReadFuncEnds: a program's function ends are the value plus the
// size of each FUNC symbol nm lists with a size; main's is its start
// plus its size, as nm prints them.
func TestReadFuncEnds(t *testing.T) {
	prog := buildC(t, "-O1")
	out, err := exec.Command("nm", "-S", "--defined-only", prog).Output()
	if err != nil {
		t.Skip("nm:", err)
	}
	var want []uint64
	mainEnd := uint64(0)
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) != 4 || (f[2] != "T" && f[2] != "t" && f[2] != "W" && f[2] != "i") {
			continue
		}
		v, err1 := strconv.ParseUint(f[0], 16, 64)
		n, err2 := strconv.ParseUint(f[1], 16, 64)
		if err1 != nil || err2 != nil || v == 0 || n == 0 {
			continue
		}
		want = append(want, v+n)
		if f[3] == "main" {
			mainEnd = v + n
		}
	}
	slices.Sort(want)
	want = slices.Compact(want)
	got := ReadFuncEnds(prog)
	if !slices.Equal(got, want) {
		t.Errorf("ends %#x, want %#x", got, want)
	}
	if _, ok := slices.BinarySearch(got, mainEnd); mainEnd == 0 || !ok {
		t.Errorf("main's end %#x not among %#x", mainEnd, got)
	}
}

// FuzzRuntimeReaders checks that no ELF file, however malformed, makes a
// reader of this file panic.
func FuzzRuntimeReaders(f *testing.F) {
	hdr := make([]byte, 64)
	copy(hdr, "\x7fELF\x02\x01\x01")
	hdr[16], hdr[18] = 2, 62 // ET_EXEC, EM_X86_64
	f.Add(hdr)
	if prog, err := os.ReadFile("/proc/self/exe"); err == nil && len(prog) > 4096 {
		f.Add(prog[:4096]) // the headers of a real file, its sections cut off
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ef, err := elf.NewFile(bytes.NewReader(data))
		if err != nil {
			return
		}
		LoadSpan(ef, 0x1000)
		Interpreter(ef)
		ownThreadPointer(ef)
		FindRendezvous(ef)
		FuncStarts(ef)
		FuncEnds(ef)
		CodePointers(ef)
		IsGo(ef)
	})
}

// TestRuntimeReadersBadFiles: a file that is missing, or not ELF, gives
// each reader its "nothing" (a span of 0, no starts) or an error naming
// what failed, never a panic or a made-up answer.
func TestRuntimeReadersBadFiles(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte("not an ELF file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(dir, "missing"), text} {
		if n := ReadLoadSpan(path, 4096); n != 0 {
			t.Errorf("%s: load span %#x, want 0", path, n)
		}
		if s := ReadFuncStarts(path); s != nil {
			t.Errorf("%s: function starts %#x, want none", path, s)
		}
		if s := ReadFuncEnds(path); s != nil {
			t.Errorf("%s: function ends %#x, want none", path, s)
		}
		if interp, err := ReadInterpreter(path); err == nil {
			t.Errorf("%s: interpreter %q and no error", path, interp)
		}
		if r, err := ReadRendezvous(path); err == nil {
			t.Errorf("%s: rendezvous %+v and no error", path, r)
		}
		if p := ReadCodePointers(path); p != nil {
			t.Errorf("%s: code pointers %#x, want none", path, p)
		}
		if ReadIsGo(path) {
			t.Errorf("%s: taken for Go", path)
		}
	}
}

// codePointersSrc has code pointers in data: a table of functions and a
// computed goto's table of labels, whose offsets from interp it prints.
const codePointersSrc = `#include <stdio.h>
int one(int x) { return x + 1; }
int two(int x) { return x + 2; }
int (*const table[])(int) = {one, two};
__attribute__((noinline)) int interp(const unsigned char *c, int print) {
    static void *const disp[] = {&&inc, &&end};
    int acc = 0;
    if (print) {
        printf("%ld %ld\n", (long)((char *)&&inc - (char *)interp), (long)((char *)&&end - (char *)interp));
        return 0;
    }
    goto *disp[*c++];
inc:
    acc++;
    goto *disp[*c++];
end:
    return acc;
}
int main(int argc, char **argv) {
    static const unsigned char prog[] = {0, 0, 1};
    if (argc > 1)
        return interp(prog, 1);
    return interp(prog, 0) + table[argc & 1](argc);
}
`

// TestCodePointers: the functions of a table and the labels of a
// computed goto's table are among a program's code pointers, read from
// its relocations (PIE) or its data's words (not PIE); a missing file
// has none.
func TestCodePointers(t *testing.T) {
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc")
	}
	for _, flags := range [][]string{{"-O2", "-pie", "-fPIE"}, {"-O2", "-no-pie", "-fno-pie"}} {
		dir := t.TempDir()
		src, prog := filepath.Join(dir, "p.c"), filepath.Join(dir, "p")
		if err := os.WriteFile(src, []byte(codePointersSrc), 0o644); err != nil {
			t.Fatal(err)
		}
		if b, err := exec.Command(cc, append(flags, "-o", prog, src)...).CombinedOutput(); err != nil {
			t.Skipf("gcc %v: %v\n%s", flags, err, b)
		}
		out, err := exec.Command(prog, "print").Output()
		if err != nil {
			t.Fatal(err)
		}
		var inc, end int64
		if _, err := fmt.Sscan(string(out), &inc, &end); err != nil {
			t.Fatalf("output %q: %v", out, err)
		}
		syms := readelfSymbols(t, prog, "FUNC")
		at := func(name string) uint64 { return syms[name][0] }
		ptrs := ReadCodePointers(prog)
		for name, want := range map[string]uint64{"one": at("one"), "two": at("two"),
			"inc": at("interp") + uint64(inc), "end": at("interp") + uint64(end)} {
			if _, ok := slices.BinarySearch(ptrs, want); !ok {
				t.Errorf("%v: %s at %#x is not among the code pointers %#x", flags, name, want, ptrs)
			}
		}
	}
}

// TestIsGo: a C program is not Go's; this test binary is.
func TestIsGo(t *testing.T) {
	if ReadIsGo(buildC(t, "-O1")) {
		t.Error("a C program taken for Go")
	}
	if self, err := os.Executable(); err == nil && !ReadIsGo(self) {
		t.Error("this test binary not taken for Go")
	}
}

// TestOwnThreadPointer: a Go program built without cgo leaves its thread
// pointer alone (static, no TLS); a C program, dynamic or static, does
// not (its dynamic linker or C library sets it, for its TLS).
func TestOwnThreadPointer(t *testing.T) {
	for _, flags := range [][]string{nil, {"-static"}} {
		if own, err := OwnThreadPointer(buildC(t, flags...)); err != nil || own {
			t.Errorf("C program %v: own thread pointer %v, %v; want false", flags, own, err)
		}
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() { println(\"hi\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "p")
	cmd := exec.Command(goTool, "build", "-o", out, src)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	if own, err := OwnThreadPointer(out); err != nil || !own {
		t.Errorf("Go program without cgo: own thread pointer %v, %v; want true", own, err)
	}
	if _, err := OwnThreadPointer(src); err == nil {
		t.Error("a Go source file read as a program")
	}
}
