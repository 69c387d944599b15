// An A64 interpreter and the GNU disassembler for the tests: the arm64
// trampolines, depth and record code are run here (a64Exec) on fake
// registers and memory, on any host, and listed by objdump (gnuDisasm)
// to compare with what the Arm ARM says they are.

package instr

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// a64Words is the memory image of instruction words.
func a64Words(ws ...uint32) []byte {
	var b []byte
	for _, w := range ws {
		b = binary.LittleEndian.AppendUint32(b, w)
	}
	return b
}

// gnuLineRE matches one instruction of objdump -D on a raw binary: address,
// word, text.
var gnuLineRE = regexp.MustCompile(`^\s*([0-9a-f]+):\s+([0-9a-f]{8})\s+(.*)$`)

// gnuDisasm disassembles code placed at addr with the GNU disassembler
// (aarch64-linux-gnu-objdump -D -b binary -m aarch64), skipping the test
// if it is missing, and returns each instruction's text with blanks
// squeezed and comments ("// #1", "// b.any") and symbols dropped.
func gnuDisasm(t *testing.T, code []byte, addr uint64) []string {
	t.Helper()
	const tool = "aarch64-linux-gnu-objdump"
	need(t, tool)
	bin := filepath.Join(t.TempDir(), "code.bin")
	if err := os.WriteFile(bin, code, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tool, "-D", "-b", "binary", "-m", "aarch64", fmt.Sprintf("--adjust-vma=%#x", addr), bin).Output()
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := gnuLineRE.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		at, err := strconv.ParseUint(m[1], 16, 64)
		if err != nil || at != addr+uint64(4*len(lines)) {
			t.Fatalf("objdump line %q: address %#x, want %#x", sc.Text(), at, addr+uint64(4*len(lines)))
		}
		if want := fmt.Sprintf("%08x", binary.LittleEndian.Uint32(code[4*len(lines):])); m[2] != want {
			t.Fatalf("objdump line %q: word %s, want %s", sc.Text(), m[2], want)
		}
		text := m[3]
		if i := strings.Index(text, "//"); i >= 0 {
			text = text[:i]
		}
		if i := strings.Index(text, " <"); i >= 0 {
			text = text[:i]
		}
		lines = append(lines, strings.Join(strings.Fields(text), " "))
	}
	if len(lines) != len(code)/4 {
		t.Fatalf("objdump listed %d instructions of %d:\n%s", len(lines), len(code)/4, out)
	}
	return lines
}

// a64Limit is the most instructions a64Exec runs: enough for functions
// made of book code that call each other, few enough that code caught in
// a loop fails at once.
const a64Limit = 10000

// a64Break is a64Exec's error where the code reaches a BRK, which would
// stop the thread for its tracer: pc is the BRK's address, where the PC
// is left (an A64 breakpoint's exception does not move it past).
type a64Break struct{ pc uint64 }

func (b a64Break) Error() string { return fmt.Sprintf("%#x: brk", b.pc) }

// a64Exec runs code placed at addr on r and m until the PC leaves it. It
// knows only the instructions trampolines and the book code are made of,
// written out here from the Arm ARM (C6.2) rather than taken from the
// package, and fails on any other. At a BRK it stops with an a64Break.
// Where r has a counter (r.ticks), every instruction run adds one to it,
// and MRS of CNTVCT_EL0 reads it: the instructions run before. MRS of
// TPIDR_EL0 reads r.tp, the thread pointer.
func a64Exec(code []byte, addr uint64, r *fakeRegs, m *fakeMem) error {
	sx := func(v uint32, bits uint) uint64 { return uint64(int64(int32(v<<(32-bits)) >> (32 - bits))) }
	for n := 0; ; n++ {
		pc := r.pc
		if pc < addr || pc >= addr+uint64(len(code)) {
			return nil
		}
		if n == a64Limit {
			return fmt.Errorf("still in the code after %d instructions", n)
		}
		w := binary.LittleEndian.Uint32(code[pc-addr:])
		rt, rn := w&31, w>>5&31
		get := func(n uint32) uint64 { // 31 is xzr
			if n == 31 {
				return 0
			}
			return r.r[n]
		}
		set := func(n uint32, v uint64) {
			if n != 31 {
				r.r[n] = v
			}
		}
		base := r.r[rn] // 31 is sp
		// A load or store whose base is sp faults where sp is not a
		// multiple of 16, as Linux has the check enabled (D1.3.10 "SP
		// alignment checking", SCTLR_EL1.SA0).
		aligned := func() error {
			if rn == 31 && r.r[31]%16 != 0 {
				return fmt.Errorf("%#x: sp %#x not a multiple of 16 as a base", pc, r.r[31])
			}
			return nil
		}
		load := func(off uint64, size int) (uint64, error) {
			if err := aligned(); err != nil {
				return 0, err
			}
			var b [8]byte
			err := m.ReadMem(base+off, b[:size])
			return binary.LittleEndian.Uint64(b[:]), err
		}
		storeN := func(off uint64, v uint64, size int) error { // the low size bytes of v
			if err := aligned(); err != nil {
				return err
			}
			return m.WriteMem(base+off, binary.LittleEndian.AppendUint64(nil, v)[:size])
		}
		store := func(off uint64, v uint64) error { return storeN(off, v, 8) }
		next := pc + 4
		switch {
		case w == 0xd503201f: // NOP
		case w&0xfffff0ff == 0xd50330df: // ISB: nothing to wait for here
		case w&0xffe0001f == 0xd4200000: // BRK #imm16
			return a64Break{pc}
		case w&0xffffffe0 == 0xd53be040: // MRS Xt, CNTVCT_EL0 (op0 3, op1 3, CRn 14, CRm 0, op2 2)
			if r.ticks == nil {
				return fmt.Errorf("%#x: the counter read, and there is none", pc)
			}
			set(rt, *r.ticks)
		case w&0xffffffe0 == 0xd53bd040: // MRS Xt, TPIDR_EL0 (op0 3, op1 3, CRn 13, CRm 0, op2 2)
			set(rt, r.tp)
		case w&0xfc000000 == 0x94000000: // BL: x30 is the return address
			r.r[30] = pc + 4
			next = pc + sx(w&0x3ffffff, 26)*4
		case w&0xff800000 == 0xd2800000: // MOVZ (64-bit)
			set(rt, uint64(w>>5&0xffff)<<(16*(w>>21&3)))
		case w&0xff800000 == 0xf2800000: // MOVK (64-bit)
			sh := 16 * (w >> 21 & 3)
			set(rt, get(rt)&^(0xffff<<sh)|uint64(w>>5&0xffff)<<sh)
		case w&0xfc000000 == 0x14000000: // B
			next = pc + sx(w&0x3ffffff, 26)*4
		case w&0xff000010 == 0x54000000: // B.cond
			if a64CondHolds(uint8(w&15), r.flags) {
				next = pc + sx(w>>5&0x7ffff, 19)*4
			}
		case w&0x7e000000 == 0x34000000: // CBZ, CBNZ
			v := get(rt)
			if w>>31 == 0 {
				v = uint64(uint32(v))
			}
			if (v == 0) != (w>>24&1 == 1) {
				next = pc + sx(w>>5&0x7ffff, 19)*4
			}
		case w&0x7e000000 == 0x36000000: // TBZ, TBNZ
			if (get(rt)>>(w>>31<<5|w>>19&31)&1 == 0) != (w>>24&1 == 1) {
				next = pc + sx(w>>5&0x3fff, 14)*4
			}
		case w&0xffc00000 == 0xf9400000: // LDR (immediate), 64-bit
			v, err := load(uint64(w>>10&0xfff)*8, 8)
			if err != nil {
				return err
			}
			set(rt, v)
		case w&0xffc00000 == 0xb9400000: // LDR (immediate), 32-bit
			v, err := load(uint64(w>>10&0xfff)*4, 4)
			if err != nil {
				return err
			}
			set(rt, v)
		case w&0xffc00000 == 0xb9800000: // LDRSW (immediate)
			v, err := load(uint64(w>>10&0xfff)*4, 4)
			if err != nil {
				return err
			}
			set(rt, uint64(int64(int32(v))))
		case w&0xffe0fc00 == 0xf8200000: // LDADD (64-bit); STADD is Rt = xzr
			old, err := load(0, 8)
			if err != nil {
				return err
			}
			if err := m.WriteMem(base, binary.LittleEndian.AppendUint64(nil, old+get(w>>16&31))); err != nil {
				return err
			}
			set(rt, old)
		case w&0xfffffc1f == 0xd61f0000, w&0xfffffc1f == 0xd65f0000: // BR, RET: Xn any register
			next = get(rn)
		case w&0x9f000000 == 0x10000000: // ADR: Xd = PC + immhi:immlo, sign-extended; Rd 31 is xzr
			set(rt, pc+sx(w>>5&0x7ffff<<2|w>>29&3, 21))
		case w&0xff800000 == 0x91000000: // ADD (immediate): Rd and Rn 31 are sp
			r.r[rt] = r.r[rn] + uint64(w>>10&0xfff)<<(12*(w>>22&1))
		case w&0xff800000 == 0xd1000000: // SUB (immediate)
			r.r[rt] = r.r[rn] - uint64(w>>10&0xfff)<<(12*(w>>22&1))
		case w&0xff800000 == 0xf1000000: // SUBS (immediate): Rn 31 is sp, Rd xzr (CMP)
			imm := uint64(w>>10&0xfff) << (12 * (w >> 22 & 1))
			v := r.r[rn]
			r.flags = subFlags(v, imm)
			set(rt, v-imm)
		case w&0xff800000 == 0xb1000000: // ADDS (immediate): Rn 31 is sp, Rd xzr (CMN)
			imm := uint64(w>>10&0xfff) << (12 * (w >> 22 & 1))
			v := r.r[rn]
			r.flags = addFlags(v, imm)
			set(rt, v+imm)
		case w&0xffe0fc00 == 0xeb206000: // SUBS (extended register), UXTX #0: Rn 31 is sp, Rd xzr (CMP)
			v, m := r.r[rn], get(w>>16&31)
			r.flags = subFlags(v, m)
			set(rt, v-m)
		case w&0xffe0fc00 == 0x6b000000: // SUBS (shifted register), 32-bit, LSL #0: Rn, Rm and Rd 31 are wzr (CMP)
			// NZCV of the 32-bit difference are those of the operands
			// in the high halves of 64-bit ones, the low halves zero.
			v, m := uint64(uint32(get(rn))), uint64(uint32(get(w>>16&31)))
			r.flags = subFlags(v<<32, m<<32)
			set(rt, uint64(uint32(v-m)))
		case w&0xffe0fc00 == 0xcb206000: // SUB (extended register), UXTX #0: Rn and Rd 31 are sp, Rm 31 xzr
			r.r[rt] = r.r[rn] - get(w>>16&31)
		case w&0xff200000 == 0x8b000000 && w>>22&3 == 0: // ADD (shifted register), LSL
			set(rt, get(rn)+get(w>>16&31)<<(w>>10&63))
		case w&0xff200000 == 0xcb000000 && w>>22&3 == 0: // SUB (shifted register), LSL: NEG is Rn xzr
			set(rt, get(rn)-get(w>>16&31)<<(w>>10&63))
		case w&0xffe08000 == 0x9b000000: // MADD (64-bit): Xd = Xa + Xn*Xm; MUL is Xa xzr
			set(rt, get(w>>10&31)+get(rn)*get(w>>16&31))
		case w&0xffe0fc00 == 0x9bc07c00: // UMULH: the high half of Xn*Xm, unsigned
			hi, _ := bits.Mul64(get(rn), get(w>>16&31))
			set(rt, hi)
		case w&0xffe00000 == 0x93c00000: // EXTR (64-bit): the low half of Xn:Xm >> lsb
			lo, lsb := get(w>>16&31), w>>10&63
			if lsb == 0 {
				set(rt, lo)
			} else {
				set(rt, lo>>lsb|get(rn)<<(64-lsb))
			}
		case w&0xffc00000 == 0xd3400000 && w>>10&63 >= w>>16&63: // UBFM as UBFX, LSR
			lsb, width := w>>16&63, (w>>10&63)-(w>>16&63)+1
			set(rt, get(rn)>>lsb&(1<<width-1))
		case w&0xffc00000 == 0xd3400000: // UBFM as UBFIZ, LSL (imms < immr): Xn<imms:0> placed at bit 64-immr, zeros elsewhere
			immr, imms := w>>16&63, w>>10&63
			set(rt, get(rn)&(1<<(imms+1)-1)<<(64-immr))
		case w&0xffe00000 == 0xaa000000: // ORR (shifted register), 64-bit, LSL (shift 00, N 0): Rn and Rd 31 are xzr
			set(rt, get(rn)|get(w>>16&31)<<(w>>10&63))
		case w&0xff800000 == 0x92000000: // AND (immediate): Rd 31 is sp
			r.r[rt] = get(rn) & bitMask(w)
		case w&0xff800000 == 0xf2000000: // ANDS (immediate)
			v := get(rn) & bitMask(w)
			set(rt, v)
			r.flags = v & (1 << 63) >> 32 // N
			if v == 0 {
				r.flags |= pstateZ
			}
		case w&0xffe0ec00 == 0xb8606800: // LDR (register), 32-bit: [Xn, Xm], LSL #2 where S (option 011), else #0
			base += get(w>>16&31) << (2 * (w >> 12 & 1))
			v, err := load(0, 4)
			if err != nil {
				return err
			}
			set(rt, v)
		case w&0xffe00c00 == 0xf8600800: // LDR (register), 64-bit: [Xn, Xm], LSL #3 where S
			if w>>13&7 != 3 { // option 011, LSL (UXTX); the extended forms are not emulated
				return fmt.Errorf("%#x: %#08x not emulated here", pc, w)
			}
			base += get(w>>16&31) << (3 * (w >> 12 & 1))
			v, err := load(0, 8)
			if err != nil {
				return err
			}
			set(rt, v)
		case w&0xffc00000 == 0xf9000000: // STR (immediate), 64-bit
			if err := store(uint64(w>>10&0xfff)*8, get(rt)); err != nil {
				return err
			}
		case w&0xffc00000 == 0xb9000000: // STR (immediate), 32-bit: Wt's 4 bytes
			if err := storeN(uint64(w>>10&0xfff)*4, get(rt), 4); err != nil {
				return err
			}
		case w&0xffe00c00 == 0xf8400000: // LDUR (64-bit): a signed, unscaled offset
			v, err := load(sx(w>>12&0x1ff, 9), 8)
			if err != nil {
				return err
			}
			set(rt, v)
		case w&0xffe00c00 == 0xf8000000: // STUR (64-bit)
			if err := store(sx(w>>12&0x1ff, 9), get(rt)); err != nil {
				return err
			}
		case w&0xffc00000 == 0xa9400000: // LDP (64-bit), signed offset: imm7 scaled by 8
			off := sx(w>>15&0x7f, 7) * 8
			v1, err := load(off, 8)
			if err != nil {
				return err
			}
			v2, err := load(off+8, 8)
			if err != nil {
				return err
			}
			set(rt, v1)
			set(w>>10&31, v2)
		case w&0xffc00000 == 0xa9000000: // STP (64-bit), signed offset
			off := sx(w>>15&0x7f, 7) * 8
			if err := store(off, get(rt)); err != nil {
				return err
			}
			if err := store(off+8, get(w>>10&31)); err != nil {
				return err
			}
		case w&0xfe000000 == 0xa8000000 && w>>23&1 == 1: // STP, LDP (64-bit), post-index (bits 24:23 01) and pre-index (11)
			// The address is Xn plus the scaled imm7 before the access
			// where pre-indexed, Xn itself where post-indexed; Xn is then
			// written back with the sum. A writeback to a register the
			// pair loads or stores, or a load of one register twice, is
			// CONSTRAINED UNPREDICTABLE: not emulated.
			t2, pre, ld := w>>10&31, w>>24&1 == 1, w>>22&1 == 1
			if rn != 31 && (rn == rt || rn == t2) || ld && rt == t2 {
				return fmt.Errorf("%#x: %#08x unpredictable", pc, w)
			}
			wb := base + sx(w>>15&0x7f, 7)*8
			off := uint64(0)
			if pre {
				off = wb - base
			}
			if ld {
				v1, err := load(off, 8)
				if err != nil {
					return err
				}
				v2, err := load(off+8, 8)
				if err != nil {
					return err
				}
				set(rt, v1)
				set(t2, v2)
			} else {
				if err := store(off, get(rt)); err != nil {
					return err
				}
				if err := store(off+8, get(t2)); err != nil {
					return err
				}
			}
			r.r[rn] = wb // 31 is sp
		default:
			return fmt.Errorf("%#x: %#08x not emulated here", pc, w)
		}
		r.pc = next
		if r.ticks != nil {
			*r.ticks++
		}
	}
}

// subFlags is NZCV of a - b (SUBS; Arm ARM AddWithCarry).
func subFlags(a, b uint64) uint64 {
	res := a - b
	f := res & (1 << 63) >> 32 // N, bit 31
	if res == 0 {
		f |= pstateZ
	}
	if a >= b {
		f |= pstateC
	}
	if (a^b)&(a^res)>>63 != 0 {
		f |= pstateV
	}
	return f
}

// addFlags is NZCV of a + b (ADDS; Arm ARM AddWithCarry): C is the
// carry out of bit 63, V where a and b have one sign and the sum the
// other.
func addFlags(a, b uint64) uint64 {
	res := a + b
	f := res & (1 << 63) >> 32 // N, bit 31
	if res == 0 {
		f |= pstateZ
	}
	if res < a {
		f |= pstateC
	}
	if ^(a^b)&(a^res)>>63 != 0 {
		f |= pstateV
	}
	return f
}

// bitMask decodes the 64-bit immediate of a logical instruction with
// N = 1: imms+1 ones rotated right by immr (Arm ARM DecodeBitMasks).
func bitMask(w uint32) uint64 {
	immr, imms := w>>16&63, w>>10&63
	ones := uint64(1)<<(imms+1) - 1
	return ones>>immr | ones<<((64-immr)&63)
}
