package instr

import (
	"encoding/binary"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/arch/arm64/arm64asm"
)

// ARM64 is the AArch64 architecture (A64 instruction set).
var ARM64 Arch = arm64{}

type arm64 struct{}

// Sizes and registers of the arm64 architecture.
const (
	a64InstLen  = 4
	a64SlotSize = 8 // the instruction and a B back
	a64LR       = 30
	a64SP       = 31 // DWARF number; as an instruction field, 31 is often XZR
	a64X8       = 8
	a64G        = 28 // Go's internal ABI: the goroutine
)

// DefaultPACMask is the pointer authentication mask [StripPAC] uses until
// the tracer reads the real one (ptrace NT_ARM_PAC_MASK): bits 48-63, above
// any user address (48-bit virtual addresses, top byte included).
const DefaultPACMask uint64 = 0xffff << 48

// StripPAC removes a pointer authentication code (and tag byte) from addr:
// mask is the set of bits the PAC occupies, as the kernel reports it in
// NT_ARM_PAC_MASK (the instruction mask), or [DefaultPACMask]. User
// addresses have these bits clear, so clearing them is XPACI's effect.
func StripPAC(addr, mask uint64) uint64 { return addr &^ mask }

// Name returns "arm64".
func (arm64) Name() string { return "arm64" }

// Breakpoint returns BRK #0 (d4200000, Arm ARM C6.2.38), little-endian.
func (arm64) Breakpoint() []byte { return []byte{0x00, 0x00, 0x20, 0xd4} }

// BreakpointAddr returns pc: BRK traps with the PC on itself.
func (arm64) BreakpointAddr(pc uint64) uint64 { return pc }

// MaxInstLen returns 4.
func (arm64) MaxInstLen() int { return a64InstLen }

// SlotSize returns 8.
func (arm64) SlotSize() int { return a64SlotSize }

// Decode decodes the instruction at the start of code. Every 4 bytes are an
// instruction: one the decoder does not know is Kind Other, not
// PC-relative, and only fewer than 4 bytes are an error.
func (arm64) Decode(code []byte, pc uint64) (Inst, error) {
	x, err := decodeARM64(code, pc)
	return x.Inst, err
}

// instAlign returns 4: every instruction is an aligned word.
func (arm64) instAlign() int { return a64InstLen }

// bareDecoder returns Decode: arm64's decoder has no form without the
// text.
func (arm64) bareDecoder() decodeFunc { return classifyARM64Inst }

// breaksFlow: branches, calls and returns, traps (UDF, BRK, HLT, HVC,
// SMC) and SVC.
func (arm64) breaksFlow(code []byte, in scanned) bool {
	if in.kind == Jump || in.kind == CondJump || in.kind == Call || in.kind == Ret || in.kind == Trap || len(code) < a64InstLen {
		return true
	}
	return binary.LittleEndian.Uint32(code)&0xffe0001f == 0xd4000001 // SVC
}

// scanDecoder returns Decode's findings without the text: the scan
// needs only the class, and arm64asm, which writes the text, is both
// slow (a walk over every format it knows) and not safe for the scan's
// goroutines (it marks the formats it matched in a global table).
func (arm64) scanDecoder() scanFunc {
	return func(code []byte, pc uint64) (scanned, error) {
		x, err := classifyARM64(code, pc)
		return scanned{n: x.Len, kind: x.Kind, pcrel: x.PCRel, target: x.Target}, err
	}
}

// classifyARM64Inst is Decode without the text: the bare decoder, as
// amd64's.
func classifyARM64Inst(code []byte, pc uint64) (Inst, error) {
	x, err := classifyARM64(code, pc)
	return x.Inst, err
}

// a64Decode is arm64asm.Decode for any goroutine: Decode notes each
// format it matched in a package variable of its own (decoderCover, its
// tests' coverage), which two goroutines decoding at once write
// together (PREP decodes a line profile's functions on every CPU).
func a64Decode(code []byte) (arm64asm.Inst, error) {
	a64DecodeMu.Lock()
	defer a64DecodeMu.Unlock()
	return arm64asm.Decode(code)
}

var a64DecodeMu sync.Mutex

// SP returns sp.
func (arm64) SP(r Regs) uint64 { return r.Reg(a64SP) }

func (arm64) SetSP(r Regs, sp uint64) { r.SetReg(a64SP, sp) }

func (arm64) RedZone() uint64 { return 0 }

// Goroutine returns x28 (Go internal ABI, "arm64 architecture").
func (arm64) Goroutine(r Regs) uint64 { return r.Reg(a64G) }

// returnPop returns 0: RET branches to x30 and leaves the stack as it is.
func (arm64) returnPop() uint64 { return 0 }

// goEntryUsesG looks for ldr x16, [x28, #16] (f9400b90): the stack
// guard read through x28.
func (arm64) goEntryUsesG(check []byte) bool {
	for i := 0; i+4 <= len(check); i += 4 {
		if binary.LittleEndian.Uint32(check[i:]) == 0xf9400b90 {
			return true
		}
	}
	return false
}

// ReturnAddress returns x30 with the pointer authentication bits of
// [DefaultPACMask] stripped.
func (arm64) ReturnAddress(r Regs, _ Memory) (uint64, error) {
	return StripPAC(r.Reg(a64LR), DefaultPACMask), nil
}

// SyscallInst returns svc #0 (d4000001).
func (arm64) SyscallInst() []byte { return []byte{0x01, 0x00, 0x00, 0xd4} }

// SetSyscall puts nr in x8 and up to six arguments in x0-x5; further
// arguments are ignored.
func (arm64) SetSyscall(r Regs, nr uint64, args ...uint64) {
	r.SetReg(a64X8, nr)
	for i, v := range args[:min(len(args), 6)] {
		r.SetReg(i, v)
	}
}

// SyscallResult returns x0.
func (arm64) SyscallResult(r Regs) uint64 { return r.Reg(0) }

// SyscallNumber returns the arm64 Linux number of s
// (include/uapi/asm-generic/unistd.h): mmap 222, memfd_create 279,
// ftruncate 46, close 57, munmap 215, prctl 167, futex 98, futex_waitv 449.
func (arm64) SyscallNumber(s Syscall) uint64 {
	return [...]uint64{SysMmap: 222, SysMemfdCreate: 279, SysFtruncate: 46, SysClose: 57, SysMunmap: 215, SysPrctl: 167, SysFutex: 98, SysFutexWaitv: 449, SysPerfEventOpen: 241}[s]
}

// a64Op is what an arm64 instruction is to Displace.
type a64Op uint8

const (
	a64Plain         a64Op = iota // runs from the slot
	a64Nop                        // NOP, BTI, PRFM (literal)
	a64B                          // B
	a64BL                         // BL
	a64BCond                      // B.cond, BC.cond
	a64CBZ                        // CBZ, CBNZ
	a64TBZ                        // TBZ, TBNZ
	a64ADR                        // ADR, ADRP
	a64LDRLit                     // LDR (literal) into a general register, LDRSW (literal)
	a64LDRLitFP                   // LDR (literal) into a SIMD&FP register
	a64BR                         // BR, RET
	a64BLR                        // BLR
	a64PACBranch                  // BRAA, BRAAZ, RETAA... (leave the slot by themselves)
	a64PACCall                    // BLRAA, BLRAAZ... (link x30)
	a64Trap                       // UDF, BRK, HLT, HVC, SMC...
	a64UnknownBranch              // an unknown encoding in a branch group
)

// a64Inst is a decoded arm64 instruction with its operands.
type a64Inst struct {
	Inst
	word uint32
	op   a64Op
	reg  int   // Rt, Rd or Rn field (31 is XZR for every op above)
	neg  bool  // CBNZ, TBNZ
	sf   bool  // 64-bit CBZ, LDR X
	bit  uint  // TBZ bit number
	cond uint8 // B.cond condition
	size int   // LDR literal: 4 or 8 bytes
	sext bool  // LDRSW
}

// decodeARM64 classifies by bit pattern (Arm ARM C4.1, "A64 instruction
// set encoding"); arm64asm supplies only the text.
func decodeARM64(code []byte, pc uint64) (a64Inst, error) {
	x, err := classifyARM64(code, pc)
	if err == nil {
		x.Text = a64Text(code[:a64InstLen], x)
	}
	return x, err
}

// classifyARM64 is decodeARM64 without the text.
func classifyARM64(code []byte, pc uint64) (a64Inst, error) {
	if len(code) < a64InstLen {
		return a64Inst{}, decodeError(ARM64, code, pc, ErrTruncated)
	}
	w := binary.LittleEndian.Uint32(code)
	x := classifyA64(w, pc)
	x.Len, x.word = a64InstLen, w
	return x, nil
}

// sext sign-extends the low bits bits of v.
func sext(v uint32, bits uint) int64 {
	return int64(int32(v<<(32-bits)) >> (32 - bits))
}

// classifyA64 sets everything but Len, Text and word.
func classifyA64(w uint32, pc uint64) a64Inst {
	rt := int(w & 31)
	imm19 := func() uint64 { return pc + uint64(sext(w>>5&0x7ffff, 19)*4) }
	switch {
	case w&0xffff0000 == 0: // UDF
		return a64Inst{Inst: Inst{Kind: Trap}, op: a64Trap}
	case w&0x7c000000 == 0x14000000: // B, BL
		x := a64Inst{Inst: Inst{Kind: Jump, PCRel: true, Target: pc + uint64(sext(w&0x3ffffff, 26)*4)}, op: a64B}
		if w>>31 == 1 {
			x.Kind, x.op = Call, a64BL
		}
		return x
	case w&0xff000000 == 0x54000000: // B.cond, BC.cond
		return a64Inst{Inst: Inst{Kind: CondJump, PCRel: true, Target: imm19()}, op: a64BCond, cond: uint8(w & 15)}
	case w&0x7e000000 == 0x34000000: // CBZ, CBNZ
		return a64Inst{Inst: Inst{Kind: CondJump, PCRel: true, Target: imm19()}, op: a64CBZ, reg: rt, neg: w>>24&1 == 1, sf: w>>31 == 1}
	case w&0x7e000000 == 0x36000000: // TBZ, TBNZ
		target := pc + uint64(sext(w>>5&0x3fff, 14)*4)
		return a64Inst{Inst: Inst{Kind: CondJump, PCRel: true, Target: target}, op: a64TBZ, reg: rt, neg: w>>24&1 == 1, bit: uint(w>>31<<5 | w>>19&31)}
	case w&0x1f000000 == 0x10000000: // ADR, ADRP
		imm := sext(w>>5&0x7ffff<<2|w>>29&3, 21)
		target := pc + uint64(imm)
		if w>>31 == 1 {
			target = pc&^0xfff + uint64(imm<<12)
		}
		return a64Inst{Inst: Inst{Kind: Other, PCRel: true, Target: target}, op: a64ADR, reg: rt}
	case w&0x3b000000 == 0x18000000: // load register (literal)
		return classifyLDRLit(w, imm19(), rt)
	case w&0xfe000000 == 0xd6000000:
		return classifyBranchReg(w)
	case w&0xff000000 == 0xd4000000: // exception generation
		if w&0xffe0001f == 0xd4000001 { // SVC
			return a64Inst{Inst: Inst{Kind: Other}, op: a64Plain}
		}
		return a64Inst{Inst: Inst{Kind: Trap}, op: a64Trap}
	case w&0xfffff01f == 0xd503201f: // HINT
		if imm := w >> 5 & 0x7f; imm == 0 || imm&^6 == 32 { // NOP, BTI
			return a64Inst{Inst: Inst{Kind: Nop}, op: a64Nop}
		}
		return a64Inst{Inst: Inst{Kind: Other}, op: a64Plain}
	case w&0xff000000 == 0x55000000, w&0x7e000000 == 0x74000000:
		// FEAT_PAuth_LR and FEAT_CMPBR branches, some PC-relative.
		return a64Inst{Inst: Inst{Kind: CondJump}, op: a64UnknownBranch}
	}
	return a64Inst{Inst: Inst{Kind: Other}, op: a64Plain}
}

// classifyLDRLit classifies LDR (literal), LDRSW (literal) and PRFM
// (literal), opc in bits 31-30 and V in bit 26.
func classifyLDRLit(w uint32, target uint64, rt int) a64Inst {
	x := a64Inst{Inst: Inst{Kind: Other, PCRel: true, Target: target}, op: a64LDRLit, reg: rt}
	if w>>26&1 == 1 {
		x.op = a64LDRLitFP
		return x
	}
	switch w >> 30 {
	case 0:
		x.size = 4
	case 1:
		x.size, x.sf = 8, true
	case 2:
		x.size, x.sext = 4, true
	case 3:
		x.Kind, x.op = Nop, a64Nop
	}
	return x
}

// classifyBranchReg classifies the unconditional branch (register) group:
// opc in bits 24-21, op2 20-16 (always 11111), op3 15-10, Rn 9-5, op4
// 4-0.
func classifyBranchReg(w uint32) a64Inst {
	opc, op2, op3, rn, op4 := w>>21&15, w>>16&31, w>>10&63, int(w>>5&31), w&31
	plain := op3 == 0 && op4 == 0
	pac := op3 == 2 || op3 == 3 // key A or B
	unknown := a64Inst{Inst: Inst{Kind: Jump}, op: a64UnknownBranch}
	if op2 != 31 {
		return unknown
	}
	switch {
	case opc == 0 && plain: // BR
		return a64Inst{Inst: Inst{Kind: Jump}, op: a64BR, reg: rn}
	case opc == 1 && plain: // BLR
		return a64Inst{Inst: Inst{Kind: Call}, op: a64BLR, reg: rn}
	case opc == 2 && plain: // RET
		return a64Inst{Inst: Inst{Kind: Ret}, op: a64BR, reg: rn}
	case opc == 0 && pac && op4 == 31, opc == 8 && pac: // BRAAZ, BRABZ, BRAA, BRAB
		return a64Inst{Inst: Inst{Kind: Jump}, op: a64PACBranch}
	case opc == 1 && pac && op4 == 31, opc == 9 && pac: // BLRAAZ, BLRABZ, BLRAA, BLRAB
		return a64Inst{Inst: Inst{Kind: Call}, op: a64PACCall}
	case opc == 2 && pac && rn == 31 && op4 == 31: // RETAA, RETAB
		return a64Inst{Inst: Inst{Kind: Ret}, op: a64PACBranch}
	case opc == 4 || opc == 5: // ERET, DRPS and their PAC forms: not at EL0
		return a64Inst{Inst: Inst{Kind: Trap}, op: a64Trap}
	}
	return unknown
}

// a64Hints names the HINT instructions arm64asm prints as "hint #n".
var a64Hints = map[uint32]string{
	7: "xpaclri", 8: "pacia1716", 10: "pacib1716", 12: "autia1716", 14: "autib1716",
	24: "paciaz", 25: "paciasp", 26: "pacibz", 27: "pacibsp",
	28: "autiaz", 29: "autiasp", 30: "autibz", 31: "autibsp",
	32: "bti", 34: "bti c", 36: "bti j", 38: "bti jc",
}

// a64Text disassembles for messages: GNU syntax with absolute targets,
// names for the pointer authentication instructions arm64asm does not
// know, else ".inst 0x...".
func a64Text(code []byte, x a64Inst) string {
	w := x.word
	if w&0xfffff01f == 0xd503201f {
		if name, ok := a64Hints[w>>5&0x7f]; ok {
			return name
		}
	}
	in, err := a64Decode(code)
	if err != nil {
		if name := a64PACBranchName(w); name != "" {
			return name
		}
		if name := a64AddName(w); name != "" {
			return name
		}
		return fmt.Sprintf(".inst 0x%08x", w)
	}
	text := strings.TrimSpace(arm64asm.GNUSyntax(in))
	for _, a := range in.Args {
		if rel, ok := a.(arm64asm.PCRel); ok && x.PCRel {
			text = strings.Replace(text, rel.String(), fmt.Sprintf("%#x", x.Target), 1)
		}
	}
	return text
}

// a64AddName names LDADD and STADD (FEAT_LSE, Arm ARM C6.2.135 and
// C6.2.300), of a word or a doubleword, which arm64asm does not know:
// STADD is the count of in-process counting. Other atomics stay ".inst".
func a64AddName(w uint32) string {
	// size 1x, 111000, A, R, 1, Rs, o3 0, opc 000, 00, Rn, Rt.
	if w&0xbf20fc00 != 0xb8200000 {
		return ""
	}
	r := "w"
	if w>>30&1 == 1 {
		r = "x"
	}
	reg := func(n uint32) string {
		if n == 31 {
			return r + "zr"
		}
		return fmt.Sprintf("%s%d", r, n)
	}
	rs, rn, rt := w>>16&31, w>>5&31, w&31
	base := fmt.Sprintf("x%d", rn)
	if rn == 31 {
		base = "sp"
	}
	order := [4]string{"", "l", "a", "al"}[w>>22&3] // (R, then A)
	if rt == 31 && w>>23&1 == 0 {
		return fmt.Sprintf("stadd%s %s, [%s]", order, reg(rs), base)
	}
	return fmt.Sprintf("ldadd%s %s, %s, [%s]", order, reg(rs), reg(rt), base)
}

// a64PACBranchName names the branches with pointer authentication.
func a64PACBranchName(w uint32) string {
	if w&0xfe1f0000 != 0xd61f0000 || w>>10&62 != 2 {
		return ""
	}
	key := "a"
	if w>>10&1 == 1 {
		key = "b"
	}
	rn, rm := w>>5&31, w&31
	switch w >> 21 & 15 {
	case 0:
		return fmt.Sprintf("bra%sz x%d", key, rn)
	case 1:
		return fmt.Sprintf("blra%sz x%d", key, rn)
	case 2:
		return "reta" + key
	case 8:
		return fmt.Sprintf("bra%s x%d, x%d", key, rn, rm)
	case 9:
		return fmt.Sprintf("blra%s x%d, x%d", key, rn, rm)
	}
	return ""
}
