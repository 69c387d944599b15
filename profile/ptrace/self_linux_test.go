//go:build linux && (amd64 || arm64)

package ptrace

import (
	"os"
	"runtime"
	"testing"
)

// startSelf starts this test binary, running no test, stopped at its
// exec under ptrace, and returns its PID; the test's goroutine stays on
// its thread, the tracer's, until the test ends. No ptrace: skipped.
func startSelf(t *testing.T) int {
	t.Helper()
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	pid, err := Start(exe, []string{exe, "-test.run=^$"}, os.Environ(), "", []*os.File{os.Stdin, os.Stdout, os.Stderr})
	if err != nil {
		t.Skip("no ptrace: ", err)
	}
	return pid
}
