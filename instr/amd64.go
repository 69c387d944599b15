package instr

import (
	"bytes"
	"encoding/binary"
	"errors"
	"regexp"
	"slices"

	"golang.org/x/arch/x86/x86asm"
)

// AMD64 is the x86-64 architecture (64-bit mode only).
var AMD64 Arch = amd64{}

type amd64 struct{}

// Sizes of the amd64 architecture.
const (
	x86MaxLen     = 15 // Intel SDM Vol. 2A §2.3.11
	amd64SlotSize = 32 // an instruction (15) and an absolute jump (14)
)

// DWARF numbers of the amd64 registers emulation touches (System V AMD64
// ABI, Figure 3.36).
const (
	amd64RAX = 0
	amd64RDX = 1
	amd64RCX = 2
	amd64RSI = 4
	amd64RDI = 5
	amd64RSP = 7
	amd64R8  = 8
	amd64R9  = 9
	amd64R10 = 10
	amd64R11 = 11
	amd64R14 = 14 // Go's internal ABI: the goroutine
)

// Name returns "amd64".
func (amd64) Name() string { return "amd64" }

// Breakpoint returns int3 (0xCC, Intel SDM Vol. 2A "INT n/INTO/INT3/INT1").
func (amd64) Breakpoint() []byte { return []byte{0xcc} }

// BreakpointAddr returns pc-1: int3 traps with the PC past itself.
func (amd64) BreakpointAddr(pc uint64) uint64 { return pc - 1 }

// MaxInstLen returns 15.
func (amd64) MaxInstLen() int { return x86MaxLen }

// SlotSize returns 32.
func (amd64) SlotSize() int { return amd64SlotSize }

// Decode decodes the 64-bit mode instruction at the start of code.
func (amd64) Decode(code []byte, pc uint64) (Inst, error) {
	x, err := decodeAMD64(code, pc)
	return x.Inst, err
}

// instAlign returns 1: an instruction may begin at any byte.
func (amd64) instAlign() int { return 1 }

// bareDecoder returns Decode without the text of the instructions
// x86asm decodes (decodeAMD64Bare).
func (amd64) bareDecoder() decodeFunc { return decodeAMD64Quick }

// decodeAMD64Quick is decodeAMD64Bare's Inst, through the scans' fast
// path where that says all an Inst holds (TestQuickDecoderAgrees): the
// length, a branch's kind and target, a RIP-relative operand's; an
// instruction the fast path calls Other that the decoder may call a Nop
// or a Trap (0x90, the 0F hint space, the undefined 0F opcodes) goes to
// the decoder. PREP decodes every instruction of the functions it plans
// with it: x86asm takes some 700 ns an instruction, the table a few.
func decodeAMD64Quick(code []byte, pc uint64) (Inst, error) {
	if s, ok := scanAMD64Fast(code, pc); ok && (s.kind != Other || !x86MaybeNopOrTrap(code)) {
		return Inst{Len: s.n, Kind: s.kind, PCRel: s.pcrel, Target: s.target}, nil
	}
	x, err := decodeAMD64Bare(code, pc)
	return x.Inst, err
}

// x86MaybeNopOrTrap reports whether the instruction at the start of
// code, after its legacy and REX prefixes, has an opcode the decoder may
// classify as a Nop or a Trap: 90, CC, CD, CE, F1 and F4 (int3, int,
// into, icebp, hlt), or 0F followed by 0B (ud2), 18-1F (hint nops,
// endbr64), B9 (ud1) or FF (ud0).
func x86MaybeNopOrTrap(code []byte) bool {
	p := 0
	for p < len(code) {
		switch b := code[p]; {
		case b == 0x66 || b == 0x67 || b == 0xf0 || b == 0xf2 || b == 0xf3 || b == 0x2e || b == 0x36 || b == 0x3e || b == 0x26 || b == 0x64 || b == 0x65:
			p++
			continue
		case b&0xf0 == 0x40:
			p++
		}
		break
	}
	if p >= len(code) {
		return true
	}
	switch code[p] {
	case 0x90, 0xcc, 0xcd, 0xce, 0xf1, 0xf4: // nop; int3, int, into, icebp, hlt
		return true
	}
	if code[p] != 0x0f || p+1 >= len(code) {
		return false
	}
	op2 := code[p+1]
	return op2 == 0x0b || op2 >= 0x18 && op2 <= 0x1f || op2 == 0xb9 || op2 == 0xff
}

// scanDecoder returns scanAMD64, the fast path of amd64_scan.go.
func (amd64) scanDecoder() scanFunc { return scanAMD64 }

// breaksFlow: the scan's branches and calls, and after the prefixes
// (legacy and REX) ret, int3, int, into, iret, hlt, syscall, sysret,
// sysenter, sysexit, ud0, ud1, ud2, and FF /2 to /5 (indirect calls and
// jumps).
func (amd64) breaksFlow(code []byte, in scanned) bool {
	if in.kind == Jump || in.kind == CondJump || in.kind == Call {
		return true
	}
	b := code[:min(len(code), in.n)]
	for len(b) > 0 && (b[0]&0xf0 == 0x40 || slices.Contains([]byte{0x66, 0x67, 0xf0, 0xf2, 0xf3, 0x26, 0x2e, 0x36, 0x3e, 0x64, 0x65}, b[0])) {
		b = b[1:]
	}
	switch {
	case len(b) == 0:
		return true
	case b[0] >= 0xc2 && b[0] <= 0xc3, b[0] >= 0xca && b[0] <= 0xcf, b[0] == 0xf4:
		return true
	case b[0] == 0x0f && len(b) > 1:
		return slices.Contains([]byte{0x05, 0x07, 0x0b, 0x34, 0x35, 0xb9, 0xff}, b[1])
	case b[0] == 0xff && len(b) > 1:
		return b[1]>>3&7 >= 2 && b[1]>>3&7 <= 5
	}
	return false
}

// SP returns rsp.
func (amd64) SP(r Regs) uint64 { return r.Reg(amd64RSP) }

func (amd64) SetSP(r Regs, sp uint64) { r.SetReg(amd64RSP, sp) }

func (amd64) RedZone() uint64 { return 128 }

// Goroutine returns r14 (Go internal ABI, "amd64 architecture").
func (amd64) Goroutine(r Regs) uint64 { return r.Reg(amd64R14) }

// returnPop returns 8: ret pops the return address the call pushed.
func (amd64) returnPop() uint64 { return 8 }

// goEntryUsesG looks for cmp 0x10(%r14),%rsp or cmp 0x10(%r14),%r12
// (49/4d 3b 66 10): the stack guard read through r14.
func (amd64) goEntryUsesG(check []byte) bool {
	return bytes.Contains(check, []byte{0x49, 0x3b, 0x66, 0x10}) || bytes.Contains(check, []byte{0x4d, 0x3b, 0x66, 0x10})
}

// ReturnAddress reads the 8 bytes at [rsp]: at a function's first
// instruction they are the address its caller's call pushed.
func (amd64) ReturnAddress(r Regs, m Memory) (uint64, error) {
	return readU64(m, r.Reg(amd64RSP))
}

// SyscallInst returns syscall (0f 05).
func (amd64) SyscallInst() []byte { return []byte{0x0f, 0x05} }

// amd64SyscallArgs are the argument registers of a Linux system call
// (System V AMD64 ABI §A.2.1): rdi, rsi, rdx, r10, r8, r9.
var amd64SyscallArgs = [...]int{amd64RDI, amd64RSI, amd64RDX, amd64R10, amd64R8, amd64R9}

// SetSyscall puts nr in rax and up to six arguments in rdi, rsi, rdx, r10,
// r8 and r9; further arguments are ignored.
func (amd64) SetSyscall(r Regs, nr uint64, args ...uint64) {
	r.SetReg(amd64RAX, nr)
	for i, v := range args[:min(len(args), len(amd64SyscallArgs))] {
		r.SetReg(amd64SyscallArgs[i], v)
	}
}

// SyscallResult returns rax.
func (amd64) SyscallResult(r Regs) uint64 { return r.Reg(amd64RAX) }

// SyscallNumber returns the x86-64 Linux number of s
// (arch/x86/entry/syscalls/syscall_64.tbl): mmap 9, memfd_create 319,
// ftruncate 77, close 3, munmap 11, prctl 157, futex 202, futex_waitv 449.
func (amd64) SyscallNumber(s Syscall) uint64 {
	return [...]uint64{SysMmap: 9, SysMemfdCreate: 319, SysFtruncate: 77, SysClose: 3, SysMunmap: 11, SysPrctl: 157, SysFutex: 202, SysFutexWaitv: 449, SysPerfEventOpen: 298}[s]
}

// x86Inst is a decoded amd64 instruction with what Displace needs beyond
// Inst.
type x86Inst struct {
	Inst
	code    []byte      // the instruction's bytes
	asm     x86asm.Inst // Op is 0 when decoded by hand
	pre     x86Prefixes //
	relOff  int         // offset of the PC-relative field (disp32 or rel)
	relSize int         // its size in bytes; 0 when none
	ripMem  bool        // the PC-relative field is a memory displacement
}

// decodeAMD64 decodes with x86asm and mends what it gets wrong: VEX, EVEX
// and XOP lengths and RIP-relative operands are measured by hand, and an Op
// of 0 (a prefix taken for an instruction) is an error unless the
// instruction is one of those decodeX86Special knows. At most 15 bytes of
// code are looked at.
func decodeAMD64(code []byte, pc uint64) (x86Inst, error) {
	if len(code) > x86MaxLen {
		code = code[:x86MaxLen]
	}
	x, err := decodeAMD64Bare(code, pc)
	if err == nil && x.Text == "" {
		x.Text = gnuText(x.asm, pc)
	}
	return x, err
}

// decodeAMD64Bare is decodeAMD64 without the text of instructions x86asm
// decoded (printing them costs more than decoding): for the patcher, which
// decodes every instruction of every function and prints few.
func decodeAMD64Bare(code []byte, pc uint64) (x86Inst, error) {
	if len(code) > x86MaxLen {
		code = code[:x86MaxLen]
	}
	x, err := decodeAMD64Raw(code, pc)
	if err != nil {
		if errors.Is(err, ErrTruncated) && len(code) == x86MaxLen {
			err = ErrUnrecognized // too long, not cut short
		}
		return x86Inst{}, decodeError(AMD64, code, pc, err)
	}
	x.code = code[:x.Len]
	return x, nil
}

// gnuText prints in in the GNU syntax, as objdump does: x86asm leaves
// out a memory operand's displacement when it is 0 and there is no base
// and no index register ("mov %rcx," for mov %rcx,0x0, "incq %gs:" for
// incq %gs:0x0, the count of a thread's first counter), which is put
// back.
func gnuText(in x86asm.Inst, pc uint64) string {
	text := x86asm.GNUSyntax(in, pc, nil)
	for _, a := range in.Args {
		if m, ok := a.(x86asm.Mem); ok && m.Base == 0 && m.Index == 0 && m.Disp == 0 {
			return emptyOperand.ReplaceAllString(text, "${1}${2}0x0$3")
		}
	}
	return text
}

// emptyOperand finds an operand printed empty, or as a segment alone:
// after the mnemonic's space or a comma, before a comma or the end.
var emptyOperand = regexp.MustCompile(`([ ,])(%[cdefgs]s:)?(,|$)`)

// text returns the instruction's text, printing it if needed.
func (x x86Inst) text(pc uint64) string {
	if x.Text == "" && x.asm.Op != 0 {
		return gnuText(x.asm, pc)
	}
	return x.Text
}

func decodeAMD64Raw(code []byte, pc uint64) (x86Inst, error) {
	if len(code) == 0 {
		return x86Inst{}, ErrTruncated
	}
	p := scanX86Prefixes(code)
	if p.n < len(code) && p.rex == 0 && isVexPrefix(code[p.n:]) {
		return decodeX86Vex(code, pc, p)
	}
	in, err := x86asm.Decode(code, 64)
	if err == nil && in.Op != 0 {
		return fromX86asm(in, pc, p), nil
	}
	if s, ok, serr := decodeX86Special(code); ok {
		if serr != nil {
			return x86Inst{}, serr
		}
		return fromSpecial(s, code, pc, p), nil
	}
	if p.n >= len(code) || x86Truncated(code) {
		return x86Inst{}, ErrTruncated
	}
	return x86Inst{}, ErrUnrecognized
}

// x86Truncated reports whether code is the start of a longer instruction:
// x86asm mostly says "unrecognized" when the input ends early, so decode
// it again padded to the longest instruction.
func x86Truncated(code []byte) bool {
	if len(code) >= x86MaxLen {
		return false
	}
	padded := make([]byte, x86MaxLen)
	copy(padded, code)
	in, err := x86asm.Decode(padded, 64)
	return err == nil && in.Op != 0 && in.Len > len(code)
}

// isVexPrefix reports whether code starts with a VEX, EVEX or XOP prefix.
func isVexPrefix(code []byte) bool {
	switch code[0] {
	case 0xc4, 0xc5, 0x62:
		return true
	case 0x8f: // XOP when the map field is 8 or more (ModRM.reg != 0 of POP)
		return len(code) > 1 && code[1]&0x1f >= 8
	}
	return false
}

// decodeX86Vex decodes a VEX, EVEX or XOP instruction: the length and
// RIP-relative displacement by hand, the text from x86asm when it agrees.
func decodeX86Vex(code []byte, pc uint64, p x86Prefixes) (x86Inst, error) {
	if p.opsize || p.rep || p.repne || p.lock {
		return x86Inst{}, ErrUnrecognized // #UD before VEX (Intel SDM Vol. 2A §2.3.2)
	}
	n, ripDisp, err := x86Vex(code, p.n)
	if err != nil {
		return x86Inst{}, err
	}
	x := x86Inst{Inst: Inst{Len: n, Kind: Other, Text: vexNames[code[p.n]]}, pre: p}
	if in, err := x86asm.Decode(code[:n], 64); err == nil && in.Op != 0 && in.Len == n {
		x.asm = in
		x.Text = gnuText(in, pc)
	}
	if ripDisp >= 0 {
		x.setRIPDisp(code, pc, ripDisp)
		x.Text += " (rip-relative)" // x86asm prints the displacement only
	}
	return x, nil
}

// vexNames name the instructions x86asm cannot print by their prefix.
var vexNames = map[byte]string{0xc4: "(vex)", 0xc5: "(vex)", 0x62: "(evex)", 0x8f: "(xop)"}

// fromSpecial converts a hand-decoded instruction.
func fromSpecial(s x86Special, code []byte, pc uint64, p x86Prefixes) x86Inst {
	x := x86Inst{Inst: Inst{Len: s.len, Kind: s.kind, Text: s.text}, pre: p}
	if s.ripDisp >= 0 {
		x.setRIPDisp(code, pc, s.ripDisp)
	}
	return x
}

// setRIPDisp records a RIP-relative disp32 at code[off] and the address it
// refers to (32-bit wrapped under an address-size prefix).
func (x *x86Inst) setRIPDisp(code []byte, pc uint64, off int) {
	x.PCRel, x.ripMem, x.relOff, x.relSize = true, true, off, 4
	disp := int32(binary.LittleEndian.Uint32(code[off:]))
	x.Target = pc + uint64(x.Len) + uint64(int64(disp))
	if x.pre.addrsize {
		x.Target &= 0xffffffff
	}
}

// fromX86asm converts an instruction x86asm decoded right. x86asm keeps a
// disp32 zero-extended in Mem.Disp and sets PCRel for RIP, not EIP.
func fromX86asm(in x86asm.Inst, pc uint64, p x86Prefixes) x86Inst {
	x := x86Inst{
		Inst: Inst{Len: in.Len, Kind: x86Kind(in.Op)}, // the text is decodeAMD64's
		asm:  in,
		pre:  p,
	}
	next := pc + uint64(in.Len)
	for _, a := range in.Args {
		switch a := a.(type) {
		case x86asm.Rel:
			x.PCRel, x.relOff, x.relSize = true, in.PCRelOff, in.PCRel
			x.Target = next + uint64(int64(a))
		case x86asm.Mem:
			if a.Base != x86asm.RIP && a.Base != x86asm.EIP {
				continue
			}
			x.PCRel, x.ripMem, x.relOff, x.relSize = true, true, in.PCRelOff, 4
			x.Target = next + uint64(int64(int32(a.Disp)))
			if a.Base == x86asm.EIP {
				x.Target &= 0xffffffff
				x.relOff = -1 // x86asm does not say; outOfLine refuses 32-bit addressing
			}
		}
	}
	return x
}

// x86Kind classifies an x86asm opcode.
func x86Kind(op x86asm.Op) Kind {
	switch op {
	case x86asm.CALL, x86asm.LCALL:
		return Call
	case x86asm.RET, x86asm.LRET, x86asm.IRET, x86asm.IRETD, x86asm.IRETQ:
		return Ret
	case x86asm.JMP, x86asm.LJMP:
		return Jump
	case x86asm.JRCXZ, x86asm.JECXZ, x86asm.JCXZ, x86asm.LOOP, x86asm.LOOPE, x86asm.LOOPNE:
		return CondJump
	case x86asm.NOP:
		return Nop
	case x86asm.INT, x86asm.INTO, x86asm.ICEBP, x86asm.UD0, x86asm.UD1, x86asm.UD2, x86asm.HLT:
		return Trap
	}
	if _, ok := x86Conds[op]; ok {
		return CondJump
	}
	return Other
}

// x86Conds maps each Jcc to its condition code, the low nibble of its
// opcode (Intel SDM Vol. 1 Appendix B).
var x86Conds = map[x86asm.Op]uint8{
	x86asm.JO: 0x0, x86asm.JNO: 0x1, x86asm.JB: 0x2, x86asm.JAE: 0x3,
	x86asm.JE: 0x4, x86asm.JNE: 0x5, x86asm.JBE: 0x6, x86asm.JA: 0x7,
	x86asm.JS: 0x8, x86asm.JNS: 0x9, x86asm.JP: 0xa, x86asm.JNP: 0xb,
	x86asm.JL: 0xc, x86asm.JGE: 0xd, x86asm.JLE: 0xe, x86asm.JG: 0xf,
}

// RFLAGS bits (Intel SDM Vol. 1 §3.4.3).
const (
	flagCF = 1 << 0
	flagPF = 1 << 2
	flagZF = 1 << 6
	flagSF = 1 << 7
	flagOF = 1 << 11
)

// x86CondHolds evaluates condition code cc on RFLAGS: even codes test a
// predicate, odd codes its negation.
func x86CondHolds(cc uint8, rflags uint64) bool {
	set := func(bit uint64) bool { return rflags&bit != 0 }
	var r bool
	switch cc >> 1 {
	case 0:
		r = set(flagOF)
	case 1:
		r = set(flagCF)
	case 2:
		r = set(flagZF)
	case 3:
		r = set(flagCF) || set(flagZF)
	case 4:
		r = set(flagSF)
	case 5:
		r = set(flagPF)
	case 6:
		r = set(flagSF) != set(flagOF)
	case 7:
		r = set(flagZF) || set(flagSF) != set(flagOF)
	}
	return r != (cc&1 == 1)
}

// x86RegNum returns the DWARF number of a 64-bit general register.
func x86RegNum(r x86asm.Reg) (int, bool) {
	// x86asm orders RAX..R15 by encoding; DWARF numbers differ for 1-7.
	encToDWARF := [16]int{0, 2, 1, 3, 7, 6, 4, 5, 8, 9, 10, 11, 12, 13, 14, 15}
	if r < x86asm.RAX || r > x86asm.R15 {
		return 0, false
	}
	return encToDWARF[r-x86asm.RAX], true
}

// readU64 reads a little-endian 64-bit word.
func readU64(m Memory, addr uint64) (uint64, error) {
	var b [8]byte
	if err := m.ReadMem(addr, b[:]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}

// writeU64 writes a little-endian 64-bit word.
func writeU64(m Memory, addr, v uint64) error {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	return m.WriteMem(addr, b[:])
}
