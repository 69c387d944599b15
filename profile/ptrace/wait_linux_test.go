//go:build linux && (amd64 || arm64)

package ptrace

import (
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestWaitUntilQuit: a closed quit ends WaitUntil even while a stop
// waits to be reaped. The end of an attached run's window is told this
// way; on a process of many threads stopping for full rings, a stop
// always waits, and a wait that looked at quit only when none did never
// ended (issue 31, item 17). The stop is still there for the next wait.
func TestWaitUntilQuit(t *testing.T) {
	pid := startSelf(t)
	// A stop that waits: the child killed, which stops it at its exit
	// (PTRACE_O_TRACEEXIT), not reaped yet (WNOWAIT leaves it for the
	// waits below).
	defer func() { Kill(pid, syscall.SIGKILL); Cont(pid, 0); WaitFor(pid) }()
	if err := Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, pid, &info, unix.WSTOPPED|unix.WEXITED|unix.WNOWAIT|unix.WALL, nil); err != nil {
		t.Fatal(err)
	}
	quit := make(chan struct{})
	close(quit)
	idle := func() bool { return false }
	for _, c := range []struct {
		limit, every time.Duration
	}{{0, 10 * time.Millisecond}, {time.Millisecond, 20 * time.Millisecond}} {
		if tid, ws, err := WaitUntil(c.limit, c.every, idle, quit); err != ErrQuit {
			t.Fatalf("WaitUntil(%v, %v) with quit closed and a stop waiting: %d %#x %v, want ErrQuit", c.limit, c.every, tid, uint32(ws), err)
		}
	}
	if tid, ws, err := WaitUntil(0, 10*time.Millisecond, idle, nil); err != nil || tid != pid {
		t.Fatalf("the next wait: %d %#x %v, want the stop of process %d", tid, uint32(ws), err, pid)
	}
}
