// Fixtures built once per test run, or taken prebuilt (SPROF_FIXTURES in the arm64 VM).

package testutil

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

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
