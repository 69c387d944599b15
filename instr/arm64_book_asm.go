package instr

// The A64 instructions and the assembler of arm64's book code
// (arm64_book.go).

// a64 registers of the book code, and the conditions of its branches
// (C1.2.4 "Condition code").
const (
	bookX0, bookX1, bookX2, bookX3 = 0, 1, 2, 3
	a64XZR                         = 31 // as a register field of the instructions below: the zero register

	condEQ, condNE, condHS, condLO, condHI, condLS = 0, 1, 2, 3, 8, 9
)

// The instructions the book code is made of (C6.2), each named after
// what it does: register fields are 0-31, offsets in bytes.
func a64Ldr(rt, rn, off uint32) uint32 { return 0xf9400000 | off/8<<10 | rn<<5 | rt } // LDR (immediate), unsigned offset
func a64Ldur(rt, rn uint32, off int32) uint32 { // LDUR
	return 0xf8400000 | uint32(off)&0x1ff<<12 | rn<<5 | rt
}
func a64Stur(rt, rn uint32, off int32) uint32 { // STUR
	return 0xf8000000 | uint32(off)&0x1ff<<12 | rn<<5 | rt
}
func a64Stp(t1, t2, rn, off uint32) uint32 { return 0xa9000000 | off/8<<15 | t2<<10 | rn<<5 | t1 } // STP, signed offset
func a64Ldp(t1, t2, rn, off uint32) uint32 { return 0xa9400000 | off/8<<15 | t2<<10 | rn<<5 | t1 } // LDP, signed offset
func a64AddImm(rd, rn, imm uint32) uint32  { return 0x91000000 | imm<<10 | rn<<5 | rd }            // ADD (immediate); 31 is sp
func a64SubImm(rd, rn, imm uint32) uint32  { return 0xd1000000 | imm<<10 | rn<<5 | rd }            // SUB (immediate); 31 is sp
func a64SubsImm(rd, rn, imm uint32) uint32 { return 0xf1000000 | imm<<10 | rn<<5 | rd }            // SUBS (immediate); rd 31 is xzr: CMP
func a64CmnOne(rn uint32) uint32           { return 0xb1000400 | rn<<5 | a64XZR }                  // CMN rn, #1 (ADDS xzr): Z where rn is -1
func a64AddReg(rd, rn, rm uint32) uint32   { return 0x8b000000 | rm<<16 | rn<<5 | rd }             // ADD (shifted register)
func a64SubReg(rd, rn, rm uint32) uint32   { return 0xcb000000 | rm<<16 | rn<<5 | rd }             // SUB (shifted register)
func a64CmpExt(rn, rm uint32) uint32       { return 0xeb206000 | rm<<16 | rn<<5 | a64XZR }         // CMP (extended register), UXTX: rn 31 is sp
func a64Mul(rd, rn, rm uint32) uint32      { return 0x9b007c00 | rm<<16 | rn<<5 | rd }             // MUL (MADD with xzr)
func a64Umulh(rd, rn, rm uint32) uint32    { return 0x9bc07c00 | rm<<16 | rn<<5 | rd }             // UMULH
func a64Extr(rd, rn, rm, lsb uint32) uint32 { // EXTR: (rn:rm) >> lsb
	return 0x93c00000 | rm<<16 | lsb<<10 | rn<<5 | rd
}
func a64AddShift(rd, rn, rm, lsl uint32) uint32 { return 0x8b000000 | rm<<16 | lsl<<10 | rn<<5 | rd } // ADD (shifted register), LSL
func a64OrrShift(rd, rn, rm, lsl uint32) uint32 { return 0xaa000000 | rm<<16 | lsl<<10 | rn<<5 | rd } // ORR (shifted register), LSL
func a64LdrReg(rt, rn, rm uint32) uint32        { return 0xf8606800 | rm<<16 | rn<<5 | rt }           // LDR (register), 64-bit: [rn, rm]
func a64Lsr(rd, rn, sh uint32) uint32           { return 0xd340fc00 | sh<<16 | rn<<5 | rd }           // LSR (immediate): UBFM, immr sh, imms 63
func a64Lsl(rd, rn, sh uint32) uint32 { // LSL (immediate): UBFM, immr -sh mod 64, imms 63-sh
	return 0xd3400000 | (64-sh)%64<<16 | (63-sh)<<10 | rn<<5 | rd
}
func a64AndLow(rd, rn, n uint32) uint32 { // AND (immediate) with the low n bits set, 1 <= n <= 63: N 1, immr 0, imms n-1
	return 0x92400000 | (n-1)<<10 | rn<<5 | rd
}

// The 32-bit instructions of the check of the thread's CPU (offCPU):
// rt, and CMP's rn and rm, name w registers (31: wzr); the base of a load
// or a store, rn, is an x register (31: sp), as is LDR's index rm (31:
// xzr).
func a64Ldr32(rt, rn, off uint32) uint32   { return 0xb9400000 | off/4<<10 | rn<<5 | rt }  // LDR (immediate), 32-bit, unsigned offset
func a64LdrReg32(rt, rn, rm uint32) uint32 { return 0xb8606800 | rm<<16 | rn<<5 | rt }     // LDR (register), 32-bit: [rn, rm], LSL #0
func a64Str32(rt, rn, off uint32) uint32   { return 0xb9000000 | off/4<<10 | rn<<5 | rt }  // STR (immediate), 32-bit, unsigned offset
func a64Cmp32(rn, rm uint32) uint32        { return 0x6b000000 | rm<<16 | rn<<5 | a64XZR } // CMP (SUBS, shifted register), 32-bit

const (
	a64ISB        = 0xd5033fdf
	a64MrsCounter = 0xd53be040 // MRS Xt, CNTVCT_EL0 (op0 3, op1 3, CRn 14, CRm 0, op2 2), Xt in bits 0-4
	a64BRK        = 0xd4200000 // BRK #0
)

// a64Asm assembles book code: instruction words, and branches to labels
// resolved at the end (a64Resolve).
type a64Asm struct {
	w        []uint32
	branches []a64Jump
	labels   map[string]int
}

func (a *a64Asm) emit(ws ...uint32) { a.w = append(a.w, ws...) }

// label places label name at the next instruction.
func (a *a64Asm) label(name string) {
	if a.labels == nil {
		a.labels = map[string]int{}
	}
	a.labels[name] = len(a.w)
}

// bcond appends B.cond to label to.
func (a *a64Asm) bcond(cond uint32, to string) {
	a.branches = append(a.branches, a64Jump{len(a.w), to})
	a.emit(0x54000000 | cond)
}

// cbz appends CBZ of register rt to label to.
func (a *a64Asm) cbz(rt uint32, to string) {
	a.branches = append(a.branches, a64Jump{len(a.w), to})
	a.emit(0xb4000000 | rt)
}

// b appends B to label to.
func (a *a64Asm) b(to string) {
	a.branches = append(a.branches, a64Jump{len(a.w), to})
	a.emit(0x14000000)
}

// at is the offset in bytes of the next instruction.
func (a *a64Asm) at() int { return 4 * len(a.w) }
