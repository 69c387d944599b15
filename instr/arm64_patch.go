package instr

import (
	"encoding/binary"
	"fmt"
)

// In-process trampolines on arm64. A patch is one instruction (4 bytes)
// replaced by B to the trampoline (±128 MiB); the trampoline is the
// prelude, the instruction relocated, and B back to the instruction after
// it. Every relocated form below can be restarted from its first
// instruction (it writes its destination register whole, and nothing
// else), so a thread moved back to the site from inside one by
// [Trampoline.OrigPC] does the same work again.
//
// Encodings are written from the Arm Architecture Reference Manual for
// A-profile (DDI 0487): the instruction classes of C4.1 ("A64 instruction
// set encoding") and the instruction pages of C6.2, cited by name, since
// C6.2's numbering changes between releases.

// Instruction words and fields the trampolines use.
const (
	// a64NOPWord is NOP (C6.2 "NOP": HINT #0).
	a64NOPWord = 0xd503201f
	// a64X16, a64X17 are IP0 and IP1, the registers CountCode uses.
	a64X16, a64X17 = 16, 17
	// a64X18 and a64X27 are Go's free registers at a line (goLineCode).
	a64X18, a64X27 = 18, 27
	// a64Imm19Mask is the imm19 field of B.cond and CBZ/CBNZ, bits 23-5;
	// a64Imm14Mask that of TBZ/TBNZ, bits 18-5.
	a64Imm19Mask = 0x7ffff << 5
	a64Imm14Mask = 0x3fff << 5
	// a64NegBit is op, bit 24, which tells CBNZ from CBZ and TBNZ from TBZ.
	a64NegBit = 1 << 24
)

// Landing pads: the hints an indirect branch may land on when BTI is
// enforced (C6.2 "BTI", "PACIASP", "PACIBSP": HINT #34, #36, #38, #25,
// #27).
const (
	a64BTIC    = 0xd503245f
	a64BTIJ    = 0xd503249f
	a64BTIJC   = 0xd50324df
	a64PACIASP = 0xd503233f
	a64PACIBSP = 0xd503237f
)

// isBTI reports whether x is BTI c, BTI j or BTI jc.
func (x a64Inst) isBTI() bool {
	return x.word == a64BTIC || x.word == a64BTIJ || x.word == a64BTIJC
}

// isLandingPad reports whether an indirect branch may land on x: BTI c,
// j, jc, and PACIASP and PACIBSP, which act as BTI c (or jc, by
// SCTLR_EL1.BT0).
func (x a64Inst) isLandingPad() bool {
	return x.isBTI() || x.word == a64PACIASP || x.word == a64PACIBSP
}

// a64Exclusive reports whether w is a load or store exclusive: LDXR,
// STXR, LDAXR, STLXR (and their byte and halfword forms) in the class
// "Load/store exclusive register" (bits 29-24 001000, o2 bit 23 and o1
// bit 21 clear), or LDXP, STXP, LDAXP, STLXP in "Load/store exclusive
// pair" (bit 31 set, o2 clear, o1 set; bit 31 clear is CASP). C4.1,
// "Loads and Stores".
func a64Exclusive(w uint32) bool {
	return w&0x3fa00000 == 0x08000000 || w&0xbfa00000 == 0x88200000
}

// relocError says why x, at pc, cannot run from a trampoline, or nil.
func (x a64Inst) relocError(pc uint64) error {
	var why string
	switch {
	case x.word&0xff000000 == 0xd4000000: // C4.1 "Exception generation"
		why = "exception-generating instruction"
	case a64Exclusive(x.word):
		why = "exclusive load or store (a branch out of its sequence breaks it)"
	case x.op == a64Trap:
		why = "trap"
	case x.op == a64UnknownBranch:
		why = "unknown branch encoding"
	case x.op == a64LDRLitFP:
		why = "load literal into a SIMD&FP register"
	case x.op == a64LDRLit && x.reg == 31:
		why = "load literal into xzr"
	case x.op == a64BLR, x.op == a64PACCall:
		why = "indirect call (its return address would point into the trampoline)"
	default:
		return nil
	}
	return fmt.Errorf("%q at %#x: %s: %w", x.Text, pc, why, ErrNotRelocatable)
}

// PlanPatch plans the patch of one instruction at site, or at site+4 when
// site is a landing pad (BTI c/j/jc, PACIASP, PACIBSP), which stays in
// place for indirect calls. The instruction must lie inside fn: the
// function, and the alignment padding it may end with (where a patch
// after a landing pad ending the function goes; a nop there is relocated,
// a trap refused). A BTI right after a landing pad is refused: a B over
// it would fault an indirect branch landing there; PACIASP after BTI c
// only signs and is relocated. The instruction must be relocatable (see
// Trampoline) and no PC-relative reference of the function may point
// inside it but at its first byte.
func (a arm64) PlanPatch(fn []byte, start, site uint64) (Patch, error) {
	p, x, err := a.planOne(fn, start, site)
	if err != nil {
		return Patch{}, err
	}
	into, err := branchTargets(a, fn, start, p.Site, p.Site+a64InstLen)
	if err != nil {
		return Patch{}, fmt.Errorf("plan patch at %#x: %w", site, err)
	}
	if len(into) > 0 {
		return Patch{}, fmt.Errorf("plan patch at %#x: a reference to %#x lands inside %q at %#x: %w", site, into[0], x.Text, p.Site, ErrBranchInto)
	}
	return p, nil
}

// planOne plans the patch of the one instruction at site, or at site+4
// after a landing pad (PlanPatch's rules but for the references into
// it), and returns it with the instruction.
func (a arm64) planOne(fn []byte, start, site uint64) (Patch, a64Inst, error) {
	end := start + uint64(len(fn))
	var x a64Inst
	switch {
	case start%a64InstLen != 0 || site%a64InstLen != 0:
		return Patch{}, x, fmt.Errorf("plan patch at %#x: function %#x or site not 4-byte aligned", site, start)
	case site < start || site >= end || end-site < a64InstLen:
		return Patch{}, x, fmt.Errorf("plan patch at %#x: outside the function [%#x, %#x): %w", site, start, end, ErrTooShort)
	}
	x, err := decodeARM64(fn[site-start:], site)
	if err != nil {
		return Patch{}, x, fmt.Errorf("plan patch at %#x: %w", site, err)
	}
	at := site
	if x.isLandingPad() {
		pad := x
		at += a64InstLen
		if end-at < a64InstLen {
			return Patch{}, x, fmt.Errorf("plan patch at %#x: landing pad %q and the function ends at %#x: %w", site, pad.Text, end, ErrTooShort)
		}
		if x, err = decodeARM64(fn[at-start:], at); err != nil {
			return Patch{}, x, fmt.Errorf("plan patch at %#x: %w", site, err)
		}
		if x.isBTI() {
			return Patch{}, x, fmt.Errorf("plan patch at %#x: %q at %#x after landing pad %q: a landing pad would be lost: %w", site, x.Text, at, pad.Text, ErrNotRelocatable)
		}
	}
	if err := x.relocError(at); err != nil {
		return Patch{}, x, fmt.Errorf("plan patch at %#x: %w", site, err)
	}
	orig := append([]byte(nil), fn[at-start:at-start+a64InstLen]...)
	return Patch{Site: at, Orig: orig, Insts: []Inst{x.Inst}}, x, nil
}

// Trampoline builds the trampoline at addr: prelude, each instruction of
// p relocated (after the code p.Before gives it), then B p.Return().
// Relocation:
//
//   - B: B to the same target;
//   - BL: x30 = the original return address (MOVZ/MOVK), then B target;
//   - B.cond, CBZ/CBNZ, TBZ/TBNZ: the inverted test skipping the next
//     instruction, then B target; the fall-through goes on (B.AL and
//     B.NV: B target alone);
//   - ADR, ADRP: MOVZ/MOVK of the address into the same register (NOP
//     for xzr);
//   - LDR (literal) of a W or X register, LDRSW (literal): MOVZ/MOVK of
//     the literal's address into the destination, then LDR or LDRSW
//     (immediate) from it into itself;
//   - PRFM (literal): NOP;
//   - anything else, RET, BR and BRAA-like branches included: copied.
//
// Refused ([ErrNotRelocatable]): exception-generating instructions (SVC,
// BRK, HLT, UDF...), exclusive loads and stores, LDR (literal) into a
// SIMD&FP register or xzr, BLR and BLRAA-like calls, unknown branch
// encodings, and any B out of reach (with [ErrOutOfReach] too).
func (arm64) Trampoline(p *Patch, addr uint64, prelude []byte) (Trampoline, error) {
	switch {
	case addr%a64InstLen != 0 || p.Site%a64InstLen != 0:
		return Trampoline{}, fmt.Errorf("trampoline at %#x for %#x: not 4-byte aligned", addr, p.Site)
	case len(prelude)%a64InstLen != 0:
		return Trampoline{}, fmt.Errorf("trampoline at %#x: prelude of %d bytes, not whole instructions", addr, len(prelude))
	case len(p.Orig) == 0 || len(p.Orig)%a64InstLen != 0:
		return Trampoline{}, fmt.Errorf("trampoline at %#x: patch of %d bytes, not whole instructions", addr, len(p.Orig))
	}
	code := make([]byte, 0, len(prelude)+len(p.Orig)*4+a64InstLen)
	code = append(code, prelude...)
	var pcs []PCMap
	for off := 0; off < len(p.Orig); off += a64InstLen {
		pc := p.Site + uint64(off)
		x, err := decodeARM64(p.Orig[off:], pc)
		if err != nil {
			return Trampoline{}, fmt.Errorf("trampoline at %#x: %w", addr, err)
		}
		if b := p.before(off / a64InstLen); len(b) > 0 {
			if off > 0 {
				// (A thread stopped in that code has not run this
				// instruction yet.)
				pcs = append(pcs, PCMap{Tramp: addr + uint64(len(code)), Orig: pc})
			}
			code = append(code, b...)
		}
		at := addr + uint64(len(code))
		words, err := x.relocate(pc, at)
		pcs = append(pcs, PCMap{Tramp: at, Orig: pc})
		if ways, ok := p.ways(off / a64InstLen); ok && x.Kind == CondJump {
			var more []PCMap
			words, more, err = x.relocateWays(pc, at, ways)
			pcs = append(pcs, more...)
		}
		if err != nil {
			return Trampoline{}, fmt.Errorf("trampoline at %#x: %w", addr, err)
		}
		for _, w := range words {
			code = binary.LittleEndian.AppendUint32(code, w)
		}
	}
	back, err := a64Branch(addr+uint64(len(code)), p.Return())
	if err != nil {
		return Trampoline{}, fmt.Errorf("trampoline at %#x: jump back: %w: %w", addr, ErrNotRelocatable, err)
	}
	code = binary.LittleEndian.AppendUint32(code, back)
	return Trampoline{Code: code, PCs: pcs}, nil
}

// relocate returns the words that carry out x, originally at pc, from at.
func (x a64Inst) relocate(pc, at uint64) ([]uint32, error) {
	if err := x.relocError(pc); err != nil {
		return nil, err
	}
	// branch is B from the word index i of the result to target.
	branch := func(i int, target uint64) (uint32, error) {
		b, err := a64Branch(at+uint64(i)*a64InstLen, target)
		if err != nil {
			return 0, fmt.Errorf("%q at %#x: %w: %w", x.Text, pc, ErrNotRelocatable, err)
		}
		return b, nil
	}
	switch x.op {
	case a64B:
		b, err := branch(0, x.Target)
		return []uint32{b}, err
	case a64BL:
		// BL writes pc+4 to x30 and reads nothing (C6.2 "BL"); ADR would
		// reach only ±1 MiB.
		words := a64MovImm(a64LR, pc+a64InstLen)
		b, err := branch(len(words), x.Target)
		return append(words, b), err
	case a64BCond, a64CBZ, a64TBZ:
		if x.op == a64BCond && x.cond >= 14 { // AL, NV: always (C1.2.4)
			b, err := branch(0, x.Target)
			return []uint32{b}, err
		}
		b, err := branch(1, x.Target)
		return []uint32{x.skipUnless(), b}, err
	case a64ADR:
		if x.reg == 31 {
			return []uint32{a64NOPWord}, nil
		}
		return a64MovImm(x.reg, x.Target), nil
	case a64LDRLit:
		return append(a64MovImm(x.reg, x.Target), x.loadSelf()), nil
	case a64Nop:
		if x.PCRel { // PRFM (literal): a hint, and its address would be wrong
			return []uint32{a64NOPWord}, nil
		}
	}
	return []uint32{x.word}, nil
}

// relocateWays carries out the conditional branch x, originally at pc,
// from at, running ways[0] on the way to its target and ways[1] on the
// way on, with the PC map of the ways' code: a thread there has gone
// that way (and has not run its code yet, at its start):
//
//	b.!cond on              the branch negated (skipUnlessBy)
//	ways[0]
//	b target
//	on: ways[1]             (then the next instruction's copy)
//
// B reaches 128 MiB, as the trampoline's jump back does; the negated
// branch reaches the trampoline's own code (TBZ: 32 KiB).
func (x a64Inst) relocateWays(pc, at uint64, ways [2][]byte) ([]uint32, []PCMap, error) {
	if len(ways[0])%a64InstLen != 0 || len(ways[1])%a64InstLen != 0 {
		return nil, nil, fmt.Errorf("%q at %#x: ways' code of %d and %d bytes, not whole instructions", x.Text, pc, len(ways[0]), len(ways[1]))
	}
	if x.op == a64BCond && x.cond >= 14 {
		return nil, nil, fmt.Errorf("%q at %#x: a branch that always goes: %w", x.Text, pc, ErrNotRelocatable)
	}
	n0 := len(ways[0]) / a64InstLen
	words := []uint32{x.skipUnlessBy(uint32(n0 + 2))}
	for off := 0; off < len(ways[0]); off += a64InstLen {
		words = append(words, binary.LittleEndian.Uint32(ways[0][off:]))
	}
	jmp := at + uint64(len(words))*a64InstLen
	b, err := a64Branch(jmp, x.Target)
	if err != nil {
		return nil, nil, fmt.Errorf("%q at %#x: %w: %w", x.Text, pc, ErrNotRelocatable, err)
	}
	words = append(words, b)
	on := at + uint64(len(words))*a64InstLen
	for off := 0; off < len(ways[1]); off += a64InstLen {
		words = append(words, binary.LittleEndian.Uint32(ways[1][off:]))
	}
	pcs := []PCMap{{Tramp: at + a64InstLen, Orig: x.Target}}
	if len(ways[1]) > 0 {
		pcs = append(pcs, PCMap{Tramp: on, Orig: pc + a64InstLen})
	}
	return words, pcs, nil
}

// skipUnless returns the inverse of the conditional branch x jumping 8
// bytes ahead, over the next instruction (skipUnlessBy).
func (x a64Inst) skipUnless() uint32 { return x.skipUnlessBy(2) }

// skipUnlessBy returns the inverse of the conditional branch x jumping
// words instructions ahead: B.cond with the condition's low bit flipped
// (C1.2.4: odd conditions negate even ones), CBNZ for CBZ, TBNZ for TBZ
// and the reverse (op, bit 24). Encodings: C6.2 "B.cond" (01010100 imm19
// 0 cond), "CBZ"/"CBNZ" (sf 011010 op imm19 Rt), "TBZ"/"TBNZ" (b5 011011
// op b40 imm14 Rt); offsets are in words.
func (x a64Inst) skipUnlessBy(words uint32) uint32 {
	switch x.op {
	case a64BCond:
		return 0x54000000 | words<<5 | uint32(x.cond^1)
	case a64CBZ:
		return (x.word^a64NegBit)&^a64Imm19Mask | words<<5
	}
	return (x.word^a64NegBit)&^a64Imm14Mask | words<<5 // TBZ, TBNZ
}

// loadSelf returns the load of x's size from [Xt] into Xt or Wt, offset
// 0: LDR (immediate), unsigned offset, 64-bit (11 111 0 01 01 imm12 Rn
// Rt, 0xf9400000) and 32-bit (0xb9400000, zero-extending), or LDRSW
// (immediate), unsigned offset (0xb9800000). C6.2 "LDR (immediate)",
// "LDRSW (immediate)"; C4.1 "Load/store register (unsigned immediate)".
func (x a64Inst) loadSelf() uint32 {
	op := uint32(0xb9400000)
	switch {
	case x.sf:
		op = 0xf9400000
	case x.sext:
		op = 0xb9800000
	}
	return op | uint32(x.reg)<<5 | uint32(x.reg)
}

// a64MovImm loads v into Xd with as few instructions as its nonzero
// halfwords need: MOVZ of the lowest (MOVZ Xd, #0 for 0), MOVK of the
// others. 64-bit MOVZ is 1 10 100101 hw imm16 Rd (0xd2800000), MOVK
// 1 11 100101 hw imm16 Rd (0xf2800000), hw the halfword's index (C6.2
// "MOVZ", "MOVK"; C4.1 "Move wide (immediate)"). Neither sets the flags.
func a64MovImm(rd int, v uint64) []uint32 {
	var words []uint32
	for hw := range 4 {
		h := uint32(v>>(16*hw)) & 0xffff
		if h == 0 {
			continue
		}
		op := uint32(0xf2800000) // MOVK
		if len(words) == 0 {
			op = 0xd2800000 // MOVZ
		}
		words = append(words, op|uint32(hw)<<21|h<<5|uint32(rd))
	}
	if len(words) == 0 {
		words = append(words, 0xd2800000|uint32(rd))
	}
	return words
}

// PatchJump returns B tramp (C6.2 "B": 000101 imm26, ±128 MiB, else
// [ErrOutOfReach]) from p.Site, padded to len(p.Orig) with BRK #0.
func (a arm64) PatchJump(p *Patch, tramp uint64) ([]byte, error) {
	if len(p.Orig) < a64InstLen || len(p.Orig)%a64InstLen != 0 || p.Site%a64InstLen != 0 || tramp%a64InstLen != 0 {
		return nil, fmt.Errorf("patch jump at %#x to %#x: %d bytes: not whole aligned instructions", p.Site, tramp, len(p.Orig))
	}
	b, err := a64Branch(p.Site, tramp)
	if err != nil {
		return nil, fmt.Errorf("patch jump at %#x: %w", p.Site, err)
	}
	out := binary.LittleEndian.AppendUint32(make([]byte, 0, p.Written()), b)
	for len(out) < p.Written() {
		out = append(out, a.Breakpoint()...)
	}
	return out, nil
}

// ShortReach returns 0, 0: there is no short jump.
func (arm64) ShortReach() (back, fwd int64) { return 0, 0 }

// Jump returns B from one address to another (±128 MiB).
func (arm64) Jump(from, to uint64) ([]byte, error) {
	w, err := a64Branch(from, to)
	if err != nil {
		return nil, err
	}
	return binary.LittleEndian.AppendUint32(nil, w), nil
}

// FlagsDead returns false: LineCode does not change the flags, and need
// not know.
func (arm64) FlagsDead([]byte, uint64, uint64) bool { return false }

// DepthCode returns the shadow-stack code of the table form of [Depth]
// (false for the Go form, whose goroutine stacks are in no table, and
// without a table). It uses x16 and x17 and the flags, all dead at an
// entry, and writes nothing but the thread's area:
//
//	mov x16, sp
//	ubfx x16, x16, #12, #22          the stack page's entry
//	mov x17, #Table
//	ldr w16, [x17, x16, lsl #2]      the area's offset
//	mov x17, #Areas
//	add x16, x17, x16                the area
//	ldr x17, [x16, #16]              n, the frames on the shadow stack
//	cmp x17, #slots; b.hi done       (a torn count: leave it)
//	add x16, x16, x17, lsl #3        x16: the area plus 8n, its "cursor"
//	tst x16, #0x3fff; b.eq push      n = 0
//	ldr x17, [x16, #40]              stack[n-1]
//	cmp sp, x17; b.eq done           a sibling call: nothing changes
//	1: b.lo push                     stack[n-1] is above: still live
//	sub x16, x16, #8                 it has returned: pop it
//	tst x16, #0x3fff; b.eq push
//	ldr x17, [x16, #40]; cmp sp, x17; b 1b
//	push: and x17, x16, #0x3fff; lsr x17, x17, #3
//	cmp x17, #slots; b.hs done       n' = the frames left
//	mov x17, sp; str x17, [x16, #48] stack[n'] = sp
//	and x17, x16, #0x3fff; lsr x17, x17, #3; add x17, x17, #1
//	and x16, x16, #~0x3fff           the area again
//	str x17, [x16, #16]              n = n'+1
//	done:
//
// The count is read once and kept in the cursor, whose low bits are 8n
// (areas are aligned), so that every access stays in the area whatever
// another thread sharing it (the discard area) does meanwhile; the stores
// come last, the frame before the count, so that a thread moved back to
// the code's start (a signal, [DepthCode.Rollback]) does the same work
// again. The deepest nesting is not kept: [TableDepth] reads it.
func (arm64) DepthCode(d Depth) (DepthCode, bool) {
	if d.GoABI || d.Table == 0 || d.Slots <= 0 || d.Slots > MaxTableSlots {
		return DepthCode{}, false
	}
	const (
		x16, x17, sp, xzr = 16, 17, 31, 31
		eq, hs, lo, hi    = 0, 2, 3, 8
		// The bitmask immediates of 0x3fff (14 ones from bit 0) and of
		// its complement (50 ones from bit 14): N=1, immr, imms (C4.1
		// "Logical (immediate)", DecodeBitMasks).
		lowBits  = 1<<22 | 0<<16 | 13<<10
		highBits = 1<<22 | 50<<16 | 49<<10
	)
	var w []uint32
	emit := func(ws ...uint32) { w = append(w, ws...) }
	addImm := func(rd, rn, imm uint32) uint32 { return 0x91000000 | imm<<10 | rn<<5 | rd }   // ADD (immediate)
	subImm := func(rd, rn, imm uint32) uint32 { return 0xd1000000 | imm<<10 | rn<<5 | rd }   // SUB (immediate)
	cmpImm := func(rn, imm uint32) uint32 { return 0xf1000000 | imm<<10 | rn<<5 | xzr }      // SUBS (immediate)
	ldr := func(rt, rn, off uint32) uint32 { return 0xf9400000 | off/8<<10 | rn<<5 | rt }    // LDR (immediate)
	str := func(rt, rn, off uint32) uint32 { return 0xf9000000 | off/8<<10 | rn<<5 | rt }    // STR (immediate)
	and := func(rd, rn, mask uint32) uint32 { return 0x92000000 | mask | rn<<5 | rd }        // AND (immediate)
	tst := func(rn, mask uint32) uint32 { return 0xf2000000 | mask | rn<<5 | xzr }           // ANDS (immediate)
	lsr := func(rd, rn, s uint32) uint32 { return 0xd3400000 | s<<16 | 63<<10 | rn<<5 | rd } // UBFM
	cmpSP := uint32(0xeb200000 | x17<<16 | 3<<13 | sp<<5 | xzr)                              // SUBS (extended register), UXTX
	slots := uint32(d.Slots)
	// Branches, their offsets filled in once every label is placed.
	var branches []a64Jump
	labels := map[string]int{}
	bcond := func(cond uint32, to string) {
		branches = append(branches, a64Jump{len(w), to})
		emit(0x54000000 | cond) // B.cond
	}
	b := func(to string) {
		branches = append(branches, a64Jump{len(w), to})
		emit(0x14000000) // B
	}
	compare := func() { emit(ldr(x17, x16, DepthStack-8), cmpSP) }

	emit(addImm(x16, sp, 0))
	emit(0xd3400000 | DepthTablePage<<16 | (DepthTablePage+DepthTableBits-1)<<10 | x16<<5 | x16) // UBFX (UBFM)
	emit(a64MovImm(x17, d.Table)...)
	emit(0xb8607800 | x16<<16 | x17<<5 | x16) // LDR (register), 32-bit, LSL #2
	emit(a64MovImm(x17, d.Areas)...)
	emit(0x8b000000 | x16<<16 | x17<<5 | x16) // ADD (shifted register)
	emit(ldr(x17, x16, DepthCurrent), cmpImm(x17, slots))
	bcond(hi, "done")
	emit(0x8b000000 | x17<<16 | 3<<10 | x16<<5 | x16) // ADD (shifted register), LSL #3
	emit(tst(x16, lowBits))
	bcond(eq, "push")
	compare()
	bcond(eq, "done")
	labels["loop"] = len(w)
	bcond(lo, "push")
	emit(subImm(x16, x16, 8), tst(x16, lowBits))
	bcond(eq, "push")
	compare()
	b("loop")
	labels["push"] = len(w)
	emit(and(x17, x16, lowBits), lsr(x17, x17, 3), cmpImm(x17, slots))
	bcond(hs, "done")
	emit(addImm(x17, sp, 0), str(x17, x16, DepthStack))
	emit(and(x17, x16, lowBits), lsr(x17, x17, 3), addImm(x17, x17, 1))
	emit(and(x16, x16, highBits), str(x17, x16, DepthCurrent))
	labels["done"] = len(w)
	code := a64Resolve(w, branches, labels)
	return DepthCode{Code: code, Rollback: []Rollback{{From: 0, To: len(code)}}}, true
}

// a64Jump is a branch of generated code: the index of its instruction
// and the label it goes to.
type a64Jump struct {
	at int
	to string
}

// a64Resolve fills in the offsets of the branches (B and B.cond) of the
// instructions w to their labels, and returns w as code.
func a64Resolve(w []uint32, branches []a64Jump, labels map[string]int) []byte {
	for _, br := range branches {
		off := uint32(labels[br.to] - br.at)
		if w[br.at]&0xfc000000 == 0x14000000 {
			w[br.at] |= off & 0x3ffffff
		} else {
			w[br.at] |= off & 0x7ffff << 5
		}
	}
	code := make([]byte, 0, 4*len(w))
	for _, x := range w {
		code = binary.LittleEndian.AppendUint32(code, x)
	}
	return code
}

// relocateOne relocates the one instruction orig from pc to at.
func (arm64) relocateOne(orig []byte, pc, at uint64) ([]byte, error) {
	if len(orig) != a64InstLen || pc%a64InstLen != 0 || at%a64InstLen != 0 {
		return nil, fmt.Errorf("relocate %d bytes from %#x to %#x: not one aligned instruction", len(orig), pc, at)
	}
	x, err := decodeARM64(orig, pc)
	if err != nil {
		return nil, err
	}
	words, err := x.relocate(pc, at)
	if err != nil {
		return nil, err
	}
	code := make([]byte, 0, 4*len(words))
	for _, w := range words {
		code = binary.LittleEndian.AppendUint32(code, w)
	}
	return code, nil
}

// PlanExits plans the patch of each exit: the exit itself, RET (RETAA,
// RETAB) or B out of the function, one word replaced by B to the
// trampoline, where the exit runs again (a branch landing on it lands on
// the patch's first word).
func (a arm64) PlanExits(fn []byte, start, end uint64, short bool) ([]ExitPlan, error) {
	if short {
		return nil, fmt.Errorf("no short jump on arm64: %w", ErrTooShort)
	}
	if end < start || end-start > uint64(len(fn)) || start%a64InstLen != 0 {
		return nil, fmt.Errorf("function [%#x, %#x) longer than its %d bytes of code, or not aligned", start, end, len(fn))
	}
	exits, err := FindExits(a, fn, start, end)
	if err != nil {
		return nil, err
	}
	plans := make([]ExitPlan, 0, len(exits))
	for _, x := range exits {
		plan := ExitPlan{Exit: x}
		in, err := decodeARM64(fn[x.PC-start:], x.PC)
		switch {
		case x.Indirect:
			plan.Err = fmt.Errorf("%q at %#x: %w: %w", in.Text, x.PC, errIndirect, ErrNotRelocatable)
		case err != nil:
			plan.Err = err
		default:
			plan.Err = in.relocError(x.PC)
		}
		if plan.Err == nil {
			plan.Patch = Patch{Site: x.PC, Orig: append([]byte(nil), fn[x.PC-start:x.PC-start+a64InstLen]...), Insts: []Inst{in.Inst}}
		}
		plans = append(plans, plan)
	}
	return plans, nil
}
