package dwarf

import (
	"bufio"
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// needTool returns the path of a program the test needs, or skips.
func needTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not installed: %v", name, err)
	}
	return p
}

// run runs a command in dir and fails the test with its output on error.
func run(t testing.TB, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// copySource copies testdata/name into dir under its base name, so
// compilers record a relative unit name and dir as the compilation
// directory.
func copySource(t testing.TB, dir, name string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.Base(name)), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// buildC compiles testdata/src with the compiler cc (gcc, g++, a cross
// gcc) in a new temporary directory and returns the directory and the
// output's path.
func buildC(t testing.TB, cc, src, out string, flags ...string) (dir, path string) {
	t.Helper()
	needTool(t, cc)
	dir = t.TempDir()
	copySource(t, dir, src)
	args := append([]string{"-g"}, flags...)
	args = append(args, "-o", out, src)
	run(t, dir, nil, cc, args...)
	return dir, filepath.Join(dir, out)
}

// open opens path and fails the test on error; the file is closed at the
// end of the test.
func open(t testing.TB, path string) *File {
	t.Helper()
	f, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return f
}

// noDebugDirs points the debug-file search at an empty directory for the
// test, so debug packages installed on the machine play no part.
func noDebugDirs(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	old := DebugDirs
	DebugDirs = []string{root}
	t.Cleanup(func() { DebugDirs = old })
	return root
}

// nmSym is a code symbol as nm prints it.
type nmSym struct {
	addr, size uint64
	name       string
}

// nmFuncs lists the defined code symbols with a size (nm types T, t, W, w,
// i), by address; dynamic selects the dynamic symbol table (nm -D).
func nmFuncs(t testing.TB, path string, dynamic bool) map[uint64][]nmSym {
	t.Helper()
	nm := needTool(t, "nm")
	args := []string{"-S", "--defined-only"}
	if dynamic {
		args = append(args, "-D")
	}
	out := run(t, "", nil, nm, append(args, path)...)
	syms := make(map[uint64][]nmSym)
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		// Go names have spaces ("interface {}"): split off three fields.
		fields := strings.SplitN(sc.Text(), " ", 4)
		if len(fields) != 4 || len(fields[2]) != 1 || !strings.Contains("TtWwi", fields[2]) {
			continue
		}
		addr, err1 := strconv.ParseUint(fields[0], 16, 64)
		size, err2 := strconv.ParseUint(fields[1], 16, 64)
		if err1 != nil || err2 != nil || size == 0 {
			continue
		}
		// nm -D prints versions (memcpy@@GLIBC_2.14); the symbol name is
		// before them.
		name, _, _ := strings.Cut(fields[3], "@")
		syms[addr] = append(syms[addr], nmSym{addr, size, name})
	}
	return syms
}

// checkNM checks the functions against nm: every nm code symbol is the
// entry of a function named like one of the symbols at that address (or
// the start of a cold part), and every function's entry is an nm symbol.
func checkNM(t *testing.T, f *File, syms map[uint64][]nmSym) {
	t.Helper()
	if len(syms) == 0 {
		t.Fatal("nm found no functions")
	}
	entries := make(map[uint64]Func)
	for _, fn := range f.Funcs {
		entries[fn.Entry] = fn
	}
	for addr, ss := range syms {
		fn, ok := entries[addr]
		if !ok {
			if _, cold := coldParent(ss[0].name); cold && f.covers(addr) {
				continue
			}
			t.Errorf("nm symbol %s at %#x: no function", ss[0].name, addr)
			continue
		}
		var names []string
		for _, s := range ss {
			names = append(names, s.name)
		}
		if !slices.Contains(names, fn.Name) {
			t.Errorf("function at %#x is %q, nm says %q", addr, fn.Name, names)
		}
	}
	for _, fn := range f.Funcs {
		if _, ok := syms[fn.Entry]; !ok {
			t.Errorf("function %s at %#x: nm has no symbol there", fn.Name, fn.Entry)
		}
	}
}

// covers reports whether addr lies in a range of some function.
func (f *File) covers(addr uint64) bool {
	for _, fn := range f.Funcs {
		for _, r := range fn.Ranges {
			if r.Low <= addr && addr < r.High {
				return true
			}
		}
	}
	return false
}

// funcNamed returns the function called name, failing the test if there
// is none.
func funcNamed(t *testing.T, f *File, name string) Func {
	t.Helper()
	for _, fn := range f.Funcs {
		if fn.Name == name {
			return fn
		}
	}
	var names []string
	for _, fn := range f.Funcs {
		names = append(names, fn.Name)
	}
	t.Fatalf("no function %q in %s; have %q", name, f.Path, names)
	return Func{}
}

// hasFunc reports whether a function is called name.
func hasFunc(f *File, name string) bool {
	for _, fn := range f.Funcs {
		if fn.Name == name {
			return true
		}
	}
	return false
}

// markerLine returns the 1-based line of testdata/src that holds marker.
func markerLine(t testing.TB, src, marker string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", src))
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, marker) {
			return i + 1
		}
	}
	t.Fatalf("no marker %q in %s", marker, src)
	return 0
}

// textBytes reads n bytes at addr from the section holding addr, with
// debug/elf directly: the reference for Code.
func textBytes(t *testing.T, path string, addr uint64, n int) []byte {
	t.Helper()
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	for _, s := range ef.Sections {
		if s.Type == elf.SHT_PROGBITS && s.Addr <= addr && addr+uint64(n) <= s.Addr+s.Size {
			data, err := s.Data()
			if err != nil {
				t.Fatal(err)
			}
			return bytes.Clone(data[addr-s.Addr : addr-s.Addr+uint64(n)])
		}
	}
	t.Fatalf("no section holds %#x", addr)
	return nil
}
