package unwind

// The CFA programs of the FDEs are rewritten once, at load, so that
// delve's interpreter (frame.FrameDescriptionEntry.EstablishFrame) runs
// them as DWARF 5 (section 6.4.2) says:
//
//   - DW_CFA_restore and DW_CFA_restore_extended set a register to its
//     rule in the CIE's initial instructions; delve never records those
//     rules and makes the register undefined, which would end a stack in
//     an epilogue. They become the CIE's instruction for the register, or
//     DW_CFA_same_value when the CIE gives it none.
//   - DW_CFA_val_offset's offset is factored by the data alignment; delve
//     does not factor it. It becomes DW_CFA_val_offset_sf, which delve
//     factors.
//   - On arm64, DW_CFA_AARCH64_negate_ra_state (0x2d, in every function
//     built with -mbranch-protection) toggles whether the return address
//     is signed; delve rejects the opcode. It is dropped: the unwinder
//     strips the pointer-authentication bits of every return address.
//   - An opcode the rewriter does not know, or one cut short, becomes
//     opInvalid and ends the program: delve fails on it only when a PC
//     past it is asked for, so the rows before it still serve.
//
// Inserting or removing bytes keeps every row at its place: locations
// advance by deltas (DW_CFA_advance_loc*) or are absolute (DW_CFA_set_loc).

const (
	cfaNop                 = 0x00
	cfaSetLoc              = 0x01
	cfaAdvanceLoc1         = 0x02
	cfaAdvanceLoc2         = 0x03
	cfaAdvanceLoc4         = 0x04
	cfaOffsetExt           = 0x05
	cfaRestoreExt          = 0x06
	cfaUndefined           = 0x07
	cfaSameValue           = 0x08
	cfaRegister            = 0x09
	cfaRememberState       = 0x0a
	cfaRestoreState        = 0x0b
	cfaDefCFA              = 0x0c
	cfaDefCFARegister      = 0x0d
	cfaDefCFAOffset        = 0x0e
	cfaDefCFAExpr          = 0x0f
	cfaExpression          = 0x10
	cfaOffsetExtSf         = 0x11
	cfaDefCFASf            = 0x12
	cfaDefCFAOffsetSf      = 0x13
	cfaValOffset           = 0x14
	cfaValOffsetSf         = 0x15
	cfaValExpression       = 0x16
	cfaNegateRAState       = 0x2d // DW_CFA_AARCH64_negate_ra_state (DW_CFA_GNU_window_save on SPARC)
	cfaGNUArgsSize         = 0x2e
	cfaAdvanceLoc          = 0x40 // high 2 bits; low 6: delta
	cfaOffset              = 0x80 // high 2 bits; low 6: register
	cfaRestore             = 0xc0 // high 2 bits; low 6: register
	opInvalid              = 0x17 // no DWARF CFA opcode: delve fails on it
	addrSize               = 8    // DW_CFA_set_loc's operand, as delve reads it
	maxLEB                 = 10   // bytes of a 64-bit LEB128 number
	highBits          byte = 0xc0
)

// cfaInst is one decoded CFA instruction: its opcode (the high two bits
// alone for the three compact forms), its register operand when it has
// one, and its bytes.
type cfaInst struct {
	op     byte
	reg    uint64
	hasReg bool
	raw    []byte
}

// uleb reads an unsigned LEB128 number at b[i:], returning it and the index
// after it; ok is false when it is cut short or too long.
func uleb(b []byte, i int) (v uint64, next int, ok bool) {
	for shift := 0; i < len(b) && shift < 7*maxLEB; shift += 7 {
		c := b[i]
		i++
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, i, true
		}
	}
	return 0, i, false
}

// sleb reads a signed LEB128 number at b[i:], as [uleb].
func sleb(b []byte, i int) (v int64, next int, ok bool) {
	var shift uint
	for ; i < len(b) && shift < 7*maxLEB; shift += 7 {
		c := b[i]
		i++
		v |= int64(c&0x7f) << shift
		if c&0x80 == 0 {
			if c&0x40 != 0 && shift+7 < 64 {
				v |= -1 << (shift + 7)
			}
			return v, i, true
		}
	}
	return 0, i, false
}

// skipLEB returns the index after n LEB128 numbers at b[i:].
func skipLEB(b []byte, i, n int) (int, bool) {
	ok := true
	for ; n > 0 && ok; n-- {
		_, i, ok = uleb(b, i)
	}
	return i, ok
}

// decodeCFA decodes the instruction at b[i:]; ok is false for an opcode it
// does not know or one cut short.
func decodeCFA(b []byte, i int) (in cfaInst, next int, ok bool) {
	start := i
	op := b[i]
	i++
	in.op = op
	switch op & highBits {
	case cfaAdvanceLoc:
		in.op = cfaAdvanceLoc
	case cfaOffset:
		in.op, in.reg, in.hasReg = cfaOffset, uint64(op&^highBits), true
		i, ok = skipLEB(b, i, 1)
	case cfaRestore:
		in.op, in.reg, in.hasReg = cfaRestore, uint64(op&^highBits), true
	}
	if op&highBits != 0 {
		in.raw = b[start:i]
		return in, i, ok || in.op != cfaOffset
	}
	ok = true
	switch op {
	case cfaNop, cfaRememberState, cfaRestoreState, cfaNegateRAState:
	case cfaSetLoc:
		i += addrSize
	case cfaAdvanceLoc1:
		i++
	case cfaAdvanceLoc2:
		i += 2
	case cfaAdvanceLoc4:
		i += 4
	case cfaDefCFAOffset, cfaDefCFAOffsetSf, cfaGNUArgsSize:
		i, ok = skipLEB(b, i, 1)
	case cfaRestoreExt, cfaUndefined, cfaSameValue, cfaDefCFARegister:
		in.reg, i, ok = uleb(b, i)
		in.hasReg = op != cfaDefCFARegister
	case cfaOffsetExt, cfaRegister, cfaOffsetExtSf, cfaValOffset, cfaValOffsetSf:
		in.reg, i, ok = uleb(b, i)
		in.hasReg = true
		if ok {
			i, ok = skipLEB(b, i, 1)
		}
	case cfaDefCFA, cfaDefCFASf:
		i, ok = skipLEB(b, i, 2)
	case cfaDefCFAExpr:
		i, ok = skipBlock(b, i)
	case cfaExpression, cfaValExpression:
		in.reg, i, ok = uleb(b, i)
		in.hasReg = true
		if ok {
			i, ok = skipBlock(b, i)
		}
	default:
		return in, i, false
	}
	if !ok || i > len(b) {
		return in, i, false
	}
	in.raw = b[start:i]
	return in, i, true
}

// skipBlock returns the index after a block (a ULEB128 length and as many
// bytes) at b[i:].
func skipBlock(b []byte, i int) (int, bool) {
	n, i, ok := uleb(b, i)
	if !ok || n > uint64(len(b)-i) {
		return i, false
	}
	return i + int(n), true
}

// cieRules returns, for each register the CIE's initial instructions
// give a rule, the instruction that gives it: what DW_CFA_restore of the
// register sets again.
func cieRules(initial []byte) map[uint64][]byte {
	rules := map[uint64][]byte{}
	for i := 0; i < len(initial); {
		in, next, ok := decodeCFA(initial, i)
		if !ok {
			break
		}
		if in.hasReg && in.op != cfaRestore && in.op != cfaRestoreExt {
			rules[in.reg] = in.raw
		}
		i = next
	}
	return rules
}

// rewriteCFA returns prog rewritten for delve (see the top of this file),
// or prog itself when it needs nothing. rules are the CIE's initial rules
// ([cieRules]).
func rewriteCFA(prog []byte, rules map[uint64][]byte, arch Arch) []byte {
	ar, _ := arch.regs()
	negateRA := ar.negateRA
	var out []byte // nil until a change
	for i := 0; i < len(prog); {
		in, next, ok := decodeCFA(prog, i)
		var repl []byte
		keep := ok
		switch {
		case !ok:
			repl = []byte{opInvalid}
		case in.op == cfaRestore || in.op == cfaRestoreExt:
			keep = false
			if repl = rules[in.reg]; repl == nil {
				repl = appendULEB([]byte{cfaSameValue}, in.reg)
			}
		case in.op == cfaValOffset:
			keep = false
			n, _, _ := uleb(in.raw, len(in.raw)-lebLen(in.raw))
			repl = appendSLEB(appendULEB([]byte{cfaValOffsetSf}, in.reg), int64(n))
		case in.op == cfaNegateRAState && negateRA:
			keep = false
		case in.op == cfaNegateRAState: // DW_CFA_GNU_window_save elsewhere
			keep, repl = false, []byte{opInvalid}
			ok = false
		}
		if !keep && out == nil {
			out = append(make([]byte, 0, len(prog)+8), prog[:i]...)
		}
		if keep && out != nil {
			out = append(out, in.raw...)
		} else if !keep {
			out = append(out, repl...)
		}
		if !ok {
			break
		}
		i = next
	}
	if out == nil {
		return prog
	}
	return out
}

// lebLen returns the length of the LEB128 number that ends b.
func lebLen(b []byte) int {
	n := 1
	for n < len(b) && b[len(b)-n-1]&0x80 != 0 {
		n++
	}
	return n
}

func appendULEB(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendSLEB(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
