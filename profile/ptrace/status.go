package ptrace

import "syscall"

// WaitStatus is the status wait4 reports for a thread, decoded without
// depending on the host (the layout is Linux's, from <sys/wait.h>).
type WaitStatus uint32

// Ptrace events reported in the status of a SIGTRAP stop (<linux/ptrace.h>).
const (
	EventFork  = 1
	EventVfork = 2
	EventClone = 3
	EventExec  = 4
	// EventVforkDone stops a vfork's parent as its child lets the
	// memory go (exec or exit), before the parent runs again.
	EventVforkDone = 5
	EventExit      = 6
	EventStop      = 128
)

// Exited reports whether the thread exited normally.
func (w WaitStatus) Exited() bool { return w&0x7f == 0 }

// ExitStatus is the exit code of an exited thread.
func (w WaitStatus) ExitStatus() int { return int(w>>8) & 0xff }

// Signaled reports whether the thread was killed by a signal.
func (w WaitStatus) Signaled() bool { return w&0x7f != 0x7f && w&0x7f != 0 }

// Signal is the signal that killed a thread.
func (w WaitStatus) Signal() syscall.Signal { return syscall.Signal(w & 0x7f) }

// CoreDump reports whether the killed thread dumped core.
func (w WaitStatus) CoreDump() bool { return w.Signaled() && w&0x80 != 0 }

// Stopped reports whether the thread is in a ptrace stop.
func (w WaitStatus) Stopped() bool { return w&0xff == 0x7f }

// StopSignal is the signal of a stopped thread.
func (w WaitStatus) StopSignal() syscall.Signal { return syscall.Signal(w>>8) & 0xff }

// GroupStop reports whether a thread of a seized program stopped because
// the program was stopped (SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU): an
// EventStop with the stopping signal.
func (w WaitStatus) GroupStop() bool {
	return w.Stopped() && int(w>>16)&0xff == EventStop && w.StopSignal() != syscall.SIGTRAP
}

// Event is the ptrace event of a SIGTRAP stop (EventClone...), or 0.
func (w WaitStatus) Event() int {
	if !w.Stopped() || w.StopSignal() != syscall.SIGTRAP {
		return 0
	}
	return int(w>>16) & 0xff
}
