package instr

import "encoding/binary"

// arm64's signal frame (arch/arm64/kernel/signal.c, struct rt_sigframe):
// the siginfo (128 bytes), then the ucontext: uc_flags, uc_link, uc_stack
// (24 bytes), uc_sigmask with its padding to 128 bytes, and at 304 from
// the frame uc_mcontext, struct sigcontext
// (arch/arm64/include/uapi/asm/sigcontext.h): fault_address, x0-x30, sp,
// pc, pstate, then the records of the other state, the FP/SIMD one first
// (FPSIMD_MAGIC, 528 bytes). Above the frame the kernel writes a frame
// record (x29 and x30 where the thread was), and it starts the handler
// with x29 pointing at that record and x30 at the restorer: the vDSO's
// __kernel_rt_sigreturn, or the handler's sa_restorer. A handler that
// calls anything saves both in a frame record of its own on the stack.
var arm64Frame = frameLayout{
	regs: 304, size: 280,
	reg: arm64FrameRegs(),
	pc:  264, flags: 272,
}

// arm64FrameRegs maps x0-x30 and sp to their places in the sigcontext.
func arm64FrameRegs() map[int]int {
	reg := map[int]int{a64SP: 256}
	for i := range 31 {
		reg[i] = 8 + 8*i
	}
	return reg
}

const (
	arm64FrameMagic  = 288 // in the sigcontext: the first record's magic
	arm64FPSIMDMagic = 0x46508001
	// arm64FrameReach bounds how far below its frame record a frame is
	// looked for: the frame, its records of the thread's state, SVE's
	// among them, fit in it.
	arm64FrameReach = 1 << 16
)

// arm64Restorer is a restorer's code: mov x8, #139 (rt_sigreturn);
// svc #0.
var arm64Restorer = []byte{0x68, 0x11, 0x80, 0xd2, 0x01, 0x00, 0x00, 0xd4}

// signalFrames finds arm64's frames in stack (at lo): for each frame
// record whose return address is a restorer's code (the thread's own
// x29 and x30, first, where the handler it is in calls nothing; then any
// pair of words of the stack), the frame below the record it points to
// whose saved x29 and x30 are that record's words, and whose first
// record is FP/SIMD's.
func (arm64) signalFrames(m Memory, regs Regs, s Stack, stack []byte, lo uint64, first bool) []*SignalFrame {
	var records []uint64 // the kernel's frame records, innermost first
	known := map[uint64]bool{}
	restorer := func(ret uint64) bool {
		ret = StripPAC(ret, DefaultPACMask)
		ok, seen := known[ret]
		if !seen {
			ok = restorerAt(m, s, ret, arm64Restorer)
			known[ret] = ok
		}
		return ok
	}
	if first && restorer(regs.Reg(a64LR)) {
		records = append(records, regs.Reg(29))
	}
	for off := 8; off+8 <= len(stack); off += 8 {
		if restorer(binary.LittleEndian.Uint64(stack[off:])) {
			records = append(records, binary.LittleEndian.Uint64(stack[off-8:]))
		}
	}
	var frames []*SignalFrame
	seen := map[uint64]bool{}
	for _, rec := range records {
		if f := arm64FrameBelow(m, rec); f != nil && !seen[f.At] {
			seen[f.At] = true
			frames = append(frames, f)
		}
	}
	return frames
}

// arm64FrameBelow returns the frame below the kernel's frame record at
// rec, if there is one.
func arm64FrameBelow(m Memory, rec uint64) *SignalFrame {
	if rec%16 != 0 || rec < arm64FrameReach {
		return nil
	}
	lo := rec - arm64FrameReach
	b := make([]byte, arm64FrameReach+16)
	if m.ReadMem(lo, b) != nil {
		return nil
	}
	fp, lr := binary.LittleEndian.Uint64(b[arm64FrameReach:]), binary.LittleEndian.Uint64(b[arm64FrameReach+8:])
	l := &arm64Frame
	for off := arm64FrameReach - 16; off >= 0; off -= 16 {
		sc := off + l.regs
		if sc+arm64FrameMagic+4 > len(b) {
			continue
		}
		if binary.LittleEndian.Uint64(b[sc+l.reg[29]:]) == fp && binary.LittleEndian.Uint64(b[sc+l.reg[a64LR]:]) == lr &&
			binary.LittleEndian.Uint32(b[sc+arm64FrameMagic:]) == arm64FPSIMDMagic {
			at := lo + uint64(off)
			layout := arm64Frame
			return &SignalFrame{At: at, regsAt: at + uint64(l.regs), saved: append([]byte(nil), b[sc:sc+l.size]...), layout: &layout}
		}
	}
	return nil
}
