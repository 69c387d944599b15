package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	realOnce sync.Once
	realDir  string
	realErr  error
)

// RealProgram returns the path of a program no one here wrote, built
// for arch ("amd64", "arm64"): "lua" (Lua 5.4) or "zstd", from Debian's
// source packages, -O2 -g, fetched and built once by
// scripts/real-programs into its cache. A program the script cannot
// build (no cross compiler for arch) skips the test; a fetch that fails
// fails it.
func RealProgram(t testing.TB, arch, name string) string {
	t.Helper()
	path := filepath.Join(realCache(t), arch, name)
	if _, err := os.Stat(path); err != nil {
		t.Skipf("no %s built for %s: %v", name, arch, err)
	}
	return path
}

// RealSource returns the source tree of a real program ("zstd"), as
// scripts/real-programs unpacked it: a workload's input.
func RealSource(t testing.TB, name string) string {
	t.Helper()
	return filepath.Join(realCache(t), name+"-src")
}

// realCache runs scripts/real-programs once and returns its cache. The
// arm64 VM, which has neither the sources nor a compiler, skips.
func realCache(t testing.TB) string {
	t.Helper()
	if Slow() {
		t.Skip("the real programs are built on the host: the VM runs the fixtures")
	}
	realOnce.Do(func() {
		out, err := exec.Command(filepath.Join(Root(t), "scripts", "real-programs")).Output()
		realDir, realErr = strings.TrimSpace(string(out)), err
		if ee, ok := err.(*exec.ExitError); ok {
			realErr = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
	})
	if realErr != nil {
		t.Fatalf("scripts/real-programs: %v", realErr)
	}
	return realDir
}
