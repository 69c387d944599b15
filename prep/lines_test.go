package prep

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/dwarf"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/internal/testutil"
)

// buildLcount builds the original's lcount program from lcount.c and
// lcount2.c, in that order, with flags.
func buildLcount(t *testing.T, flags ...string) string {
	t.Helper()
	cc := testutil.CC()
	testutil.MustHaveTool(t, cc)
	src := filepath.Join(testutil.Root(t), "testdata", "original", "src")
	prog := filepath.Join(t.TempDir(), "lcount")
	args := append(flags, "-o", prog, filepath.Join(src, "lcount.c"), filepath.Join(src, "lcount2.c"))
	if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", cc, args, err, out)
	}
	return prog
}

// planLinesOf plans a line profile of prog with the default selections.
func planLinesOf(t *testing.T, method datafile.Method, prog string) (*datafile.Plan, error) {
	t.Helper()
	return buildPlan(Options{Method: method, Programs: []string{prog}, Specs: defaults(t), Calibration: -1,
		Warn: func(d *prf.Diagnostic) { t.Errorf("warning: %v", d) }}, nil)
}

// lineSet returns the lines of file (by base name) that plan has, each
// with its sites.
func lineSet(plan *datafile.Plan, file string) map[int][]uint64 {
	got := map[int][]uint64{}
	for _, l := range plan.Lines {
		if filepath.Base(plan.Modules[l.Module].Files[l.File]) == file {
			got[l.Line] = l.Addrs
		}
	}
	return got
}

// objdumpRows returns the addresses of the statement rows of each line of
// file in prog's line table, as objdump decodes it.
func objdumpRows(t *testing.T, prog, file string) map[int][]uint64 {
	t.Helper()
	out, err := exec.Command("objdump", "--dwarf=decodedline", prog).Output()
	if err != nil {
		t.Fatalf("objdump: %v", err)
	}
	rows := map[int][]uint64{}
	re := regexp.MustCompile(`^(\S+)\s+(\d+)\s+0x([0-9a-f]+)(?:\s+(\S+))?(?:\s+x)?\s*$`)
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := re.FindStringSubmatch(sc.Text())
		if m == nil || m[1] != file || !strings.HasSuffix(strings.TrimSpace(sc.Text()), "x") {
			continue
		}
		line, _ := strconv.Atoi(m[2])
		addr, _ := strconv.ParseUint(m[3], 16, 64)
		if line > 0 && !slices.Contains(rows[line], addr) {
			rows[line] = append(rows[line], addr)
		}
	}
	return rows
}

// instructionStarts returns the address of every instruction of prog's
// code, as objdump disassembles it.
func instructionStarts(t *testing.T, prog string) map[uint64]bool {
	t.Helper()
	out, err := exec.Command("objdump", "-d", "--no-show-raw-insn", prog).Output()
	if err != nil {
		t.Fatalf("objdump: %v", err)
	}
	starts := map[uint64]bool{}
	re := regexp.MustCompile(`^\s*([0-9a-f]+):\s`)
	for _, l := range strings.Split(string(out), "\n") {
		if m := re.FindStringSubmatch(l); m != nil {
			a, _ := strconv.ParseUint(m[1], 16, 64)
			starts[a] = true
		}
	}
	return starts
}

// TestLineSites plans the lines of the original's lcount program (lcount.c
// and lcount2.c, -O0), and checks them against objdump's reading of the
// same line table and code: line counting has one site per line and
// function, the lowest address of the line's statement rows (line 21, a
// for header, has three rows: initialisation, test, increment, and counts
// its first); line coverage has every row's address; every site is an
// instruction's first byte; the files are listed in the reverse of the
// order they were given to the compiler, as the original listed them.
func TestLineSites(t *testing.T) {
	testutil.MustHaveTool(t, "objdump")
	prog := buildLcount(t, "-g", "-O0")
	rows := objdumpRows(t, prog, "lcount.c")
	starts := instructionStarts(t, prog)
	if len(rows[21]) < 2 {
		t.Fatalf("line 21 has rows %x: want the for header's several", rows[21])
	}
	for _, method := range []datafile.Method{datafile.LineCounting, datafile.LineCoverage} {
		plan, err := planLinesOf(t, method, prog)
		if err != nil {
			t.Fatalf("%v: %v", method, err)
		}
		if files := plan.Modules[0].Files; len(files) != 2 || filepath.Base(files[0]) != "lcount2.c" || filepath.Base(files[1]) != "lcount.c" {
			t.Errorf("%v: files %q, want lcount2.c then lcount.c", method, files)
		}
		got := lineSet(plan, "lcount.c")
		if g, w := slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(rows)); !slices.Equal(g, w) {
			t.Errorf("%v: lines %v, objdump's %v", method, g, w)
		}
		for line, addrs := range got {
			want := slices.Sorted(slices.Values(rows[line]))
			if method == datafile.LineCounting {
				want = want[:1] // one function per line here
			}
			if !slices.Equal(addrs, want) {
				t.Errorf("%v: line %d sites %x, want %x", method, line, addrs, want)
			}
			for _, a := range addrs {
				if !starts[a] {
					t.Errorf("%v: line %d site %#x is no instruction's start", method, line, a)
				}
			}
		}
	}
}

// TestLinesNeedDebugInfo: a line profile of a program built without -g
// is PRF1621; a selection that leaves no line, PRF1622.
func TestLinesNeedDebugInfo(t *testing.T) {
	_, err := planLinesOf(t, datafile.LineCounting, buildLcount(t, "-O0"))
	if d := (*prf.Diagnostic)(nil); !errors.As(err, &d) || d.Code != 1621 {
		t.Errorf("no -g: %v, want PRF1621", err)
	}
	_, err = buildPlan(Options{Method: datafile.LineCounting, Programs: []string{buildLcount(t, "-g", "-O0")},
		Specs: append(defaults(t), Spec{Op: ExcludeAll}), Calibration: -1}, nil)
	if d := (*prf.Diagnostic)(nil); !errors.As(err, &d) || d.Code != 1622 {
		t.Errorf("/EXCALL: %v, want PRF1622", err)
	}
}

// TestLineSelection selects the lines of the original's lcount program as
// its sel goldens did (lcount/selN: /INC and /EXC with source files and
// line ranges, object modules, a function name, reversed and blank-only
// ranges, a bare file name) and compares the lines with the ones the
// original profiled (record 7 of selN-plist-t.out), or its diagnostics.
// Windows names become Linux ones (lcount.obj: lcount.o). The lines gcc
// gives no code of their own (27, 28, 32 of lcount.c) are the only ones
// the original has and the plan may not.
func TestLineSelection(t *testing.T) {
	prog := buildLcount(t, "-g", "-O0")
	inc := func(s string) Spec { return Spec{Op: Include, Text: s} }
	exc := func(s string) Spec { return Spec{Op: Exclude, Text: s} }
	all := Spec{Op: ExcludeAll}
	for _, c := range []struct {
		golden string
		specs  []Spec
		fatal  int // the PRF number of a fatal error
		warn   int // of a warning
	}{
		{golden: "sel1", specs: []Spec{all, inc("lcount.c(16-30)")}},
		{golden: "sel2", specs: []Spec{exc("lcount.c(6-9)")}},
		{golden: "sel3", specs: []Spec{all, inc("lcount.c(20-22,35-37)")}},
		{golden: "sel4", specs: []Spec{all, inc("lcount2.c(0-0)")}},
		{golden: "sel5", specs: []Spec{exc("lcount2.c")}, warn: 4106},
		{golden: "sel6", specs: []Spec{all, inc("lcount.c(3-5)")}, fatal: 1622},
		{golden: "sel7", specs: []Spec{all, inc("lcount.c(23-23)")}, fatal: 1622},
		{golden: "sel8", specs: []Spec{all, inc("lcount.c(21)")}},
		{golden: "sel9", specs: []Spec{all, inc("lcount.c(5-")}, fatal: 1422},
		{golden: "sel10", specs: []Spec{all, inc("lcount.c(30-20)")}, fatal: 1622},
		{golden: "sel11", specs: []Spec{exc("lcount.o")}},
		{golden: "sel12", specs: []Spec{all, inc("lcount2.o")}},
		// (sel13, /EXCALL /INC square, selected no line in the original:
		// here a function's name selects its lines, TestLineSelectionByFunction.)
		{golden: "sel14", specs: []Spec{exc("nosuch.c")}, warn: 4106},
		{golden: "sel15", specs: []Spec{all}, fatal: 1622},
		{golden: "sel16", specs: []Spec{exc("lcount.c(0-0)")}},
		{golden: "sel17", specs: []Spec{all, inc("lcount.c(19-20)")}},
		{golden: "sel18", specs: []Spec{all, inc("lcount.c(21-22)"), inc("lcount.c(36-36)")}},
		{golden: "sel19", specs: []Spec{exc("lcount.c")}, warn: 4106},
		{golden: "sel20", specs: []Spec{all, inc("lcount.c(0-0)"), exc("lcount.c(21-28)")}},
		{golden: "sel22", specs: []Spec{all, inc("lcount.c(21-22,35-37,13-13)")}},
		{golden: "sel23", specs: []Spec{all, inc("LCOUNT.C(21-22)")}},
	} {
		t.Run(c.golden, func(t *testing.T) {
			var warnings []int
			plan, err := buildPlan(Options{Method: datafile.LineCounting, Programs: []string{prog}, Calibration: -1,
				Specs: append(defaults(t), c.specs...),
				Warn:  func(d *prf.Diagnostic) { warnings = append(warnings, d.Code) }}, nil)
			if c.fatal != 0 {
				if d := (*prf.Diagnostic)(nil); !errors.As(err, &d) || d.Code != c.fatal {
					t.Errorf("%v, want PRF%d", err, c.fatal)
				}
				if len(warnings) != 0 {
					t.Errorf("warnings %v before the fatal error: the original printed none", warnings)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var wantWarnings []int
			if c.warn != 0 {
				wantWarnings = append(wantWarnings, c.warn)
			}
			if !slices.Equal(warnings, wantWarnings) {
				t.Errorf("warnings %v, want %v", warnings, wantWarnings)
			}
			var got []string
			for _, l := range plan.Lines {
				got = append(got, fmt.Sprintf("%s:%d", filepath.Base(plan.Modules[0].Files[l.File]), l.Line))
			}
			var want []string
			for _, l := range strings.Split(testutil.OriginalText(t, "lcount/"+c.golden+"-plist-t.out"), "\n") {
				f := strings.Split(strings.TrimSpace(l), "\t")
				if len(f) == 5 && f[0] == "7" && !(f[2] == "lcount.c" && (f[3] == "27" || f[3] == "28" || f[3] == "32")) {
					want = append(want, f[2]+":"+f[3])
				}
			}
			if !slices.Equal(got, want) || len(want) == 0 {
				t.Errorf("lines %v\nthe original's %v", got, want)
			}
			t.Logf("%d lines", len(got))
		})
	}
}

// TestLineSelectionByFunction: in a line profile a function's name
// selects the lines of its code, as it selects the function in a
// function profile: /EXCALL /INC square leaves square's lines alone
// (lcount.c 11-14; the original's line profiles ignored a function's
// name, lcount/sel13, PRF1622), and /EXC square takes exactly those out
// of the default selection.
func TestLineSelectionByFunction(t *testing.T) {
	prog := buildLcount(t, "-g", "-O0")
	plan := func(specs ...Spec) []string {
		t.Helper()
		p, err := buildPlan(Options{Method: datafile.LineCounting, Programs: []string{prog}, Calibration: -1,
			Specs: append(defaults(t), specs...),
			Warn:  func(d *prf.Diagnostic) { t.Errorf("warning %v", d) }}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range p.Lines {
			got = append(got, fmt.Sprintf("%s:%d", filepath.Base(p.Modules[0].Files[l.File]), l.Line))
		}
		return got
	}
	square := plan(Spec{Op: ExcludeAll}, Spec{Op: Include, Text: "square"})
	if !slices.Contains(square, "lcount.c:13") || slices.ContainsFunc(square, func(l string) bool {
		var n int
		_, err := fmt.Sscanf(l, "lcount.c:%d", &n)
		return err != nil || n < 11 || n > 14
	}) {
		t.Errorf("/EXCALL /INC square: lines %v, want square's, among lcount.c 11-14, 13 with them", square)
	}
	all, without := plan(), plan(Spec{Op: Exclude, Text: "square"})
	if want := slices.DeleteFunc(slices.Clone(all), func(l string) bool { return slices.Contains(square, l) }); !slices.Equal(without, want) {
		t.Errorf("/EXC square: lines %v, want the default's %v without square's %v", without, all, square)
	}
}

// TestDamagedLineTables plans a line profile of a program whose line table
// has a version no reader knows: PRF1649, naming the program, with a hint
// (before, "fatal error:" without a number).
func TestDamagedLineTables(t *testing.T) {
	dir := t.TempDir()
	prog := buildC(t, dir, "fixture", "-g", "-O0", "fixture.c")
	f, err := elf.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	sec := f.Section(".debug_line")
	f.Close()
	if sec == nil || sec.Flags&elf.SHF_COMPRESSED != 0 || sec.Size < 6 {
		t.Skip("no uncompressed .debug_line to damage")
	}
	b, err := os.ReadFile(prog)
	if err != nil {
		t.Fatal(err)
	}
	// The first unit's version, after its 32-bit unit length.
	b[sec.Offset+4], b[sec.Offset+5] = 0x99, 0x00
	damaged := filepath.Join(dir, "damaged")
	if err := os.WriteFile(damaged, b, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = buildPlan(Options{Method: datafile.LineCounting, Programs: []string{damaged}, Specs: defaults(t), Calibration: -1}, nil)
	var d *prf.Diagnostic
	if prf.Code(err) != 1649 || !errors.As(err, &d) || d.Hint == "" ||
		!strings.HasPrefix(err.Error(), "cannot read the debugging information of "+damaged+": ") {
		t.Errorf("BuildPlan = PRF%d %v, want PRF1649 naming %s, with a hint", prf.Code(err), err, damaged)
	}
}

// TestSamplingPlanLines checks the lines of a function sampling plan: the
// start of every statement row of the planned functions' code, each under
// its line (of several rows at one address, the last, which names the
// line as gdb names a PC's), and nothing outside them, as objdump decodes
// the line table.
func TestSamplingPlanLines(t *testing.T) {
	prog := testutil.BuildC(t, "shares", "-O2", "-pthread")
	plan, err := planLinesOf(t, datafile.FuncSampling, prog)
	if err != nil {
		t.Fatal(err)
	}
	inFunc := func(a uint64) bool {
		for _, f := range plan.Funcs {
			if a >= f.Low && a < f.High {
				return true
			}
		}
		return false
	}
	got := map[uint64]int{}
	for line, addrs := range lineSet(plan, "shares.c") {
		for _, a := range addrs {
			got[a] = line
		}
	}
	want := map[uint64]int{}
	for a, line := range objdumpLastRows(t, prog, "shares.c") {
		if inFunc(a) {
			want[a] = line
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the plan's line of each address (-objdump +plan):\n%s", d)
	}
	if len(want) < 20 {
		t.Errorf("only %d rows in the planned functions", len(want))
	}
}

// objdumpLastRows returns the line of each address of file's statement
// rows in prog's line table, as objdump decodes it: of several rows at one
// address, the last.
func objdumpLastRows(t *testing.T, prog, file string) map[uint64]int {
	t.Helper()
	out, err := exec.Command("objdump", "--dwarf=decodedline", prog).Output()
	if err != nil {
		t.Fatalf("objdump: %v", err)
	}
	rows := map[uint64]int{}
	re := regexp.MustCompile(`^(\S+)\s+(\d+)\s+0x([0-9a-f]+)(?:\s+(\S+))?(?:\s+x)?\s*$`)
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := re.FindStringSubmatch(sc.Text())
		if m == nil || !strings.HasSuffix(strings.TrimSpace(sc.Text()), "x") {
			continue
		}
		line, _ := strconv.Atoi(m[2])
		addr, _ := strconv.ParseUint(m[3], 16, 64)
		switch {
		case m[1] == file && line > 0:
			rows[addr] = line
		case line > 0:
			delete(rows, addr) // (another file's row names the address)
		}
	}
	return rows
}

// goLines: a Go program's line profile, by the default selection, holds
// the lines of the functions its function profile holds, main's, and no
// line of the runtime or the standard library (it held every one of them:
// 32,000 sites in gofmt, a program of a millisecond that did not end in a
// minute), and the plan says what the defaults left out, for the report's
// header, as a function profile's does. /EXC runtime matches (it "was
// never matched"), /INC runtime brings the runtime's lines back. prog is
// testdata/hello.go built (TestBuildPlanGo).
func goLines(t *testing.T, prog string) {
	lines := func(specs ...Spec) (*datafile.Plan, []string) {
		t.Helper()
		var warnings []string
		p, err := buildPlan(Options{Method: datafile.LineCounting, Programs: []string{prog}, Calibration: -1,
			Specs: append(defaults(t), specs...),
			Warn:  func(d *prf.Diagnostic) { warnings = append(warnings, d.Error()) }}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return p, warnings
	}
	inFile := func(p *datafile.Plan, f func(string) bool) int {
		n := 0
		for _, l := range p.Lines {
			if f(p.Modules[0].Files[l.File]) {
				n++
			}
		}
		return n
	}
	runtimeFile := func(f string) bool { return strings.Contains(f, "/src/runtime/") }
	p, warnings := lines()
	// main.go: M on line 10, fib 12-17, main 19-22.
	if own := inFile(p, func(f string) bool { return filepath.Base(f) == "main.go" }); own < 8 || inFile(p, runtimeFile) != 0 || len(warnings) != 0 {
		t.Errorf("default: %d lines of main.go, %d of the runtime, of %d; warnings %q; want main.go's and none of the runtime",
			own, inFile(p, runtimeFile), len(p.Lines), warnings)
	}
	for _, l := range p.Lines {
		if f := p.Modules[0].Files[l.File]; filepath.Base(f) == "main.go" && (l.Line < 10 || l.Line > 22) {
			t.Errorf("line %s:%d is no line of hello.go's functions", f, l.Line)
		}
	}
	fp := mustBuild(t, []string{prog}, "").plan
	if len(p.LeftOut) != 1 || p.LeftOut[0].What != "the Go runtime and standard library" || p.LeftOut[0].Funcs < 100 ||
		!slices.Equal(p.LeftOut, fp.LeftOut) {
		t.Errorf("left out: lines %+v, functions %+v; want the same, the Go runtime and standard library's hundreds", p.LeftOut, fp.LeftOut)
	}
	if _, warnings := lines(Spec{Op: Exclude, Text: "runtime"}); len(warnings) != 0 {
		t.Errorf("/EXC runtime: warnings %q, want none", warnings)
	}
	p, _ = lines(Spec{Op: Include, Text: "runtime"})
	if inFile(p, runtimeFile) < 100 {
		t.Errorf("/INC runtime: %d lines of the runtime, want its thousands", inFile(p, runtimeFile))
	}
	if len(p.LeftOut) != 1 || p.LeftOut[0].Funcs >= fp.LeftOut[0].Funcs {
		t.Errorf("/INC runtime: left out %+v, want fewer than %+v", p.LeftOut, fp.LeftOut)
	}
	// The functions shared out among the CPUs in parts of any size give
	// the same plan and the same warnings, in the same order (here
	// /INC '*' and a function never matched).
	all := []Spec{{Op: Include, Text: "*"}, {Op: Include, Text: "no_such_function"}}
	want, wantWarnings := lines(all...)
	defer func(n int) { partFuncs = n }(partFuncs)
	for _, n := range []int{1, 7, 1 << 20} {
		partFuncs = n
		if got, warnings := lines(all...); !reflect.DeepEqual(got, want) || !slices.Equal(warnings, wantWarnings) || len(warnings) == 0 {
			t.Errorf("in parts of %d functions: %d lines, warnings %q; want %d, %q", n, len(got.Lines), warnings, len(want.Lines), wantWarnings)
		}
	}
}

// TestLineSitesInlined plans the lines of inlines.c, whose bump is inlined
// four times into walk, for x86-64 and for arm64 as PIE, and checks that
// each line of bump has one site in each copy, the code of each inlined
// call (a line had one site per function, in one copy), and the lines of
// walk one each.
func TestLineSitesInlined(t *testing.T) {
	for _, c := range []struct{ cc, opt string }{
		{"gcc", "-O0"}, {"gcc", "-O2"}, {"aarch64-linux-gnu-gcc", "-O0"}, {"aarch64-linux-gnu-gcc", "-O2"},
	} {
		t.Run(c.cc+c.opt, func(t *testing.T) {
			testutil.MustHaveTool(t, c.cc)
			prog := filepath.Join(t.TempDir(), "inlines")
			run(t, "", nil, c.cc, "-g", c.opt, "-pie", "-fPIE", "-o", prog,
				filepath.Join(testutil.Root(t), "testdata", "progs", "c", "inlines.c"))
			plan, err := planLinesOf(t, datafile.LineCounting, prog)
			if err != nil {
				t.Fatal(err)
			}
			f, err := dwarf.Open(prog)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			calls, err := f.InlinedCalls()
			if err != nil {
				t.Fatal(err)
			}
			copyOf := func(a uint64) int {
				for i, c := range calls {
					for _, r := range c.Ranges {
						if r.Low <= a && a < r.High {
							return i
						}
					}
				}
				return -1
			}
			sites := lineSet(plan, "inlines.c")
			for _, line := range []int{23, 24} { // bump: add, bump: back
				var copies []int
				for _, a := range sites[line] {
					copies = append(copies, copyOf(a))
				}
				slices.Sort(copies)
				if len(copies) != 4 || slices.Contains(copies, -1) || len(slices.Compact(copies)) != 4 {
					t.Errorf("line %d: sites %#x in the inlined calls %v, want one in each of 4", line, sites[line], copies)
				}
			}
			if len(sites[44]) != 1 { // s += walk(x);
				t.Errorf("line 44: sites %#x, want one", sites[44])
			}
		})
	}
}
