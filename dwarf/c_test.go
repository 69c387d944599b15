package dwarf

import (
	"bytes"
	"debug/elf"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	stddwarf "debug/dwarf"
)

// progFuncs are the functions of testdata/prog.c every build keeps, with
// whether they are external.
var progFuncs = []struct {
	name     string
	external bool
}{
	{"square", false},
	{"twice", true},
	{"fact", true},
	{"never_called", true},
	{"main", true},
}

func TestCFunctions(t *testing.T) {
	tests := []struct {
		name       string
		flags      []string
		pie        bool
		compressed bool
	}{
		{"O0-nopie-dwarf4", []string{"-O0", "-no-pie", "-fno-pie", "-gdwarf-4"}, false, false},
		{"O0-pie-dwarf5", []string{"-O0", "-pie", "-fPIE", "-gdwarf-5"}, true, false},
		{"O2-pie-dwarf5", []string{"-O2", "-pie", "-fPIE", "-gdwarf-5"}, true, false},
		{"O2-nopie-dwarf4-zlib", []string{"-O2", "-no-pie", "-fno-pie", "-gdwarf-4", "-gz=zlib"}, false, true},
		{"O0-pie-dwarf5-zlib", []string{"-O0", "-pie", "-fPIE", "-gdwarf-5", "-gz=zlib"}, true, true},
		{"O2-static", []string{"-O2", "-static"}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if slices.Contains(tt.flags, "-static") {
				requireStaticLibc(t)
			}
			dir, path := buildC(t, "gcc", "prog.c", "prog", tt.flags...)
			if tt.compressed {
				requireCompressed(t, path)
			}
			f := open(t, path)
			checkIdentity(t, f, tt.pie)
			if !f.HasDWARF || f.DebugFile != "" {
				t.Errorf("HasDWARF = %v, DebugFile = %q; want true, \"\"", f.HasDWARF, f.DebugFile)
			}
			if len(f.Warnings) > 0 {
				t.Errorf("warnings: %q", f.Warnings)
			}
			checkNM(t, f, nmFuncs(t, path, false))
			checkProgFuncs(t, f, dir)
			if !hasFunc(f, "accumulate") {
				// -O2 may clone it; the symbol check above covers the name.
				t.Logf("accumulate is not a function of its own (%v)", tt.flags)
			}
			// CRT start-up code has no DWARF: it comes from the symbol table.
			start := funcNamed(t, f, "_start")
			if start.Unit != -1 || start.Source != "prog" {
				t.Errorf("_start: Unit %d, Source %q; want -1, \"prog\"", start.Unit, start.Source)
			}
			main := funcNamed(t, f, "main")
			code, err := f.Code(main.Entry, 8)
			if err != nil {
				t.Fatalf("Code: %v", err)
			}
			if want := textBytes(t, path, main.Entry, 8); !bytes.Equal(code, want) {
				t.Errorf("Code(main) = % x, want % x", code, want)
			}
		})
	}
}

// checkIdentity checks what the ELF headers say of a gcc x86-64 executable.
func checkIdentity(t *testing.T, f *File, pie bool) {
	t.Helper()
	if f.Arch != "amd64" || f.PIE != pie || f.Shared {
		t.Errorf("Arch %q, PIE %v, Shared %v; want amd64, %v, false", f.Arch, f.PIE, f.Shared, pie)
	}
	wantBase := uint64(0x400000)
	if pie {
		wantBase = 0
	}
	if f.LinkBase != wantBase {
		t.Errorf("LinkBase = %#x, want %#x", f.LinkBase, wantBase)
	}
	if len(f.BuildID) != 20 {
		t.Errorf("BuildID = %x, want the 20 bytes of gcc's default --build-id=sha1", f.BuildID)
	}
	ranges := f.ExecRanges()
	if len(ranges) == 0 {
		t.Fatal("no executable segment")
	}
	for _, fn := range f.Funcs {
		if !inRanges(ranges, fn.Entry) {
			t.Errorf("%s: entry %#x outside the executable segments %x", fn.Name, fn.Entry, ranges)
		}
	}
}

func inRanges(rs []Range, addr uint64) bool {
	for _, r := range rs {
		if r.Low <= addr && addr < r.High {
			return true
		}
	}
	return false
}

// checkProgFuncs checks the functions of prog.c read from DWARF.
func checkProgFuncs(t *testing.T, f *File, dir string) {
	t.Helper()
	if len(f.Units) == 0 {
		t.Fatal("no units")
	}
	for _, want := range progFuncs {
		fn := funcNamed(t, f, want.name)
		if fn.Unit < 0 || fn.Unit >= len(f.Units) {
			t.Errorf("%s: Unit %d of %d", fn.Name, fn.Unit, len(f.Units))
			continue
		}
		u := f.Units[fn.Unit]
		if u.Name != "prog.c" || u.Path != filepath.Join(dir, "prog.c") || u.Language != "c" || !strings.HasPrefix(u.Producer, "GNU C") {
			t.Errorf("%s: unit %+v", fn.Name, u)
		}
		line := markerLine(t, "prog.c", "decl:"+want.name+" ")
		if fn.Source != "prog.o" || fn.External != want.external || fn.DeclLine != line || fn.DeclFile != filepath.Join(dir, "prog.c") {
			t.Errorf("%s: Source %q External %v Decl %s:%d; want prog.o %v %s:%d",
				fn.Name, fn.Source, fn.External, fn.DeclFile, fn.DeclLine, want.external, filepath.Join(dir, "prog.c"), line)
		}
		if len(fn.Ranges) != 1 || fn.Ranges[0].Low != fn.Entry || fn.Ranges[0].High <= fn.Entry {
			t.Errorf("%s: entry %#x, ranges %x", fn.Name, fn.Entry, fn.Ranges)
		}
	}
}

// requireStaticLibc skips unless gcc finds libc.a (glibc-static).
func requireStaticLibc(t *testing.T) {
	t.Helper()
	out, err := exec.Command(needTool(t, "gcc"), "-print-file-name=libc.a").Output()
	if err != nil || !filepath.IsAbs(strings.TrimSpace(string(out))) {
		t.Skip("no static C library (libc.a)")
	}
}

// requireCompressed skips unless the toolchain really compressed
// .debug_info (-gz needs zlib support in binutils).
func requireCompressed(t *testing.T, path string) {
	t.Helper()
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	s := ef.Section(".debug_info")
	if s == nil || s.Flags&elf.SHF_COMPRESSED == 0 {
		t.Skip("the toolchain did not compress .debug_info with -gz=zlib")
	}
}

func TestColdPart(t *testing.T) {
	noDebugDirs(t)
	dir, path := buildC(t, "gcc", "cold.c", "cold", "-O2")
	syms := nmFuncs(t, path, false)
	var process, cold nmSym
	for _, ss := range syms {
		for _, s := range ss {
			switch s.name {
			case "process":
				process = s
			case "process.cold":
				cold = s
			}
		}
	}
	if process.size == 0 || cold.size == 0 {
		t.Skip("gcc made no process.cold part")
	}
	want := []Range{{process.addr, process.addr + process.size}, {cold.addr, cold.addr + cold.size}}

	stripped := filepath.Join(dir, "cold-stripped")
	run(t, dir, nil, needTool(t, "strip"), "--strip-debug", "-o", stripped, path)
	for _, tt := range []struct {
		name, path string
		dwarf      bool
	}{
		{"dwarf", path, true},
		{"symtab", stripped, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := open(t, tt.path)
			if f.HasDWARF != tt.dwarf {
				t.Errorf("HasDWARF = %v, want %v", f.HasDWARF, tt.dwarf)
			}
			fn := funcNamed(t, f, "process")
			if fn.Entry != process.addr || len(fn.Ranges) != 2 || fn.Ranges[0] != want[0] || fn.Ranges[1] != want[1] {
				t.Errorf("process: entry %#x ranges %x; want %#x %x", fn.Entry, fn.Ranges, process.addr, want)
			}
			if hasFunc(f, "process.cold") {
				t.Error("process.cold is a function of its own")
			}
			checkNM(t, f, syms)
		})
	}
}

// TestClones checks the names of gcc's clones: a clone keeps its symbol's
// name, suffix included ("scale.constprop.0"), rather than its DWARF
// origin's ("scale"): several clones of one function, and the function
// itself, stay apart, and the name is the one nm, perf and gdb print. Its
// declaration comes from the origin.
func TestClones(t *testing.T) {
	dir, path := buildC(t, "gcc", "clone.c", "clone", "-O2")
	f := open(t, path)
	checkNM(t, f, nmFuncs(t, path, false))
	for _, tt := range []struct{ clone, origin string }{
		{"scale.constprop.0", "scale"},
		{"sum_point.isra.0", "sum_point"},
	} {
		t.Run(tt.clone, func(t *testing.T) {
			if !hasFunc(f, tt.clone) {
				t.Skipf("gcc made no %s", tt.clone)
			}
			fn := funcNamed(t, f, tt.clone)
			line := markerLine(t, "clone.c", "static int "+tt.origin+"(")
			if fn.Source != "clone.o" || fn.Unit < 0 || fn.External || fn.DeclLine != line || fn.DeclFile != filepath.Join(dir, "clone.c") {
				t.Errorf("%s: Source %q Unit %d External %v Decl %s:%d; want clone.o, a unit, false, clone.c:%d",
					fn.Name, fn.Source, fn.Unit, fn.External, fn.DeclFile, fn.DeclLine, line)
			}
		})
	}
}

func TestGCSections(t *testing.T) {
	_, path := buildC(t, "gcc", "prog.c", "prog", "-O0", "-ffunction-sections", "-Wl,--gc-sections")
	if !dieHasCode(t, path, "never_called") {
		t.Skip("the linker dropped the DIE of never_called too")
	}
	f := open(t, path)
	if hasFunc(f, "never_called") {
		t.Error("never_called, dropped by --gc-sections, is a function")
	}
	if len(f.Warnings) > 0 {
		t.Errorf("warnings for a dropped function: %q", f.Warnings)
	}
	checkNM(t, f, nmFuncs(t, path, false))
	rows, err := f.Lines()
	if err != nil {
		t.Fatal(err)
	}
	exec := f.ExecRanges()
	for _, r := range rows {
		if !inRanges(exec, r.Addr) {
			t.Fatalf("line row %+v outside the executable segments", r)
		}
	}
}

// dieHasCode reports whether a subprogram DIE called name has a low_pc,
// read with the standard library alone.
func dieHasCode(t *testing.T, path, name string) bool {
	t.Helper()
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	d, err := ef.DWARF()
	if err != nil {
		t.Fatal(err)
	}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if e == nil {
			return false
		}
		if e.Tag == stddwarf.TagSubprogram && e.Val(stddwarf.AttrName) == name && e.Val(stddwarf.AttrLowpc) != nil {
			return true
		}
	}
}

func TestCPlusPlus(t *testing.T) {
	for _, opt := range []string{"-O0", "-O2"} {
		t.Run(opt, func(t *testing.T) {
			t.Parallel()
			_, path := buildC(t, "g++", "cpp.cc", "cpp", opt)
			f := open(t, path)
			checkNM(t, f, nmFuncs(t, path, false))
			for _, name := range []string{
				"main",
				"_ZNK6shapes6Circle4areaEv", // a method defined out of its class
				"_Z6scaledi",                // overloads
				"_Z6scaledd",
				"_Z7biggestIiET_S0_S0_", // template instances
				"_Z7biggestIdET_S0_S0_",
			} {
				fn := funcNamed(t, f, name)
				if fn.Source != "cpp.o" || fn.Unit < 0 || f.Units[fn.Unit].Language != "c++" || !fn.External || fn.DeclLine == 0 {
					t.Errorf("%s: Source %q Unit %d External %v DeclLine %d", name, fn.Source, fn.Unit, fn.External, fn.DeclLine)
				}
			}
			// Static functions have no linkage name in DWARF: the symbol
			// table's mangled names still tell the overloads apart.
			for _, name := range []string{"_ZL5twicei", "_ZL5twiced"} {
				if fn := funcNamed(t, f, name); fn.External || fn.Unit < 0 {
					t.Errorf("%s: External %v Unit %d, want a static function from DWARF", name, fn.External, fn.Unit)
				}
			}
			if !hasFunc(f, "_ZN6shapes6CircleC2Ed") && !hasFunc(f, "_ZN6shapes6CircleC1Ed") {
				t.Error("no constructor shapes::Circle::Circle(double)")
			}
			area := funcNamed(t, f, "_ZNK6shapes6Circle4areaEv")
			if want := markerLine(t, "cpp.cc", "double Circle::area() const {"); area.DeclLine != want {
				t.Errorf("area: DeclLine %d, want %d (the definition, not the declaration)", area.DeclLine, want)
			}
		})
	}
}

func TestStripped(t *testing.T) {
	noDebugDirs(t)
	dir, path := buildC(t, "gcc", "prog.c", "prog", "-O2")
	stripped := filepath.Join(dir, "prog-stripped")
	run(t, dir, nil, needTool(t, "strip"), "--strip-debug", "-o", stripped, path)
	f := open(t, stripped)
	if f.HasDWARF || len(f.Units) != 0 || f.ExportsOnly {
		t.Errorf("HasDWARF %v, %d units, ExportsOnly %v; want false, 0, false (its symbol table is there)", f.HasDWARF, len(f.Units), f.ExportsOnly)
	}
	checkNM(t, f, nmFuncs(t, stripped, false))
	for _, fn := range f.Funcs {
		if fn.Unit != -1 || fn.Source != "prog-stripped" || fn.DeclFile != "" {
			t.Errorf("%s: Unit %d Source %q DeclFile %q; want -1, prog-stripped, \"\"", fn.Name, fn.Unit, fn.Source, fn.DeclFile)
		}
	}
	if fn := funcNamed(t, f, "square"); fn.External {
		t.Error("static square is external")
	}
	if fn := funcNamed(t, f, "fact"); !fn.External {
		t.Error("fact is not external")
	}
	if _, err := f.Lines(); !errors.Is(err, ErrNoDWARF) {
		t.Errorf("Lines: %v, want ErrNoDWARF", err)
	}
}

func TestStripAllSharedLibrary(t *testing.T) {
	noDebugDirs(t)
	dir, path := buildC(t, "gcc", "lib.c", "libdemo.so", "-O2", "-shared", "-fPIC")
	run(t, dir, nil, needTool(t, "strip"), "--strip-all", path)
	f := open(t, path)
	if !f.PIE || !f.Shared || f.HasDWARF || !f.ExportsOnly {
		t.Errorf("PIE %v Shared %v HasDWARF %v ExportsOnly %v; want true, true, false, true", f.PIE, f.Shared, f.HasDWARF, f.ExportsOnly)
	}
	checkNM(t, f, nmFuncs(t, path, true))
	for _, name := range []string{"lib_add", "lib_mul"} {
		if fn := funcNamed(t, f, name); fn.Source != "libdemo.so" || !fn.External {
			t.Errorf("%s: Source %q External %v", name, fn.Source, fn.External)
		}
	}
	if hasFunc(f, "hidden_helper") {
		t.Error("a static function survived strip --strip-all")
	}
}
