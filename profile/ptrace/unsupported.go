//go:build !(linux && (amd64 || arm64))

package ptrace

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// Start is not supported on this platform.
func Start(path string, argv, env []string, dir string, files []*os.File) (int, error) {
	return 0, errors.ErrUnsupported
}

// Seize is not supported on this platform.
func Seize(pid int) error { return errors.ErrUnsupported }

// Listen is not supported on this platform.
func Listen(tid int) error { return errors.ErrUnsupported }

// Interrupt is not supported on this platform.
func Interrupt(tid int) error { return errors.ErrUnsupported }

// Wait is not supported on this platform.
func Wait(spin time.Duration) (int, WaitStatus, error) { return 0, 0, errors.ErrUnsupported }

// WaitFor is not supported on this platform.
func WaitFor(tid int) (WaitStatus, error) { return 0, errors.ErrUnsupported }

// WaitYielding is not supported.
func WaitYielding(limit time.Duration) (int, WaitStatus, error) { return 0, 0, errors.ErrUnsupported }

// WaitIdle is not supported.
func WaitIdle(limit time.Duration, idle func() bool) (int, WaitStatus, error) {
	return 0, 0, errors.ErrUnsupported
}

// WaitTicking is not supported.
func WaitTicking(limit, every time.Duration, idle func() bool) (int, WaitStatus, error) {
	return 0, 0, errors.ErrUnsupported
}

// WaitPolling is not supported.
func WaitPolling(spin, every time.Duration, idle func() bool) (int, WaitStatus, error) {
	return 0, 0, errors.ErrUnsupported
}

// Cont is not supported on this platform.
func Cont(tid int, sig syscall.Signal) error { return errors.ErrUnsupported }

// Step is not supported on this platform.
func Step(tid int) error { return errors.ErrUnsupported }

// Detach is not supported on this platform.
func Detach(tid int, sig syscall.Signal) error { return errors.ErrUnsupported }

// EventMsg is not supported on this platform.
func EventMsg(tid int) (uint64, error) { return 0, errors.ErrUnsupported }

// SameMemory is not supported on this platform.
func SameMemory(pid1, pid2 int) (bool, error) { return false, errors.ErrUnsupported }

// SigInfo is what the kernel tells of a signal.
type SigInfo struct {
	Signo, Code int32
	Pid, Status int32
	Addr        uint64
}

// WaitForYielding is not supported on this platform.
func WaitForYielding(tid int, limit time.Duration) (WaitStatus, error) {
	return 0, errors.ErrUnsupported
}

// GetSigInfo is not supported on this platform.
func GetSigInfo(tid int) (SigInfo, error) { return SigInfo{}, errors.ErrUnsupported }

// RawSigInfo is a signal's siginfo_t, whole.
type RawSigInfo [128]byte

// GetRawSigInfo is not supported on this platform.
func GetRawSigInfo(tid int) (RawSigInfo, error) { return RawSigInfo{}, errors.ErrUnsupported }

// SetSigInfo is not supported on this platform.
func SetSigInfo(tid int, info RawSigInfo) error { return errors.ErrUnsupported }

// Tgkill is not supported on this platform.
func Tgkill(tgid, tid int, sig syscall.Signal) error { return errors.ErrUnsupported }

// Kill is not supported on this platform.
func Kill(pid int, sig syscall.Signal) error { return errors.ErrUnsupported }

// Mem is the memory of a traced process.
type Mem struct{}

// OpenMem is not supported on this platform.
func OpenMem(pid int) (*Mem, error) { return nil, errors.ErrUnsupported }

// ReadMem is not supported on this platform.
func (m *Mem) ReadMem(addr uint64, b []byte) error { return errors.ErrUnsupported }

// WriteMem is not supported on this platform.
func (m *Mem) WriteMem(addr uint64, b []byte) error { return errors.ErrUnsupported }

// Close does nothing.
func (m *Mem) Close() error { return nil }

// Maps is the memory map of a traced process.
type Maps struct{}

// OpenMaps is not supported on this platform.
func OpenMaps(pid int) (*Maps, error) { return nil, errors.ErrUnsupported }

// Read is not supported on this platform.
func (m *Maps) Read() ([]byte, error) { return nil, errors.ErrUnsupported }

// Close does nothing.
func (m *Maps) Close() error { return nil }

// Regs is the register file of a stopped thread.
type Regs struct{}

// GetRegs is not supported on this platform.
func GetRegs(tid int, r *Regs) error { return errors.ErrUnsupported }

// SetRegs is not supported on this platform.
func SetRegs(tid int, r *Regs) error { return errors.ErrUnsupported }

// PC returns 0.
func (r *Regs) PC() uint64 { return 0 }

// Frame returns zeros.
func (r *Regs) Frame() (sp, fp, lr uint64) { return 0, 0, 0 }

// SetPC does nothing.
func (r *Regs) SetPC(uint64) {}

// Flags returns 0.
func (r *Regs) Flags() uint64 { return 0 }

// SetFlags does nothing.
func (r *Regs) SetFlags(uint64) {}

// Reg returns 0.
func (r *Regs) Reg(int) uint64 { return 0 }

// SetReg does nothing.
func (r *Regs) SetReg(int, uint64) {}

// NoRestart does nothing.
func (r *Regs) NoRestart() {}

// InterruptedCall reports false.
func (r *Regs) InterruptedCall() bool { return false }

// RestartEINTR reports false.
func (r *Regs) RestartEINTR() bool { return false }

// Supported reports that this platform cannot trace programs.
func Supported() error { return errors.ErrUnsupported }

// IsNoProcess reports false.
func IsNoProcess(err error) bool { return false }

// ThreadBase returns 0.
func (r *Regs) ThreadBase() uint64 { return 0 }

// SetThreadBase does nothing.
func (r *Regs) SetThreadBase(uint64) {}

// Shared is memory shared with the program; unsupported here.
type Shared struct{}

// NewShared fails: unsupported.
func NewShared(size int) (*Shared, error) { return nil, errors.ErrUnsupported }

// MapShared fails: unsupported.
func MapShared(pid, fd, size int) (*Shared, error) { return nil, errors.ErrUnsupported }

// Bytes returns nil.
func (s *Shared) Bytes() []byte { return nil }

// Close does nothing.
func (s *Shared) Close() error { return nil }

// Seccomp is a thread's seccomp state; unsupported here.
type Seccomp struct{ Mode, Filters int }

// SeccompOf fails: unsupported.
func SeccompOf(tid int) (Seccomp, error) { return Seccomp{}, errors.ErrUnsupported }

// SuspendSeccomp fails: unsupported.
func SuspendSeccomp(tid int, attached, on bool) error { return errors.ErrUnsupported }

// AuxValue fails: unsupported.
func AuxValue(pid int, typ uint64) (uint64, error) { return 0, errors.ErrUnsupported }

// StackLimit fails: unsupported.
func StackLimit(pid int) (uint64, error) { return 0, errors.ErrUnsupported }

// Counter returns 0: there is no counter for trampolines to read.
func Counter() uint64 { return 0 }

// Sampler samples a thread's program counter; unsupported here.
type Sampler struct{}

// SamplerOptions say what a Sampler takes.
type SamplerOptions struct {
	Period    time.Duration
	Stack     int
	Callchain bool
	Kernel    bool
}

// MaxCallchain is the most entries of a sample's call chain.
const MaxCallchain = 128

// Sample is one sample a Sampler read.
type Sample struct {
	PC         uint64
	Kernel     bool
	Regs       bool
	SP, FP, LR uint64
	Stack      []byte
	Callchain  []uint64
	PACMask    uint64
}

// MaxStackCopy is the most stack a sampler copies with each sample.
const MaxStackCopy = 32 << 10

// OpenSampler is not supported on this platform.
func OpenSampler(tid int, o SamplerOptions) (*Sampler, error) {
	return nil, errors.ErrUnsupported
}

// RingHolds returns 0: there are no rings.
func RingHolds(o SamplerOptions) time.Duration { return 0 }

// PACMask returns 0.
func PACMask(tid int) uint64 { return 0 }

// Read is not supported on this platform.
func (s *Sampler) Read(fn func(*Sample)) (lost uint64, err error) {
	return 0, errors.ErrUnsupported
}

// Close does nothing.
func (s *Sampler) Close() error { return nil }

// SetThreadPointer is not supported on this platform.
func SetThreadPointer(tid int, v uint64) error { return errors.ErrUnsupported }

// ThreadPointer is not supported on this platform.
func ThreadPointer(tid int) (uint64, error) { return 0, errors.ErrUnsupported }

// Attach needs Linux.
func Attach(pid int) ([]int, map[int]bool, error) { return nil, nil, errors.ErrUnsupported }

// Tasks needs Linux.
func Tasks(pid int) ([]int, error) { return nil, errors.ErrUnsupported }

// WaitUntil needs Linux.
func WaitUntil(limit, every time.Duration, idle func() bool, quit <-chan struct{}) (int, WaitStatus, error) {
	return 0, 0, errors.ErrUnsupported
}

// ErrQuit is WaitUntil's error when it was told to stop waiting.
var ErrQuit = errors.New("the wait was ended")

// IsTerminal is false where PROFILE does not run.
func IsTerminal(f *os.File) bool { return false }

// SigMask needs Linux.
func SigMask(tid int) (uint64, error) { return 0, errors.ErrUnsupported }

// SetSigMask needs Linux.
func SetSigMask(tid int, mask uint64) error { return errors.ErrUnsupported }

// Pending needs Linux.
func Pending(tid int) uint64 { return 0 }

// Blocked needs Linux.
func Blocked(tid int) uint64 { return 0 }

// DetachStopped needs Linux.
func DetachStopped(tids []int) {}

// WaitStopped does nothing.
func WaitStopped(tids []int) {}

// Yield does nothing.
func Yield() {}

// SharedQueued needs Linux.
func SharedQueued(tid int) uint64 { return 0 }

// SharedPending needs Linux.
func SharedPending(tid int) uint64 { return 0 }

// Warp is what CounterWarp finds.
type Warp struct {
	Back  uint64
	Turns int
	CPUs  int
}

// CounterWarp is not supported.
func CounterWarp(turns int, limit time.Duration) (Warp, error) { return Warp{}, errors.ErrUnsupported }
