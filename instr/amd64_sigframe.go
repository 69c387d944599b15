package instr

import "encoding/binary"

// amd64's signal frame (arch/x86/include/asm/sigframe.h, struct
// rt_sigframe): the return address, pretcode (the restorer: the handler
// was called with the stack pointer at it), then the ucontext: uc_flags,
// uc_link, uc_stack (24 bytes), and at 48 from the frame uc_mcontext,
// struct sigcontext_64 (arch/x86/include/uapi/asm/sigcontext.h), whose
// registers come in this order: r8-r15, rdi, rsi, rbp, rbx, rdx, rax,
// rcx, rsp, rip, eflags, then cs, gs, fs and ss (16 bits each), err,
// trapno, oldmask, cr2, the pointer to the FPU state, which the kernel
// puts above the frame, and reserved words: 256 bytes.
var amd64Frame = frameLayout{
	regs: 48, size: 256,
	reg: map[int]int{
		8: 0, 9: 8, 10: 16, 11: 24, 12: 32, 13: 40, 14: 48, 15: 56,
		amd64RDI: 64, amd64RSI: 72, 6: 80, 3: 88, amd64RDX: 96, amd64RAX: 104, amd64RCX: 112, amd64RSP: 120,
	},
	pc: 128, flags: 136,
}

const (
	amd64FrameCS    = 144 // in the sigcontext: cs, then gs, fs, ss
	amd64FrameSS    = 150
	amd64FrameFPU   = 184
	amd64UserCS     = 0x33 // __USER_CS, a 64-bit thread's code segment
	amd64UserDS     = 0x2b // __USER_DS, its stack segment
	amd64UCSigSS    = 0x2  // UC_SIGCONTEXT_SS: the kernel always sets it
	amd64UCFlagsAll = 0x7  // UC_FP_XSTATE | UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS
)

// amd64Restorers are the restorers' code: mov $15,%rax; syscall (the C
// libraries' __restore_rt), and movl $15,%eax; syscall (Go's assembler
// writes its MOVQ so).
var amd64Restorers = [][]byte{
	{0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05},
	{0xb8, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05},
}

// signalFrames finds amd64's frames in stack (at lo): a word 8 bytes
// past a multiple of 16 (where the kernel puts pretcode) that is the
// address of a restorer's code, before a ucontext whose flags and
// segments are those the kernel writes and whose FPU state lies above it.
func (amd64) signalFrames(m Memory, _ Regs, s Stack, stack []byte, lo uint64, _ bool) []*SignalFrame {
	var frames []*SignalFrame
	known := map[uint64]bool{}
	for off := int((8 - lo%16 + 16) % 16); off+amd64Frame.regs+amd64Frame.size <= len(stack); off += 16 {
		ret := binary.LittleEndian.Uint64(stack[off:])
		ok, seen := known[ret]
		if !seen {
			ok = restorerAt(m, s, ret, amd64Restorers...)
			known[ret] = ok
		}
		if !ok {
			continue
		}
		at := lo + uint64(off)
		sc := stack[off+amd64Frame.regs : off+amd64Frame.regs+amd64Frame.size]
		flags := binary.LittleEndian.Uint64(stack[off+8:])
		fpu := binary.LittleEndian.Uint64(sc[amd64FrameFPU:])
		if flags&amd64UCSigSS == 0 || flags&^amd64UCFlagsAll != 0 ||
			binary.LittleEndian.Uint16(sc[amd64FrameCS:]) != amd64UserCS ||
			binary.LittleEndian.Uint16(sc[amd64FrameSS:]) != amd64UserDS ||
			(fpu != 0 && (fpu <= at || fpu-at > maxStackScan)) {
			continue
		}
		layout := amd64Frame
		frames = append(frames, &SignalFrame{At: at, regsAt: at + uint64(layout.regs), saved: append([]byte(nil), sc...), layout: &layout})
	}
	return frames
}
