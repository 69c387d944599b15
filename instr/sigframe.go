package instr

import (
	"encoding/binary"
	"slices"
)

// Signal frames. When the kernel runs a signal handler it saves the
// thread's registers, where the signal interrupted it, in a frame it
// pushes on the stack the handler runs on (struct rt_sigframe), and makes
// the handler return to code that calls rt_sigreturn, which puts them
// back: the C library's or Go's restorer (sa_restorer), or the vDSO's
// __kernel_rt_sigreturn on arm64. A thread in a handler so returns, later,
// to a PC that is in no register: PROFILE reads the frames on a thread's
// stack to see it (a place a patch must not cover when it attaches), and
// moves it (a PC in its own code, when it detaches). The layouts are the
// kernel's: arch/x86/include/asm/sigframe.h and
// arch/x86/include/uapi/asm/sigcontext.h (struct sigcontext_64);
// arch/arm64/kernel/signal.c and arch/arm64/include/uapi/asm/sigcontext.h.

// SignalFrame is one signal frame found on a thread's stack. It is a
// [Regs] over the registers saved in it: what its methods set is written
// back into the thread's memory by [SignalFrame.Write].
type SignalFrame struct {
	// At is the frame's address: the stack pointer the handler began
	// with.
	At uint64
	// regsAt is the address of the saved registers, saved their bytes,
	// and layout where each is among them.
	regsAt uint64
	saved  []byte
	layout *frameLayout
}

// frameLayout is where an architecture's frame keeps the saved
// registers: their block's offset from the frame, its size, and the
// offsets in it of the registers by DWARF number, of the PC and of the
// flags.
type frameLayout struct {
	regs, size int
	reg        map[int]int
	pc, flags  int
}

// PC returns the saved PC: where the handler returns to.
func (f *SignalFrame) PC() uint64 { return f.word(f.layout.pc) }

// SetPC sets the saved PC.
func (f *SignalFrame) SetPC(pc uint64) { f.setWord(f.layout.pc, pc) }

// Reg returns saved register dwarf (0 for one the frame does not hold).
func (f *SignalFrame) Reg(dwarf int) uint64 {
	if off, ok := f.layout.reg[dwarf]; ok {
		return f.word(off)
	}
	return 0
}

// SetReg sets saved register dwarf.
func (f *SignalFrame) SetReg(dwarf int, v uint64) {
	if off, ok := f.layout.reg[dwarf]; ok {
		f.setWord(off, v)
	}
}

// Flags returns the saved flags (RFLAGS, PSTATE).
func (f *SignalFrame) Flags() uint64 { return f.word(f.layout.flags) }

func (f *SignalFrame) word(off int) uint64 { return binary.LittleEndian.Uint64(f.saved[off:]) }

func (f *SignalFrame) setWord(off int, v uint64) { binary.LittleEndian.PutUint64(f.saved[off:], v) }

// Write writes the saved registers, as set, back into the frame.
func (f *SignalFrame) Write(m Memory) error { return m.WriteMem(f.regsAt, f.saved) }

// Stack says where the stacks of a thread's signal frames are: the end
// of the mapping that holds addr (0 where none does), and whether addr
// is in an executable mapping (a restorer's code may be there).
type Stack interface {
	StackEnd(addr uint64) uint64
	Executable(addr uint64) bool
}

// maxStackScan bounds the bytes of one stack read for frames: the frames
// of the handlers a thread is in are near its stack pointer.
const maxStackScan = 1 << 20

// SignalFrames returns the signal frames on the stacks of a thread
// stopped with regs, innermost first: those between its stack pointer and
// the end of its stack's mapping, then, for a frame whose saved stack
// pointer is on another stack (a handler run on an alternate signal
// stack), those on that one. A frame is taken for one only where the
// handler's return leads to a restorer's code and the saved registers
// are those a frame holds (the kernel's checks of rt_sigreturn, and the
// architecture's own).
func SignalFrames(a ABI, m Memory, regs Regs, s Stack) []*SignalFrame {
	var frames []*SignalFrame
	var scanned [][2]uint64
	sp := a.SP(regs)
	for range 8 {
		end := s.StackEnd(sp)
		if end == 0 || slices.ContainsFunc(scanned, func(r [2]uint64) bool { return sp >= r[0] && sp < r[1] }) {
			break
		}
		lo := sp &^ 7
		hi := min(end, lo+maxStackScan)
		scanned = append(scanned, [2]uint64{lo, hi})
		stack := make([]byte, hi-lo)
		if m.ReadMem(lo, stack) != nil {
			break
		}
		found := a.signalFrames(m, regs, s, stack, lo, len(frames) == 0)
		if len(found) == 0 {
			break
		}
		frames = append(frames, found...)
		sp = a.SP(found[len(found)-1])
	}
	return frames
}

// restorerAt reports whether code at addr, in an executable mapping, is
// one of want (the restorers' instructions).
func restorerAt(m Memory, s Stack, addr uint64, want ...[]byte) bool {
	if !s.Executable(addr) {
		return false
	}
	for _, w := range want {
		b := make([]byte, len(w))
		if m.ReadMem(addr, b) == nil && slices.Equal(b, w) {
			return true
		}
	}
	return false
}
