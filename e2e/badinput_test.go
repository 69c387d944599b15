package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sourceprofiler/sprof/internal/testutil"
)

// wantFail checks that a tool failed with the given status and PRF number.
func wantFail(t *testing.T, r result, status int, prf string) {
	t.Helper()
	if r.status != status || !strings.Contains(r.stderr, prf) {
		t.Errorf("status %d, stderr %q; want status %d and %s", r.status, r.stderr, status, prf)
	}
	if strings.Contains(r.stdout, prf) {
		t.Errorf("diagnostic %s on stdout: %q", prf, r.stdout)
	}
}

func TestBadPrepInput(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "notelf.c"), []byte("int main(void) { return 0; }\n"), 0o644)
	os.Mkdir(filepath.Join(dir, "adir"), 0o755)
	for _, c := range []struct {
		name, arg, prf string
	}{
		{"not ELF", "notelf.c", "PRF1401"},
		{"directory", "./adir", "PRF1401"},
		{"missing", "./nosuch", "PRF1011"},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantFail(t, tool(t, dir, "prep", "/nologo", "/FC", c.arg), 1, c.prf)
			if _, err := os.Stat(filepath.Join(dir, strings.TrimPrefix(c.arg, "./")+".pbi")); err == nil {
				t.Errorf("a .pbi was written after a failure")
			}
		})
	}
}

// TestNearNames selects, in the demo's program, names typed wrong: each
// warning that one was never matched suggests the program's names near
// it, for a function, a source file and an object module, in a function
// and a line profile, and for /SF.
func TestNearNames(t *testing.T) {
	dir := t.TempDir()
	name := install(t, testutil.BuildExample(t, "primes"), dir)
	never := func(spec, near string) string {
		return "prep: warning PRF4106: function/source/object/lib " + spec + " was never matched\n" +
			"prep: hint: did you mean " + near + "?\n"
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"/FC", "/INC", "is_prme"}, never("is_prme", "is_prime")},
		{[]string{"/FC", "/EXC", "gdc", "/EXC", "primes.cc", "/EXC", "prims.o"},
			never("gdc", "gcd") + never("primes.cc", "primes.c") + never("prims.o", "primes.o")},
		{[]string{"/LC", "/EXC", "cooprime"}, never("cooprime", "coprime")},
		{[]string{"/FT", "/SF", "is_prme"}, "prep: warning PRF4524: entry function is_prme not found\n" +
			"prep: hint: did you mean is_prime?\n"},
		{[]string{"/FC", "/INC", "is_*prme", "/EXC", "zzzzzz"},
			"prep: warning PRF4106: function/source/object/lib is_*prme was never matched\n" +
				"prep: warning PRF4106: function/source/object/lib zzzzzz was never matched\n"},
	}
	for _, tt := range tests {
		r := tool(t, dir, "prep", append(append([]string{"/nologo"}, tt.args...), name)...)
		if r.status != 0 || r.stderr != tt.want {
			t.Errorf("prep %q: status %d, stderr\n%s\nwant status 0, stderr\n%s", tt.args, r.status, r.stderr, tt.want)
		}
	}
}

func TestStripped(t *testing.T) {
	testutil.MustHavePtrace(t)
	testutil.MustHaveTool(t, "strip")
	prog := testutil.BuildC(t, "counts")
	dir := t.TempDir()
	name := install(t, prog, dir)
	// Without DWARF, functions come from the symbol table: same counts.
	if out, err := exec.Command("strip", "--strip-debug", filepath.Join(dir, name)).CombinedOutput(); err != nil {
		t.Fatalf("strip: %v %s", err, out)
	}
	must(t, dir, "prep", "/nologo", "/FC", name)
	must(t, dir, "profile", "/nologo", name)
	must(t, dir, "prep", "/nologo", "/M", name)
	tb := parseTab(t, must(t, dir, "plist", "/nologo", "/T", name).stdout)
	if tb.hits["f"] != 1000 || tb.hits["fib"] != 1973 || tb.hits["helper"] != 4 {
		t.Errorf("symbol-table profile: f %d, fib %d, helper %d; want 1000, 1973, 4", tb.hits["f"], tb.hits["fib"], tb.hits["helper"])
	}
	// Without any symbols there is nothing to profile.
	if out, err := exec.Command("strip", "--strip-all", filepath.Join(dir, name)).CombinedOutput(); err != nil {
		t.Fatalf("strip: %v %s", err, out)
	}
	wantFail(t, tool(t, dir, "prep", "/nologo", "/FC", name), 1, "PRF1521")
}

func TestBadDataFiles(t *testing.T) {
	testutil.MustHavePtrace(t)
	counts := testutil.BuildC(t, "counts")
	crash := testutil.BuildC(t, "crash")
	dir, _ := workflow(t, counts, []string{"/FC"})

	t.Run("truncated pbt", func(t *testing.T) {
		b, _ := os.ReadFile(filepath.Join(dir, "counts.pbt"))
		os.WriteFile(filepath.Join(dir, "short.pbt"), b[:len(b)/2], 0o644)
		wantFail(t, tool(t, dir, "plist", "/nologo", "short"), 1, "PRF1012")
	})
	t.Run("not a data file", func(t *testing.T) {
		os.WriteFile(filepath.Join(dir, "text.pbt"), []byte("hello, world\n"), 0o644)
		wantFail(t, tool(t, dir, "plist", "/nologo", "text"), 1, "PRF1301")
	})
	t.Run("pbo where pbt expected", func(t *testing.T) {
		wantFail(t, tool(t, dir, "plist", "/nologo", "counts.pbo"), 1, "PRF1303")
	})
	t.Run("pbo of another program", func(t *testing.T) {
		other := install(t, crash, dir)
		must(t, dir, "prep", "/nologo", "/FC", other)
		tool(t, dir, "profile", "/nologo", other)
		before, _ := os.ReadFile(filepath.Join(dir, "counts.pbt"))
		wantFail(t, tool(t, dir, "prep", "/nologo", "/IT", "counts", "/IO", "crash", "/OT", "counts"), 1, "PRF1306")
		after, _ := os.ReadFile(filepath.Join(dir, "counts.pbt"))
		if string(before) != string(after) {
			t.Error("a failed merge changed the .pbt")
		}
	})
	t.Run("another profile type", func(t *testing.T) {
		must(t, dir, "profile", "/nologo", "counts")
		must(t, dir, "prep", "/nologo", "/FV", "counts")
		wantFail(t, tool(t, dir, "prep", "/nologo", "/M", "counts"), 1, "PRF1304")
	})
	t.Run("program rebuilt after prep", func(t *testing.T) {
		must(t, dir, "prep", "/nologo", "/FC", "counts")
		// Rebuilt: same bytes are not enough, the file's time changed too.
		later := time.Now().Add(2 * time.Second)
		os.Chtimes(filepath.Join(dir, "counts"), later, later)
		wantFail(t, tool(t, dir, "profile", "/nologo", "counts"), 1, "PRF1442")
	})
}

// TestCrash: a program that crashes still leaves its counts, marked
// incomplete, and PROFILE says what happened.
func TestCrash(t *testing.T) {
	testutil.MustHavePtrace(t)
	dir, r := workflow(t, testutil.BuildC(t, "crash"), []string{"/FC"})
	wantFail(t, r, 1, "PRF1643")
	if !strings.Contains(r.stderr, "SIGSEGV") {
		t.Errorf("profile does not name the signal: %q", r.stderr)
	}
	if !strings.Contains(r.stdout, "before crash 6") {
		t.Errorf("program output %q", r.stdout)
	}
	tb := parseTab(t, must(t, dir, "plist", "/nologo", "/T", "crash").stdout)
	if tb.hits["f"] != 3 || tb.hits["main"] != 1 {
		t.Errorf("after the crash: f %d, main %d; want 3, 1", tb.hits["f"], tb.hits["main"])
	}
	// With /X PROFILE exits with the shell's status for the signal.
	r = tool(t, dir, "profile", "/nologo", "/X", "crash")
	if r.status != 128+11 {
		t.Errorf("profile /X status %d, want %d", r.status, 128+11)
	}
}

// TestCommandLineStatus: 0 for usage, 2 for a bad command line.
func TestCommandLineStatus(t *testing.T) {
	dir := t.TempDir()
	for _, tl := range []string{"prep", "profile", "plist"} {
		r := tool(t, dir, tl, "/?")
		if r.status != 0 || !strings.Contains(r.stdout, strings.ToUpper(tl)+" [options]") {
			t.Errorf("%s /?: status %d, stdout %q", tl, r.status, r.stdout)
		}
		if !strings.Contains(r.stderr, "Source Profiler") {
			t.Errorf("%s /?: no banner on stderr: %q", tl, r.stderr)
		}
		r = tool(t, dir, tl, "/nologo", "/bogus", "x")
		wantFail(t, r, 2, "PRF1102")
		if r.stderr != tl+": fatal error PRF1102: bogus: invalid option\n"+tl+": hint: try '"+tl+" --help' for the options\n" {
			t.Errorf("%s: stderr %q", tl, r.stderr)
		}
	}
}

// TestErrorFile: profile /E writes its diagnostics into a file, created even
// when empty, overwritten unless /A; /A without /E is warning PRF4111.
func TestErrorFile(t *testing.T) {
	testutil.MustHavePtrace(t)
	dir := t.TempDir()
	crash := install(t, testutil.BuildC(t, "crash"), dir)
	must(t, dir, "prep", "/nologo", "/FC", crash)
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		return string(b)
	}

	r := tool(t, dir, "profile", "/nologo", "/E", "errs.txt", crash)
	if r.status != 1 || strings.Contains(r.stderr, "PRF1643") {
		t.Errorf("with /E: status %d, stderr %q; want 1 and nothing on stderr", r.status, r.stderr)
	}
	if got := read("errs.txt"); strings.Count(got, "PRF1643") != 1 {
		t.Errorf("errs.txt = %q, want one PRF1643 line", got)
	}
	tool(t, dir, "profile", "/nologo", "/E", "errs.txt", "/A", crash)
	if got := read("errs.txt"); strings.Count(got, "PRF1643") != 2 {
		t.Errorf("after /A: errs.txt = %q, want two PRF1643 lines", got)
	}
	tool(t, dir, "profile", "/nologo", "/E", "errs.txt", crash)
	if got := read("errs.txt"); strings.Count(got, "PRF1643") != 1 {
		t.Errorf("without /A: errs.txt = %q, want it overwritten", got)
	}

	counts := install(t, testutil.BuildC(t, "counts"), dir)
	must(t, dir, "prep", "/nologo", "/FC", counts)
	must(t, dir, "profile", "/nologo", "/E", "empty.txt", counts)
	if _, err := os.Stat(filepath.Join(dir, "empty.txt")); err != nil || withoutExpected(read("empty.txt")) != "" {
		t.Errorf("a successful run with /E: %v, %q; want an empty file", err, read("empty.txt"))
	}
	r = must(t, dir, "profile", "/nologo", "/A", counts)
	if !strings.Contains(r.stderr, "warning PRF4111") {
		t.Errorf("/A without /E: stderr %q, want PRF4111", r.stderr)
	}
	// /O names the .pbo; /I names the .pbi.
	must(t, dir, "profile", "/nologo", "/I", "counts", "/O", "named", counts)
	if _, err := os.Stat(filepath.Join(dir, "named.pbo")); err != nil {
		t.Errorf("/O named: %v", err)
	}
}

// TestDump: plist --dump prints any data file in its text form.
func TestDump(t *testing.T) {
	testutil.MustHavePtrace(t)
	dir, _ := workflow(t, testutil.BuildC(t, "counts"), []string{"/FC"})
	for _, c := range []struct{ ext, want string }{
		{".pbi", `"Name": "fib"`},
		{".pbo", `"CommandLine": "counts"`},
		{".pbt", `"CommandLine": "counts"`},
	} {
		out := must(t, dir, "plist", "--dump", "counts"+c.ext).stdout
		if !strings.Contains(out, `"Kind": "`+c.ext[1:]+`"`) || !strings.Contains(out, c.want) {
			t.Errorf("plist --dump counts%s: %.300q lacks %s", c.ext, out, c.want)
		}
	}
	wantFail(t, tool(t, dir, "plist", "--dump", "counts"), 1, "PRF1301")
	wantFail(t, tool(t, dir, "plist", "--dump", "nosuch.pbt"), 1, "PRF1011")
}

// TestStaticProgramLibraries: a static program has no dynamic linker to
// follow, and loads no library: PROFILE says so (PRF4655, naming the
// library) rather than reporting the library's functions as never called.
func TestStaticProgramLibraries(t *testing.T) {
	testutil.MustHavePtrace(t)
	dir := t.TempDir()
	prog := install(t, testutil.BuildC(t, "counts", "-static"), dir)
	lib := install(t, testutil.BuildC(t, "libsq", "-shared", "-fPIC"), dir)
	must(t, dir, "prep", "/nologo", "/FC", prog, lib)
	r := must(t, dir, "profile", "/nologo", prog)
	if !strings.Contains(r.stderr, "warning PRF4655") || !strings.Contains(r.stderr, lib) {
		t.Errorf("profile: stderr %q, want warning PRF4655 naming %s", r.stderr, lib)
	}
}

// TestTrace: no run records an execution trace; as the original did, plist
// /TRACE prints the report, then fails to open <base>.pbx (PRF1011).
func TestTrace(t *testing.T) {
	testutil.MustHavePtrace(t)
	dir, _ := workflow(t, testutil.BuildC(t, "counts"), []string{"/FC"})
	r := tool(t, dir, "plist", "/nologo", "/TRACE", "counts")
	wantFail(t, r, 1, "PRF1011: cannot open file counts.pbx")
	if !strings.Contains(r.stdout, "    1973  66.0 fib (counts.o)") {
		t.Errorf("plist /TRACE printed no report before failing: %q", r.stdout)
	}
}

// TestDemoExample: the program of make demo (and of the README's example)
// counts what its comments say.
func TestDemoExample(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.Fixture(t, "c", "primes", []string{"-O0"}, func(out string) *exec.Cmd {
		testutil.MustHaveTool(t, testutil.CC())
		src := filepath.Join(testutil.Root(t), "examples", "c", "primes.c")
		return exec.Command(testutil.CC(), "-g", "-O0", "-o", out, src)
	})
	limit := testutil.Scale(20000)
	dir, _ := workflow(t, prog, []string{"/FC"}, strconv.Itoa(limit))
	tb := parseTab(t, must(t, dir, "plist", "/nologo", "/T", "primes").stdout)
	want := map[string]uint64{"is_prime": uint64(limit - 2), "gcd": 1000, "coprime": 1000,
		"count_naive": 1, "sieve": 1, "main": 1, "unused": 0}
	for name, n := range want {
		if tb.hits[name] != n {
			t.Errorf("%s hit %d times, want %d", name, tb.hits[name], n)
		}
	}
	if len(tb.hits) != len(want) {
		t.Errorf("%d functions profiled, want %d: %v", len(tb.hits), len(want), tb.hits)
	}
}

// TestUnwritableRun: PROFILE finds out that it cannot write its .pbo
// before the program runs, not after.
func TestUnwritableRun(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "faults")
	dir := t.TempDir()
	name := install(t, prog, dir)
	must(t, dir, "prep", "/nologo", "/FC", name)
	if err := os.Mkdir(filepath.Join(dir, "adir.pbo"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{"nosuchdir/x", "adir"} {
		r := tool(t, dir, "profile", "/nologo", "/O", out, name, "args", "1")
		wantFail(t, r, 1, "PRF1013")
		if r.stdout != "" {
			t.Errorf("/O %s: the program ran: %q", out, r.stdout)
		}
	}
}

// TestUnwritableDirectory runs the tools, as a user without privileges, in
// a directory that user may not write, where the data files are: each
// write fails with PRF1013 naming the file and the directory, never the
// temporary file of the atomic write, with the hint of what to do and the
// tool's option that names another file; nothing is left behind, and
// PROFILE fails before the program runs.
func TestUnwritableDirectory(t *testing.T) {
	testutil.MustHavePtrace(t)
	base := t.TempDir()
	tools, ro := filepath.Join(base, "tools"), filepath.Join(base, "ro")
	for _, d := range []string{tools, ro} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	name := install(t, testutil.BuildExample(t, "primes"), ro)
	must(t, ro, "prep", "/nologo", "/FC", name)
	must(t, ro, "profile", "/nologo", name, "100")
	if err := os.Chmod(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(ro, 0o755) })
	before := entries(t, ro)
	real, err := filepath.EvalSymlinks(ro)
	if err != nil {
		t.Fatal(err)
	}
	fail := func(tool, file, option string) string {
		return tool + ": fatal error PRF1013: cannot write expected number of bytes to file " + file +
			": directory " + real + " cannot be written: permission denied\n" +
			tool + ": hint: run in a directory you can write, or name another file with " + option + "\n"
	}
	tests := []struct {
		tool string
		args []string
		want string
	}{
		{"prep", []string{"/FC", name}, fail("prep", name+".pbi", "/OI and /OT")},
		{"profile", []string{name, "100"}, fail("profile", name+".pbo", "/O")},
		{"prep", []string{"/M", name}, fail("prep", name+".pbt", "/OT")},
		// After PRF4482: the run in the .pbo is not merged.
		{"plist", []string{"--format=lcov", "-o", name + ".info", name}, fail("plist", name+".info", "/O")},
	}
	for _, tt := range tests {
		r := unprivilegedIn(t, tools, ro, tt.tool, append([]string{"/nologo"}, tt.args...)...)
		if r.status != 1 || !strings.HasSuffix(r.stderr, tt.want) || r.stdout != "" {
			t.Errorf("%s %q: status %d, stdout %q, stderr\n%s\nwant status 1, stderr ending\n%s", tt.tool, tt.args, r.status, r.stdout, r.stderr, tt.want)
		}
	}
	if after := entries(t, ro); !slices.Equal(before, after) {
		t.Errorf("the directory held %q, now %q", before, after)
	}
}

// entries returns the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	list, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range list {
		names = append(names, e.Name())
	}
	return names
}
