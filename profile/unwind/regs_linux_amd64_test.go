package unwind_test

import (
	"golang.org/x/sys/unix"

	"github.com/sourceprofiler/sprof/profile/unwind"
)

// sampleRegs reads a stopped thread's registers as a sample gives them.
func sampleRegs(pid int) (unwind.Regs, error) {
	var r unix.PtraceRegs
	if err := unix.PtraceGetRegs(pid, &r); err != nil {
		return unwind.Regs{}, err
	}
	return unwind.Regs{Arch: unwind.AMD64, PC: r.Rip, SP: r.Rsp, FP: r.Rbp}, nil
}
