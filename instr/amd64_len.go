package instr

import "bytes"

// Hand decoding of the amd64 instructions golang.org/x/arch/x86/x86asm gets
// wrong or does not know (see docs/design/libraries.md): only their length, the place
// of a RIP-relative displacement, and a name. The layout of an instruction
// is Intel SDM Vol. 2A §2.1 (legacy), §2.2.1 (REX), §2.3 (VEX) and §2.7
// (EVEX).

// x86Prefixes are the legacy prefixes and REX at the start of an
// instruction.
type x86Prefixes struct {
	n        int  // bytes they take
	opsize   bool // 66
	addrsize bool // 67
	rep      bool // f3
	repne    bool // f2
	lock     bool // f0
	seg      byte // last segment override (26 2e 36 3e 64 65), 0 if none
	rex      byte // 0 if none
}

// scanX86Prefixes reads the prefixes at the start of code.
func scanX86Prefixes(code []byte) x86Prefixes {
	var p x86Prefixes
	for ; p.n < len(code) && p.n < x86MaxLen; p.n++ {
		switch b := code[p.n]; b {
		case 0x66:
			p.opsize = true
		case 0x67:
			p.addrsize = true
		case 0xf3:
			p.rep = true
		case 0xf2:
			p.repne = true
		case 0xf0:
			p.lock = true
		case 0x26, 0x2e, 0x36, 0x3e, 0x64, 0x65:
			p.seg = b
		default:
			if b&0xf0 == 0x40 {
				p.rex = b
				p.n++
			}
			return p
		}
	}
	return p
}

// x86ModRM measures the ModRM byte at code[pos] with the SIB byte and
// displacement that follow it (64-bit mode, 32- or 64-bit addressing). It
// returns the bytes they take and, for a RIP-relative operand (mod 00, r/m
// 101), the offset of its 32-bit displacement in code, else -1.
func x86ModRM(code []byte, pos int) (n, ripDisp int, err error) {
	if pos >= len(code) {
		return 0, -1, ErrTruncated
	}
	mod, rm := code[pos]>>6, code[pos]&7
	n, ripDisp = 1, -1
	switch {
	case mod == 3:
		return 1, -1, nil
	case rm == 4: // SIB
		if pos+1 >= len(code) {
			return 0, -1, ErrTruncated
		}
		n++
		if mod == 0 && code[pos+1]&7 == 5 {
			n += 4 // no base: disp32
		}
	case mod == 0 && rm == 5:
		ripDisp = pos + 1
		n += 4
	}
	switch mod {
	case 1:
		n++
	case 2:
		n += 4
	}
	if pos+n > len(code) {
		return 0, -1, ErrTruncated
	}
	return n, ripDisp, nil
}

// x86Vex measures a VEX (c4, c5), EVEX (62) or XOP (8f) encoded
// instruction whose prefix is at code[pos] (in 64-bit mode c4, c5 and 62
// are always prefixes; 8f is XOP when its map field is 8 or more, else POP).
// It returns the instruction's length and the offset of a RIP-relative
// displacement (-1 if none). The immediate is known from the opcode map:
// every 0F3A and XOP map 8 instruction has an imm8, XOP map A an imm32, and
// in map 0F only opcodes 70-73 and C2, C4-C6 have one; VZEROUPPER/VZEROALL
// (0F 77) are the only ones without a ModRM byte (Intel SDM Vol. 2A
// §2.3.5; AMD64 APM Vol. 3 §1.8).
func x86Vex(code []byte, pos int) (length, ripDisp int, err error) {
	if pos+1 >= len(code) {
		return 0, -1, ErrTruncated
	}
	var mapSel byte
	var opPos int
	switch code[pos] {
	case 0xc5:
		mapSel, opPos = 1, pos+2
	case 0xc4:
		mapSel, opPos = code[pos+1]&0x1f, pos+3
	case 0x62:
		mapSel, opPos = code[pos+1]&7, pos+4 // 5 and 6 are AVX512-FP16's
	case 0x8f:
		mapSel, opPos = code[pos+1]&0x1f, pos+3
		if mapSel < 8 || mapSel > 10 {
			return 0, -1, ErrUnrecognized
		}
	default:
		return 0, -1, ErrUnrecognized
	}
	if mapSel == 0 || mapSel == 4 || mapSel == 7 || code[pos] == 0xc4 && mapSel > 3 {
		return 0, -1, ErrUnrecognized
	}
	if opPos >= len(code) {
		return 0, -1, ErrTruncated
	}
	op := code[opPos]
	if mapSel == 1 && op == 0x77 {
		if code[pos] == 0x62 {
			return 0, -1, ErrUnrecognized
		}
		return opPos + 1, -1, nil
	}
	n, ripDisp, err := x86ModRM(code, opPos+1)
	if err != nil {
		return 0, -1, err
	}
	length = opPos + 1 + n
	switch {
	case mapSel == 3, mapSel == 8:
		length++
	case mapSel == 10:
		length += 4
	case mapSel == 1 && (op >= 0x70 && op <= 0x73 || op == 0xc2 || op >= 0xc4 && op <= 0xc6):
		length++
	}
	if length > len(code) {
		return 0, -1, ErrTruncated
	}
	return length, ripDisp, nil
}

// x86Special is an instruction decoded by hand.
type x86Special struct {
	len     int
	kind    Kind
	ripDisp int // offset of a RIP-relative disp32, -1 if none
	text    string
}

// decodeX86Special recognises the non-VEX instructions x86asm decodes as
// Op 0 or does not know: ENDBR64/32 and the other CET shadow-stack
// instructions (RDSSP, INCSSP, SAVEPREVSSP, SETSSBSY, RSTORSSP, CLRSSBSY,
// WRSS, WRUSS), ADCX/ADOX, RDPID, RDSEED, RD/WR FS/GS BASE,
// RDPKRU/WRPKRU, MPX, VIA PadLock and 3DNow!. ok is
// false when code is none of them.
func decodeX86Special(code []byte) (s x86Special, ok bool, err error) {
	p := scanX86Prefixes(code)
	op := code[p.n:]
	at := func(b ...byte) bool { return bytes.HasPrefix(op, b) }
	var modrm byte // the byte after a two-byte opcode
	if len(op) > 2 {
		modrm = op[2]
	}
	mod3, reg := modrm>>6 == 3, modrm>>3&7
	plain := func(n int, text string) (x86Special, bool, error) {
		return x86Special{len: p.n + n, kind: Other, ripDisp: -1, text: text}, true, nil
	}
	switch {
	case p.n == 0 && at(0x0f, 0x01, 0xee):
		return plain(3, "rdpkru")
	case p.n == 0 && at(0x0f, 0x01, 0xef):
		return plain(3, "wrpkru")
	case p.rep && at(0x0f, 0x01, 0xea):
		return plain(3, "saveprevssp")
	case p.rep && at(0x0f, 0x01, 0xe8):
		return plain(3, "setssbsy")
	case p.rep && at(0x0f, 0x01) && !mod3 && reg == 5:
		return x86ModRMInst(code, p.n+2, Other, "rstorssp")
	case p.rep && at(0x0f, 0x1e):
		// The 0F 1E space is a NOP with a ModRM operand (Intel SDM Vol.
		// 2B "NOP"): fa/fb are ENDBR64/32, mod 11 /1 is RDSSPD/Q.
		switch {
		case p.n == 1 && modrm == 0xfa:
			return x86ModRMInst(code, p.n+2, Nop, "endbr64")
		case p.n == 1 && modrm == 0xfb:
			return x86ModRMInst(code, p.n+2, Nop, "endbr32")
		case mod3 && reg == 1:
			return x86ModRMInst(code, p.n+2, Other, "rdssp")
		}
		return x86ModRMInst(code, p.n+2, Nop, "nop")
	case p.rep && at(0x0f, 0xae) && (mod3 && (reg <= 3 || reg == 5) || !mod3 && reg == 6):
		names := [8]string{"rdfsbase", "rdgsbase", "wrfsbase", "wrgsbase", "", "incssp", "clrssbsy", ""}
		return x86ModRMInst(code, p.n+2, Other, names[reg])
	case at(0x0f, 0xc7) && mod3 && reg == 7:
		if p.rep {
			return plain(3, "rdpid")
		}
		return plain(3, "rdseed")
	case at(0x0f, 0xa6) && len(op) > 2 && (modrm == 0xc0 || modrm == 0xc8 || modrm == 0xd0):
		return plain(3, "padlock") // VIA PadLock montmul, xsha1, xsha256
	case at(0x0f, 0xa7) && len(op) > 2 && modrm&0xc7 == 0xc0:
		return plain(3, "padlock") // VIA PadLock xstore, xcrypt-*
	case at(0x0f, 0x0e):
		return plain(2, "femms")
	case at(0x0f, 0x0f): // 3DNow!: ModRM, then the opcode as an imm8
		s, ok, err := x86ModRMInst(code, p.n+2, Other, "3dnow")
		if err == nil && s.len >= len(code) {
			err = ErrTruncated
		}
		s.len++
		return s, ok, err
	case at(0x0f, 0x1a), at(0x0f, 0x1b): // MPX, NOPs without MPX
		return x86ModRMInst(code, p.n+2, Other, "mpx")
	case at(0x0f, 0x38, 0xf6):
		name := "wrss"
		if p.opsize {
			name = "adcx"
		}
		if p.rep {
			name = "adox"
		}
		return x86ModRMInst(code, p.n+3, Other, name)
	case p.opsize && at(0x0f, 0x38, 0xf5):
		return x86ModRMInst(code, p.n+3, Other, "wruss")
	}
	return x86Special{}, false, nil
}

// x86ModRMInst completes a hand-decoded instruction whose ModRM byte is at
// code[pos] and which has no immediate.
func x86ModRMInst(code []byte, pos int, kind Kind, text string) (x86Special, bool, error) {
	n, ripDisp, err := x86ModRM(code, pos)
	if err != nil {
		return x86Special{}, true, err
	}
	return x86Special{len: pos + n, kind: kind, ripDisp: ripDisp, text: text}, true, nil
}
