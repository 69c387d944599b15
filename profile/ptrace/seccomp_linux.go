//go:build linux && (amd64 || arm64)

package ptrace

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The options a thread is traced with: those of a process PROFILE
// attached to (Attach), and those of one it started (Start, Seize), which
// PROFILE's exit kills.
const (
	attachOptions = optTraceClone | optTraceFork | optTraceVfork | optTraceVforkDone | optTraceExec | optTraceExit
	startOptions  = attachOptions | optExitKill
)

// Seccomp is a thread's seccomp state, as /proc/TID/status gives it.
type Seccomp struct {
	// Mode is 0 (none), 1 (strict: read, write, exit and sigreturn only)
	// or 2 (filters).
	Mode int
	// Filters is the number of filters the thread runs under
	// (Seccomp_filters, Linux 5.9), -1 where the kernel does not say.
	Filters int
}

// SeccompOf reads the seccomp state of thread tid, or of the calling
// thread (PROFILE's own) when tid is 0.
func SeccompOf(tid int) (Seccomp, error) {
	path := "/proc/thread-self/status"
	if tid != 0 {
		path = fmt.Sprintf("/proc/%d/status", tid)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return Seccomp{}, err
	}
	s, mode := Seccomp{Filters: -1}, false
	for _, line := range strings.Split(string(b), "\n") {
		name, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		switch {
		case err != nil:
		case name == "Seccomp":
			s.Mode, mode = n, true
		case name == "Seccomp_filters":
			s.Filters = n
		}
	}
	if !mode {
		return Seccomp{}, fmt.Errorf("%s has no Seccomp field", path)
	}
	return s, nil
}

// SuspendSeccomp suspends the seccomp filters (or strict mode) of stopped
// thread tid, for the system calls the tracer makes it run (on), or lets
// them act again (PTRACE_O_SUSPEND_SECCOMP, Linux 4.3). The kernel grants
// it to a tracer with CAP_SYS_ADMIN that runs under no filter itself
// (EPERM otherwise), where it was built with CONFIG_CHECKPOINT_RESTORE
// (EINVAL otherwise). attached says how tid is traced (by Attach, or by
// Start and Seize): the options it was traced with are kept.
func SuspendSeccomp(tid int, attached, on bool) error {
	opts := startOptions
	if attached {
		opts = attachOptions
	}
	if on {
		opts |= unix.PTRACE_O_SUSPEND_SECCOMP
	}
	return unix.PtraceSetOptions(tid, opts)
}
