package unwind

import (
	"fmt"

	"github.com/go-delve/delve/pkg/dwarf/regnum"
)

// Arch is the architecture of a module and of the registers unwound
// through it.
type Arch uint8

// The architectures, in GOARCH spelling.
const (
	AMD64 Arch = iota + 1 // x86-64
	ARM64                 // AArch64
)

// archNames are the GOARCH names of the architectures.
var archNames = [...]string{AMD64: "amd64", ARM64: "arm64"}

// ParseArch returns the architecture of GOARCH name name; false for one
// the package does not know.
func ParseArch(name string) (Arch, bool) {
	for a, n := range archNames {
		if n != "" && n == name {
			return Arch(a), true
		}
	}
	return 0, false
}

// String returns the GOARCH name of a.
func (a Arch) String() string {
	if int(a) < len(archNames) && archNames[a] != "" {
		return archNames[a]
	}
	return fmt.Sprintf("Arch(%d)", uint8(a))
}

// nregs is the size of the register file the unwinder follows: the
// general-purpose registers and the PC, by DWARF number (amd64: 0-16,
// rip being the return address column 16; arm64: x0-x30, sp 31, pc 32).
const nregs = 33

// The DWARF register numbers the unwinder needs, per architecture: the
// System V x86-64 psABI (figure 3.36) and Arm's "DWARF for the Arm 64-bit
// Architecture" (section 4.1).
type archRegs struct {
	pc, sp, fp, lr uint64 // lr is the return address column
	n              uint64 // registers of the file: 0 to n-1
	link           bool   // calls leave the return address in lr (a link register), signed where pointer authentication is on
	negateRA       bool   // CFA opcode 0x2d is DW_CFA_AARCH64_negate_ra_state
}

var archRegTable = [...]archRegs{
	AMD64: {pc: regnum.AMD64_Rip, sp: regnum.AMD64_Rsp, fp: regnum.AMD64_Rbp, lr: regnum.AMD64_Rip, n: 17},
	ARM64: {pc: regnum.ARM64_PC, sp: regnum.ARM64_SP, fp: regnum.ARM64_BP, lr: regnum.ARM64_LR, n: 33, link: true, negateRA: true},
}

// regs returns the architecture's register numbers; false for no
// architecture the package knows.
func (a Arch) regs() (archRegs, bool) {
	if int(a) < len(archRegTable) && archRegTable[a].n != 0 {
		return archRegTable[a], true
	}
	return archRegs{}, false
}

// Regs are the registers of a thread as sampled: its PC, stack pointer and
// frame pointer (rbp, x29) and, on arm64, its link register x30. The
// frame pointer is not used to guess frames: only CFI rules that name it
// read it.
type Regs struct {
	Arch           Arch
	PC, SP, FP, LR uint64
	// PACMask holds the bits of a return address that pointer
	// authentication uses on arm64 (the kernel's NT_ARM_PAC_MASK, the
	// instruction mask): they are cleared from every return address. 0
	// where the CPU or the kernel has none, and on x86-64.
	PACMask uint64
}

// Stack is a copy of a thread's user stack: Data holds the bytes of memory
// from Addr up, as the kernel copies them from the sampled stack pointer.
type Stack struct {
	Addr uint64
	Data []byte
}

// read returns the 8 bytes of the copy at addr, little-endian.
func (s Stack) read(addr uint64) (uint64, bool) {
	if addr < s.Addr || addr-s.Addr > uint64(len(s.Data)) || uint64(len(s.Data))-(addr-s.Addr) < 8 {
		return 0, false
	}
	b := s.Data[addr-s.Addr:]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56, true
}

// Stop is why an unwind stopped.
type Stop uint8

// The reasons an unwind stops. Only StopEnd is a complete stack; the
// others end it early at the last frame found, and a profiler counts them.
const (
	// StopEnd: the outermost frame, whose CFI leaves the return address
	// undefined (_start, a thread's start function), or a return address 0.
	StopEnd Stop = iota
	// StopMaxFrames: the frames asked for were found.
	StopMaxFrames
	// StopNoModule: no module holds the PC (the vDSO, JIT code, or a
	// module not loaded).
	StopNoModule
	// StopNoFDE: the module has no CFI for the PC.
	StopNoFDE
	// StopOutsideStack: a saved register or an address an expression
	// reads is outside the copy of the stack.
	StopOutsideStack
	// StopNotGrowing: the caller's stack pointer is not above the
	// callee's: a loop, or bad CFI.
	StopNotGrowing
	// StopRegister: a rule needs a register the sample does not give.
	StopRegister
	// StopUnsupported: a CFI rule or DWARF expression the unwinder does
	// not implement.
	StopUnsupported
	// StopBadCFI: the CFA program of the PC's FDE is malformed.
	StopBadCFI
	// StopBadRegs: the registers name no architecture the package knows.
	StopBadRegs
)

var stopNames = [...]string{
	StopEnd:          "end of the stack",
	StopMaxFrames:    "max frames",
	StopNoModule:     "no module",
	StopNoFDE:        "no FDE",
	StopOutsideStack: "outside the stack copy",
	StopNotGrowing:   "CFA not growing",
	StopRegister:     "register not sampled",
	StopUnsupported:  "unsupported CFI rule",
	StopBadCFI:       "bad CFI",
	StopBadRegs:      "bad registers",
}

// String names the reason, as a report prints it.
func (s Stop) String() string {
	if int(s) < len(stopNames) {
		return stopNames[s]
	}
	return fmt.Sprintf("Stop(%d)", uint8(s))
}
