package prep

import (
	"bufio"
	"bytes"
	"cmp"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
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

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/dwarf"
	"github.com/sourceprofiler/sprof/internal/prf"
)

// The integration tests compile the fixtures of testdata/ into t.TempDir()
// and check BuildPlan's function lists exactly. They need gcc (g++ for C++,
// go for the Go fixture) and an x86-64 or arm64 Linux host.

// tool returns the path of a build tool, or skips the test.
func tool(t *testing.T, name string) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the fixtures are ELF programs: Linux only")
	}
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not found: %v", name, err)
	}
	return p
}

// run runs a command in dir and fails the test if it fails.
func run(t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// buildC compiles testdata sources with gcc (or g++ for .cpp) into
// dir/out and returns its path.
func buildC(t *testing.T, dir, out string, args ...string) string {
	t.Helper()
	compiler := "gcc"
	for _, a := range args {
		if strings.HasSuffix(a, ".cpp") {
			compiler = "g++"
		}
	}
	cc := tool(t, compiler)
	path := filepath.Join(dir, out)
	full := []string{"-o", path}
	for _, a := range args {
		if strings.HasSuffix(a, ".c") || strings.HasSuffix(a, ".cpp") {
			a = testdataPath(t, a)
		}
		full = append(full, a)
	}
	run(t, dir, nil, cc, full...)
	return path
}

func testdataPath(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// defaults returns the built-in default selections.
func defaults(t *testing.T) []Spec {
	t.Helper()
	specs, err := DefaultSpecs("", func(string) string { return "" }, t.TempDir(), func(err *prf.Diagnostic) { t.Errorf("warning: %v", err) })
	if err != nil {
		t.Fatal(err)
	}
	return specs
}

// planResult is what a BuildPlan call gave.
type planResult struct {
	plan     *datafile.Plan
	err      error
	warnings []string
}

// build plans a function counting profile of programs with the default
// selections followed by specs. It plans what this version cannot profile
// yet too (the /SF start function): the planning is tested here, what
// BuildPlan refuses in TestBuildPlanMethods.
func build(t *testing.T, programs []string, start string, specs ...Spec) planResult {
	t.Helper()
	var r planResult
	r.plan, r.err = buildPlan(Options{
		Method:      datafile.FuncCounting,
		Programs:    programs,
		Specs:       append(defaults(t), specs...),
		Start:       start,
		Calibration: -1,
		Warn: func(err *prf.Diagnostic) {
			r.warnings = append(r.warnings, fmt.Sprintf("PRF%d %v", prf.Code(err), err))
		},
	}, nil)
	return r
}

// mustBuild is build that fails the test on an error.
func mustBuild(t *testing.T, programs []string, start string, specs ...Spec) planResult {
	t.Helper()
	r := build(t, programs, start, specs...)
	if r.err != nil {
		t.Fatalf("BuildPlan: %v", r.err)
	}
	if err := r.plan.Validate(); err != nil {
		t.Fatalf("BuildPlan returned an invalid plan: %v", err)
	}
	return r
}

// funcNames returns the stored names of the plan's functions of module mod.
func funcNames(p *datafile.Plan, mod int) []string {
	var names []string
	for _, f := range p.Funcs {
		if f.Module == mod {
			names = append(names, f.Name)
		}
	}
	return names
}

// symbols returns the addresses of the defined text symbols of an ELF file,
// as nm prints them.
func symbols(t *testing.T, path string) map[string]uint64 {
	t.Helper()
	out, err := exec.Command(tool(t, "nm"), path).Output()
	if err != nil {
		t.Fatalf("nm %s: %v", path, err)
	}
	syms := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 3 || (fields[1] != "T" && fields[1] != "t") {
			continue
		}
		addr, err := strconv.ParseUint(fields[0], 16, 64)
		if err != nil {
			t.Fatalf("nm %s: %q: %v", path, sc.Text(), err)
		}
		syms[fields[2]] = addr
	}
	return syms
}

// symbolSizes returns the sizes of the function symbols of path (nm -S).
func symbolSizes(t *testing.T, path string) map[string]uint64 {
	t.Helper()
	out, err := exec.Command(tool(t, "nm"), "-S", path).Output()
	if err != nil {
		t.Fatalf("nm -S %s: %v", path, err)
	}
	sizes := map[string]uint64{}
	for _, line := range strings.Split(string(out), "\n") {
		fields := strings.Fields(line)
		if len(fields) != 4 || (fields[2] != "T" && fields[2] != "t") {
			continue
		}
		size, err := strconv.ParseUint(fields[1], 16, 64)
		if err != nil {
			t.Fatalf("nm -S %s: %q: %v", path, line, err)
		}
		sizes[fields[3]] = size
	}
	return sizes
}

// lineOf returns the number of the first line of testdata/name holding s.
func lineOf(t *testing.T, name, s string) int {
	t.Helper()
	data, err := os.ReadFile(testdataPath(t, name))
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, s) {
			return i + 1
		}
	}
	t.Fatalf("%s holds no line with %q", name, s)
	return 0
}

// sortedByEntry returns the names ordered by their nm addresses.
func sortedByEntry(syms map[string]uint64, names ...string) []string {
	out := slices.Clone(names)
	slices.SortFunc(out, func(a, b string) int { return cmp.Compare(syms[a], syms[b]) })
	return out
}

// fixtureFuncs are the functions of testdata/fixture.c.
var fixtureFuncs = []string{"main", "f", "g", "h", "fib", "helper"}

func TestBuildPlanC(t *testing.T) {
	tests := []struct {
		name     string
		flags    []string
		pie      bool
		linkBase uint64
	}{
		{"O0 PIE", []string{"-g", "-O0", "-fPIE", "-pie"}, true, 0},
		{"O2 PIE", []string{"-g", "-O2", "-fPIE", "-pie"}, true, 0},
		{"O0 no-pie", []string{"-g", "-O0", "-fno-PIE", "-no-pie"}, false, 0x400000},
		{"O2 no-pie", []string{"-g", "-O2", "-fno-PIE", "-no-pie"}, false, 0x400000},
		{"O2 static", []string{"-g", "-O2", "-static"}, false, 0x400000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			prog := buildC(t, dir, "fixture", append(tt.flags, "fixture.c")...)
			r := mustBuild(t, []string{prog}, "")
			if len(r.warnings) != 0 {
				t.Errorf("warnings: %q", r.warnings)
			}
			p := r.plan
			syms, sizes := symbols(t, prog), symbolSizes(t, prog)
			if diff := gocmp.Diff(sortedByEntry(syms, fixtureFuncs...), funcNames(p, 0)); diff != "" {
				t.Fatalf("functions (-want +got):\n%s", diff)
			}
			src := testdataPath(t, "fixture.c")
			for _, f := range p.Funcs {
				decl := map[string]string{"main": "int main(", "f": "int f(", "g": "int g(", "h": "int h(",
					"fib": "int fib(", "helper": "int helper("}[f.Name]
				want := datafile.Func{Name: f.Name, Source: "fixture.o", Entry: syms[f.Name],
					Low: syms[f.Name], High: syms[f.Name] + sizes[f.Name], File: src, Line: lineOf(t, "fixture.c", decl)}
				if diff := gocmp.Diff(want, f); diff != "" {
					t.Errorf("function %s (-want +got):\n%s", f.Name, diff)
				}
			}
			st, err := os.Stat(prog)
			if err != nil {
				t.Fatal(err)
			}
			m := p.Modules[0]
			// The unit's directories: where it was compiled (dir), and
			// where its source is.
			compDirs := []string{dir, filepath.Dir(src)}
			slices.Sort(compDirs)
			want := datafile.Module{Name: "fixture", Path: prog, Arch: runtime.GOARCH, BuildID: m.BuildID,
				Size: st.Size(), ModTime: st.ModTime().UnixNano(), PIE: tt.pie, LinkBase: tt.linkBase, CompDirs: compDirs}
			if diff := gocmp.Diff([]datafile.Module{want}, p.Modules); diff != "" {
				t.Errorf("modules (-want +got):\n%s", diff)
			}
			if len(m.BuildID) != 20 {
				t.Errorf("build ID %s: want the 20 bytes of gcc's default SHA-1 note", m.BuildID)
			}
			if p.Method != datafile.FuncCounting || p.StartIndex != -1 || p.StartFunc != "" || p.Calibration != -1 || p.ID != datafile.PlanID(p) {
				t.Errorf("plan header = method %v start %q/%d calibration %d id %s", p.Method, p.StartFunc, p.StartIndex, p.Calibration, p.ID)
			}
		})
	}
}

func TestBuildPlanSelection(t *testing.T) {
	dir := t.TempDir()
	prog := buildC(t, dir, "fixture", "-g", "-O0", "fixture.c")
	syms := symbols(t, prog)
	exc := func(s string) Spec { return Spec{Op: Exclude, Text: s} }
	inc := func(s string) Spec { return Spec{Op: Include, Text: s} }
	excAll := Spec{Op: ExcludeAll}
	tests := []struct {
		name     string
		specs    []Spec
		want     []string
		warnings []string
	}{
		{"exc function", []Spec{exc("fib")}, []string{"main", "f", "g", "h", "helper"}, nil},
		{"exc glob", []Spec{exc("?")}, []string{"main", "fib", "helper"}, nil},
		{"excall inc object exc function", []Spec{excAll, inc("fixture.o"), exc("helper")}, []string{"main", "f", "g", "h", "fib"}, nil},
		{"excall inc source ranges", []Spec{excAll, inc(fmt.Sprintf("fixture.c(%d-%d)", lineOf(t, "fixture.c", "int h("), lineOf(t, "fixture.c", "int f(")))},
			[]string{"f", "g", "h"}, nil},
		{"inc start code back", []Spec{inc("_start")}, append([]string{"_start"}, fixtureFuncs...), nil},
		{"never matched", []Spec{exc("nosuch.o"), exc("fixture")}, fixtureFuncs, []string{
			"PRF4106 function/source/object/lib nosuch.o was never matched",
			"PRF4106 function/source/object/lib fixture was never matched",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustBuild(t, []string{prog}, "", tt.specs...)
			if diff := gocmp.Diff(sortedByEntry(syms, tt.want...), funcNames(r.plan, 0)); diff != "" {
				t.Errorf("functions (-want +got):\n%s", diff)
			}
			if diff := gocmp.Diff(tt.warnings, r.warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("nothing left", func(t *testing.T) {
		r := build(t, []string{prog}, "", exc("fixture.c(0-0)"))
		want := "no functions marked for profiling in module " + prog
		if prf.Code(r.err) != 1521 || r.err.Error() != want {
			t.Errorf("BuildPlan = PRF%d %v, want PRF1521 %q", prf.Code(r.err), r.err, want)
		}
	})
	t.Run("syntax error", func(t *testing.T) {
		r := build(t, []string{prog}, "", inc("fixture.c(5-"))
		if prf.Code(r.err) != 1422 || r.err.Error() != "syntax error in /EXC or /INC specification: fixture.c" {
			t.Errorf("BuildPlan = PRF%d %v, want PRF1422", prf.Code(r.err), r.err)
		}
	})
}

func TestBuildPlanStart(t *testing.T) {
	dir := t.TempDir()
	prog := buildC(t, dir, "fixture", "-g", "-O0", "fixture.c")
	cxx := buildC(t, dir, "counter", "-g", "-O0", "counter.cpp")
	tests := []struct {
		name, prog, start string
		specs             []Spec
		want              string // the stored name of the start function, "" none
		warnings          []string
	}{
		{"found", prog, "fib", nil, "fib", nil},
		{"case-sensitive", prog, "FIB", nil, "", []string{"PRF4524 entry function FIB not found"}},
		{"excluded", prog, "fib", []Spec{{Op: Exclude, Text: "fib"}}, "", []string{"PRF4524 entry function fib not found"}},
		{"mangled", cxx, "_ZN7Counter4bumpEv", nil, "_ZN7Counter4bumpEv", nil},
		{"demangled", cxx, "Counter::bump(int)", nil, "_ZN7Counter4bumpEi", nil},
		{"demangled free function", cxx, "twice", nil, "_Z5twicei", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustBuild(t, []string{tt.prog}, tt.start, tt.specs...)
			p := r.plan
			got := ""
			if p.StartIndex >= 0 {
				got = p.Funcs[p.StartIndex].Name
			}
			if got != tt.want || p.StartFunc != tt.start {
				t.Errorf("start = %q (%q), want %q (%q)", got, p.StartFunc, tt.want, tt.start)
			}
			if diff := gocmp.Diff(tt.warnings, r.warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("ambiguous", func(t *testing.T) {
		r := build(t, []string{cxx}, "Counter::bump")
		want := "more than one function matched entry specification: _ZN7Counter4bumpEi and _ZN7Counter4bumpEv"
		if prf.Code(r.err) != 1522 || r.err.Error() != want {
			t.Errorf("BuildPlan = PRF%d %v, want PRF1522 %q", prf.Code(r.err), r.err, want)
		}
	})
}

func TestBuildPlanCxx(t *testing.T) {
	for _, opt := range []string{"-O0", "-O2"} {
		t.Run(opt, func(t *testing.T) {
			prog := buildC(t, t.TempDir(), "counter", "-g", opt, "counter.cpp")
			syms := symbols(t, prog)
			own := []string{"main", "_ZN7Counter4bumpEi", "_ZN7Counter4bumpEv", "_Z5twicei"}
			r := mustBuild(t, []string{prog}, "")
			if diff := gocmp.Diff(sortedByEntry(syms, own...), funcNames(r.plan, 0)); diff != "" {
				t.Errorf("functions (-want +got):\n%s", diff)
			}
			r = mustBuild(t, []string{prog}, "", Spec{Op: Exclude, Text: "Counter::bump"})
			if diff := gocmp.Diff(sortedByEntry(syms, "main", "_Z5twicei"), funcNames(r.plan, 0)); diff != "" {
				t.Errorf("/EXC Counter::bump (-want +got):\n%s", diff)
			}
			r = mustBuild(t, []string{prog}, "", Spec{Op: Exclude, Text: "Counter::bump()"}, Spec{Op: Exclude, Text: "twice(int)"})
			if diff := gocmp.Diff(sortedByEntry(syms, "main", "_ZN7Counter4bumpEi"), funcNames(r.plan, 0)); diff != "" {
				t.Errorf("/EXC Counter::bump() /EXC twice(int) (-want +got):\n%s", diff)
			}
			if opt == "-O0" {
				// The vector's and sort's instances are back with /INC std::*.
				r = mustBuild(t, []string{prog}, "", Spec{Op: Include, Text: "std::*"})
				if n := len(r.plan.Funcs); n <= len(own) {
					t.Errorf("/INC std::* gives %d functions, want more than %d", n, len(own))
				}
			}
		})
	}
}

func TestBuildPlanStripped(t *testing.T) {
	dir := t.TempDir()
	prog := buildC(t, dir, "fixture", "-g", "-O2", "fixture.c")
	syms := symbols(t, prog)
	run(t, dir, nil, tool(t, "strip"), "--strip-debug", prog)
	r := mustBuild(t, []string{prog}, "")
	if diff := gocmp.Diff(sortedByEntry(syms, fixtureFuncs...), funcNames(r.plan, 0)); diff != "" {
		t.Fatalf("functions (-want +got):\n%s", diff)
	}
	for _, f := range r.plan.Funcs {
		if f.Source != "fixture" || f.File != "" || f.Line != 0 || f.Entry != syms[f.Name] {
			t.Errorf("function %+v: want source fixture, no declaration, entry %#x", f, syms[f.Name])
		}
	}

	run(t, dir, nil, tool(t, "strip"), prog)
	r = build(t, []string{prog}, "")
	var d *prf.Diagnostic
	if !errors.As(r.err, &d) || d.Code != 1521 {
		t.Fatalf("fully stripped: BuildPlan = %v, want PRF1521", r.err)
	}
	// It says why, and where debugging information can come from: the
	// dbgsym package, a .debug file by its debug link or build ID.
	f, err := dwarf.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	id := hex.EncodeToString(f.BuildID)
	for _, want := range []string{"-dbgsym", filepath.Base(prog) + ".debug", "/usr/lib/debug/.build-id/" + id[:2] + "/" + id[2:] + ".debug"} {
		if !strings.Contains(d.Hint, want) {
			t.Errorf("hint %q does not mention %q", d.Hint, want)
		}
	}
	if !strings.Contains(r.err.Error(), "no debugging information and no symbol table") {
		t.Errorf("error %q does not say why", r.err)
	}
}

// TestBuildPlanExportsOnly: a program stripped of its symbol table that
// still exports functions (f and fib here, as /usr/bin/sort exports its
// obstack functions) is planned with those alone, and PREP says so, with
// where debugging information can come from (the promise of linux.md,
// "Commands": before, 2 functions and not a word). Stripped of its
// debugging information only, it keeps its symbol table: no warning.
func TestBuildPlanExportsOnly(t *testing.T) {
	dir := t.TempDir()
	prog := buildC(t, dir, "fixture", "-g", "-O2", "-Wl,--export-dynamic-symbol=f", "-Wl,--export-dynamic-symbol=fib", "fixture.c")
	run(t, dir, nil, tool(t, "strip"), "--strip-debug", prog)
	if r := mustBuild(t, []string{prog}, ""); len(r.plan.Funcs) != len(fixtureFuncs) || len(r.warnings) != 0 {
		t.Errorf("without DWARF: %d functions, warnings %q; want %d, none", len(r.plan.Funcs), r.warnings, len(fixtureFuncs))
	}
	run(t, dir, nil, tool(t, "strip"), "--strip-all", prog)
	r := mustBuild(t, []string{prog}, "")
	if diff := gocmp.Diff([]string{"f", "fib"}, funcNames(r.plan, 0)); diff != "" {
		t.Errorf("functions (-want +got):\n%s", diff)
	}
	want := "PRF4625 " + prog + " has no debugging information and no symbol table (stripped): only the 2 functions it exports are known, and the rest of its code is not profiled"
	if len(r.warnings) != 1 || r.warnings[0] != want {
		t.Fatalf("warnings %q, want\n%s", r.warnings, want)
	}
	var hint string
	r.plan, r.err = buildPlan(Options{Method: datafile.FuncCounting, Programs: []string{prog}, Specs: defaults(t), Calibration: -1,
		Warn: func(d *prf.Diagnostic) { hint = d.Hint }}, nil)
	if !strings.Contains(hint, "-dbgsym") || !strings.Contains(hint, "/usr/lib/debug/.build-id/") {
		t.Errorf("hint %q: want where debugging information can come from", hint)
	}
}

func TestBuildPlanTrapEntries(t *testing.T) {
	prog := buildC(t, t.TempDir(), "trap", "-g", "-O0", "trap.c")
	syms := symbols(t, prog)
	r := mustBuild(t, []string{prog}, "")
	if diff := gocmp.Diff([]string{"main"}, funcNames(r.plan, 0)); diff != "" {
		t.Errorf("functions (-want +got):\n%s", diff)
	}
	if len(r.warnings) != 2 {
		t.Fatalf("warnings = %q, want two", r.warnings)
	}
	why := map[string]string{
		"trapper":     fmt.Sprintf("site %#x is a trap instruction (int3)", syms["trapper"]),
		"undecodable": fmt.Sprintf("decode amd64 instruction at %#x", syms["undecodable"]),
	}
	for i, name := range sortedByEntry(syms, "trapper", "undecodable") {
		prefix := fmt.Sprintf("PRF4525 cannot profile function %s in file %s: %s", name, prog, why[name])
		if !strings.HasPrefix(r.warnings[i], prefix) {
			t.Errorf("warning %q, want it to start with %q", r.warnings[i], prefix)
		}
	}
}

func TestBuildPlanSharedLibrary(t *testing.T) {
	dir := t.TempDir()
	lib := buildC(t, dir, "libfix.so", "-g", "-O0", "-fPIC", "-shared", "libfix.c")
	prog := buildC(t, dir, "usefix", "-g", "-O0", "usefix.c", "-L"+dir, "-lfix")
	r := mustBuild(t, []string{prog, lib}, "")
	p := r.plan
	if len(p.Modules) != 2 || p.Modules[0].Name != "usefix" || p.Modules[1].Name != "libfix.so" || !p.Modules[1].PIE {
		t.Fatalf("modules = %+v", p.Modules)
	}
	libSyms := symbols(t, lib)
	got := [][]string{funcNames(p, 0), funcNames(p, 1)}
	// (The program's call of lib_add goes through its PLT, below main:
	// a function of the program's, whose source is the library.)
	want := [][]string{{"lib_add", "main"}, sortedByEntry(libSyms, "lib_twice", "lib_add")}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("functions per module (-want +got):\n%s", diff)
	}
	if plt := p.Funcs[0]; plt.Source != "libfix.so" || plt.High-plt.Low != 16 || plt.File != "" {
		t.Errorf("PLT entry %+v: want source libfix.so, 16 bytes, no declaration", plt)
	}
	if last := p.Funcs[len(p.Funcs)-1]; last.Module != 1 || last.Entry != max(libSyms["lib_twice"], libSyms["lib_add"]) {
		t.Errorf("last function %+v: want the library's last", last)
	}

	r = mustBuild(t, []string{prog, lib}, "", Spec{Op: Exclude, Text: "libfix.so"})
	if diff := gocmp.Diff([]string{"main"}, funcNames(r.plan, 0)); diff != "" || len(r.plan.Funcs) != 1 {
		t.Errorf("/EXC libfix.so left %d functions (-want +got):\n%s", len(r.plan.Funcs), diff)
	}
	r = mustBuild(t, []string{prog, lib}, "", Spec{Op: ExcludeAll}, Spec{Op: Include, Text: "lib*.so*"})
	if gocmp.Diff([]string{"lib_add"}, funcNames(r.plan, 0)) != "" || len(funcNames(r.plan, 1)) != 2 {
		t.Errorf("/EXCALL /INC lib*.so* gave %+v", r.plan.Funcs)
	}

	r = mustBuild(t, []string{prog, prog}, "")
	if len(r.plan.Modules) != 1 {
		t.Errorf("a program named twice gives %d modules, want 1", len(r.plan.Modules))
	}
}

func TestBuildPlanGo(t *testing.T) {
	goTool := tool(t, "go")
	dir := t.TempDir()
	src, err := os.ReadFile(testdataPath(t, "hello.go"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"main.go": string(src), "go.mod": "module hello\n\ngo 1.21\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	prog := filepath.Join(dir, "hello")
	run(t, dir, []string{"GOWORK=off", "GOFLAGS=", "CGO_ENABLED=0"}, goTool, "build", "-o", prog, ".")
	r := mustBuild(t, []string{prog}, "main.fib")
	syms := symbols(t, prog)
	want := sortedByEntry(syms, "main.main", "main.fib", "main.(*T).M")
	if diff := gocmp.Diff(want, funcNames(r.plan, 0)); diff != "" {
		t.Errorf("functions (-want +got):\n%s", diff)
	}
	for _, f := range r.plan.Funcs {
		if f.Source != "main" || filepath.Base(f.File) != "main.go" {
			t.Errorf("function %+v: want source main, file main.go", f)
		}
	}
	if i := r.plan.StartIndex; i < 0 || r.plan.Funcs[i].Name != "main.fib" {
		t.Errorf("start index %d, want main.fib's", i)
	}
	// /INC runtime brings the runtime's functions back.
	r = mustBuild(t, []string{prog}, "", Spec{Op: Include, Text: "runtime"})
	if n := len(r.plan.Funcs); n < 100 {
		t.Errorf("/INC runtime gives %d functions, want the runtime's hundreds", n)
	}
	t.Run("lines", func(t *testing.T) { goLines(t, prog) })

	t.Run("architecture mismatch", func(t *testing.T) {
		arm := filepath.Join(dir, "hello-arm64")
		goarch := "arm64"
		if runtime.GOARCH == "arm64" {
			goarch = "amd64"
		}
		run(t, dir, []string{"GOWORK=off", "GOFLAGS=", "CGO_ENABLED=0", "GOARCH=" + goarch}, goTool, "build", "-o", arm, ".")
		r := build(t, []string{prog, arm}, "")
		want := "CPU type of module " + arm + " is different from initial one"
		if prf.Code(r.err) != 1307 || r.err.Error() != want {
			t.Errorf("BuildPlan = PRF%d %v, want PRF1307 %q", prf.Code(r.err), r.err, want)
		}
	})
}

func TestBuildPlanInputErrors(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.c")
	if err := os.WriteFile(text, []byte("int main(void) { return 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	obj := filepath.Join(dir, "fixture.o")
	run(t, dir, nil, tool(t, "gcc"), "-c", "-o", obj, testdataPath(t, "fixture.c"))
	missing := filepath.Join(dir, "nosuch")
	// A 32-bit i386 executable: the ELF header, one PT_LOAD, a ret.
	elf32 := filepath.Join(dir, "elf32")
	hdr := []byte("\x7fELF\x01\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00")
	hdr = binary.LittleEndian.AppendUint16(hdr, uint16(elf.ET_EXEC))
	hdr = binary.LittleEndian.AppendUint16(hdr, uint16(elf.EM_386))
	for _, v := range []uint32{1, 0x8048054, 52, 0, 0} { // version, entry, phoff, shoff, flags
		hdr = binary.LittleEndian.AppendUint32(hdr, v)
	}
	for _, v := range []uint16{52, 32, 1, 40, 0, 0} { // ehsize, phentsize, phnum, shentsize, shnum, shstrndx
		hdr = binary.LittleEndian.AppendUint16(hdr, v)
	}
	for _, v := range []uint32{uint32(elf.PT_LOAD), 0, 0x8048000, 0x8048000, 85, 85, 5, 0x1000} {
		hdr = binary.LittleEndian.AppendUint32(hdr, v)
	}
	if err := os.WriteFile(elf32, append(hdr, 0xc3), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		programs []string
		code     int
		msg      string
	}{
		{"missing", []string{missing}, 1011, "cannot open file " + missing + ": no such file or directory"},
		{"32-bit", []string{elf32}, 1402, elf32 + ": 386 programs cannot be profiled"},
		{"not ELF", []string{text}, 1401, text + ": not an ELF executable or shared library"},
		{"object file", []string{obj}, 1401, obj + ": not an ELF executable or shared library"},
		{"directory", []string{dir}, 1401, dir + ": not an ELF executable or shared library"},
		{"no program", nil, 1421, "no input specified"},
		{"nine programs", make([]string, 9), 1423, "number of modules exceeds 8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := build(t, tt.programs, "")
			if prf.Code(r.err) != tt.code || r.err.Error() != tt.msg {
				t.Errorf("BuildPlan = PRF%d %v, want PRF%d %q", prf.Code(r.err), r.err, tt.code, tt.msg)
			}
		})
	}
	t.Run("relative path", func(t *testing.T) {
		t.Chdir(dir)
		r := build(t, []string{"nosuch"}, "")
		if r.err == nil || r.err.Error() != "cannot open file "+missing+": no such file or directory" {
			t.Errorf("BuildPlan = %v, want the absolute path", r.err)
		}
	})
}

// TestBuildPlanMethods builds a plan of every method and collection
// option: those this version has are planned, the others refused with
// PRF1001 as the one list of prf.Unavailable says.
func TestBuildPlanMethods(t *testing.T) {
	prog := buildC(t, t.TempDir(), "fixture", "-g", "-O0", "fixture.c")
	features := map[datafile.Method]prf.Feature{
		datafile.FuncTiming: prf.FunctionTiming, datafile.FuncSampling: prf.FunctionSampling,
		datafile.LineCounting: prf.LineCounting, datafile.LineCoverage: prf.LineCoverage,
	}
	for _, m := range []datafile.Method{datafile.FuncCounting, datafile.FuncCoverage, datafile.FuncTiming,
		datafile.LineCounting, datafile.LineCoverage, datafile.FuncSampling} {
		var warnings []string
		o := Options{Method: m, Programs: []string{prog}, Specs: defaults(t), Calibration: -1,
			Warn: func(d *prf.Diagnostic) { warnings = append(warnings, fmt.Sprintf("PRF%d %v", d.Code, d)) }}
		lines := !m.IsFunction() || m == datafile.FuncSampling
		if lines {
			o.Start = "main" // ignored with PRF4107
		}
		p, err := BuildPlan(o)
		want := prf.Unavailable(features[m])
		switch {
		case want != nil:
			if prf.Code(err) != 1001 || err.Error() != want.Error() {
				t.Errorf("%v: BuildPlan = PRF%d %v, want PRF1001 %q", m, prf.Code(err), err, want)
			}
		case err != nil:
			t.Errorf("%v: %v", m, err)
		case p.Method != m || len(p.Funcs) != len(fixtureFuncs):
			t.Errorf("%v: plan method %v, %d functions", m, p.Method, len(p.Funcs))
		}
		if lines {
			if diff := gocmp.Diff([]string{"PRF4107 /SF option not valid for line-level or sample profiles"}, warnings); diff != "" {
				t.Errorf("%v: warnings (-want +got):\n%s", m, diff)
			}
		}
	}
	for _, tt := range []struct {
		name string
		o    Options
		f    prf.Feature
	}{
		{"start function", Options{Start: "main", Calibration: -1}, prf.StartFunction},
		{"attribution", Options{Attribution: true, Stack: 3, Calibration: -1}, prf.Attribution},
		{"calibration", Options{Calibration: 250}, prf.Calibration},
	} {
		o := tt.o
		o.Method, o.Programs, o.Specs = datafile.FuncCounting, []string{prog}, defaults(t)
		p, err := BuildPlan(o)
		want := prf.Unavailable(tt.f)
		switch {
		case want != nil && (err == nil || err.Error() != want.Error()):
			t.Errorf("%s: BuildPlan = %v, want %v", tt.name, err, want)
		case want == nil && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case want == nil && (p.StartFunc != o.Start || p.Attribution != o.Attribution || p.StackDepth != o.Stack || p.Calibration != o.Calibration):
			t.Errorf("%s: plan %+v", tt.name, p)
		}
	}
}

func TestWriteOutputs(t *testing.T) {
	dir := t.TempDir()
	prog := buildC(t, dir, "fixture", "-g", "-O0", "fixture.c")
	r := mustBuild(t, []string{prog}, "")
	pbi, pbt := filepath.Join(dir, "fixture.pbi"), filepath.Join(dir, "fixture.pbt")
	if err := WriteOutputs(r.plan, pbi, pbt, nil, func(d *prf.Diagnostic) { t.Errorf("warning: %v", d) }); err != nil {
		t.Fatalf("WriteOutputs: %v", err)
	}
	plan, err := datafile.OpenPlan(pbi)
	if err != nil {
		t.Fatal(err)
	}
	if diff := gocmp.Diff(r.plan, plan); diff != "" {
		t.Errorf(".pbi (-want +got):\n%s", diff)
	}
	m, err := datafile.OpenMerged(pbt)
	if err != nil {
		t.Fatal(err)
	}
	if diff := gocmp.Diff(datafile.NewMerged(r.plan), m); diff != "" {
		t.Errorf(".pbt (-want +got):\n%s", diff)
	}
	// A .pbo of this plan merges into the fresh .pbt.
	pbo := filepath.Join(dir, "fixture.pbo")
	hits := make([]uint64, len(plan.Funcs))
	hits[0] = 1
	run := datafile.Run{ID: datafile.NewRunID()}
	if err := datafile.SaveCounts(pbo, &datafile.Counts{PlanID: plan.ID, Method: plan.Method, Run: run, Stats: datafile.Stats{Hits: hits}}); err != nil {
		t.Fatal(err)
	}
	if err := Merge(pbt, []string{pbo}, pbt, nil); err != nil {
		t.Fatalf("Merge: %v", err)
	}
	if m, err = datafile.OpenMerged(pbt); err != nil || len(m.Runs) != 1 || m.Stats.Hits[0] != 1 {
		t.Errorf("merged .pbt: %v, %+v", err, m)
	}
	// The same run again is refused, and the database is left as it was.
	err = Merge(pbt, []string{pbo}, pbt, nil)
	if want := "the run in " + pbo + " is already in " + pbt; err == nil || err.Error() != want || prf.Code(err) != 1308 {
		t.Errorf("second merge of one run: %v, want %q", err, want)
	}
	if m, err = datafile.OpenMerged(pbt); err != nil || len(m.Runs) != 1 || m.Stats.Hits[0] != 1 {
		t.Errorf(".pbt after the refused merge: %v, %+v", err, m)
	}

	// Phase I again over the database that holds the run: it is replaced,
	// with a warning that the run is discarded.
	var warnings []string
	if err := WriteOutputs(r.plan, pbi, pbt, nil, func(d *prf.Diagnostic) { warnings = append(warnings, prf.Line("prep", d)) }); err != nil {
		t.Fatal(err)
	}
	want := []string{"prep: warning PRF4306: " + pbt + " held 1 run; it is discarded and the new fixture.pbt is empty"}
	if diff := gocmp.Diff(want, warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if m, err = datafile.OpenMerged(pbt); err != nil || len(m.Runs) != 0 {
		t.Errorf(".pbt after phase I: %v, %+v", err, m)
	}
	// The new .pbt remembers the run: prep /M does not merge its .pbo
	// again (PRF1309), twice over (phase I once more keeps it), but an
	// explicit merge still adds it.
	for range 2 {
		if m, err = datafile.OpenMerged(pbt); err != nil || !m.HasMerged(run.ID) || m.Pending(&datafile.Counts{PlanID: plan.ID, Method: plan.Method, Run: run}) {
			t.Errorf(".pbt after phase I: %v; the run is not remembered (%v)", err, m.Discarded)
		}
		added, err := MergePending(pbt, []string{pbo}, nil)
		if want := "the run in " + pbo + " was discarded when " + pbt + " was prepared again: it is not merged"; len(added) != 0 || err == nil || err.Error() != want || prf.Code(err) != 1309 {
			t.Errorf("prep /M of the discarded run: %v, %v; want PRF1309 %q", added, err, want)
		}
		if err := WriteOutputs(r.plan, pbi, pbt, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := Merge(pbt, []string{pbo}, pbt, nil); err != nil {
		t.Errorf("explicit merge of the discarded run: %v", err)
	}

	if err := WriteOutputs(r.plan, filepath.Join(dir, "nosuchdir", "x.pbi"), pbt, nil, nil); prf.Code(err) != 1013 {
		t.Errorf("WriteOutputs into a missing directory = %v, want PRF1013", err)
	}
	if err := WriteOutputs(r.plan, pbi, filepath.Join(dir, "nosuchdir", "x.pbt"), nil, nil); prf.Code(err) != 1013 {
		t.Errorf("WriteOutputs of a .pbt into a missing directory = %v, want PRF1013", err)
	}
}

func TestBuildPlanRust(t *testing.T) {
	rustc := tool(t, "rustc")
	dir := t.TempDir()
	prog := filepath.Join(dir, "hello")
	run(t, dir, nil, rustc, "-g", "-C", "opt-level=0", "-o", prog, testdataPath(t, "hello.rs"))
	r := mustBuild(t, []string{prog}, "hello::fib")
	var got []string
	for _, f := range r.plan.Funcs {
		got = append(got, matchNames(f.Name)[1]) // demangled, without the hash
		if f.Source != "hello" {
			t.Errorf("function %s: source %q, want the crate hello", f.Name, f.Source)
		}
	}
	slices.Sort(got)
	if diff := gocmp.Diff([]string{"hello::Counter::bump", "hello::fib", "hello::main"}, got); diff != "" {
		t.Errorf("functions (-want +got):\n%s", diff)
	}
	if i := r.plan.StartIndex; i < 0 || matchNames(r.plan.Funcs[i].Name)[1] != "hello::fib" {
		t.Errorf("start index %d, want hello::fib's", i)
	}
	if len(r.warnings) != 0 {
		t.Errorf("warnings: %q", r.warnings)
	}
}
