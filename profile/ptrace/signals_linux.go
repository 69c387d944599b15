//go:build linux && (amd64 || arm64)

package ptrace

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The signals of traced threads: what a stopped thread is stopped for,
// its mask, and what waits for it and for its process.

// SigInfo is what the kernel tells of a signal a thread is stopped for
// (PTRACE_GETSIGINFO, siginfo_t of <asm-generic/siginfo.h>): its number
// and code; for SIGCHLD the child's ID and status, for a fault the
// address.
type SigInfo struct {
	Signo, Code int32
	Pid, Status int32
	Addr        uint64
}

// GetSigInfo reads the signal stopped thread tid is stopped for.
func GetSigInfo(tid int) (SigInfo, error) {
	var b [128]byte
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_GETSIGINFO, uintptr(tid), 0, uintptr(unsafe.Pointer(&b[0])), 0, 0)
	if e != 0 {
		return SigInfo{}, e
	}
	le := binary.LittleEndian
	return SigInfo{
		Signo:  int32(le.Uint32(b[0:])),
		Code:   int32(le.Uint32(b[8:])),
		Pid:    int32(le.Uint32(b[16:])),
		Status: int32(le.Uint32(b[24:])),
		Addr:   le.Uint64(b[16:]),
	}, nil
}

// RawSigInfo is a signal's siginfo_t as the kernel gives it, whole: what
// a signal held back is delivered with later (SetSigInfo).
type RawSigInfo [128]byte

// GetRawSigInfo reads the whole siginfo of the signal stopped thread tid
// is stopped for.
func GetRawSigInfo(tid int) (RawSigInfo, error) {
	var b RawSigInfo
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_GETSIGINFO, uintptr(tid), 0, uintptr(unsafe.Pointer(&b[0])), 0, 0)
	if e != 0 {
		return b, e
	}
	return b, nil
}

// SetSigInfo gives stopped thread tid the siginfo of the signal it is
// stopped for: resumed with that signal (its si_signo), the thread
// receives it with this siginfo, not one the kernel makes for a signal
// of the tracer's.
func SetSigInfo(tid int, info RawSigInfo) error {
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SETSIGINFO, uintptr(tid), 0, uintptr(unsafe.Pointer(&info[0])), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// SigMask returns the signal mask of stopped thread tid
// (PTRACE_GETSIGMASK): bit n-1 blocks signal n.
func SigMask(tid int) (uint64, error) {
	var mask uint64
	if _, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_GETSIGMASK, uintptr(tid), 8, uintptr(unsafe.Pointer(&mask)), 0, 0); e != 0 {
		return 0, e
	}
	return mask, nil
}

// SetSigMask sets the signal mask of stopped thread tid
// (PTRACE_SETSIGMASK); SIGKILL and SIGSTOP are never blocked.
func SetSigMask(tid int, mask uint64) error {
	if _, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SETSIGMASK, uintptr(tid), 8, uintptr(unsafe.Pointer(&mask)), 0, 0); e != 0 {
		return e
	}
	return nil
}

// Pending returns the signals pending for thread tid itself (SigPnd of
// /proc/tid/status): bit n-1 for signal n; 0 when it cannot be read.
func Pending(tid int) uint64 { return statusMask(tid, "SigPnd:") }

// SharedPending returns the signals pending for the process of thread
// tid, any of whose threads may take them (ShdPnd).
func SharedPending(tid int) uint64 { return statusMask(tid, "ShdPnd:") }

// Blocked returns the signals thread tid blocks (SigBlk), running or
// not.
func Blocked(tid int) uint64 { return statusMask(tid, "SigBlk:") }

// SharedQueued returns the signals queued for the process of stopped
// thread tid, any of whose threads may take them (PTRACE_PEEKSIGINFO,
// PTRACE_PEEKSIGINFO_SHARED): a ptrace request, cheaper than reading
// /proc (SharedPending). A signal the kernel could not queue with its
// information (out of memory) is not seen.
func SharedQueued(tid int) uint64 {
	const peekShared = 1 // PTRACE_PEEKSIGINFO_SHARED
	args := struct {
		off   uint64
		flags uint32
		nr    int32
	}{flags: peekShared, nr: 16}
	var infos [16][128]byte
	n, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_PEEKSIGINFO, uintptr(tid), uintptr(unsafe.Pointer(&args)), uintptr(unsafe.Pointer(&infos[0][0])), 0, 0)
	if e != 0 {
		return 0
	}
	var set uint64
	for _, info := range infos[:min(int(n), len(infos))] {
		if sig := binary.LittleEndian.Uint32(info[:]); sig >= 1 && sig <= 64 {
			set |= 1 << (sig - 1)
		}
	}
	return set
}

// statusMask reads a signal mask of /proc/tid/status, 0 when it cannot
// be read.
func statusMask(tid int, field string) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", tid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return n
		}
	}
	return 0
}

// Yield gives up the CPU for a moment (sched_yield), while the tracer
// waits for a thread it let go to run.
func Yield() { unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }

// DetachStopped detaches the threads of a process stopped by a stop
// signal (a group-stop), and waits, a second at most, until each is in it
// again, 'T' in /proc/PID/task/TID/stat: detached, a thread is woken to
// go back into the group-stop, and shows 'R' for a moment, which one
// that looks at the process at once takes for running.
func DetachStopped(tids []int) {
	for _, tid := range tids {
		Detach(tid, 0)
	}
	WaitStopped(tids)
}

// WaitStopped waits, a second at most, until each of the threads tids,
// detached, is stopped ('T' in /proc/TID/stat) or gone.
func WaitStopped(tids []int) {
	for _, tid := range tids {
		for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Microsecond) {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", tid))
			i := strings.LastIndexByte(string(b), ')')
			if err != nil || i < 0 || i+2 >= len(b) || b[i+2] == 'T' {
				break
			}
		}
	}
}
