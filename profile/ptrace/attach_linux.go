//go:build linux && (amd64 || arm64)

package ptrace

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

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
	a := &attacher{pid: pid, seized: map[int]bool{}, stopped: map[int]bool{}, group: map[int]bool{}, order: []int{}}
	for {
		fresh, err := a.round()
		if err != nil {
			a.release()
			return nil, nil, err
		}
		if fresh == 0 {
			break
		}
	}
	return a.order, a.group, nil
}

// attacher is the state of an Attach of process pid: the threads seized
// (in order) and stopped, those in a group-stop, and those seized in
// the round under way, to be interrupted.
type attacher struct {
	pid             int
	seized, stopped map[int]bool
	group           map[int]bool
	order           []int
	interrupt       []int
}

// release detaches the threads seized so far, after an error.
func (a *attacher) release() {
	for tid := range a.seized {
		unix.PtraceInterrupt(tid)
		Detach(tid, 0)
	}
}

// round reads the process's task list, seizes the threads new in it,
// interrupts them and waits until every thread seized is stopped. fresh
// counts the threads new in the list: none, and every thread is
// stopped.
func (a *attacher) round() (fresh int, err error) {
	tids, err := Tasks(a.pid)
	if err != nil {
		return 0, err
	}
	a.interrupt = a.interrupt[:0]
	for _, tid := range tids {
		if !a.seized[tid] {
			fresh++
			if err := a.seize(tid); err != nil {
				return 0, err
			}
		}
	}
	if err := a.interruptSeized(); err != nil {
		return 0, err
	}
	if err := a.waitStopped(); err != nil {
		return 0, err
	}
	return fresh, nil
}

// seize seizes thread tid, to be interrupted in this round. A thread
// that ended, or is ending, is not an error, nor one seized already
// with its parent at its clone.
func (a *attacher) seize(tid int) error {
	if a.seized[tid] {
		return nil
	}
	if _, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SEIZE, uintptr(tid), 0, uintptr(attachOptions), 0, 0); e != 0 {
		switch {
		case tid == a.pid:
			return fmt.Errorf("seize thread %d: %w", tid, e)
		case e == unix.EPERM && tracer(tid) == unix.Gettid():
			// Seized already, with its parent at its clone: its
			// first stop is on its way.
			a.seized[tid] = true
			a.order = append(a.order, tid)
			return nil
		case e == unix.ESRCH || e == unix.EPERM:
			return nil // a thread that ended, or is ending
		}
		return fmt.Errorf("seize thread %d: %w", tid, e)
	}
	a.seized[tid] = true
	a.order = append(a.order, tid)
	a.interrupt = append(a.interrupt, tid)
	return nil
}

// interruptSeized interrupts the threads seized in this round. The main
// thread stops last: a signal to the process that comes while the
// others stop goes to it, as it would natively, not to another thread,
// whose blocked system call it would interrupt.
func (a *attacher) interruptSeized() error {
	pid := a.pid
	slices.SortStableFunc(a.interrupt, func(a, b int) int {
		switch {
		case a == pid:
			return 1
		case b == pid:
			return -1
		}
		return 0
	})
	for _, tid := range a.interrupt {
		if err := unix.PtraceInterrupt(tid); err != nil && err != unix.ESRCH {
			return fmt.Errorf("interrupt thread %d: %w", tid, err)
		}
	}
	return nil
}

// waitStopped waits until every thread seized is stopped.
func (a *attacher) waitStopped() error {
	pid, seized, stopped, group := a.pid, a.seized, a.stopped, a.group
	for len(stopped) < len(seized) {
		var st unix.WaitStatus
		tid, err := unix.Wait4(-1, &st, unix.WALL, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("wait for the threads of process %d: %w", pid, err)
		}
		ws := WaitStatus(st)
		switch {
		case ws.Exited() || ws.Signaled():
			if tid == pid {
				return fmt.Errorf("process %d ended as PROFILE attached: %w", pid, unix.ESRCH)
			}
			delete(seized, tid)
			delete(stopped, tid)
			a.order = slices.DeleteFunc(a.order, func(t int) bool { return t == tid })
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
			a.order = append(a.order, tid)
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
	return nil
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
