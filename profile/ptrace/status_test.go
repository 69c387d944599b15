package ptrace

import (
	"syscall"
	"testing"
)

// Linux's signal numbers (signal(7)): the statuses are Linux's whatever the
// host.
const (
	sigTRAP syscall.Signal = 5
	sigKILL syscall.Signal = 9
	sigSEGV syscall.Signal = 11
	sigSTOP syscall.Signal = 19
	sigTSTP syscall.Signal = 20
)

// Raw statuses built as <sys/wait.h> lays them out.
func exited(code int) WaitStatus            { return WaitStatus(code << 8) }
func killed(sig syscall.Signal) WaitStatus  { return WaitStatus(sig) }
func cored(sig syscall.Signal) WaitStatus   { return WaitStatus(sig | 0x80) }
func stopped(sig syscall.Signal) WaitStatus { return WaitStatus(0x7f | int(sig)<<8) }
func event(ev int) WaitStatus               { return stopped(sigTRAP) | WaitStatus(ev<<16) }

// decoded is everything WaitStatus tells about a status.
type decoded struct {
	exited, signaled, core, stopped bool
	groupStop                       bool
	exitStatus                      int
	signal, stopSignal              syscall.Signal
	event                           int
}

func decode(w WaitStatus) decoded {
	d := decoded{exited: w.Exited(), signaled: w.Signaled(), core: w.CoreDump(), stopped: w.Stopped(), event: w.Event(), groupStop: w.GroupStop()}
	if d.exited {
		d.exitStatus = w.ExitStatus()
	}
	if d.signaled {
		d.signal = w.Signal()
	}
	if d.stopped {
		d.stopSignal = w.StopSignal()
	}
	return d
}

func TestWaitStatus(t *testing.T) {
	tests := []struct {
		name string
		raw  WaitStatus
		want decoded
	}{
		{"exit 0", exited(0), decoded{exited: true}},
		{"exit 3", exited(3), decoded{exited: true, exitStatus: 3}},
		{"exit 255", exited(255), decoded{exited: true, exitStatus: 255}},
		{"killed by SIGSEGV", killed(sigSEGV), decoded{signaled: true, signal: sigSEGV}},
		{"SIGSEGV with core", cored(sigSEGV), decoded{signaled: true, core: true, signal: sigSEGV}},
		{"killed by SIGKILL", killed(sigKILL), decoded{signaled: true, signal: sigKILL}},
		{"stopped by SIGSTOP", stopped(sigSTOP), decoded{stopped: true, stopSignal: sigSTOP}},
		{"stopped by SIGTRAP", stopped(sigTRAP), decoded{stopped: true, stopSignal: sigTRAP}},
		{"fork event", event(EventFork), decoded{stopped: true, stopSignal: sigTRAP, event: EventFork}},
		{"vfork event", event(EventVfork), decoded{stopped: true, stopSignal: sigTRAP, event: EventVfork}},
		{"clone event", event(EventClone), decoded{stopped: true, stopSignal: sigTRAP, event: EventClone}},
		{"exec event", event(EventExec), decoded{stopped: true, stopSignal: sigTRAP, event: EventExec}},
		{"exit event", event(EventExit), decoded{stopped: true, stopSignal: sigTRAP, event: EventExit}},
		{"stop event", event(EventStop), decoded{stopped: true, stopSignal: sigTRAP, event: EventStop}},
		// Only a SIGTRAP stop carries an event; bits above a SIGSTOP are
		// not one.
		{"SIGSTOP with high bits", stopped(sigSTOP) | WaitStatus(EventClone<<16), decoded{stopped: true, stopSignal: sigSTOP}},
		// A seized program stopped by SIGSTOP: its group-stop.
		{"group-stop", stopped(sigSTOP) | WaitStatus(EventStop<<16), decoded{stopped: true, stopSignal: sigSTOP, groupStop: true}},
		{"group-stop of SIGTSTP", stopped(sigTSTP) | WaitStatus(EventStop<<16), decoded{stopped: true, stopSignal: sigTSTP, groupStop: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decode(tt.raw); got != tt.want {
				t.Errorf("WaitStatus(%#x) decodes as %+v, want %+v", uint32(tt.raw), got, tt.want)
			}
		})
	}
}

// TestWaitStatusRawValues pins the helpers above to literal statuses, so
// that a mistake in them cannot hide one in WaitStatus.
func TestWaitStatusRawValues(t *testing.T) {
	tests := []struct {
		name      string
		got, want WaitStatus
	}{
		{"exit 3", exited(3), 0x0300},
		{"SIGSEGV", killed(sigSEGV), 0x0b},
		{"SIGSEGV with core", cored(sigSEGV), 0x8b},
		{"SIGSTOP stop", stopped(sigSTOP), 0x137f},
		{"SIGTRAP stop", stopped(sigTRAP), 0x057f},
		{"clone event", event(EventClone), 0x03057f},
		{"stop event", event(EventStop), 0x80057f},
		{"group-stop", stopped(sigSTOP) | WaitStatus(EventStop<<16), 0x80137f},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %#x, want %#x", tt.name, uint32(tt.got), uint32(tt.want))
		}
	}
}
