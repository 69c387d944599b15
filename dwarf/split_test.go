package dwarf

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// buildObjects compiles the testdata sources with cc in dir, each to its
// own object with -c as build systems do (so that gcc names each .dwo file
// after its object: prog.o, prog.dwo), and links them into dir/out. split
// adds -gsplit-dwarf; the objects of a plain build are "plain-prog.o".
func buildObjects(t *testing.T, cc, dir, out string, split bool, srcs []string, flags ...string) string {
	t.Helper()
	needTool(t, cc)
	var objs []string
	for _, src := range srcs {
		copySource(t, dir, src)
		obj := strings.TrimSuffix(src, filepath.Ext(src)) + ".o"
		args := append([]string{"-g", "-c"}, flags...)
		if split {
			args = append(args, "-gsplit-dwarf")
		} else {
			obj = "plain-" + obj
		}
		run(t, dir, nil, cc, append(args, "-o", obj, src)...)
		objs = append(objs, obj)
	}
	run(t, dir, nil, cc, append(append(flags, "-o", out), objs...)...)
	return filepath.Join(dir, out)
}

// splitSrcs is the program of the split DWARF tests: two units.
var splitSrcs = []string{"prog.c", "splitlib.c"}

// checkAsPlain checks that a split build read as a plain -g build of the
// same sources: the same functions (names, entries, ranges, units,
// sources, declarations), units and line rows, every unit read from a
// split file under dir.
func checkAsPlain(t *testing.T, got, want *File, dwo func(unit Unit) string) {
	t.Helper()
	if len(got.Warnings) > 0 || len(want.Warnings) > 0 {
		t.Errorf("warnings: %q, plain build %q", got.Warnings, want.Warnings)
	}
	if !got.HasDWARF {
		t.Error("HasDWARF = false")
	}
	if len(got.Units) != len(want.Units) {
		t.Fatalf("%d units, plain build %d", len(got.Units), len(want.Units))
	}
	for i, u := range got.Units {
		w := want.Units[i]
		if u.Name != w.Name || u.CompDir != w.CompDir || u.Path != w.Path || u.Language != w.Language || u.SymbolsOnly {
			t.Errorf("unit %d: %+v, plain build %+v", i, u, w)
		}
		if u.DWO != dwo(u) {
			t.Errorf("unit %d (%s): DWO %q, want %q", i, u.Name, u.DWO, dwo(u))
		}
		if !strings.Contains(u.Producer, "-gsplit-dwarf") {
			t.Errorf("unit %d: producer %q, want the split unit's", i, u.Producer)
		}
	}
	want.Funcs = slices.Clone(want.Funcs)
	for i, fn := range want.Funcs {
		if fn.Unit < 0 && fn.Source == filepath.Base(want.Path) {
			want.Funcs[i].Source = filepath.Base(got.Path) // the file's own name
		}
	}
	if !reflect.DeepEqual(got.Funcs, want.Funcs) {
		t.Errorf("functions differ from the plain build's:")
		for i := range max(len(got.Funcs), len(want.Funcs)) {
			var g, w Func
			if i < len(got.Funcs) {
				g = got.Funcs[i]
			}
			if i < len(want.Funcs) {
				w = want.Funcs[i]
			}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("  %+v\n  plain %+v", g, w)
			}
		}
	}
	gotRows, err1 := got.Lines()
	wantRows, err2 := want.Lines()
	if err1 != nil || err2 != nil || len(gotRows) == 0 || !slices.Equal(gotRows, wantRows) {
		t.Errorf("Lines: %d rows (%v), plain build %d rows (%v)", len(gotRows), err1, len(wantRows), err2)
	}
}

// dwoBeside names the .dwo file of a unit compiled in dir by buildObjects.
func dwoBeside(dir string) func(Unit) string {
	return func(u Unit) string {
		return filepath.Join(dir, strings.TrimSuffix(u.Name, filepath.Ext(u.Name))+".dwo")
	}
}

func TestSplitDWARF(t *testing.T) {
	tests := []struct {
		name  string
		cc    string
		srcs  []string
		flags []string
	}{
		{"O0-pie-dwarf5", "gcc", splitSrcs, []string{"-O0", "-fPIE", "-pie", "-gdwarf-5"}},
		{"O0-nopie-dwarf5", "gcc", splitSrcs, []string{"-O0", "-fno-pie", "-no-pie", "-gdwarf-5"}},
		{"O2-pie-dwarf5", "gcc", splitSrcs, []string{"-O2", "-fPIE", "-pie", "-gdwarf-5"}},
		{"O2-nopie-dwarf5", "gcc", splitSrcs, []string{"-O2", "-fno-pie", "-no-pie", "-gdwarf-5"}},
		{"O0-pie-dwarf4", "gcc", splitSrcs, []string{"-O0", "-fPIE", "-pie", "-gdwarf-4"}},
		{"O0-nopie-dwarf4", "gcc", splitSrcs, []string{"-O0", "-fno-pie", "-no-pie", "-gdwarf-4"}},
		{"O2-pie-dwarf4", "gcc", splitSrcs, []string{"-O2", "-fPIE", "-pie", "-gdwarf-4"}},
		{"O2-nopie-dwarf4", "gcc", splitSrcs, []string{"-O2", "-fno-pie", "-no-pie", "-gdwarf-4"}},
		{"O2-dwarf5-zlib", "gcc", splitSrcs, []string{"-O2", "-gdwarf-5", "-gz=zlib"}},
		{"O2-dwarf4-zlib", "gcc", splitSrcs, []string{"-O2", "-gdwarf-4", "-gz=zlib"}},
		// Clones name themselves through DW_AT_abstract_origin, C++
		// methods through DW_AT_specification.
		{"clones-O2-dwarf5", "gcc", []string{"clone.c"}, []string{"-O2", "-gdwarf-5"}},
		{"clones-O2-dwarf4", "gcc", []string{"clone.c"}, []string{"-O2", "-gdwarf-4"}},
		{"cxx-O2-dwarf5", "g++", []string{"cpp.cc"}, []string{"-O2", "-gdwarf-5"}},
		{"cxx-O0-dwarf4", "g++", []string{"cpp.cc"}, []string{"-O0", "-gdwarf-4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			want := open(t, buildObjects(t, tt.cc, dir, "plain", false, tt.srcs, tt.flags...))
			got := open(t, buildObjects(t, tt.cc, dir, "prog", true, tt.srcs, tt.flags...))
			checkAsPlain(t, got, want, dwoBeside(dir))
			if slices.Equal(tt.srcs, splitSrcs) {
				checkProgFuncs(t, got, dir)
				checked := funcNamed(t, got, "checked")
				line := markerLine(t, "splitlib.c", "decl:checked ")
				if checked.Source != "splitlib.o" || checked.DeclLine != line {
					t.Errorf("checked: %+v, want source splitlib.o, line %d", checked, line)
				}
				if slices.Contains(tt.flags, "-O2") && len(checked.Ranges) != 2 {
					t.Errorf("checked: ranges %x, want the function and its cold part", checked.Ranges)
				}
			}
		})
	}
}

// TestSplitDWARFDebugFile reads a split build whose skeletons are in a
// separate debug file (objcopy --only-keep-debug, strip, a debug link):
// the .dwo files are still found, beside the program.
func TestSplitDWARFDebugFile(t *testing.T) {
	noDebugDirs(t)
	dir := t.TempDir()
	want := open(t, buildObjects(t, "gcc", dir, "plain", false, splitSrcs, "-O2"))
	full := buildObjects(t, "gcc", dir, "prog-full", true, splitSrcs, "-O2")
	objcopy := needTool(t, "objcopy")
	run(t, dir, nil, objcopy, "--only-keep-debug", full, "prog.debug")
	run(t, dir, nil, needTool(t, "strip"), "--strip-debug", "-o", "prog", full)
	run(t, dir, nil, objcopy, "--add-gnu-debuglink=prog.debug", "prog")
	got := open(t, filepath.Join(dir, "prog"))
	if got.DebugFile != filepath.Join(dir, "prog.debug") {
		t.Errorf("DebugFile = %q, want prog.debug", got.DebugFile)
	}
	checkAsPlain(t, got, want, dwoBeside(dir))
}

// TestSplitDWARFMoved finds the .dwo files of a build tree moved with its
// objects, whether the recorded compilation directory is absolute (and
// now wrong) or relative (-fdebug-prefix-map=$PWD=.).
func TestSplitDWARFMoved(t *testing.T) {
	for _, relative := range []bool{false, true} {
		name := map[bool]string{false: "absolute", true: "relative"}[relative]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			dir := filepath.Join(root, "build")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			flags := []string{"-O2"}
			if relative {
				flags = append(flags, "-fdebug-prefix-map="+dir+"=.")
			}
			buildObjects(t, "gcc", dir, "prog", true, splitSrcs, flags...)
			buildObjects(t, "gcc", dir, "plain", false, splitSrcs, flags...)
			moved := filepath.Join(root, "moved")
			if err := os.Rename(dir, moved); err != nil {
				t.Fatal(err)
			}
			got := open(t, filepath.Join(moved, "prog"))
			want := open(t, filepath.Join(moved, "plain"))
			checkAsPlain(t, got, want, dwoBeside(moved))
		})
	}
}

// TestSplitDWARFFallback spoils the .dwo file of prog.c: the unit's
// functions come from the symbol table, still as the program's own code
// (Unit and Source kept), with a warning that names the file and says why;
// splitlib.c's unit is read as usual.
func TestSplitDWARFFallback(t *testing.T) {
	tests := []struct {
		name  string
		spoil func(t *testing.T, dir, dwo string)
		why   string
	}{
		{"missing", func(t *testing.T, dir, dwo string) { remove(t, dwo) }, "not found: no $DWO, no "},
		{"directory", func(t *testing.T, dir, dwo string) {
			remove(t, dwo)
			if err := os.Mkdir(dwo, 0o755); err != nil {
				t.Fatal(err)
			}
		}, "open $DWO: not a regular file"},
		{"fifo", func(t *testing.T, dir, dwo string) {
			remove(t, dwo)
			if err := syscall.Mkfifo(dwo, 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
		}, "open $DWO: not a regular file"},
		{"not-elf", func(t *testing.T, dir, dwo string) { write(t, dwo, []byte("not an object file at all\n")) }, "read $DWO: not an ELF file"},
		{"truncated-file", func(t *testing.T, dir, dwo string) { write(t, dwo, readFile(t, dwo)[:300]) }, "read $DWO: not an ELF file: truncated"},
		{"truncated-info", func(t *testing.T, dir, dwo string) {
			info := filepath.Join(dir, "short-info")
			write(t, info, sectionData(t, dwo, ".debug_info.dwo")[:40])
			run(t, dir, nil, needTool(t, "objcopy"), "--update-section", ".debug_info.dwo="+info, dwo)
		}, "read $DWO: .debug_info.dwo: no readable unit header"},
		{"garbage-abbrev", func(t *testing.T, dir, dwo string) {
			abbrev := filepath.Join(dir, "bad-abbrev")
			write(t, abbrev, bytes.Repeat([]byte{0xff}, 64))
			run(t, dir, nil, needTool(t, "objcopy"), "--update-section", ".debug_abbrev.dwo="+abbrev, dwo)
		}, "read $DWO: decoding dwarf section info"},
		{"other-build", func(t *testing.T, dir, dwo string) {
			// The same source compiled again with another option: the
			// .dwo file of another build, with another DWO ID.
			other := filepath.Join(dir, "other")
			if err := os.Mkdir(other, 0o755); err != nil {
				t.Fatal(err)
			}
			copySource(t, other, "prog.c")
			run(t, other, nil, needTool(t, "gcc"), "-g", "-gsplit-dwarf", "-O1", "-c", "-o", "prog.o", "prog.c")
			write(t, dwo, readFile(t, filepath.Join(other, "prog.dwo")))
		}, "$DWO is from another build (DWO ID "},
	}
	for _, version := range []string{"-gdwarf-4", "-gdwarf-5"} {
		for _, tt := range tests {
			t.Run(tt.name+version, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				want := open(t, buildObjects(t, "gcc", dir, "plain", false, splitSrcs, "-O2", version))
				bin := buildObjects(t, "gcc", dir, "prog", true, splitSrcs, "-O2", version)
				dwo := filepath.Join(dir, "prog.dwo")
				tt.spoil(t, dir, dwo)
				why := strings.ReplaceAll(tt.why, "$DWO", dwo)
				got := open(t, bin)
				checkFallback(t, got, want, dwo, why, version == "-gdwarf-5")
			})
		}
	}
}

// checkFallback checks a build whose prog.dwo (path dwo) is unusable
// against the plain build want.
func checkFallback(t *testing.T, got, want *File, dwo, why string, dwarf5 bool) {
	t.Helper()
	if len(got.Warnings) != 1 {
		t.Fatalf("warnings %q, want one", got.Warnings)
	}
	w := got.Warnings[0]
	for _, s := range []string{"read DWARF of " + got.Path + ": split unit prog.dwo: ", dwo, why, ": its functions are taken from the symbol table"} {
		if !strings.Contains(w, s) {
			t.Errorf("warning %q does not say %q", w, s)
		}
	}
	if !got.HasDWARF || len(got.Units) != 2 {
		t.Fatalf("HasDWARF %v, units %+v: want both units", got.HasDWARF, got.Units)
	}
	lost := got.Units[0]
	wantName := ""
	if dwarf5 {
		wantName = "prog.c" // the line table's primary file
	}
	if !lost.SymbolsOnly || lost.DWO != "" || lost.Name != wantName || lost.Language != "" {
		t.Errorf("unit 0: %+v, want symbols only, named %q", lost, wantName)
	}
	if u := got.Units[1]; u.SymbolsOnly || u.Name != "splitlib.c" || u.DWO == "" {
		t.Errorf("unit 1: %+v, want splitlib.c read from its .dwo file", u)
	}
	// The same functions, at the same entries; prog.c's from the symbol
	// table, without declarations but in their unit.
	if len(got.Funcs) != len(want.Funcs) {
		t.Fatalf("%d functions, plain build %d", len(got.Funcs), len(want.Funcs))
	}
	for i, fn := range got.Funcs {
		w := want.Funcs[i]
		switch {
		case w.Unit == 0:
			w.DeclFile, w.DeclLine = "", 0
		case w.Unit < 0:
			w.Source = fn.Source // the file's own name
		}
		if !reflect.DeepEqual(fn, w) {
			t.Errorf("function %d: %+v, want %+v", i, fn, w)
		}
	}
	// Line rows come from the program: the unit keeps them.
	gotRows, err1 := got.Lines()
	wantRows, err2 := want.Lines()
	if err1 != nil || err2 != nil || !slices.Equal(gotRows, wantRows) {
		t.Errorf("Lines: %d rows (%v), plain build %d rows (%v)", len(gotRows), err1, len(wantRows), err2)
	}
}

// TestSplitDWARFNotLookedFor reads a split build without the file system
// (newFile, the fuzz targets' way): nothing is opened, the functions stay
// the program's own.
func TestSplitDWARFNotLookedFor(t *testing.T) {
	dir := t.TempDir()
	bin := buildObjects(t, "gcc", dir, "prog", true, splitSrcs, "-O0")
	f, err := newFile(bytes.NewReader(readFile(t, bin)), "prog", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Warnings) != 2 || !strings.Contains(f.Warnings[0], "split DWARF files not looked for") {
		t.Errorf("warnings %q, want two, not looked for", f.Warnings)
	}
	for _, name := range []string{"main", "exposed"} {
		if fn := funcNamed(t, f, name); fn.Unit < 0 || !f.Units[fn.Unit].SymbolsOnly {
			t.Errorf("%s: %+v, want a symbols-only unit", name, fn)
		}
	}
}

// TestSplitDWARFPackage reads the units from a .dwp package, the .dwo
// files gone. binutils' dwp and llvm-dwp make packages of DWARF 4 units;
// of gcc 12's DWARF 5 .dwo files, dwp 2.40 crashes and llvm-dwp 14 loops,
// so the DWARF 5 package is made here (packDWARF5), as llvm-dwp would.
func TestSplitDWARFPackage(t *testing.T) {
	tests := []struct {
		name    string
		version string
		pack    func(t *testing.T, dir string)
	}{
		{"dwp-dwarf4", "-gdwarf-4", func(t *testing.T, dir string) {
			run(t, dir, nil, needTool(t, "dwp"), "-e", "prog", "-o", "prog.dwp")
		}},
		{"llvm-dwp-dwarf4", "-gdwarf-4", func(t *testing.T, dir string) {
			run(t, dir, nil, needTool(t, "llvm-dwp"), "-e", "prog", "-o", "prog.dwp")
		}},
		{"made-dwarf5", "-gdwarf-5", func(t *testing.T, dir string) {
			packDWARF5(t, dir, "prog.dwp", "splitlib.dwo", "prog.dwo")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			want := open(t, buildObjects(t, "gcc", dir, "plain", false, splitSrcs, "-O2", tt.version))
			bin := buildObjects(t, "gcc", dir, "prog", true, splitSrcs, "-O2", tt.version)
			tt.pack(t, dir)
			remove(t, filepath.Join(dir, "prog.dwo"))
			remove(t, filepath.Join(dir, "splitlib.dwo"))
			got := open(t, bin)
			pkg := bin + ".dwp"
			checkAsPlain(t, got, want, func(Unit) string { return pkg })
		})
	}
}

// TestSplitDWARFPackageOfAnotherBuild: the package has none of the
// program's DWO IDs, and the .dwo files are gone.
func TestSplitDWARFPackageOfAnotherBuild(t *testing.T) {
	dir := t.TempDir()
	bin := buildObjects(t, "gcc", dir, "prog", true, splitSrcs, "-O0", "-gdwarf-5")
	other := filepath.Join(dir, "other")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	buildObjects(t, "gcc", other, "prog", true, splitSrcs, "-O1", "-gdwarf-5")
	packDWARF5(t, other, "prog.dwp", "prog.dwo", "splitlib.dwo")
	write(t, bin+".dwp", readFile(t, filepath.Join(other, "prog.dwp")))
	remove(t, filepath.Join(dir, "prog.dwo"))
	remove(t, filepath.Join(dir, "splitlib.dwo"))
	f := open(t, bin)
	if len(f.Warnings) != 2 {
		t.Fatalf("warnings %q, want two", f.Warnings)
	}
	for _, w := range f.Warnings {
		if !strings.Contains(w, "package "+bin+".dwp has no DWO ID") {
			t.Errorf("warning %q does not say the package lacks the unit", w)
		}
	}
	if fn := funcNamed(t, f, "exposed"); fn.Unit != 1 || fn.Source != "splitlib.o" || !f.Units[1].SymbolsOnly {
		t.Errorf("exposed: %+v, want unit 1, splitlib.o, symbols only", fn)
	}
}

// packDWARF5 writes dir/out, a DWARF 5 package (section 7.3.5) of the .dwo
// files of dir, in the order given: the first file's sections replaced by
// the concatenations of all files' (objcopy --update-section), each file's
// string offsets moved into the joined .debug_str.dwo, and a
// .debug_cu_index. When llvm-dwarfdump is installed, it must read the
// package's units.
func packDWARF5(t testing.TB, dir, out string, dwos ...string) {
	t.Helper()
	objcopy := needTool(t, "objcopy")
	le := binary.LittleEndian
	cols := []struct {
		id   uint32
		name string
	}{{1, "info"}, {3, "abbrev"}, {4, "line"}, {5, "loclists"}, {6, "str_offsets"}, {8, "rnglists"}}
	type row struct {
		id        uint64
		off, size []uint32
	}
	var rows []row
	joined := make(map[string][]byte)
	for _, dwo := range dwos {
		path := filepath.Join(dir, dwo)
		info := sectionData(t, path, ".debug_info.dwo")
		// 32-bit DWARF 5 split unit: length, version, type, address
		// size, abbreviation offset, then the DWO ID.
		r := row{id: le.Uint64(info[12:])}
		for _, c := range cols {
			b := sectionData(t, path, ".debug_"+c.name+".dwo")
			if c.name == "str_offsets" && len(b) > 8 {
				b = bytes.Clone(b)
				for k := 8; k+4 <= len(b); k += 4 {
					le.PutUint32(b[k:], le.Uint32(b[k:])+uint32(len(joined["str"])))
				}
			}
			r.off = append(r.off, uint32(len(joined[c.name])))
			r.size = append(r.size, uint32(len(b)))
			joined[c.name] = append(joined[c.name], b...)
		}
		joined["str"] = append(joined["str"], sectionData(t, path, ".debug_str.dwo")...)
		rows = append(rows, r)
	}
	slots := 2
	for slots < 2*len(rows) {
		slots *= 2
	}
	ids, index := make([]uint64, slots), make([]uint32, slots)
	mask := uint64(slots - 1)
	for i, r := range rows {
		h, step := r.id&mask, (r.id>>32)&mask|1
		for index[h] != 0 {
			h = (h + step) & mask
		}
		ids[h], index[h] = r.id, uint32(i+1)
	}
	cu := le.AppendUint16(nil, 5)
	cu = le.AppendUint16(cu, 0)
	cu = le.AppendUint32(cu, uint32(len(cols)))
	cu = le.AppendUint32(cu, uint32(len(rows)))
	cu = le.AppendUint32(cu, uint32(slots))
	for _, id := range ids {
		cu = le.AppendUint64(cu, id)
	}
	for _, i := range index {
		cu = le.AppendUint32(cu, i)
	}
	for _, c := range cols {
		cu = le.AppendUint32(cu, c.id)
	}
	for _, field := range []func(row) []uint32{func(r row) []uint32 { return r.off }, func(r row) []uint32 { return r.size }} {
		for _, r := range rows {
			for _, v := range field(r) {
				cu = le.AppendUint32(cu, v)
			}
		}
	}
	first, err := elf.Open(filepath.Join(dir, dwos[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	var args []string
	names := []string{"str"}
	for _, c := range cols {
		names = append(names, c.name)
	}
	for _, name := range names {
		if len(joined[name]) == 0 {
			continue
		}
		file := filepath.Join(dir, "pack-"+name)
		write(t, file, joined[name])
		sec := ".debug_" + name + ".dwo"
		op := "--add-section"
		if first.Section(sec) != nil {
			op = "--update-section"
		}
		args = append(args, op, sec+"="+file)
	}
	write(t, filepath.Join(dir, "pack-cu_index"), cu)
	args = append(args, "--add-section", ".debug_cu_index="+filepath.Join(dir, "pack-cu_index"), dwos[0], out)
	run(t, dir, nil, objcopy, args...)
	if dump, err := exec.LookPath("llvm-dwarfdump"); err == nil {
		text := run(t, dir, nil, dump, "--debug-info", out)
		if n := strings.Count(text, "unit_type = DW_UT_split_compile"); n != len(dwos) || !strings.Contains(text, `DW_AT_name	("main")`) {
			t.Fatalf("llvm-dwarfdump --debug-info %s: %d split units, want %d, main among them:\n%s", out, n, len(dwos), text)
		}
	}
}

// sectionData returns the contents of the named section of the ELF file
// at path, or nil if it has none.
func sectionData(t testing.TB, path, name string) []byte {
	t.Helper()
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	s := ef.Section(name)
	if s == nil {
		return nil
	}
	b, err := s.Data()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func write(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func remove(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

// FuzzSplitDWARF reads gcc split builds of prog.c whose .dwo file, or
// package (pkg), is arbitrary bytes: Open must neither fail nor panic for
// them, and must keep the functions.
func FuzzSplitDWARF(f *testing.F) {
	bins := make(map[bool][]byte)
	for _, dwarf5 := range []bool{false, true} {
		version := map[bool]string{false: "-gdwarf-4", true: "-gdwarf-5"}[dwarf5]
		dir := f.TempDir()
		copySource(f, dir, "prog.c")
		gcc := needTool(f, "gcc")
		run(f, dir, nil, gcc, "-g", "-gsplit-dwarf", "-O2", version, "-c", "-o", "prog.o", "prog.c")
		run(f, dir, nil, gcc, "-o", "prog", "prog.o")
		bins[dwarf5] = readFile(f, filepath.Join(dir, "prog"))
		dwo := readFile(f, filepath.Join(dir, "prog.dwo"))
		f.Add(dwarf5, false, dwo)
		f.Add(dwarf5, false, dwo[:len(dwo)/2])
		if dwarf5 {
			packDWARF5(f, dir, "prog.dwp", "prog.dwo")
		} else if dwp, err := exec.LookPath("dwp"); err == nil {
			run(f, dir, nil, dwp, "-e", "prog", "-o", "prog.dwp")
		} else {
			continue
		}
		f.Add(dwarf5, true, readFile(f, filepath.Join(dir, "prog.dwp")))
	}
	f.Add(true, true, []byte("\x7fELF"))
	f.Fuzz(func(t *testing.T, dwarf5, pkg bool, data []byte) {
		open := func(path string) (io.ReaderAt, io.Closer, error) {
			if ext := map[bool]string{false: ".dwo", true: ".dwp"}[pkg]; !strings.HasSuffix(path, ext) {
				return nil, nil, &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
			}
			return bytes.NewReader(data), io.NopCloser(nil), nil
		}
		file, err := newFile(bytes.NewReader(bins[dwarf5]), "/fuzz/prog", open)
		if err != nil {
			t.Fatalf("newFile: %v", err)
		}
		if !hasFunc(file, "main") || !hasFunc(file, "fact") {
			t.Fatalf("functions lost: %+v", file.Funcs)
		}
		file.Lines()
	})
}
