package unwind_test

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sourceprofiler/sprof/profile/unwind"
)

// ntARMPACMask is the register set of the pointer-authentication masks
// (linux/elf.h NT_ARM_PAC_MASK): the data mask, then the instruction mask.
const ntARMPACMask = 0x406

// sampleRegs reads a stopped thread's registers as a sample gives them,
// with the kernel's pointer-authentication mask when the CPU has one.
func sampleRegs(pid int) (unwind.Regs, error) {
	var r unix.PtraceRegs
	if err := unix.PtraceGetRegs(pid, &r); err != nil {
		return unwind.Regs{}, err
	}
	regs := unwind.Regs{Arch: unwind.ARM64, PC: r.Pc, SP: r.Sp, FP: r.Regs[29], LR: r.Regs[30]}
	var mask [2]uint64
	iov := unix.Iovec{Base: (*byte)(unsafe.Pointer(&mask[0])), Len: 16}
	if _, _, errno := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_GETREGSET, uintptr(pid), ntARMPACMask, uintptr(unsafe.Pointer(&iov)), 0, 0); errno == 0 {
		regs.PACMask = mask[1]
	}
	return regs, nil
}
