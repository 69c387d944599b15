// Package testutil builds the C fixtures of the end-to-end tests, compares
// golden files, skips tests whose tools are missing, and reads and draws
// the timelines plist writes (ReadChrome, WriteSVG). Tests only.
package testutil

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
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

// hosts say what the tests may expect of PROFILE on each architecture it
// runs on, by GOARCH spelling: a table, not a choice (no code but a table
// names an architecture; TestNoArchChoices). A port adds its line
// (docs/porting.md).
var hosts = map[string]struct {
	// timesInProcess: PROFILE times functions in-process, through the
	// threads' rings (x86-64, and arm64, whose record code needs no
	// atomic instruction, LSE or not).
	timesInProcess bool
	// inProcessNeeds is the feature of /proc/cpuinfo without which
	// PROFILE counts function entries with breakpoints, not in-process
	// ("" for none): on arm64 the LSE atomics ("atomics"; an ARMv8.0
	// core such as the Cortex-A57 has not, and PROFILE warns PRF4648).
	inProcessNeeds string
	// goDepth: PROFILE keeps the call depth of Go programs too, not only
	// of others (not on arm64, whose goroutine stacks are in no stack
	// table: docs/linux.md, "Call depth").
	goDepth bool
	// threadBlocks: each thread has a block of counters of its own, which
	// can run out (x86-64, through GS).
	threadBlocks bool
}{
	"amd64": {timesInProcess: true, goDepth: true, threadBlocks: true},
	"arm64": {timesInProcess: true, inProcessNeeds: "atomics"},
}

// TimesInProcess reports whether PROFILE times functions in-process on
// this machine, through the threads' rings.
func TimesInProcess() bool { return hosts[runtime.GOARCH].timesInProcess }

// InProcess reports whether PROFILE counts function entries in-process on
// this machine: where it traces, and the CPU has what its counting code
// needs (hosts).
func InProcess() bool {
	h, ok := hosts[runtime.GOARCH]
	if !ok || h.inProcessNeeds == "" {
		return ok
	}
	b, err := os.ReadFile("/proc/cpuinfo")
	return err == nil && slices.Contains(strings.Fields(string(b)), h.inProcessNeeds)
}

// KeepsDepth reports whether PROFILE keeps the call depth of function
// counting and coverage here, of a Go program or another: in-process, but
// for Go programs where goroutines' depth cannot be kept (hosts).
func KeepsDepth(goProgram bool) bool {
	return InProcess() && (hosts[runtime.GOARCH].goDepth || !goProgram)
}

// ThreadBlocks reports whether each thread has a block of counters of its
// own here (in-process on x86-64, through GS), which can run out.
func ThreadBlocks() bool { return hosts[runtime.GOARCH].threadBlocks && InProcess() }

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
	if _, ok := hosts[runtime.GOARCH]; runtime.GOOS != "linux" || !ok {
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

// BuildGo builds the Go fixture testdata/progs/go/<name> with the given
// extra go build flags ("-buildmode=pie") and returns the program's path,
// cached like BuildC. The fixture is its own main package outside the
// module's packages: it is built by file list, with GOFLAGS cleared, for
// $SPROF_FIXTURES_GOARCH when that is set.
//
// SPROF_FIXTURES_NO_GO, set for a run of the arm64 VM whose point is not
// Go's (the C flags of branch protection, which Go's compiler does not
// emit; the 16K pages, which PROFILE's mappings for C programs meet as
// well), skips the tests of Go fixtures: the plain VM runs them.
func BuildGo(t testing.TB, name string, flags ...string) string {
	t.Helper()
	if os.Getenv("SPROF_FIXTURES_NO_GO") != "" {
		t.Skip("no Go fixture in this run (SPROF_FIXTURES_NO_GO): the plain arm64 VM tests them")
	}
	return Fixture(t, "go", name, flags, func(out string) *exec.Cmd {
		dir := filepath.Join(Root(t), "testdata", "progs", "go", name)
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("go fixture %s: no sources in %s", name, dir)
		}
		cmd := exec.Command("go", append(append([]string{"build", "-o", out}, flags...), files...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=", "CGO_ENABLED=0")
		if arch := os.Getenv("SPROF_FIXTURES_GOARCH"); arch != "" {
			cmd.Env = append(cmd.Env, "GOARCH="+arch)
		}
		return cmd
	})
}

// BuildCgo builds the Go fixture testdata/progs/go/<name>/, whose
// package uses cgo, as BuildGo does but with CGO_ENABLED=1 and the C
// compiler $CC (default gcc; the cross compiler when fixtures are
// exported for arm64), cached alike; it skips the test where there is no
// C compiler.
func BuildCgo(t testing.TB, name string, flags ...string) string {
	t.Helper()
	if os.Getenv("SPROF_FIXTURES_NO_GO") != "" {
		t.Skip("no Go fixture in this run (SPROF_FIXTURES_NO_GO): the plain arm64 VM tests them")
	}
	return Fixture(t, "cgo", name, flags, func(out string) *exec.Cmd {
		cc := os.Getenv("CC")
		if cc == "" {
			cc = "gcc"
		}
		MustHaveTool(t, cc)
		dir := filepath.Join(Root(t), "testdata", "progs", "go", name)
		cmd := exec.Command("go", append(append([]string{"build", "-o", out}, flags...), ".")...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=", "CGO_ENABLED=1", "CC="+cc, "CGO_CFLAGS=-g -O2 "+os.Getenv("SPROF_CFLAGS"))
		if arch := os.Getenv("SPROF_FIXTURES_GOARCH"); arch != "" {
			cmd.Env = append(cmd.Env, "GOARCH="+arch)
		}
		return cmd
	})
}

// BuildRust compiles testdata/progs/rust/<name>.rs with rustc -g and the
// given flags ("-Copt-level=2"), cached like BuildC; it skips the test when
// rustc is not installed, and when fixtures are exported for another
// machine (no cross target is set up).
func BuildRust(t testing.TB, name string, flags ...string) string {
	t.Helper()
	if os.Getenv("SPROF_FIXTURES_OUT") != "" {
		t.Skip("Rust fixtures are not cross-built")
	}
	return Fixture(t, "rust", name, flags, func(out string) *exec.Cmd {
		MustHaveTool(t, "rustc")
		src := filepath.Join(Root(t), "testdata", "progs", "rust", name+".rs")
		return exec.Command("rustc", append(append([]string{"-g", "-o", out}, flags...), src)...)
	})
}

// Fixture returns the program built by the command that build gives for
// an output path, once per process for a kind, name and flags. Two
// environment variables let the same tests run on another machine, such as
// the arm64 VM, which has no compiler:
//
//   - SPROF_FIXTURES_OUT=DIR (export, on the build host): the fixture is
//     built into DIR under a name derived from kind, name and flags (with
//     the cross compilers named by CC, CXX and SPROF_FIXTURES_GOARCH), and
//     the test is skipped;
//   - SPROF_FIXTURES=DIR (prebuilt, on the test machine): the fixture is
//     taken from DIR under that name, or the test is skipped when it is not
//     there.
func Fixture(t testing.TB, kind, name string, flags []string, build func(out string) *exec.Cmd) string {
	t.Helper()
	file := fixtureFile(kind, name, flags)
	if dir := os.Getenv("SPROF_FIXTURES"); dir != "" {
		p := filepath.Join(dir, file)
		if _, err := os.Stat(p); err != nil {
			t.Skipf("fixture %s %v is not prebuilt in %s", name, flags, dir)
		}
		return p
	}
	if dir := os.Getenv("SPROF_FIXTURES_OUT"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		buildInto(t, filepath.Join(dir, file), build)
		t.Skipf("fixture %s exported to %s", name, dir)
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	if p, ok := buildCache[file]; ok {
		return p
	}
	if buildDir == "" {
		d, err := os.MkdirTemp("", "sprof-fixtures-")
		if err != nil {
			t.Fatal(err)
		}
		buildDir = d
	}
	out := filepath.Join(buildDir, file)
	buildInto(t, out, build)
	buildCache[file] = out
	return out
}

// fixtureFile names a fixture build: a directory named by a hash of its
// kind, name and flags, then its name (which reports print).
func fixtureFile(kind, name string, flags []string) string {
	sum := sha256.Sum256([]byte(kind + "\x00" + name + "\x00" + strings.Join(flags, "\x00")))
	return filepath.Join(hex.EncodeToString(sum[:4]), name)
}

func buildInto(t testing.TB, out string, build func(out string) *exec.Cmd) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := build(out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build fixture %s: %v\n%s\n%s", filepath.Base(out), err, cmd, b)
	}
}

// Command is one of the three tools, run in-process through its run
// function, for the tests of its command line.
type Command struct {
	// Name and Env are the tool's name and environment variable.
	Name, Env string
	// Banner is what it prints first unless /NOLOGO.
	Banner string
	// Run is the tool's main: arguments in, exit status out.
	Run func(args []string, stdout, stderr io.Writer) int
}

// Exec runs the tool with env as its environment variable and returns its
// standard output, standard error and exit status.
func (c Command) Exec(t *testing.T, args []string, env string) (stdout, stderr string, status int) {
	t.Helper()
	t.Setenv(c.Env, env)
	var out, errb bytes.Buffer
	status = c.Run(args, &out, &errb)
	return out.String(), errb.String(), status
}

// Usage is a way to ask for the original's usage text, and the recorded
// output of the original that holds it.
type Usage struct {
	Golden string // under testdata/original
	Args   string // split on spaces
	// NoInput is set for a command line that names no input: the
	// usage goes to stderr, with status 2 (the original exited 0).
	NoInput bool
}

// TestUsage checks that each command line prints the original's usage
// text, byte for byte but for the line ends: asked for, on stdout with
// status 0; for a command line without input (Usage.NoInput), after
// anything else on stderr, nothing on stdout, with status 2.
func (c Command) TestUsage(t *testing.T, cases []Usage) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.Golden, func(t *testing.T) {
			stdout, stderr, status := c.Exec(t, strings.Fields(tt.Args), "")
			want := OriginalText(t, tt.Golden)
			switch {
			case tt.NoInput && (stdout != "" || !strings.HasSuffix(stderr, want) || status != 2):
				t.Errorf("%s %s: status %d, stdout %q, stderr\n%q\nwant status 2 and stderr ending\n%q", c.Name, tt.Args, status, stdout, stderr, want)
			case !tt.NoInput && (stdout != want || status != 0):
				t.Errorf("%s %s: status %d, stdout\n%q\nwant status 0 and\n%q", c.Name, tt.Args, status, stdout, want)
			}
		})
	}
}

// Diagnostic is a command line that fails before the tool does anything,
// with the line the tool prints.
type Diagnostic struct {
	Name   string
	Args   []string
	Env    string
	Want   string
	Golden string // the original's output of the same command, if recorded
	Banner bool   // the banner comes first: /NOLOGO was not seen before the error
}

// TestDiagnostics runs each failing command line in an empty directory: it
// must print the diagnostic and the hint to try --help, exit with status 2
// and print nothing on stdout; where the original's output was recorded,
// the line is the original's (Linux adds the system's reason to PRF1011).
func (c Command) TestDiagnostics(t *testing.T, cases []Diagnostic) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			stdout, stderr, status := c.Exec(t, tt.Args, tt.Env)
			want := tt.Want + "\n" + c.Name + ": hint: try '" + c.Name + " --help' for the options\n"
			if tt.Banner {
				want = c.Banner + want
			}
			if stderr != want || stdout != "" || status != 2 {
				t.Errorf("%s %q: status %d, stdout %q, stderr\n%s\nwant status 2, stderr\n%s", c.Name, tt.Args, status, stdout, stderr, want)
			}
			if tt.Golden == "" {
				return
			}
			golden := OriginalLine(t, tt.Golden)
			if tt.Want != golden && !(strings.Contains(golden, "PRF1011") && strings.HasPrefix(tt.Want, golden+": ")) {
				t.Errorf("%s: the original printed\n%s", tt.Golden, golden)
			}
		})
	}
}

// TestLongHelp pins the tool's --help text to testdata/help.golden
// (rewritten with -update) and checks that it fits 80 columns; and its
// --man page and --version.
func (c Command) TestLongHelp(t *testing.T) {
	t.Helper()
	stdout, _, status := c.Exec(t, []string{"--nologo", "--help"}, "")
	if status != 0 {
		t.Errorf("%s --help: status %d", c.Name, status)
	}
	Golden(t, "testdata/help.golden", []byte(stdout))
	for _, line := range strings.Split(stdout, "\n") {
		if len(line) > 80 {
			t.Errorf("%s --help: a line longer than 80 columns: %q", c.Name, line)
		}
	}
	// The man page is the same text in man(7) macros (testdata/man.golden),
	// with every option of --help; --version names the tool and the
	// licence. Neither prints the banner.
	man, stderr, status := c.Exec(t, []string{"--man"}, "")
	if status != 0 || stderr != "" || !strings.HasPrefix(man, ".TH "+strings.ToUpper(c.Name)+" 1 ") {
		t.Errorf("%s --man: status %d, stderr %q, page %.100q", c.Name, status, stderr, man)
	}
	Golden(t, "testdata/man.golden", []byte(man))
	for _, line := range strings.Split(stdout, "\n") {
		if name, _, ok := strings.Cut(strings.TrimSpace(line), " "); ok && strings.HasPrefix(name, "--") {
			if !strings.Contains(man, strings.ReplaceAll(strings.TrimSuffix(name, ","), "-", `\-`)) {
				t.Errorf("%s --man lacks %s", c.Name, name)
			}
		}
	}
	version, stderr, status := c.Exec(t, []string{"--version"}, "")
	if status != 0 || stderr != "" || !strings.HasPrefix(version, c.Name+" (Source Profiler for Linux) ") || !strings.Contains(version, "License: MIT") {
		t.Errorf("%s --version: status %d, stderr %q, %q", c.Name, status, stderr, version)
	}
}
