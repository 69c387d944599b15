//go:build linux && (amd64 || arm64)

package ptrace

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Options for SetOptions: follow clones (threads), forks, vforks and execs,
// and kill the program if the tracer dies.
const (
	optTraceClone = unix.PTRACE_O_TRACECLONE
	optTraceFork  = unix.PTRACE_O_TRACEFORK
	optTraceVfork = unix.PTRACE_O_TRACEVFORK
	optTraceExec  = unix.PTRACE_O_TRACEEXEC
	optExitKill   = unix.PTRACE_O_EXITKILL
)

// Start runs the program at path with argv and env in dir, its standard
// streams being files, stopped under ptrace at its first instruction after
// exec. It returns the process ID after the exec stop has been waited for
// and the tracing options set.
func Start(path string, argv, env []string, dir string, files []*os.File) (int, error) {
	fds := make([]uintptr, len(files))
	for i, f := range files {
		fds[i] = f.Fd()
	}
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Dir:   dir,
		Env:   env,
		Files: fds,
		Sys:   &syscall.SysProcAttr{Ptrace: true},
	})
	if err != nil {
		return 0, err
	}
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, unix.WALL, nil); err != nil {
		return 0, fmt.Errorf("wait for exec stop: %w", err)
	}
	if !ws.Stopped() || ws.StopSignal() != unix.SIGTRAP {
		return 0, fmt.Errorf("program did not stop at exec (status %#x)", uint32(ws))
	}
	opts := optTraceClone | optTraceFork | optTraceVfork | optTraceExec | optExitKill
	if err := unix.PtraceSetOptions(pid, opts); err != nil {
		unix.Kill(pid, unix.SIGKILL)
		return 0, fmt.Errorf("set ptrace options: %w", err)
	}
	return pid, nil
}

// Wait waits for any traced thread to change state. When spin is positive
// it first polls for that long without sleeping: a tracer that sleeps in
// wait4 between two close stops pays for waking its CPU each time, which on
// a virtual machine costs more than the stop itself.
func Wait(spin time.Duration) (tid int, ws WaitStatus, err error) {
	var st unix.WaitStatus
	if spin > 0 {
		deadline := time.Now().Add(spin)
		for {
			tid, err = unix.Wait4(-1, &st, unix.WALL|unix.WNOHANG, nil)
			if tid != 0 || (err != nil && err != unix.EINTR) {
				return tid, WaitStatus(st), err
			}
			if time.Now().After(deadline) {
				break
			}
		}
	}
	for {
		tid, err = unix.Wait4(-1, &st, unix.WALL, nil)
		if err != unix.EINTR {
			return tid, WaitStatus(st), err
		}
	}
}

// WaitFor waits for one thread.
func WaitFor(tid int) (WaitStatus, error) {
	var st unix.WaitStatus
	for {
		_, err := unix.Wait4(tid, &st, unix.WALL, nil)
		if err != unix.EINTR {
			return WaitStatus(st), err
		}
	}
}

// Cont resumes a stopped thread, delivering sig unless it is 0.
func Cont(tid int, sig syscall.Signal) error { return unix.PtraceCont(tid, int(sig)) }

// Step single-steps a stopped thread.
func Step(tid int) error { return unix.PtraceSingleStep(tid) }

// Detach lets a stopped thread go, delivering sig unless it is 0.
func Detach(tid int, sig syscall.Signal) error {
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_DETACH, uintptr(tid), 0, uintptr(sig), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// EventMsg returns the message of the last ptrace event of a thread (the new
// thread's or child's ID for clone, fork and vfork events).
func EventMsg(tid int) (uint64, error) {
	m, err := unix.PtraceGetEventMsg(tid)
	return uint64(m), err
}

// Kill sends a signal to a process.
func Kill(pid int, sig syscall.Signal) error { return unix.Kill(pid, sig) }

// Mem is the memory of a traced process, through /proc/pid/mem: it reads and
// writes any mapping, read-only text included (the kernel writes with
// FOLL_FORCE and keeps the instruction cache coherent).
type Mem struct{ f *os.File }

// OpenMem opens the memory of process pid.
func OpenMem(pid int) (*Mem, error) {
	f, err := os.OpenFile(fmt.Sprintf("/proc/%d/mem", pid), os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	return &Mem{f: f}, nil
}

// ReadMem reads len(b) bytes at addr.
func (m *Mem) ReadMem(addr uint64, b []byte) error {
	n, err := unix.Pread(int(m.f.Fd()), b, int64(addr))
	if err != nil {
		return fmt.Errorf("read memory at %#x: %w", addr, err)
	}
	if n != len(b) {
		return fmt.Errorf("read memory at %#x: %d of %d bytes", addr, n, len(b))
	}
	return nil
}

// WriteMem writes b at addr.
func (m *Mem) WriteMem(addr uint64, b []byte) error {
	n, err := unix.Pwrite(int(m.f.Fd()), b, int64(addr))
	if err != nil {
		return fmt.Errorf("write memory at %#x: %w", addr, err)
	}
	if n != len(b) {
		return fmt.Errorf("write memory at %#x: %d of %d bytes", addr, n, len(b))
	}
	return nil
}

// Close closes the memory file.
func (m *Mem) Close() error { return m.f.Close() }

// Supported reports whether this platform can trace programs.
func Supported() error { return nil }

// IsNoProcess reports whether err means the thread is gone (ESRCH).
func IsNoProcess(err error) bool { return errors.Is(err, unix.ESRCH) }
