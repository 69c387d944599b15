//go:build linux && (amd64 || arm64)

package ptrace

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Warp is what CounterWarp found: the largest step back of the counter
// seen from one CPU to another (0: none), in counts, and the turns taken
// between two CPUs, the fewest of any pair checked.
type Warp struct {
	Back  uint64
	Turns int
	CPUs  int // the CPUs checked, the first included
}

// CounterWarp checks whether the counters of the CPUs this process may
// run on agree, as the kernel checks a CPU's time-stamp counter as it
// brings the CPU up (arch/x86/kernel/tsc_sync.c, check_tsc_warp): a
// thread on the first CPU and one on another take turns through a lock,
// each reading the counter and leaving its reading for the other, and a
// reading below the one the other left is a warp, one CPU's counter
// behind the other's. Each CPU is checked against the first for turns
// taken between the two, or until limit has passed.
func CounterWarp(turns int, limit time.Duration) (Warp, error) {
	cpus, err := allowedCPUs()
	if err != nil {
		return Warp{}, err
	}
	w := Warp{Turns: turns, CPUs: len(cpus)}
	for _, cpu := range cpus[min(1, len(cpus)):] {
		pair, err := warpPair(cpus[0], cpu, turns, limit, func(int) uint64 { return Counter() })
		if err != nil {
			return Warp{}, err
		}
		w.Back, w.Turns = max(w.Back, pair.back), min(w.Turns, pair.turns)
	}
	return w, nil
}

// allowedCPUs returns the CPUs this process may run on, in order.
func allowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("the CPUs PROFILE may run on: %w", err)
	}
	var cpus []int
	for cpu := range 64 * len(set) {
		if set.IsSet(cpu) {
			cpus = append(cpus, cpu)
		}
	}
	return cpus, nil
}

// warpCheck is the state two threads share in warpPair, under lock.
type warpCheck struct {
	lock  atomic.Int32
	done  atomic.Bool
	last  uint64 // the last reading, and the CPU that made it (-1: none)
	cpu   int
	back  uint64
	turns int
}

// warpPair runs the check of CounterWarp between CPUs a and b, read
// reading the counter of the CPU it is given.
func warpPair(a, b, turns int, limit time.Duration, read func(cpu int) uint64) (warpCheck, error) {
	w := &warpCheck{cpu: -1}
	deadline := time.Now().Add(limit)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, cpu := range []int{a, b} {
		wg.Go(func() {
			// The thread ends with the goroutine, its affinity with it:
			// never unlocked, it does not go back to Go's threads.
			runtime.LockOSThread()
			var set unix.CPUSet
			set.Set(cpu)
			if err := unix.SchedSetaffinity(0, &set); err != nil {
				errs[i] = fmt.Errorf("a thread on CPU %d: %w", cpu, err)
				w.done.Store(true)
				return
			}
			w.take(cpu, turns, deadline, read)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return warpCheck{}, err
		}
	}
	return warpCheck{back: w.back, turns: w.turns}, nil
}

// take reads the counter on cpu in turns with the other thread until
// turns were taken between the two, or the deadline.
func (w *warpCheck) take(cpu, turns int, deadline time.Time, read func(cpu int) uint64) {
	for !w.done.Load() {
		if time.Now().After(deadline) {
			w.done.Store(true)
			break
		}
		for !w.lock.CompareAndSwap(0, 1) {
		}
		now := read(cpu)
		if w.cpu >= 0 && w.cpu != cpu {
			w.turns++
			if now < w.last {
				w.back = max(w.back, w.last-now)
			}
		}
		w.last, w.cpu = now, cpu
		if w.turns >= turns {
			w.done.Store(true)
		}
		w.lock.Store(0)
	}
}
