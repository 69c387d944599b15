// The listings of the narration (profile --explain, explain_sites.go):
// code disassembled, with its bytes and notes, and the bytes of a site
// before and after PROFILE writes over them.

package profile

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/sourceprofiler/sprof/instr"
)

// asmLine is one instruction of a listing: its address, its bytes and
// its text.
type asmLine struct {
	pc   uint64
	b    []byte
	text string
}

// disasm decodes code at pc into instructions; bytes that do not decode
// are shown as such, one instruction's alignment at a time. A word that
// an instruction reads or jumps through (a PC-relative operand of a
// load, or of an indirect jump: "jmpq *(%rip)" and the address after
// it) is shown as data.
func disasm(d instr.Decoder, code []byte, pc uint64) []asmLine {
	var out []asmLine
	step := instr.InstAlign(d)
	data := map[uint64]bool{}
	for off := 0; off < len(code); {
		at := pc + uint64(off)
		if data[at] {
			n := min(8, len(code)-off)
			out = append(out, asmLine{at, code[off : off+n], fmt.Sprintf("(data: %#x)", leWord(code[off:off+n]))})
			off += n
			continue
		}
		in, err := d.Decode(code[off:], at)
		if err != nil || in.Len <= 0 || off+in.Len > len(code) {
			n := min(step, len(code)-off)
			out = append(out, asmLine{at, code[off : off+n], "(not an instruction)"})
			off += n
			continue
		}
		if in.PCRel && in.Target > at && in.Target < pc+uint64(len(code)) &&
			(in.Kind == instr.Other || strings.Contains(in.Text, "*")) {
			data[in.Target] = true
		}
		out = append(out, asmLine{at, code[off : off+in.Len], in.Text})
		off += in.Len
	}
	return out
}

// leWord reads up to 8 bytes as a little-endian number.
func leWord(b []byte) uint64 {
	var w [8]byte
	copy(w[:], b)
	return binary.LittleEndian.Uint64(w[:])
}

// hexBytes shows bytes as hexadecimal pairs: "55 48 89 e5".
func hexBytes(b []byte) string {
	var s strings.Builder
	for i, c := range b {
		if i > 0 {
			s.WriteByte(' ')
		}
		fmt.Fprintf(&s, "%02x", c)
	}
	return s.String()
}

// texts joins the instructions' texts: "push %rbp; mov %rsp,%rbp".
func texts(lines []asmLine) string {
	var out []string
	for _, l := range lines {
		out = append(out, l.text)
	}
	return strings.Join(out, "; ")
}

// beforeAfter shows the bytes at a site before and after PROFILE writes
// over them, with their instructions.
func beforeAfter(d instr.Decoder, site uint64, before, after []byte) string {
	b, a := hexBytes(before), hexBytes(after)
	w := max(len(b), len(a))
	return fmt.Sprintf("  before  %-*s  %s\n  after   %-*s  %s\n", w, b, texts(disasm(d, before, site)), w, a, texts(disasm(d, after, site)))
}

// breakpointBytes shows the bytes of the instruction at a site before
// and after a breakpoint is written over its first bytes: the rest of
// the instruction stays, never run.
func breakpointBytes(d instr.Decoder, site uint64, orig, brk []byte) string {
	after := append(slices.Clone(brk), orig[len(brk):]...)
	text := texts(disasm(d, brk, site))
	if len(orig) > len(brk) {
		text += " (the rest of the instruction's bytes stay, never run)"
	}
	b, a := hexBytes(orig), hexBytes(after)
	return fmt.Sprintf("  before  %s  %s\n  after   %-*s  %s\n", b, texts(disasm(d, orig, site)), len(b), a, text)
}

// listing shows code at pc, disassembled, under a title: one
// instruction a line, with its address and bytes, and the note of its
// address, if any.
func listing(d instr.Decoder, title string, pc uint64, code []byte, notes map[uint64]string) string {
	lines := disasm(d, code, pc)
	w, tw := 0, 0
	for _, l := range lines {
		w = max(w, len(hexBytes(l.b)))
		if notes[l.pc] != "" {
			tw = max(tw, len(l.text))
		}
	}
	var b strings.Builder
	b.WriteString(title + ":\n")
	for _, l := range lines {
		if note := notes[l.pc]; note != "" {
			fmt.Fprintf(&b, "    %#x  %-*s  %-*s  ; %s\n", l.pc, w, hexBytes(l.b), tw, l.text, note)
			continue
		}
		fmt.Fprintf(&b, "    %#x  %-*s  %s\n", l.pc, w, hexBytes(l.b), l.text)
	}
	return b.String()
}

// trampNotes notes, in trampoline tr's listing, where the instrumentation
// begins, each instruction moved (from where), and the jump back.
func trampNotes(d instr.Decoder, tr *tramp) map[uint64]string {
	notes := map[uint64]string{}
	code := &tr.code
	for _, m := range code.PCs {
		notes[m.Tramp] = fmt.Sprintf("moved from %#x", m.Orig)
	}
	if len(code.PCs) > 0 && code.PCs[0].Tramp > tr.addr {
		notes[tr.addr] = "the instrumentation"
	}
	lines := disasm(d, code.Code, tr.addr)
	if len(lines) == 0 {
		return notes
	}
	last := lines[len(lines)-1].pc
	if !code.Exit {
		notes[last] = fmt.Sprintf("back to %#x, after the patch", tr.patch.End())
		if carriesToReturn(&tr.patch) {
			notes[last] = "never reached: the function returns from the trampoline"
		}
		if tr.patch.Back != 0 {
			notes[last] = fmt.Sprintf("on to %#x, the trampoline of the jump at %#x, after the patch", tr.patch.Back, tr.patch.End())
		}
		return notes
	}
	// An exit's trampoline: the instrumentation runs before the exit,
	// which is its last instruction (the PC map gives the exit's address
	// to the instrumentation).
	at := tr.addr + uint64(code.At)
	for _, m := range code.PCs {
		if m.Tramp == at {
			notes[last] = fmt.Sprintf("moved from %#x: the exit", m.Orig)
		}
	}
	notes[at] = "the instrumentation, before the exit"
	return notes
}
