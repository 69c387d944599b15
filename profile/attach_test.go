package profile

import (
	"syscall"
	"testing"
	"time"

	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// TestSeconds: the run record of an attached run words its window as a
// user would: three digits, whole seconds from 100 s on (an hour was
// "3.6e+03 s").
func TestSeconds(t *testing.T) {
	for d, want := range map[time.Duration]string{
		200 * time.Millisecond:              "0.2 s",
		1234 * time.Millisecond:             "1.23 s",
		30 * time.Second:                    "30 s",
		99940 * time.Millisecond:            "99.9 s",
		99960 * time.Millisecond:            "100 s",
		time.Hour:                           "3600 s",
		36*time.Hour + 400*time.Millisecond: "129600 s",
	} {
		if got := seconds(d); got != want {
			t.Errorf("seconds(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestHeldStop: in the set-up of an attached run, a SIGSTOP a thread took
// as it was stepped (a signal-delivery stop) is held for the thread, to be
// delivered as PROFILE lets the process go, and marks the process as
// being stopped; nothing else is held, nor a SIGSTOP once the threads
// run (the loop's own), nor a group-stop.
func TestHeldStop(t *testing.T) {
	const tid = 7
	groupStop := stoppedBy(syscall.SIGSTOP) | ptrace.WaitStatus(ptrace.EventStop<<16)
	for _, c := range []struct {
		name    string
		ws      ptrace.WaitStatus
		running bool
		want    bool
	}{
		{"sigstop", stoppedBy(syscall.SIGSTOP), false, true},
		{"sigtrap", stoppedBy(syscall.SIGTRAP), false, false},
		{"sigusr1", stoppedBy(syscall.SIGUSR1), false, false},
		{"group-stop", groupStop, false, false},
		{"running", stoppedBy(syscall.SIGSTOP), true, false},
	} {
		th := &thread{tid: tid, tgid: tid}
		a := &attachment{t: &tracer{threads: map[int]*thread{tid: th}}, running: c.running}
		if got := a.heldStop(tid, c.ws); got != c.want || a.stopped != c.want {
			t.Errorf("%s: held %v, stopped %v; want %v", c.name, got, a.stopped, c.want)
		}
		if want := map[bool]syscall.Signal{true: syscall.SIGSTOP}[c.want]; th.takePending() != want {
			t.Errorf("%s: the thread's pending signal is not %v", c.name, want)
		}
		if a.heldStop(tid+1, c.ws) {
			t.Errorf("%s: held for a thread the run does not know", c.name)
		}
	}
}
