// Package testutil builds the C fixtures of the end-to-end tests, compares
// golden files, skips tests whose tools are missing, and reads and draws
// the timelines plist writes (ReadChrome, WriteSVG). Tests only.
package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sourceprofiler/sprof/internal/golden"
)

// Update is the -update flag of golden tests (package golden's).
var Update = golden.Update

// startDir is the working directory when the test binary started: the
// package's directory under go test, before any test changes directory.
var startDir, _ = os.Getwd()

// Root returns the repository's root directory (the one holding go.mod),
// found from the directory the test binary started in, so that tests that
// change directory (t.Chdir) still find it.
func Root(t testing.TB) string {
	t.Helper()
	dir := startDir
	for dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	t.Fatalf("no go.mod above %s, where the test started", startDir)
	return ""
}

// Original returns testdata/original, the original tools' recorded outputs
// (its README.md says how they were captured), or $SPROF_ORIGINAL where the
// tests run away from the repository (the arm64 VM, which gets a copy of
// the parts its suites read). They are part of the repository: a test that
// needs them fails, never skips, when they are gone.
func Original(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("SPROF_ORIGINAL")
	if dir == "" {
		dir = filepath.Join(Root(t), "testdata", "original")
	}
	if _, err := os.Stat(filepath.Join(dir, "INDEX.tsv")); err != nil {
		t.Fatalf("the original's recorded outputs are missing: %v", err)
	}
	return dir
}

// OriginalText returns the original's recorded output name (a path under
// testdata/original, "usage/prep-help-q.out") with LF line ends.
func OriginalText(t testing.TB, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(Original(t), name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(data), "\r\n", "\n")
}

// OriginalLine returns the first line of the original's recorded output
// name in the form the tools print on Linux: "PREP : fatal error PRF1101:
// ..." becomes "prep: fatal error PRF1101: ...".
func OriginalLine(t testing.TB, name string) string {
	t.Helper()
	line, _, _ := strings.Cut(OriginalText(t, name), "\n")
	tool, rest, ok := strings.Cut(line, " : ")
	if !ok {
		t.Fatalf("%s: %q is not a diagnostic", name, line)
	}
	return strings.ToLower(tool) + ": " + rest
}

// Slow reports whether breakpoints are slow here ($SPROF_SLOW set, as in
// the emulated arm64 VM, where a hit costs a millisecond or more): tests
// then run their fixtures with fewer calls.
func Slow() bool { return os.Getenv("SPROF_SLOW") != "" }

// Scale returns n, or n/20 (at least 1) where breakpoints are slow.
func Scale(n int) int {
	if Slow() {
		return max(n/20, 1)
	}
	return n
}

// HaveTool reports whether a program is on PATH.
func HaveTool(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}

// TimesInProcess reports whether PROFILE times functions in-process on
// this machine, through the threads' rings: on x86-64, and on arm64,
// whose record code needs no atomic instruction (LSE or not).
func TimesInProcess() bool { return runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64" }

// InProcess reports whether PROFILE counts function entries in-process on
// this machine: on x86-64 always, on arm64 when the CPU has the LSE atomics
// ("atomics" in /proc/cpuinfo; an ARMv8.0 core such as the Cortex-A57 has
// not, and PROFILE counts with breakpoints there, warning PRF4648).
func InProcess() bool {
	switch runtime.GOARCH {
	case "amd64":
		return true
	case "arm64":
		b, err := os.ReadFile("/proc/cpuinfo")
		return err == nil && slices.Contains(strings.Fields(string(b)), "atomics")
	}
	return false
}

// KeepsDepth reports whether PROFILE keeps the call depth of function
// counting and coverage here, of a Go program or another: in-process, but
// for Go programs on arm64, whose goroutine stacks are in no stack table
// (docs/linux.md, "Call depth").
func KeepsDepth(goProgram bool) bool {
	return InProcess() && (runtime.GOARCH == "amd64" || !goProgram)
}

// ThreadBlocks reports whether each thread has a block of counters of its
// own here (in-process on x86-64, through GS), which can run out.
func ThreadBlocks() bool { return runtime.GOARCH == "amd64" && InProcess() }

// MustHaveTool skips the test when a program is not on PATH.
func MustHaveTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed", name)
	}
	return p
}

// MustHavePtrace skips the test where programs cannot be traced.
func MustHavePtrace(t testing.TB) {
	t.Helper()
	if runtime.GOOS != "linux" || (runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64") {
		t.Skipf("tracing needs linux on amd64 or arm64, not %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	if b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope"); err == nil && strings.TrimSpace(string(b)) == "3" {
		t.Skip("ptrace is disabled (kernel.yama.ptrace_scope=3)")
	}
}

// CC is the C compiler of the fixtures: $CC or gcc.
func CC() string {
	if cc := os.Getenv("CC"); cc != "" {
		return cc
	}
	return "gcc"
}

// CXX is the C++ compiler of the fixtures: $CXX or g++.
func CXX() string {
	if cxx := os.Getenv("CXX"); cxx != "" {
		return cxx
	}
	return "g++"
}

var (
	buildMu    sync.Mutex
	buildCache = map[string]string{}
	buildDir   string
)

// BuildC compiles the C fixtures testdata/progs/c/<name>.c (name may list
// several sources separated by '+'; a .cpp source is compiled as C++) with
// the given extra flags (-O0 -g is the default, $SPROF_CFLAGS is added) and
// returns the program's path. Builds are cached per process by sources and
// flags; the files live under os.TempDir and are removed by Cleanup (call it
// from TestMain). See [Fixture] for the cross-building modes.
func BuildC(t testing.TB, name string, flags ...string) string {
	t.Helper()
	cc := CC()
	var srcs []string
	for _, s := range strings.Split(name, "+") {
		if !strings.Contains(s, ".") {
			s += ".c"
		}
		if strings.HasSuffix(s, ".cpp") {
			cc = CXX()
		}
		srcs = append(srcs, s)
	}
	var names []string
	for _, s := range srcs {
		names = append(names, strings.TrimSuffix(s, filepath.Ext(s)))
	}
	base := strings.Join(names, "_")
	return Fixture(t, "c", base, flags, func(out string) *exec.Cmd {
		if _, err := exec.LookPath(cc); err != nil {
			t.Skipf("no compiler %s", cc)
		}
		args := append([]string{"-g", "-O0"}, flags...)
		args = append(args, strings.Fields(os.Getenv("SPROF_CFLAGS"))...)
		for _, s := range srcs {
			args = append(args, filepath.Join(Root(t), "testdata", "progs", "c", s))
		}
		if strings.Contains(name, "threads") {
			args = append(args, "-pthread")
		}
		return exec.Command(cc, append(args, "-o", out)...)
	})
}

// BuildExample builds examples/c/<name>.c, a program of make demo and of
// the course (docs/course/), as examples/Makefile does (-g -O0) and as
// BuildC builds its fixtures otherwise (cross-built or prebuilt the same
// ways).
func BuildExample(t testing.TB, name string, flags ...string) string {
	t.Helper()
	return buildUnits(t, "example", name, []string{"examples", "c"}, []string{name + ".c"}, flags)
}

// BuildOriginal builds one of the C programs the original's goldens were
// made from (testdata/original/src/NAME.c), as BuildC builds its fixtures.
func BuildOriginal(t testing.TB, name string, flags ...string) string {
	t.Helper()
	return buildOriginal(t, name, []string{name + ".c"}, flags)
}

// BuildOriginalUnits builds the original's program name from several of
// its sources (testdata/original/src), given to the compiler in order
// ("lcount.c", "lcount2.c"), with -g -O0 and flags.
func BuildOriginalUnits(t testing.TB, name string, units []string, flags ...string) string {
	t.Helper()
	return buildOriginal(t, name+"+"+strings.Join(units, "+"), units, flags)
}

// buildOriginal builds the fixture named fixture from the original's
// sources units.
func buildOriginal(t testing.TB, fixture string, units, flags []string) string {
	t.Helper()
	return buildUnits(t, "original", fixture, []string{"testdata", "original", "src"}, units, flags)
}

// buildUnits builds the C fixture of kind named fixture from the sources
// units in the repository's directory dir, with -g -O0, flags and
// $SPROF_CFLAGS. (The repository is looked for only to build: a prebuilt
// fixture needs none.)
func buildUnits(t testing.TB, kind, fixture string, dir, units, flags []string) string {
	t.Helper()
	return Fixture(t, kind, fixture, flags, func(out string) *exec.Cmd {
		cc := CC()
		if _, err := exec.LookPath(cc); err != nil {
			t.Skipf("no compiler %s", cc)
		}
		args := append([]string{"-g", "-O0"}, flags...)
		args = append(args, strings.Fields(os.Getenv("SPROF_CFLAGS"))...)
		for _, u := range units {
			args = append(args, filepath.Join(append(append([]string{Root(t)}, dir...), u)...))
		}
		return exec.Command(cc, append(args, "-o", out)...)
	})
}

// Linked is a program and a shared library built together, for the tests
// of modules other than the program.
type Linked struct {
	// Prog and Lib are the sources of each (under testdata/), Name the
	// library's file name (its soname too); Link links the program with
	// it (else the program loads it itself, with dlopen); Flags are added
	// to both builds.
	Prog, Lib []string
	Name      string
	Link      bool
	Flags     []string
}

// BuildLinked builds l, as BuildC builds a fixture (-g -O0, $SPROF_CFLAGS,
// cross-built or prebuilt the same ways), and returns the paths of the
// program and the library, side by side. A program linked with the
// library finds it in its own directory ($ORIGIN): copy both.
func BuildLinked(t testing.TB, name string, l Linked) (prog, lib string) {
	t.Helper()
	prog = Fixture(t, "linked", name, append([]string{l.Name, strings.Join(l.Prog, "+"), strings.Join(l.Lib, "+")}, l.Flags...), func(out string) *exec.Cmd {
		cc := CC()
		if _, err := exec.LookPath(cc); err != nil {
			t.Skipf("no compiler %s", cc)
		}
		flags := append(append([]string{"-g", "-O0"}, l.Flags...), strings.Fields(os.Getenv("SPROF_CFLAGS"))...)
		src := func(files []string) []string {
			var out []string
			for _, f := range files {
				out = append(out, filepath.Join(Root(t), "testdata", f))
			}
			return out
		}
		libOut := filepath.Join(filepath.Dir(out), l.Name)
		libArgs := append(append(slices.Clone(flags), "-shared", "-fPIC", "-Wl,-soname,"+l.Name, "-o", libOut), src(l.Lib)...)
		progArgs := append(append(slices.Clone(flags), "-pthread", "-o", out), src(l.Prog)...)
		if l.Link {
			progArgs = append(progArgs, libOut, "-Wl,-rpath,$ORIGIN")
		}
		quote := func(args []string) string {
			q := make([]string, len(args))
			for i, a := range args {
				q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
			}
			return strings.Join(q, " ")
		}
		script := "set -e; " + quote(append([]string{cc}, libArgs...)) + "; " + quote(append([]string{cc}, progArgs...))
		return exec.Command("sh", "-c", script)
	})
	return prog, filepath.Join(filepath.Dir(prog), l.Name)
}

// Cleanup removes the fixtures BuildC made.
func Cleanup() {
	buildMu.Lock()
	defer buildMu.Unlock()
	if buildDir != "" {
		os.RemoveAll(buildDir)
		buildDir = ""
	}
}

// Golden compares got with the golden file path, rewriting it under
// -update (package golden).
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	golden.Check(t, path, got)
}

// Diff returns a line diff of want and got (package golden).
func Diff(want, got []byte) string { return golden.Diff(want, got) }
