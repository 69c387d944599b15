//go:build linux && amd64

package ptrace

import (
	"errors"

	"golang.org/x/sys/unix"
)

// Regs is the register file of a stopped amd64 thread. It implements
// instr.Regs, addressing registers by their DWARF numbers (System V AMD64
// ABI, figure 3.36).
type Regs struct{ r unix.PtraceRegs }

// GetRegs reads the registers of a stopped thread (PTRACE_GETREGSET,
// NT_PRSTATUS).
func GetRegs(tid int, r *Regs) error { return unix.PtraceGetRegs(tid, &r.r) }

// SetRegs writes the registers of a stopped thread.
func SetRegs(tid int, r *Regs) error { return unix.PtraceSetRegs(tid, &r.r) }

// PC returns the instruction pointer.
func (r *Regs) PC() uint64 { return r.r.Rip }

// Frame returns the registers an unwinder starts from beside the PC: the
// stack pointer, the frame pointer (rbp) and the link register (none on
// x86-64: 0).
func (r *Regs) Frame() (sp, fp, lr uint64) { return r.r.Rsp, r.r.Rbp, 0 }

// SetPC sets the instruction pointer.
func (r *Regs) SetPC(pc uint64) { r.r.Rip = pc }

// Flags returns RFLAGS.
func (r *Regs) Flags() uint64 { return r.r.Eflags }

// SetFlags sets RFLAGS.
func (r *Regs) SetFlags(v uint64) { r.r.Eflags = v }

// Reg returns the register with DWARF number n (0 for unknown numbers).
func (r *Regs) Reg(n int) uint64 {
	if p := r.ptr(n); p != nil {
		return *p
	}
	return 0
}

// SetReg sets the register with DWARF number n (unknown numbers are ignored).
func (r *Regs) SetReg(n int, v uint64) {
	if p := r.ptr(n); p != nil {
		*p = v
	}
}

// NoRestart keeps the kernel from restarting an interrupted system call when
// the thread resumes with these registers (used when injecting a call at a
// stop that sits in a system call's exit path, such as the exec stop).
func (r *Regs) NoRestart() { r.r.Orig_rax = ^uint64(0) }

// The results the kernel gives a system call a signal interrupted
// (include/linux/errno.h, include/uapi/asm-generic/errno-base.h): EINTR,
// and the restart codes it turns into a restart, or into EINTR where a
// handler runs that does not ask for one (ERESTARTSYS without
// SA_RESTART, ERESTARTNOHAND, ERESTART_RESTARTBLOCK).
const (
	errEINTR         = 4
	errRestartSys    = 512
	errRestartNoHand = 514
	errRestartBlock  = 516
)

// InterruptedCall reports whether the thread is stopped on its way out of
// a system call that a signal interrupted: one whose result a handler run
// now would make EINTR.
func (r *Regs) InterruptedCall() bool {
	if int64(r.r.Orig_rax) < 0 {
		return false
	}
	switch -int64(r.r.Rax) {
	case errEINTR, errRestartSys, errRestartNoHand, errRestartBlock:
		return true
	}
	return false
}

// RestartEINTR makes a system call that failed with EINTR at this stop,
// one a stop of PROFILE's (an interrupt) made fail, restart when the
// thread goes on: its result becomes ERESTARTNOHAND, which the kernel
// turns into a restart where no handler runs before the thread is back in
// its code, and into EINTR where one does, as natively. It reports
// whether the registers changed.
func (r *Regs) RestartEINTR() bool {
	if int64(r.r.Orig_rax) < 0 || -int64(r.r.Rax) != errEINTR {
		return false
	}
	r.r.Rax = ^uint64(errRestartNoHand - 1) // -ERESTARTNOHAND
	return true
}

func (r *Regs) ptr(n int) *uint64 {
	switch n {
	case 0:
		return &r.r.Rax
	case 1:
		return &r.r.Rdx
	case 2:
		return &r.r.Rcx
	case 3:
		return &r.r.Rbx
	case 4:
		return &r.r.Rsi
	case 5:
		return &r.r.Rdi
	case 6:
		return &r.r.Rbp
	case 7:
		return &r.r.Rsp
	case 8:
		return &r.r.R8
	case 9:
		return &r.r.R9
	case 10:
		return &r.r.R10
	case 11:
		return &r.r.R11
	case 12:
		return &r.r.R12
	case 13:
		return &r.r.R13
	case 14:
		return &r.r.R14
	case 15:
		return &r.r.R15
	case 16:
		return &r.r.Rip
	case 49:
		return &r.r.Eflags
	}
	return nil
}

// ThreadBase returns the thread's GS base, which in-process counting points
// at the thread's counter block.
func (r *Regs) ThreadBase() uint64 { return r.r.Gs_base }

// SetThreadBase sets the thread's GS base (written with SetRegs).
func (r *Regs) SetThreadBase(v uint64) { r.r.Gs_base = v }

// SetThreadPointer is arm64's: x86-64's thread register for PROFILE is
// the GS base (SetThreadBase).
func SetThreadPointer(tid int, v uint64) error { return errors.ErrUnsupported }

// PACMask returns 0: x86-64 signs no return address.
func PACMask(tid int) uint64 { return 0 }

// The registers a stack sampler takes with each sample (perf's
// sample_regs_user, numbered as arch/x86/include/uapi/asm/perf_regs.h:
// bp 6, sp 7, ip 8), and where each comes in the sample: the kernel
// writes them in the order of their numbers. x86-64 has no link register.
const sampleRegsMask = 1<<6 | 1<<7 | 1<<8

var sampleRegsAt = sampleRegIndex{fp: 0, sp: 1, pc: 2, lr: -1, n: 3}

// ThreadPointer is arm64's.
func ThreadPointer(tid int) (uint64, error) { return 0, errors.ErrUnsupported }
