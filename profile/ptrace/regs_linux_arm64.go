//go:build linux && arm64

package ptrace

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Regs is the register file of a stopped arm64 thread. It implements
// instr.Regs, addressing registers by their DWARF numbers (DWARF for the Arm
// 64-bit Architecture, §4.1: x0-x30 are 0-30, sp is 31).
type Regs struct{ r unix.PtraceRegs }

// GetRegs reads the registers of a stopped thread (PTRACE_GETREGSET,
// NT_PRSTATUS; arm64 kernels reject PTRACE_GETREGS).
func GetRegs(tid int, r *Regs) error { return unix.PtraceGetRegs(tid, &r.r) }

// SetRegs writes the registers of a stopped thread.
func SetRegs(tid int, r *Regs) error { return unix.PtraceSetRegs(tid, &r.r) }

// PC returns the program counter.
func (r *Regs) PC() uint64 { return r.r.Pc }

// Frame returns the registers an unwinder starts from beside the PC: the
// stack pointer, the frame pointer (x29) and the link register (x30).
func (r *Regs) Frame() (sp, fp, lr uint64) { return r.r.Sp, r.r.Regs[29], r.r.Regs[30] }

// SetPC sets the program counter.
func (r *Regs) SetPC(pc uint64) { r.r.Pc = pc }

// Flags returns PSTATE (NZCV in bits 31-28).
func (r *Regs) Flags() uint64 { return r.r.Pstate }

// SetFlags sets PSTATE.
func (r *Regs) SetFlags(v uint64) { r.r.Pstate = v }

// Reg returns the register with DWARF number n (0 for unknown numbers).
func (r *Regs) Reg(n int) uint64 {
	switch {
	case n >= 0 && n <= 30:
		return r.r.Regs[n]
	case n == 31:
		return r.r.Sp
	case n == 32:
		return r.r.Pc
	}
	return 0
}

// SetReg sets the register with DWARF number n (unknown numbers are ignored).
func (r *Regs) SetReg(n int, v uint64) {
	switch {
	case n >= 0 && n <= 30:
		r.r.Regs[n] = v
	case n == 31:
		r.r.Sp = v
	case n == 32:
		r.r.Pc = v
	}
}

// NoRestart is a no-op on arm64: the kernel restarts a system call only when
// x0 holds a restart error code, which an injected call never leaves.
func (r *Regs) NoRestart() {}

// InterruptedCall reports false: on arm64 the kernel decides on a system
// call's restart before a stop, forgets the call (its number reads -1),
// and keeps its first argument, which x0's result took, out of the
// registers ptrace reads.
func (r *Regs) InterruptedCall() bool { return false }

// RestartEINTR cannot restart a call that failed with EINTR on arm64: its
// first argument is lost (InterruptedCall). It reports false.
func (r *Regs) RestartEINTR() bool { return false }

// ThreadBase returns 0: arm64 has no register for a counter block (in-process
// counters are shared and atomic there).
func (r *Regs) ThreadBase() uint64 { return 0 }

// SetThreadBase does nothing on arm64.
func (r *Regs) SetThreadBase(uint64) {}

// ntARMTLS is the register set of TPIDR_EL0 (NT_ARM_TLS, linux/elf.h).
const ntARMTLS = 0x401

// SetThreadPointer sets the thread's TPIDR_EL0 (PTRACE_SETREGSET,
// NT_ARM_TLS): in-process timing of Go code finds the thread's ring
// there, in a program that has no other use for it.
func SetThreadPointer(tid int, v uint64) error { return tlsRegSet(unix.PTRACE_SETREGSET, tid, &v) }

// ThreadPointer reads the thread's TPIDR_EL0.
func ThreadPointer(tid int) (uint64, error) {
	var v uint64
	err := tlsRegSet(unix.PTRACE_GETREGSET, tid, &v)
	return v, err
}

// ntARMPACMask is the register set of the pointer-authentication masks
// (NT_ARM_PAC_MASK, linux/elf.h): the data mask, then the instruction
// mask.
const ntARMPACMask = 0x406

// PACMask returns the bits of a return address that pointer
// authentication signs in thread tid's process (the instruction mask of
// NT_ARM_PAC_MASK), for an unwinder to clear; 0 where the CPU or the
// kernel has none. tid is stopped by the caller.
func PACMask(tid int) uint64 {
	var mask [2]uint64
	iov := unix.Iovec{Base: (*byte)(unsafe.Pointer(&mask))}
	iov.SetLen(16)
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_GETREGSET, uintptr(tid), ntARMPACMask, uintptr(unsafe.Pointer(&iov)), 0, 0)
	runtime.KeepAlive(&mask)
	if e != 0 {
		return 0
	}
	return mask[1]
}

// The registers a stack sampler takes with each sample (perf's
// sample_regs_user, numbered as arch/arm64/include/uapi/asm/perf_regs.h:
// x0-x30 are 0-30, sp 31, pc 32), and where each comes in the sample:
// the kernel writes them in the order of their numbers.
const sampleRegsMask = 1<<29 | 1<<30 | 1<<31 | 1<<32

var sampleRegsAt = sampleRegIndex{fp: 0, lr: 1, sp: 2, pc: 3, n: 4}

// tlsRegSet reads or writes (req) the NT_ARM_TLS register set of tid,
// its first word: TPIDR_EL0.
func tlsRegSet(req uintptr, tid int, v *uint64) error {
	iov := unix.Iovec{Base: (*byte)(unsafe.Pointer(v))}
	iov.SetLen(8)
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, req, uintptr(tid), ntARMTLS, uintptr(unsafe.Pointer(&iov)), 0, 0)
	runtime.KeepAlive(v)
	if e != 0 {
		return e
	}
	return nil
}
