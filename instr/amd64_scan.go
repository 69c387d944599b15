package instr

import "encoding/binary"

// A fast path for the scans that decode a whole module or function only
// to find where instructions begin and where their branches go
// ([ScanCode], [MapCode], the branch check of a patch): the opcodes that
// make up nearly all compiled x86-64 code are measured from a table
// (Intel SDM Vol. 2A §2.1, Appendix A), and everything else goes to
// decodeAMD64Bare. x86asm spends some 700 ns an instruction interpreting
// its decoding tables: a module of 10,000 small functions took 40 ms
// to scan that way, against some 3 ms here. TestScanDecoderAgrees holds
// the two to the same length, kind of branch and target on the host's
// libraries, at every byte offset.

// x86Op describes a one-byte opcode for the fast path.
type x86Op uint8

const (
	opSlow  x86Op = iota // not on the fast path: decodeAMD64Bare
	opNone               // the opcode alone
	opM                  // a ModRM operand
	opIb                 // imm8
	opIz                 // imm16 with 66, else imm32
	opMIb                // ModRM and imm8
	opMIz                // ModRM and imm16/32
	opIv                 // B8-BF: imm64 with REX.W, imm16 with 66, else imm32
	opIw                 // imm16 (ret imm16)
	opRel8               // a relative branch, rel8
	opRel32              // a relative branch, rel32
	opGrp3b              // F6: ModRM, imm8 for /0
	opGrp3z              // F7: ModRM, imm16/32 for /0
	opPop                // 8F: POP r/m, or an XOP prefix
	opEndbr              // endbr64 (F3 0F 1E FA), whole: fastTwoByte's only
)

// x86OneByte is the one-byte opcode map in 64-bit mode; prefixes, the
// invalid opcodes and the rarer forms are opSlow.
var x86OneByte = func() (t [256]x86Op) {
	for b := 0; b < 0x40; b += 8 { // add, or, adc, sbb, and, sub, xor, cmp
		t[b], t[b+1], t[b+2], t[b+3] = opM, opM, opM, opM
		t[b+4], t[b+5] = opIb, opIz
	}
	for b := 0x50; b <= 0x5f; b++ {
		t[b] = opNone
	}
	t[0x63] = opM
	t[0x68], t[0x69], t[0x6a], t[0x6b] = opIz, opMIz, opIb, opMIb
	for b := 0x70; b <= 0x7f; b++ {
		t[b] = opRel8
	}
	t[0x80], t[0x81], t[0x83] = opMIb, opMIz, opMIb
	for b := 0x84; b <= 0x8d; b++ {
		t[b] = opM
	}
	t[0x8c] = opSlow // mov from a segment register
	t[0x8f] = opPop
	for b := 0x90; b <= 0x99; b++ {
		t[b] = opNone
	}
	t[0x9b], t[0x9c], t[0x9d], t[0x9e], t[0x9f] = opNone, opNone, opNone, opNone, opNone
	t[0xa4], t[0xa5], t[0xa6], t[0xa7] = opNone, opNone, opNone, opNone
	t[0xa8], t[0xa9] = opIb, opIz
	for b := 0xaa; b <= 0xaf; b++ {
		t[b] = opNone
	}
	for b := 0xb0; b <= 0xb7; b++ {
		t[b] = opIb
	}
	for b := 0xb8; b <= 0xbf; b++ {
		t[b] = opIv
	}
	t[0xc0], t[0xc1], t[0xc2], t[0xc3] = opMIb, opMIb, opIw, opNone
	t[0xc6], t[0xc7] = opMIb, opMIz
	t[0xc9], t[0xcc] = opNone, opNone
	t[0xd0], t[0xd1], t[0xd2], t[0xd3] = opM, opM, opM, opM
	t[0xe8], t[0xe9], t[0xeb] = opRel32, opRel32, opRel8
	t[0xf4], t[0xf5] = opNone, opNone
	t[0xf6], t[0xf7] = opGrp3b, opGrp3z
	for b := 0xf8; b <= 0xfd; b++ {
		t[b] = opNone
	}
	t[0xfe], t[0xff] = opM, opM
	return t
}()

// x86TwoByte is the 0F map's integer instructions: opM, opMIb, opNone,
// opRel32 (jcc rel32), or opSlow.
var x86TwoByte = func() (t [256]x86Op) {
	set := func(op x86Op, lo, hi int) {
		for b := lo; b <= hi; b++ {
			t[b] = op
		}
	}
	t[0x05], t[0x0b], t[0x31], t[0xa2] = opNone, opNone, opNone, opNone
	t[0x1f] = opM
	set(opM, 0x40, 0x4f)
	set(opRel32, 0x80, 0x8f)
	set(opM, 0x90, 0x9f)
	for _, b := range []int{0xa3, 0xa5, 0xab, 0xad, 0xaf, 0xb0, 0xb1, 0xb3, 0xb6, 0xb7, 0xbb, 0xbc, 0xbd, 0xbe, 0xbf, 0xc0, 0xc1} {
		t[b] = opM
	}
	t[0xa4], t[0xac] = opMIb, opMIb
	set(opNone, 0xc8, 0xcf)
	return t
}()

// The mandatory prefixes of an SSE instruction: none, 66, F3 or F2.
const (
	sseNone = 1 << iota
	sse66
	sseF3
	sseF2
	sseAll = sseNone | sse66 | sseF3 | sseF2
)

// x86SSE is the 0F map's common SSE instructions (ModRM, no immediate
// but where x86SSEImm says), each with the mandatory prefixes that make
// it valid; the others take the full decoder.
var x86SSE = func() (t [256]uint8) {
	for _, b := range []int{0x10, 0x11, 0x51, 0x58, 0x59, 0x5a, 0x5c, 0x5d, 0x5e, 0x5f, 0x70} {
		t[b] = sseAll
	}
	for _, b := range []int{0x14, 0x15, 0x28, 0x29, 0x2e, 0x2f, 0x54, 0x55, 0x56, 0x57, 0x6e, 0xc6} {
		t[b] = sseNone | sse66
	}
	t[0x2a], t[0x2c], t[0x2d] = sseF3|sseF2, sseF3|sseF2, sseF3|sseF2
	t[0x5b] = sseNone | sse66 | sseF3
	t[0x6f], t[0x7f] = sseNone|sse66|sseF3, sseNone|sse66|sseF3
	t[0x7e] = sseNone | sse66 | sseF3
	for _, b := range []int{0x60, 0x61, 0x62, 0x66, 0x74, 0x75, 0x76, 0xd4, 0xdb, 0xdf, 0xeb, 0xef, 0xfa, 0xfb, 0xfe} {
		t[b] = sseNone | sse66
	}
	t[0x6c], t[0x6d], t[0xd6] = sse66, sse66, sse66
	return t
}()

// x86SSEImm marks the SSE instructions of x86SSE with an imm8.
func x86SSEImm(op byte) bool { return op == 0x70 || op == 0xc6 }

// scanAMD64 measures the instruction at the start of code, at pc, for
// the scans: on the fast path, or else with decodeAMD64Bare, which also
// says what does not decode.
func scanAMD64(code []byte, pc uint64) (scanned, error) {
	if in, ok := scanAMD64Fast(code, pc); ok {
		return in, nil
	}
	x, err := decodeAMD64Bare(code, pc)
	return scanned{n: x.Len, kind: x.Kind, pcrel: x.PCRel, target: x.Target}, err
}

// scanAMD64Fast is scanAMD64's table; false sends the instruction to
// the full decoder. An instruction is its prefixes (fastPrefixes), its
// opcode (the 0F map's in fastTwoByte), its operands (fastOperands for
// the kinds other than the common none and ModRM), the ModRM byte's
// addressing, and the immediate. (The common paths stay in this
// function: the scan runs it for every instruction of a module.)
func scanAMD64Fast(code []byte, pc uint64) (scanned, bool) {
	pre, p, ok := fastPrefix{mand: sseNone}, 0, true
	// Only an opcode opSlow may be a prefix (x86OneByte): the others need
	// no call.
	if len(code) > 0 && x86OneByte[code[0]] == opSlow && code[0]&0xf0 != 0x40 {
		if pre, p, ok = fastPrefixes(code); !ok {
			return scanned{}, false
		}
	}
	if p < len(code) && code[p]&0xf0 == 0x40 {
		pre.rexW = code[p]&8 != 0
		p++
	}
	if p >= len(code) {
		return scanned{}, false
	}
	op := code[p]
	kind := x86OneByte[op]
	p++
	if op == 0x0f {
		if kind, p, ok = fastTwoByte(code, p, pre); !ok {
			return scanned{}, false
		}
	}
	modrm, imm := kind == opM, 0
	switch kind {
	case opM, opNone:
	case opEndbr:
		return scanned{n: p, kind: Other}, true
	case opRel8, opRel32:
		if pre.opsize {
			return scanned{}, false
		}
		return fastBranch(code, pc, p, op, kind)
	default:
		if modrm, imm, ok = fastOperands(code, p, kind, pre); !ok {
			return scanned{}, false
		}
	}
	in := scanned{kind: Other}
	if op == 0xc2 || op == 0xc3 {
		in.kind = Ret // (as the decoder says: an exit, FindExits)
	}
	if op == 0xff && p < len(code) {
		switch code[p] >> 3 & 7 {
		case 2, 3:
			in.kind = Call
		case 4, 5:
			in.kind = Jump
		}
	}
	if modrm {
		if p >= len(code) || !x86ValidModRM(op, code[p]) {
			return scanned{}, false
		}
		n, ripDisp, err := x86ModRM(code, p)
		if err != nil {
			return scanned{}, false
		}
		p += n
		if ripDisp >= 0 {
			in.pcrel = true
			end := p + imm
			if end > len(code) {
				return scanned{}, false
			}
			disp := int32(binary.LittleEndian.Uint32(code[ripDisp:]))
			in.target = pc + uint64(end) + uint64(int64(disp))
		}
	}
	p += imm
	if p > len(code) || p > x86MaxLen {
		return scanned{}, false
	}
	in.n = p
	return in, true
}

// fastPrefixes reads the legacy prefixes of the instruction at the start
// of code: what they say, and where the REX prefix or the opcode starts;
// false for 32-bit addressing (67), which the fast path leaves to the
// full decoder.
func fastPrefixes(code []byte) (pre fastPrefix, p int, ok bool) {
	pre.mand = sseNone
prefixes:
	for ; p < len(code); p++ {
		m := uint8(0)
		switch code[p] {
		case 0x66:
			pre.opsize, m = true, sse66
		case 0xf3:
			m = sseF3
		case 0xf2:
			m = sseF2
		case 0xf0, 0x2e, 0x36, 0x3e, 0x26, 0x64, 0x65:
		case 0x67:
			return pre, p, false // 32-bit addressing: rare, EIP-relative
		default:
			break prefixes
		}
		if p == 0 {
			pre.mand = m
		} else {
			pre.mand = 0
		}
	}
	return pre, p, true
}

// fastPrefix is what an instruction's prefixes say to the fast path: an
// operand-size prefix (66), REX.W, and the mandatory prefix of an SSE
// instruction (66, F3 or F2 when it is the only prefix, none when there
// is none).
type fastPrefix struct {
	opsize, rexW bool
	mand         uint8
}

// fastTwoByte reads the second byte of an opcode of the 0F map, at
// code[p], and returns its kind of operands and where they start; false
// for what the fast path leaves to the full decoder.
func fastTwoByte(code []byte, p int, pre fastPrefix) (kind x86Op, next int, ok bool) {
	if p >= len(code) {
		return 0, 0, false
	}
	switch op2 := code[p]; {
	case x86SSE[op2] != 0:
		if x86SSE[op2]&pre.mand == 0 {
			return 0, 0, false
		}
		kind = opM
		if x86SSEImm(op2) {
			kind = opMIb
		}
	case op2 == 0x1f && p+1 < len(code) && code[p+1]>>3&7 != 0:
		return 0, 0, false // a reserved NOP
	case op2 == 0x1e:
		if p == 2 && code[0] == 0xf3 && p+1 < len(code) && code[p+1] == 0xfa {
			return opEndbr, 4, true
		}
		return 0, 0, false
	default:
		kind = x86TwoByte[op2] // (a Jcc rel32: fastBranch knows it by op 0F)
	}
	return kind, p + 1, true
}

// fastBranch measures a direct jump or call, op with operands of kind
// opRel8 or opRel32 at code[p]: op 0F is a two-byte Jcc.
func fastBranch(code []byte, pc uint64, p int, op byte, kind x86Op) (scanned, bool) {
	k := Jump
	switch {
	case op == 0xe8:
		k = Call
	case op >= 0x70 && op <= 0x7f, op == 0x0f:
		k = CondJump
	}
	n := 1
	if kind == opRel32 {
		n = 4
	}
	return x86Rel(code, pc, p, n, k)
}

// fastOperands says, for an opcode whose operands, of kind, start at
// code[p], whether a ModRM byte follows and how long the immediate is.
func fastOperands(code []byte, p int, kind x86Op, pre fastPrefix) (modrm bool, imm int, ok bool) {
	switch kind {
	case opNone:
	case opM:
		modrm = true
	case opIb:
		imm = 1
	case opIz:
		imm = x86Iz(pre.opsize, pre.rexW)
	case opMIb:
		modrm, imm = true, 1
	case opMIz:
		modrm, imm = true, x86Iz(pre.opsize, pre.rexW)
	case opIv:
		switch {
		case pre.rexW:
			imm = 8
		case pre.opsize:
			imm = 2
		default:
			imm = 4
		}
	case opIw:
		imm = 2
	case opGrp3b, opGrp3z:
		if p >= len(code) {
			return false, 0, false
		}
		switch code[p] >> 3 & 7 {
		case 0:
			imm = 1
			if kind == opGrp3z {
				imm = x86Iz(pre.opsize, pre.rexW)
			}
		case 1:
			return false, 0, false // the undocumented alias of /0
		}
		modrm = true
	case opPop:
		if p >= len(code) || code[p]&0x1f >= 8 {
			return false, 0, false // XOP
		}
		modrm = true
	default:
		return false, 0, false
	}
	return modrm, imm, true
}

// x86Iz is the size of an iz immediate.
func x86Iz(opsize, rexW bool) int {
	if opsize && !rexW {
		return 2
	}
	return 4
}

// x86Rel completes a relative branch whose displacement of n bytes is at
// code[p].
func x86Rel(code []byte, pc uint64, p, n int, k Kind) (scanned, bool) {
	if p+n > len(code) {
		return scanned{}, false
	}
	var rel int64
	if n == 1 {
		rel = int64(int8(code[p]))
	} else {
		rel = int64(int32(binary.LittleEndian.Uint32(code[p:])))
	}
	end := p + n
	return scanned{n: end, kind: k, pcrel: true, target: pc + uint64(end) + uint64(rel)}, true
}

// x86ValidModRM reports whether the ModRM byte m is a valid operand of
// the one-byte opcode op where the opcode's group or form restricts it
// (Intel SDM Vol. 2D, Table A-6): the rest goes to the full decoder.
func x86ValidModRM(op, m byte) bool {
	reg, mod3 := m>>3&7, m>>6 == 3
	switch op {
	case 0xfe:
		return reg <= 1
	case 0xff:
		return reg <= 2 || reg == 4 || reg == 6
	case 0xc0, 0xc1, 0xd0, 0xd1, 0xd2, 0xd3:
		return reg != 6
	case 0xc6, 0xc7, 0x8f:
		return reg == 0 // (c6 f8 and c7 f8 are xabort and xbegin)
	case 0x8d:
		return !mod3 // lea of a register
	}
	return true
}
