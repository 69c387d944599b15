package instr

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// PlanOwn plans the patch of the one instruction at site (after an
// endbr64 there, which stays where indirect branches land): jmp rel32
// over it when it has 5 bytes or more, padded with int3; otherwise the
// jump's first bytes, whose last ones are those of the code after it,
// as they will be ([Layout]). The instruction must be relocatable
// (PlanPatch's rules); a call is, since its return lands after the
// patch, on the program's own next instruction.
func (a amd64) PlanOwn(code []byte, start, site uint64) (Patch, error) {
	end := start + uint64(len(code))
	if site < start || site >= end {
		return Patch{}, fmt.Errorf("site %#x outside the code [%#x, %#x): %w", site, start, end, ErrTooShort)
	}
	if bytes.HasPrefix(code[site-start:], endbr64) {
		site += uint64(len(endbr64))
		if site >= end {
			return Patch{}, fmt.Errorf("endbr64 ends the code at %#x: %w", site, ErrTooShort)
		}
	}
	x, err := decodeTrampInst(code[site-start:], site)
	if err != nil {
		return Patch{}, err
	}
	if err := x.relocatable(); err != nil {
		return Patch{}, fmt.Errorf("%s at %#x: %w", x.text(site), site, err)
	}
	orig := code[site-start : site-start+uint64(x.Len)]
	return Patch{Site: site, Orig: append([]byte(nil), orig...), Insts: []Inst{x.Inst}}, nil
}

// PadGuards returns false: endbr64 marks where indirect calls and
// tracked jumps land, and a switch's notrack jmp lands anywhere.
func (amd64) PadGuards([]byte) bool { return false }

// JumpLen is the length of jmp rel32.
func (amd64) JumpLen() int { return amd64JumpLen }

// Reach returns where jmp rel32 at site lands: 2 GiB either way from
// the address after it, within user space.
func (amd64) Reach(site uint64) (lo, hi uint64) {
	return reach(site+amd64JumpLen, 1<<31, amd64UserTop)
}

// jumpPrefixes are the prefix layouts a jmp rel32 may start with, as
// JumpPrefixes gives them: none; a REX prefix right before the opcode (a
// near jump's operand size is 64 bits whatever REX.W says); a segment
// override (ignored in 64-bit mode, Intel SDM Vol. 2A 2.1.1, and by
// AMD); or both. No others: 66 would make the displacement 16 bits, 67
// the address 32. A prefix moves the displacement one byte on, over
// bytes the jump shares with the code after it (e9patch's padded
// jumps), and its value, where those bytes are a prefix of the next
// jump's, chooses where this one lands.
var (
	segmentPrefixes = []byte{0x26, 0x2e, 0x36, 0x3e}
	rexPrefixes     = func() []byte {
		b := make([]byte, 16)
		for i := range b {
			b[i] = 0x40 + byte(i)
		}
		return b
	}()
)

// JumpPrefixes returns the prefix layouts of jmp rel32 (jumpPrefixes),
// in order of preference, none first: each the bytes each of its
// positions may hold, the first of each the one to use when any will do.
func (amd64) JumpPrefixes() [][][]byte {
	return [][][]byte{nil, {rexPrefixes}, {segmentPrefixes}, {segmentPrefixes, rexPrefixes}}
}

// PunWindow returns where jmp rel32 over p, after the prefixes p.Prefix
// holds, may land when its bytes past p's own instruction are after
// (the code there as it will be): the window of the displacement's bytes
// that fall in p's instruction, the others fixed. False when the
// prefixes and the opcode do not fit in p's instruction, or after is
// too short.
func (amd64) PunWindow(p *Patch, after []byte) (lo, hi uint64, ok bool) {
	own, pre := p.Written(), len(p.Prefix)
	free := own - pre - 1 // bytes of the displacement in p's instruction
	if free < 0 || free >= 4 || len(after) < 4-free {
		return 0, 0, false
	}
	var rel [4]byte
	copy(rel[free:], after[:4-free])
	low := int64(int32(binary.LittleEndian.Uint32(rel[:])))
	return window(p.Site+uint64(pre)+amd64JumpLen+uint64(low), 1<<(8*free))
}

// The tops of user space: x86-64's 47 bits of address, arm64's 48 (Linux
// maps nothing above unless asked: 52-bit addresses are opt-in). An arm64
// PIE program loads at 0xaaaa'xxxx'xxxx, above x86-64's top.
const (
	amd64UserTop = 1 << 47
	arm64UserTop = 1 << 48
	userLowest   = 1 << 20 // (the lowest addresses left alone)
)

// window returns [lo, lo+size), or false where it leaves the addresses
// of x86-64 user space (above 1 MiB, below 2^47).
func window(lo, size uint64) (uint64, uint64, bool) {
	const lowest, top = userLowest, amd64UserTop
	hi := lo + size
	if lo >= top || hi > top || hi <= lo || hi <= lowest {
		return 0, 0, false
	}
	return max(lo, lowest), hi, true
}

// reach returns the addresses within d of from, within user space
// (below top).
func reach(from, d, top uint64) (lo, hi uint64) {
	lo, hi = userLowest, top
	if from > d && from-d > lo {
		lo = from - d
	}
	if from+d < hi {
		hi = from + d
	}
	return lo, hi
}
