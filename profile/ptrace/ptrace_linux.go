//go:build linux && (amd64 || arm64)

package ptrace

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Options for SetOptions: follow clones (threads), forks, vforks and execs,
// and kill the program if the tracer dies.
const (
	optTraceClone = unix.PTRACE_O_TRACECLONE
	optTraceFork  = unix.PTRACE_O_TRACEFORK
	optTraceVfork = unix.PTRACE_O_TRACEVFORK
	optTraceExec  = unix.PTRACE_O_TRACEEXEC
	// optTraceVforkDone stops a vfork's parent when its child has let
	// the memory go: until then the records in its ring are the child's.
	optTraceVforkDone = unix.PTRACE_O_TRACEVFORKDONE
	// optTraceExit stops each thread as it exits, its registers and the
	// program's memory still there: what the program did to PROFILE's
	// patches and to its thread base is checked then.
	optTraceExit = unix.PTRACE_O_TRACEEXIT
	optExitKill  = unix.PTRACE_O_EXITKILL
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
	if err := unix.PtraceSetOptions(pid, startOptions); err != nil {
		unix.Kill(pid, unix.SIGKILL)
		return 0, fmt.Errorf("set ptrace options: %w", err)
	}
	return pid, nil
}

// Seize switches a program that Start left stopped at its exec to
// PTRACE_SEIZE tracing, with which a stop signal sent to the program from
// outside (SIGSTOP, SIGTSTP) stops it as it would natively: the tracer sees
// the group-stop ([WaitStatus.GroupStop]) and lets the program stay stopped
// ([Listen]) until SIGCONT. The switch: the tracer detaches with SIGSTOP,
// so the program stops by itself, seizes it, and interrupts it. On return
// the program is in a ptrace-stop and still in that group-stop; [Cont]
// sends it on, after which the tracer sees a SIGCONT that is its own, not
// the program's, which it must not deliver.
func Seize(pid int) error {
	if err := Detach(pid, unix.SIGSTOP); err != nil {
		return fmt.Errorf("detach to seize: %w", err)
	}
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, unix.WUNTRACED, nil); err != nil {
		return fmt.Errorf("wait for the stop before seizing: %w", err)
	}
	if !ws.Stopped() {
		return fmt.Errorf("program did not stop before seizing (status %#x)", uint32(ws))
	}
	if _, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SEIZE, uintptr(pid), 0, uintptr(startOptions), 0, 0); e != 0 {
		unix.Kill(pid, unix.SIGKILL)
		return fmt.Errorf("seize: %w", e)
	}
	if err := unix.PtraceInterrupt(pid); err != nil {
		unix.Kill(pid, unix.SIGKILL)
		return fmt.Errorf("interrupt: %w", err)
	}
	if _, err := WaitFor(pid); err != nil {
		return fmt.Errorf("wait for the seized program: %w", err)
	}
	// End the group-stop of our SIGSTOP: the program resumes when it is
	// continued.
	return unix.Kill(pid, unix.SIGCONT)
}

// Listen lets a thread in a group-stop stay stopped, as it would without a
// tracer, while the tracer goes on waiting for its next event (SIGCONT
// ends the group-stop).
func Listen(tid int) error {
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_LISTEN, uintptr(tid), 0, 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// Interrupt stops a running thread of a seized program; its stop is an
// EventStop.
func Interrupt(tid int) error { return unix.PtraceInterrupt(tid) }

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

// SameMemory reports whether two processes share their memory: a thread,
// a vfork child, or a child of clone(CLONE_VM) without CLONE_THREAD
// (kcmp(2), KCMP_VM). Kernels without kcmp (CONFIG_CHECKPOINT_RESTORE off)
// give an error.
func SameMemory(pid1, pid2 int) (bool, error) {
	const kcmpVM = 1
	r, _, e := unix.Syscall6(unix.SYS_KCMP, uintptr(pid1), uintptr(pid2), kcmpVM, 0, 0, 0)
	if e != 0 {
		return false, e
	}
	return r == 0, nil
}

// Kill sends a signal to a process.
func Kill(pid int, sig syscall.Signal) error { return unix.Kill(pid, sig) }

// Tgkill sends a signal to thread tid of process tgid.
func Tgkill(tgid, tid int, sig syscall.Signal) error { return unix.Tgkill(tgid, tid, sig) }

// Supported reports whether this platform can trace programs.
func Supported() error { return nil }

// IsNoProcess reports whether err means the thread is gone (ESRCH).
func IsNoProcess(err error) bool { return errors.Is(err, unix.ESRCH) }

// IsTerminal reports whether f is a terminal (PROFILE's status line).
func IsTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
