// The process seam's adapter: a traced program through package ptrace,
// each method one call of it or a few. It is the only file of the
// package that calls ptrace's functions that act on a process
// (TestProcessSeam).

package profile

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// ptraceProcess is a process traced with ptrace. It keeps no state: the
// kernel keeps it, for the tracer's thread.
type ptraceProcess struct{}

// startPtrace starts the program at path under ptrace (ptrace.Start),
// stopped at its first instruction, and returns it with its process ID.
func startPtrace(path string, argv, env []string, dir string, files []*os.File) (process, int, error) {
	pid, err := ptrace.Start(path, argv, env, dir, files)
	if err != nil {
		return nil, 0, err
	}
	return ptraceProcess{}, pid, nil
}

// attachPtrace seizes and stops every thread of the running process pid
// (ptrace.Attach): tids are its threads, the first pid, group those in a
// group-stop.
func attachPtrace(pid int) (p process, tids []int, group map[int]bool, err error) {
	tids, group, err = ptrace.Attach(pid)
	if err != nil {
		return nil, nil, nil, err
	}
	return ptraceProcess{}, tids, group, nil
}

func (ptraceProcess) getRegs(tid int, r *ptrace.Regs) error { return ptrace.GetRegs(tid, r) }
func (ptraceProcess) setRegs(tid int, r *ptrace.Regs) error { return ptrace.SetRegs(tid, r) }
func (ptraceProcess) threadPointer(tid int) (uint64, error) { return ptrace.ThreadPointer(tid) }
func (ptraceProcess) setThreadPointer(tid int, v uint64) error {
	return ptrace.SetThreadPointer(tid, v)
}

func (ptraceProcess) cont(tid int, sig syscall.Signal) error   { return ptrace.Cont(tid, sig) }
func (ptraceProcess) step(tid int) error                       { return ptrace.Step(tid) }
func (ptraceProcess) interrupt(tid int) error                  { return ptrace.Interrupt(tid) }
func (ptraceProcess) listen(tid int) error                     { return ptrace.Listen(tid) }
func (ptraceProcess) detach(tid int, sig syscall.Signal) error { return ptrace.Detach(tid, sig) }
func (ptraceProcess) detachStopped(tids []int)                 { ptrace.DetachStopped(tids) }
func (ptraceProcess) waitStopped(tids []int)                   { ptrace.WaitStopped(tids) }
func (ptraceProcess) seize(pid int) error                      { return ptrace.Seize(pid) }

func (ptraceProcess) kill(tgid, tid int, sig syscall.Signal) error {
	if tid == 0 {
		return ptrace.Kill(tgid, sig)
	}
	return ptrace.Tgkill(tgid, tid, sig)
}

func (ptraceProcess) wait(w waitPolicy) (int, ptrace.WaitStatus, error) {
	switch w.kind {
	case waitYielding:
		return ptrace.WaitYielding(w.spin)
	case waitIdling:
		return ptrace.WaitIdle(w.spin, w.idle)
	case waitTicking:
		return ptrace.WaitTicking(w.spin, w.every, w.idle)
	case waitQuitting:
		return ptrace.WaitUntil(w.spin, w.every, w.idle, w.quit)
	case waitPolling:
		return ptrace.WaitPolling(w.spin, w.every, w.idle)
	}
	return ptrace.Wait(w.spin)
}

func (ptraceProcess) waitFor(tid int, yield time.Duration) (ptrace.WaitStatus, error) {
	if yield > 0 {
		return ptrace.WaitForYielding(tid, yield)
	}
	return ptrace.WaitFor(tid)
}

func (ptraceProcess) eventMsg(tid int) (uint64, error)              { return ptrace.EventMsg(tid) }
func (ptraceProcess) sigInfo(tid int) (ptrace.SigInfo, error)       { return ptrace.GetSigInfo(tid) }
func (ptraceProcess) rawSigInfo(tid int) (ptrace.RawSigInfo, error) { return ptrace.GetRawSigInfo(tid) }
func (ptraceProcess) setSigInfo(tid int, info ptrace.RawSigInfo) error {
	return ptrace.SetSigInfo(tid, info)
}

func (ptraceProcess) sigMask(tid int) (uint64, error)       { return ptrace.SigMask(tid) }
func (ptraceProcess) setSigMask(tid int, mask uint64) error { return ptrace.SetSigMask(tid, mask) }

func (ptraceProcess) signals(tid int, set sigSet) uint64 {
	switch set {
	case sigPending:
		return ptrace.Pending(tid)
	case sigSharedPending:
		return ptrace.SharedPending(tid)
	case sigBlocked:
		return ptrace.Blocked(tid)
	case sigSharedQueued:
		return ptrace.SharedQueued(tid)
	}
	return 0
}

func (ptraceProcess) attach(pid int) ([]int, map[int]bool, error) { return ptrace.Attach(pid) }
func (ptraceProcess) sameMemory(a, b int) (bool, error)           { return ptrace.SameMemory(a, b) }

// tgid reads the Tgid of /proc/TID/status.
func (ptraceProcess) tgid(tid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", tid))
	if err != nil {
		return tid
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				return n
			}
		}
	}
	return tid
}

// inSyscall reads /proc/PID/task/TID/syscall, which names the system
// call a thread is in.
func (ptraceProcess) inSyscall(tgid, tid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/syscall", tgid, tid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return false
	}
	nr, err := strconv.ParseInt(f[0], 10, 64)
	return err == nil && nr >= 0
}

func (ptraceProcess) seccomp(tid int) (ptrace.Seccomp, error) { return ptrace.SeccompOf(tid) }
func (ptraceProcess) suspendSeccomp(tid int, attached, on bool) error {
	return ptrace.SuspendSeccomp(tid, attached, on)
}

func (ptraceProcess) openMem(tid int) (taskMem, error) {
	mem, err := ptrace.OpenMem(tid)
	if err != nil {
		return nil, err
	}
	return mem, nil
}

func (ptraceProcess) openMaps(pid int) (memoryMap, error) {
	maps, err := ptrace.OpenMaps(pid)
	if err != nil {
		return nil, err
	}
	return maps, nil
}

func (ptraceProcess) mapShared(tid, fd, size int) (*ptrace.Shared, error) {
	return ptrace.MapShared(tid, fd, size)
}
func (ptraceProcess) auxValue(pid int, typ uint64) (uint64, error) { return ptrace.AuxValue(pid, typ) }
func (ptraceProcess) stackLimit(pid int) (uint64, error)           { return ptrace.StackLimit(pid) }
func (ptraceProcess) cpuTime(tgid, tid int) (int64, error)         { return runTime(tgid, tid) }
func (ptraceProcess) openSampler(tid int, o ptrace.SamplerOptions) (*ptrace.Sampler, error) {
	return ptrace.OpenSampler(tid, o)
}
func (ptraceProcess) pacMask(tid int) uint64 { return ptrace.PACMask(tid) }
