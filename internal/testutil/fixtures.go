package testutil

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The fixtures' builds: C, C++, Go, cgo and Rust programs of testdata/progs
// and the original's test programs, each built once per name and flags and
// removed by Cleanup.

var (
	buildMu    sync.Mutex
	buildCache = map[string]string{}
	buildDir   string
)

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
	skipNoGo(t)
	return Fixture(t, "go", name, flags, func(out string) *exec.Cmd {
		dir := filepath.Join(Root(t), "testdata", "progs", "go", name)
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("go fixture %s: no sources in %s", name, dir)
		}
		return goBuild(dir, out, flags, files, "CGO_ENABLED=0")
	})
}

// skipNoGo skips a test of a Go fixture in a run without them
// (SPROF_FIXTURES_NO_GO).
func skipNoGo(t testing.TB) {
	t.Helper()
	if os.Getenv("SPROF_FIXTURES_NO_GO") != "" {
		t.Skip("no Go fixture in this run (SPROF_FIXTURES_NO_GO): the plain arm64 VM tests them")
	}
}

// goBuild is `go build -o out flags... args...` run in dir, with GOFLAGS
// cleared, env added to the environment, and GOARCH set to
// $SPROF_FIXTURES_GOARCH when that is set.
func goBuild(dir, out string, flags, args []string, env ...string) *exec.Cmd {
	cmd := exec.Command("go", append(append([]string{"build", "-o", out}, flags...), args...)...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GOFLAGS="), env...)
	if arch := os.Getenv("SPROF_FIXTURES_GOARCH"); arch != "" {
		cmd.Env = append(cmd.Env, "GOARCH="+arch)
	}
	return cmd
}

// BuildCgo builds the Go fixture testdata/progs/go/<name>/, whose
// package uses cgo, as BuildGo does but with CGO_ENABLED=1 and the C
// compiler $CC (default gcc; the cross compiler when fixtures are
// exported for arm64), cached alike; it skips the test where there is no
// C compiler.
func BuildCgo(t testing.TB, name string, flags ...string) string {
	t.Helper()
	skipNoGo(t)
	return Fixture(t, "cgo", name, flags, func(out string) *exec.Cmd {
		cc := os.Getenv("CC")
		if cc == "" {
			cc = "gcc"
		}
		MustHaveTool(t, cc)
		dir := filepath.Join(Root(t), "testdata", "progs", "go", name)
		return goBuild(dir, out, flags, []string{"."}, "CGO_ENABLED=1", "CC="+cc, "CGO_CFLAGS=-g -O2 "+os.Getenv("SPROF_CFLAGS"))
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
