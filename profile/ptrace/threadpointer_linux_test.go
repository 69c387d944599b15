//go:build linux && (amd64 || arm64)

package ptrace

import (
	"errors"
	"runtime"
	"syscall"
	"testing"
)

// TestThreadPointer: on arm64 a stopped thread's TPIDR_EL0 reads back
// what was written; x86-64 has no such register for PROFILE (its GS base
// is among the registers), and says so.
func TestThreadPointer(t *testing.T) {
	pid := startSelf(t)
	defer func() { Kill(pid, syscall.SIGKILL); WaitFor(pid) }()
	const want = 0x7f12_3456_7000
	err := SetThreadPointer(pid, want)
	if runtime.GOARCH != "arm64" {
		if !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("SetThreadPointer on %s: %v, want ErrUnsupported", runtime.GOARCH, err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ThreadPointer(pid); err != nil || got != want {
		t.Errorf("thread pointer %#x, %v; want %#x", got, err, want)
	}
	if err := SetThreadPointer(1<<30, want); err == nil {
		t.Error("a thread that does not exist: no error")
	}
}
