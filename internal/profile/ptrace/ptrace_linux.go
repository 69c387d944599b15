//go:build linux && (amd64 || arm64)

package ptrace

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
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

// Attach seizes every thread of the running process pid and stops each,
// for a tracer that profiles a process it did not start (profile --pid).
// The process is seized without PTRACE_O_EXITKILL: it must outlive the
// tracer. Threads that start while Attach works are seized through their
// parent's clone event, or found when the process's task list is read
// again; a signal that comes to a thread before its stop is delivered
// there and then (no patch is in yet), so none is lost. On return every
// thread Attach names is in an interrupt stop (an EventStop), its
// registers readable; the first is pid. group names those that were in a
// group-stop (the process stopped by SIGSTOP), to be left so. On error
// the threads seized so far are detached.
func Attach(pid int) (tids []int, group map[int]bool, err error) {
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil && strings.Contains(string(b), "\nState:\tZ") {
		// (Its other threads run on; the leader would never stop.)
		return nil, nil, errors.New("its main thread has exited")
	}
	if g := tgid(pid); g != 0 && g != pid {
		// (Its clones would look like another process's, and its end
		// like the process's.)
		return nil, nil, fmt.Errorf("it is a thread of process %d: attach to that", g)
	}
	seized := map[int]bool{}
	stopped := map[int]bool{}
	group = map[int]bool{}
	order := []int{}
	var interrupt []int // seized in this round, to be interrupted
	release := func() {
		for tid := range seized {
			unix.PtraceInterrupt(tid)
			Detach(tid, 0)
		}
	}
	seize := func(tid int) error {
		if seized[tid] {
			return nil
		}
		if _, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SEIZE, uintptr(tid), 0, uintptr(attachOptions), 0, 0); e != 0 {
			switch {
			case tid == pid:
				return fmt.Errorf("seize thread %d: %w", tid, e)
			case e == unix.EPERM && tracer(tid) == unix.Gettid():
				// Seized already, with its parent at its clone: its
				// first stop is on its way.
				seized[tid] = true
				order = append(order, tid)
				return nil
			case e == unix.ESRCH || e == unix.EPERM:
				return nil // a thread that ended, or is ending
			}
			return fmt.Errorf("seize thread %d: %w", tid, e)
		}
		seized[tid] = true
		order = append(order, tid)
		interrupt = append(interrupt, tid)
		return nil
	}
	for {
		tids, err := Tasks(pid)
		if err != nil {
			release()
			return nil, nil, err
		}
		fresh := 0
		interrupt = interrupt[:0]
		for _, tid := range tids {
			if !seized[tid] {
				fresh++
				if err := seize(tid); err != nil {
					release()
					return nil, nil, err
				}
			}
		}
		// The main thread stops last: a signal to the process that comes
		// while the others stop goes to it, as it would natively, not to
		// another thread, whose blocked system call it would interrupt.
		slices.SortStableFunc(interrupt, func(a, b int) int {
			switch {
			case a == pid:
				return 1
			case b == pid:
				return -1
			}
			return 0
		})
		for _, tid := range interrupt {
			if err := unix.PtraceInterrupt(tid); err != nil && err != unix.ESRCH {
				release()
				return nil, nil, fmt.Errorf("interrupt thread %d: %w", tid, err)
			}
		}
		for len(stopped) < len(seized) {
			var st unix.WaitStatus
			tid, err := unix.Wait4(-1, &st, unix.WALL, nil)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				release()
				return nil, nil, fmt.Errorf("wait for the threads of process %d: %w", pid, err)
			}
			ws := WaitStatus(st)
			switch {
			case ws.Exited() || ws.Signaled():
				if tid == pid {
					release()
					return nil, nil, fmt.Errorf("process %d ended as PROFILE attached: %w", pid, unix.ESRCH)
				}
				delete(seized, tid)
				delete(stopped, tid)
				order = slices.DeleteFunc(order, func(t int) bool { return t == tid })
			case !seized[tid]:
				// A thread seized with its parent at a clone whose event
				// may come later (its first stop is an EventStop), or
				// the child of a fork, let go unharmed: nothing is
				// planted yet.
				if tgid(tid) != pid {
					Detach(tid, 0)
					continue
				}
				seized[tid] = true
				order = append(order, tid)
				stopped[tid] = true
			case ws.StopSignal() == unix.SIGTRAP && ws.Event() == EventStop:
				stopped[tid] = true
			case ws.GroupStop():
				// Stopped by SIGSTOP or SIGTSTP: it stays so, and is
				// stopped for the tracer too.
				stopped[tid] = true
				group[tid] = true
			case ws.StopSignal() == unix.SIGTRAP && ws.Event() != 0:
				// A clone, fork, exec or exit of a thread on its way to
				// the interrupt: let it go on to it.
				unix.PtraceCont(tid, 0)
				unix.PtraceInterrupt(tid)
			default:
				// A signal on its way to the thread: delivered now.
				unix.PtraceCont(tid, int(ws.StopSignal()))
				unix.PtraceInterrupt(tid)
			}
		}
		if fresh == 0 {
			break
		}
	}
	return order, group, nil
}

// tgid returns the process of thread tid (the Tgid of
// /proc/tid/status), 0 when it cannot be read.
func tgid(tid int) int { return statusField(tid, "Tgid:") }

// statusField reads the number of a field of /proc/tid/status, 0 when it
// cannot be read.
func statusField(tid int, field string) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", tid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// tracer returns the tracer of thread tid (the TracerPid of
// /proc/tid/status), 0 when none or unknown.
func tracer(tid int) int { return statusField(tid, "TracerPid:") }

// Tasks lists the threads of process pid (/proc/pid/task).
func Tasks(pid int) ([]int, error) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return nil, err
	}
	var tids []int
	for _, e := range ents {
		var tid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &tid); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}

// IsTerminal reports whether f is a terminal (PROFILE's status line).
func IsTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
