//go:build linux && (amd64 || arm64)

package ptrace

import (
	"errors"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

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

// WaitYielding is Wait for a tracer that must see every stop the moment
// it comes (function timing with breakpoints, whose figures are the times
// between stops): it polls for up to limit, giving up its CPU between two
// polls, so that a traced thread waiting for that CPU runs at once, and
// only then sleeps. A tracer asleep in wait4 wakes a hundred microseconds
// or more after the stop on a virtual machine: time that would be counted
// as the program's.
func WaitYielding(limit time.Duration) (tid int, ws WaitStatus, err error) {
	return WaitIdle(limit, func() bool { return false })
}

// WaitIdle is WaitYielding for a tracer with work to do between stops:
// between two polls it calls idle, which reports whether it found any;
// it sleeps in wait4 only after limit without a stop or work.
func WaitIdle(limit time.Duration, idle func() bool) (tid int, ws WaitStatus, err error) {
	return waitIdle(limit, 0, idle, nil)
}

// WaitTicking is WaitIdle for a tracer whose work cannot wait for the
// next stop (an execution trace written as the run goes): after limit
// without a stop or work it does not sleep in wait4, but waits for the
// SIGCHLD of the next stop, and calls idle every every meanwhile. A stop
// is seen as soon as its SIGCHLD arrives.
func WaitTicking(limit, every time.Duration, idle func() bool) (tid int, ws WaitStatus, err error) {
	return waitIdle(limit, every, idle, nil)
}

// WaitUntil is WaitTicking for a tracer that may be told to stop waiting
// (the end of an attached run's window): it returns ErrQuit as soon as
// quit is closed, whether or not stops are waiting (they are left for the
// waits that follow).
func WaitUntil(limit, every time.Duration, idle func() bool, quit <-chan struct{}) (tid int, ws WaitStatus, err error) {
	return waitIdle(limit, every, idle, quit)
}

// ErrQuit is WaitUntil's error when it was told to stop waiting.
var ErrQuit = errors.New("the wait was ended")

// stopSignals receives the tracer's SIGCHLD (WaitTicking): the kernel
// sends one at each stop of a tracee.
var (
	stopSignalsOnce sync.Once
	stopSignals     chan os.Signal
)

func waitIdle(limit, every time.Duration, idle func() bool, quit <-chan struct{}) (tid int, ws WaitStatus, err error) {
	var st unix.WaitStatus
	if every > 0 {
		stopSignalsOnce.Do(func() {
			stopSignals = make(chan os.Signal, 1)
			signal.Notify(stopSignals, syscall.SIGCHLD)
		})
	}
	deadline := time.Now().Add(limit)
	var tick *time.Timer
	defer func() {
		if tick != nil {
			tick.Stop()
		}
	}()
	for {
		// quit first: where stops always wait (threads stopping for
		// full rings faster than they are handled), a wait that looked
		// at it only when none did would never end.
		if quit != nil {
			select {
			case <-quit:
				return 0, 0, ErrQuit
			default:
			}
		}
		tid, err = unix.Wait4(-1, &st, unix.WALL|unix.WNOHANG, nil)
		if tid != 0 || (err != nil && err != unix.EINTR) {
			return tid, WaitStatus(st), err
		}
		if idle() {
			deadline = time.Now().Add(limit)
			continue
		}
		switch {
		case time.Now().Before(deadline):
			unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
		case every <= 0:
			return Wait(0)
		default:
			// (A SIGCHLD that came before this wait is in the channel,
			// and ends it at once: the poll above may have missed its
			// stop by a moment.)
			if tick == nil {
				tick = time.NewTimer(every)
			} else {
				tick.Reset(every)
			}
			select {
			case <-stopSignals:
			case <-tick.C:
			case <-quit:
			}
		}
	}
}

// WaitPolling is Wait for a tracer with work to do every so often while
// nothing happens: it polls for spin without sleeping, then every every,
// calling idle between two polls.
func WaitPolling(spin, every time.Duration, idle func() bool) (tid int, ws WaitStatus, err error) {
	var st unix.WaitStatus
	deadline := time.Now().Add(spin)
	for {
		tid, err = unix.Wait4(-1, &st, unix.WALL|unix.WNOHANG, nil)
		if tid != 0 || (err != nil && err != unix.EINTR) {
			return tid, WaitStatus(st), err
		}
		if idle() {
			continue
		}
		if time.Now().After(deadline) {
			time.Sleep(every)
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

// WaitForYielding is WaitFor for a stop that comes at once (the end of a
// single step): it polls for up to limit, giving up its CPU between two
// polls, and only then sleeps. A tracer asleep in wait4 wakes a hundred
// microseconds or more after the stop on a busy or virtual machine, for
// a step of a nanosecond.
func WaitForYielding(tid int, limit time.Duration) (WaitStatus, error) {
	var st unix.WaitStatus
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		got, err := unix.Wait4(tid, &st, unix.WALL|unix.WNOHANG, nil)
		if got != 0 || (err != nil && err != unix.EINTR) {
			return WaitStatus(st), err
		}
		unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
	}
	return WaitFor(tid)
}
