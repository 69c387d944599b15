package instr

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Addresses of the arm64 patch tests: a site in a PIE executable's text
// (arm64 Linux maps them at 0xaaaa...), so that absolute addresses need
// three MOVZ/MOVK, and a trampoline within B's ±128 MiB of it.
const (
	pSite  = 0xaaaad0412344
	pTramp = 0xaaaad8000000
)

func TestPlanPatchARM64(t *testing.T) {
	const (
		bti   = 0xd503241f // BTI with no target: not a landing pad
		btiC  = 0xd503245f
		btiJ  = 0xd503249f
		btiJC = 0xd50324df
		pacA  = 0xd503233f
		pacB  = 0xd503237f
		stp   = 0xa9bf7bfd // stp x29, x30, [sp, #-16]!
		mov   = 0x910003fd // mov x29, sp
		ret   = 0xd65f03c0
	)
	cases := []struct {
		name  string
		fn    []uint32
		site  int // index of the site in fn
		patch int // index of the patched instruction
	}{
		{"plain", []uint32{stp, mov, ret}, 0, 0},
		{"middle", []uint32{stp, mov, ret}, 1, 1},
		{"last", []uint32{stp, mov, ret}, 2, 2},
		{"bti c", []uint32{btiC, stp, ret}, 0, 1},
		{"bti j", []uint32{btiJ, stp, ret}, 0, 1},
		{"bti jc", []uint32{btiJC, stp, ret}, 0, 1},
		{"paciasp", []uint32{pacA, stp, ret}, 0, 1},
		{"pacibsp", []uint32{pacB, stp, ret}, 0, 1},
		{"bti c then paciasp", []uint32{btiC, pacA, stp}, 0, 1},
		{"bti without target", []uint32{bti, stp, ret}, 0, 0},
		{"landing pad then its return", []uint32{btiC, ret}, 0, 1},
		// b.ne back to the site: lands on the patch's first byte.
		{"branch to the site", []uint32{stp, mov, 0x54ffffc1}, 0, 0},
		// b.ne to the instruction after the landing pad: its first byte.
		{"branch after the landing pad", []uint32{btiC, stp, 0x54ffffe1}, 0, 1},
		// b.ne to the landing pad itself, which stays.
		{"branch to the landing pad", []uint32{btiC, stp, 0x54ffffc1}, 0, 1},
		// adr x0 to the site's next instruction.
		{"adr after the patch", []uint32{stp, 0x10000000, ret}, 0, 0}, // adr x0, .
		{"b at the site", []uint32{0x14000010}, 0, 0},
		{"bl at the site", []uint32{0x97fffff0, ret}, 0, 0},
		{"ldr literal at the site", []uint32{0x58000080, ret}, 0, 0},
		{"casp is not exclusive", []uint32{0x48207c82}, 0, 0},
		{"ldar is not exclusive", []uint32{0xc8dffc20}, 0, 0},
		{"cas is not exclusive", []uint32{0xc8a07c41}, 0, 0},
		{"retaa", []uint32{0xd65f0bff}, 0, 0},
		{"br", []uint32{0xd61f0020}, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := uint64(pSite) - uint64(4*c.site)
			fn := a64Words(c.fn...)
			p, err := ARM64.PlanPatch(fn, start, pSite)
			if err != nil {
				t.Fatalf("PlanPatch: %v", err)
			}
			at := start + uint64(4*c.patch)
			in, err := ARM64.Decode(fn[4*c.patch:], at)
			if err != nil {
				t.Fatal(err)
			}
			want := Patch{Site: at, Orig: a64Words(c.fn[c.patch]), Insts: []Inst{in}}
			if diff := cmp.Diff(want, p); diff != "" {
				t.Errorf("PlanPatch (-want +got):\n%s", diff)
			}
			if p.End() != at+4 {
				t.Errorf("End %#x, want %#x", p.End(), at+4)
			}
			// The plan's bytes are a copy: writing the jump into the
			// function's buffer leaves them.
			fn[4*c.patch] ^= 0xff
			if !bytes.Equal(p.Orig, a64Words(c.fn[c.patch])) {
				t.Errorf("Orig shares the function's buffer")
			}
		})
	}
}

func TestPlanPatchRefusedARM64(t *testing.T) {
	const (
		btiC = 0xd503245f
		pacA = 0xd503233f
		nop  = 0xd503201f
		ret  = 0xd65f03c0
	)
	cases := []struct {
		name string
		fn   []uint32
		site int    // index of the site in fn
		bad  int    // index of the instruction the message names
		gnu  string // its mnemonic in GNU objdump, checking the test's encoding; "" for none
		want error
	}{
		{"brk", []uint32{0xd4200000, ret}, 0, 0, "brk", ErrNotRelocatable},
		{"udf", []uint32{0x00000000, ret}, 0, 0, "udf", ErrNotRelocatable},
		{"hlt", []uint32{0xd4400000, ret}, 0, 0, "hlt", ErrNotRelocatable},
		{"svc", []uint32{0xd4000001, ret}, 0, 0, "svc", ErrNotRelocatable},
		{"hvc", []uint32{0xd4000002, ret}, 0, 0, "hvc", ErrNotRelocatable},
		{"smc", []uint32{0xd4000003, ret}, 0, 0, "smc", ErrNotRelocatable},
		{"dcps1", []uint32{0xd4a00001, ret}, 0, 0, "dcps1", ErrNotRelocatable},
		{"eret", []uint32{0xd69f03e0, ret}, 0, 0, "eret", ErrNotRelocatable},
		{"svc after bti c", []uint32{btiC, 0xd4000001, ret}, 0, 1, "svc", ErrNotRelocatable},
		{"ldxr", []uint32{0xc85f7c20, ret}, 0, 0, "ldxr", ErrNotRelocatable},
		{"stxr", []uint32{0xc8027c20, ret}, 0, 0, "stxr", ErrNotRelocatable},
		{"ldaxr", []uint32{0xc85ffc20, ret}, 0, 0, "ldaxr", ErrNotRelocatable},
		{"stlxr", []uint32{0xc802fc20, ret}, 0, 0, "stlxr", ErrNotRelocatable},
		{"ldxrb", []uint32{0x085f7c20, ret}, 0, 0, "ldxrb", ErrNotRelocatable},
		{"stlxrh", []uint32{0x4802fc20, ret}, 0, 0, "stlxrh", ErrNotRelocatable},
		{"ldxp", []uint32{0xc87f0440, ret}, 0, 0, "ldxp", ErrNotRelocatable},
		{"stxp", []uint32{0xc8230440, ret}, 0, 0, "stxp", ErrNotRelocatable},
		{"ldaxp w", []uint32{0x887f8440, ret}, 0, 0, "ldaxp", ErrNotRelocatable},
		{"ldr s0 literal", []uint32{0x1c000080, ret}, 0, 0, "ldr", ErrNotRelocatable},
		{"ldr d0 literal", []uint32{0x5c000080, ret}, 0, 0, "ldr", ErrNotRelocatable},
		{"ldr q0 literal", []uint32{0x9c000080, ret}, 0, 0, "ldr", ErrNotRelocatable},
		{"ldr xzr literal", []uint32{0x5800009f, ret}, 0, 0, "ldr", ErrNotRelocatable},
		{"blr", []uint32{0xd63f0200, ret}, 0, 0, "blr", ErrNotRelocatable},
		{"blraa", []uint32{0xd73f0a11, ret}, 0, 0, "blraa", ErrNotRelocatable},
		{"blraaz", []uint32{0xd63f0a1f, ret}, 0, 0, "blraaz", ErrNotRelocatable},
		{"blrab after paciasp", []uint32{pacA, 0xd73f0e11, ret}, 0, 1, "blrab", ErrNotRelocatable},
		{"cmpbr", []uint32{0x74000000, ret}, 0, 0, "", ErrNotRelocatable},
		{"pauth_lr branch", []uint32{0x55000000, ret}, 0, 0, "", ErrNotRelocatable},
		{"bti c then bti j", []uint32{btiC, 0xd503249f, ret}, 0, 1, "bti", ErrNotRelocatable},
		{"paciasp then bti c", []uint32{pacA, btiC, ret}, 0, 1, "bti", ErrNotRelocatable},
		{"landing pad alone", []uint32{btiC}, 0, 0, "bti", ErrTooShort},
		{"paciasp at the end", []uint32{nop, pacA}, 1, 1, "paciasp", ErrTooShort},
		// adr x0, site+2: a reference inside the patched word.
		{"adr into the site", []uint32{nop, 0x50ffffe0, ret}, 0, 0, "nop", ErrBranchInto},
		// adr x1, site+5 with the site a landing pad: inside the patch
		// at site+4.
		{"adr into the patch after bti", []uint32{btiC, nop, 0x30ffffe1}, 0, 1, "nop", ErrBranchInto},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := uint64(pSite) - uint64(4*c.site)
			fn := a64Words(c.fn...)
			p, err := ARM64.PlanPatch(fn, start, pSite)
			if !errors.Is(err, c.want) {
				t.Fatalf("PlanPatch = %+v, %v; want %v", p, err, c.want)
			}
			if Reason(err) == "undecodable" {
				t.Errorf("Reason(%v) = undecodable", err)
			}
			bad := start + uint64(4*c.bad)
			in, _ := ARM64.Decode(fn[4*c.bad:], bad)
			for _, s := range []string{in.Text, fmt.Sprintf("%#x", bad)} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not name %q", err, s)
				}
			}
			if c.gnu != "" {
				text := gnuDisasm(t, fn[4*c.bad:4*c.bad+4], bad)[0]
				if m := strings.Fields(text)[0]; m != c.gnu {
					t.Errorf("the test's word is %q in GNU objdump, want %s", text, c.gnu)
				}
			}
		})
	}
	t.Run("adr operands", func(t *testing.T) {
		// The ADRs above point inside the patched word.
		got := gnuDisasm(t, a64Words(0x50ffffe0, 0x30ffffe1), pSite+4)
		want := []string{"adr x0, 0xaaaad0412346", "adr x1, 0xaaaad0412349"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("objdump (-want +got):\n%s", diff)
		}
	})
}

func TestPlanPatchErrorsARM64(t *testing.T) {
	stp := a64Words(0xa9bf7bfd, 0xd65f03c0)
	cases := []struct {
		name        string
		fn          []byte
		start, site uint64
		want        error  // nil: an error wrapping no fall-back reason
		reason      string // Reason of the error
	}{
		{"empty function", nil, pSite, pSite, ErrTooShort, "too short"},
		{"site at the end", stp, pSite - 8, pSite, ErrTooShort, "too short"},
		{"site past the end", stp, pSite - 16, pSite, ErrTooShort, "too short"},
		{"site before the function", stp, pSite + 4, pSite, ErrTooShort, "too short"},
		{"two bytes left", append(a64Words(0xa9bf7bfd), 0, 0), pSite - 4, pSite, ErrTooShort, "too short"},
		{"truncated after", append(slices.Clone(stp), 0x1f, 0x20), pSite, pSite, ErrTruncated, "undecodable"},
		{"site misaligned", stp, pSite, pSite + 2, nil, "undecodable"},
		{"start misaligned", stp, pSite + 2, pSite + 4, nil, "undecodable"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := ARM64.PlanPatch(c.fn, c.start, c.site)
			switch {
			case err == nil:
				t.Fatalf("PlanPatch = %+v, want an error", p)
			case c.want != nil && !errors.Is(err, c.want):
				t.Errorf("PlanPatch: %v, want %v", err, c.want)
			case Reason(err) != c.reason:
				t.Errorf("Reason(%v) = %q, want %q", err, Reason(err), c.reason)
			}
		})
	}
}

func TestPlanPatchPaddingARM64(t *testing.T) {
	// A function of one landing pad and ret... and of a landing pad
	// alone, followed by its alignment padding: a nop there is patched
	// (it runs the same from the trampoline), a udf is not.
	const btiC, ret, nop, udf = 0xd503245f, 0xd65f03c0, 0xd503201f, 0
	const start = pSite &^ 15 // a function aligned on 16 bytes
	for _, c := range []struct {
		name string
		fn   []uint32
		want error // nil: patched at start+4
	}{
		{"bti c, ret, padding", []uint32{btiC, ret, nop, nop}, nil},
		{"bti c, nop padding", []uint32{btiC, nop, nop, nop}, nil},
		{"bti c, udf padding", []uint32{btiC, udf, udf, udf}, ErrNotRelocatable},
	} {
		fn := a64Words(c.fn...)
		if n := PaddingAfter(ARM64, fn[8:], start+8); n != 8 {
			t.Fatalf("%s: PaddingAfter = %d, want 8", c.name, n)
		}
		p, err := ARM64.PlanPatch(fn, start, start)
		switch {
		case c.want == nil && (err != nil || p.Site != start+4 || !bytes.Equal(p.Orig, fn[4:8])):
			t.Errorf("%s: PlanPatch = %+v, %v; want the word at %#x", c.name, p, err, start+4)
		case c.want != nil && !errors.Is(err, c.want):
			t.Errorf("%s: PlanPatch: %v, want %v", c.name, err, c.want)
		}
	}
}

// gnuBack is the jump back to pSite+4, the end of a one-instruction patch.
const gnuBack = "b 0xaaaad0412348"

func TestTrampolineObjdumpARM64(t *testing.T) {
	count := ARM64.CountCode(CountShared, 0x5555_0000_1000)
	countText := []string{"mov x16, #0x1000", "movk x16, #0x5555, lsl #32", "mov x17, #0x1", "stadd x17, [x16]"}
	cases := []struct {
		name    string
		word    uint32
		prelude []byte
		want    []string
	}{
		{"stp copied", 0xa9bf7bfd, nil, []string{"stp x29, x30, [sp, #-16]!", gnuBack}},
		{"stp after count", 0xa9bf7bfd, count, append(slices.Clone(countText), "stp x29, x30, [sp, #-16]!", gnuBack)},
		{"paciasp copied", 0xd503233f, nil, []string{"paciasp", gnuBack}},
		{"bti copied", 0xd503241f, nil, []string{"bti", gnuBack}},
		{"nop copied", 0xd503201f, nil, []string{"nop", gnuBack}},
		{"casp copied", 0x48207c82, nil, []string{"casp x0, x1, x2, x3, [x4]", gnuBack}},
		{"ret copied", 0xd65f03c0, nil, []string{"ret", gnuBack}},
		{"ret x17 copied", 0xd65f0220, nil, []string{"ret x17", gnuBack}},
		{"br copied", 0xd61f0020, nil, []string{"br x1", gnuBack}},
		{"retaa copied", 0xd65f0bff, nil, []string{"retaa", gnuBack}},
		{"braa copied", 0xd71f0a11, nil, []string{"braa x16, x17", gnuBack}},
		{"b forward", 0x14000010, nil, []string{"b 0xaaaad0412384", gnuBack}},
		{"b back", 0x17ffffff, nil, []string{"b 0xaaaad0412340", gnuBack}},
		{"bl", 0x97fffff0, nil, []string{
			"mov x30, #0x2348", "movk x30, #0xd041, lsl #16", "movk x30, #0xaaaa, lsl #32",
			"b 0xaaaad0412304", gnuBack,
		}},
		{"bl after count", 0x97fffff0, count, append(slices.Clone(countText),
			"mov x30, #0x2348", "movk x30, #0xd041, lsl #16", "movk x30, #0xaaaa, lsl #32",
			"b 0xaaaad0412304", gnuBack,
		)},
		{"b.eq", 0x54000080, nil, []string{"b.ne 0xaaaad8000008", "b 0xaaaad0412354", gnuBack}},
		{"b.ne", 0x54000081, nil, []string{"b.eq 0xaaaad8000008", "b 0xaaaad0412354", gnuBack}},
		{"b.hi", 0x54000088, nil, []string{"b.ls 0xaaaad8000008", "b 0xaaaad0412354", gnuBack}},
		{"b.le", 0x5400008d, nil, []string{"b.gt 0xaaaad8000008", "b 0xaaaad0412354", gnuBack}},
		{"bc.eq", 0x54000090, nil, []string{"b.ne 0xaaaad8000008", "b 0xaaaad0412354", gnuBack}},
		{"b.al", 0x5400008e, nil, []string{"b 0xaaaad0412354", gnuBack}},
		{"b.nv", 0x5400008f, nil, []string{"b 0xaaaad0412354", gnuBack}},
		{"b.lt back", 0x54ffffeb, nil, []string{"b.ge 0xaaaad8000008", "b 0xaaaad0412340", gnuBack}},
		{"cbz x0", 0xb4000080, nil, []string{"cbnz x0, 0xaaaad8000008", "b 0xaaaad0412354", gnuBack}},
		{"cbz w0", 0x34000080, nil, []string{"cbnz w0, 0xaaaad8000008", "b 0xaaaad0412354", gnuBack}},
		{"cbnz w1", 0x35ffffe1, nil, []string{"cbz w1, 0xaaaad8000008", "b 0xaaaad0412340", gnuBack}},
		{"cbz xzr", 0xb400009f, nil, []string{"cbnz xzr, 0xaaaad8000008", "b 0xaaaad0412354", gnuBack}},
		{"tbz w0, #1", 0x36080080, nil, []string{"tbnz w0, #1, 0xaaaad8000008", "b 0xaaaad0412354", gnuBack}},
		{"tbnz x1, #63", 0xb7f80041, nil, []string{"tbz x1, #63, 0xaaaad8000008", "b 0xaaaad041234c", gnuBack}},
		{"tbz w2, #31 back", 0x36ff7e02, nil, []string{"tbnz w2, #31, 0xaaaad8000008", "b 0xaaaad0411304", gnuBack}},
		{"adr x2", 0x10ffffe2, nil, []string{"mov x2, #0x2340", "movk x2, #0xd041, lsl #16", "movk x2, #0xaaaa, lsl #32", gnuBack}},
		{"adr xzr", 0x1000001f, nil, []string{"nop", gnuBack}},
		{"adrp x1", 0xb0000001, nil, []string{"mov x1, #0x3000", "movk x1, #0xd041, lsl #16", "movk x1, #0xaaaa, lsl #32", gnuBack}},
		{"adrp x3 back", 0xf0ffffe3, nil, []string{"mov x3, #0x1000", "movk x3, #0xd041, lsl #16", "movk x3, #0xaaaa, lsl #32", gnuBack}},
		// adrp x0, +14 pages: 0xaaaad0420000, a zero low halfword.
		{"adrp x0 round", 0xd0000060, nil, []string{"mov x0, #0xd0420000", "movk x0, #0xaaaa, lsl #32", gnuBack}},
		{"ldr x0", 0x58000080, nil, []string{"mov x0, #0x2354", "movk x0, #0xd041, lsl #16", "movk x0, #0xaaaa, lsl #32", "ldr x0, [x0]", gnuBack}},
		{"ldr w5", 0x18000085, nil, []string{"mov x5, #0x2354", "movk x5, #0xd041, lsl #16", "movk x5, #0xaaaa, lsl #32", "ldr w5, [x5]", gnuBack}},
		{"ldrsw x7", 0x98000087, nil, []string{"mov x7, #0x2354", "movk x7, #0xd041, lsl #16", "movk x7, #0xaaaa, lsl #32", "ldrsw x7, [x7]", gnuBack}},
		{"ldr x30 back", 0x58fffffe, nil, []string{"mov x30, #0x2340", "movk x30, #0xd041, lsl #16", "movk x30, #0xaaaa, lsl #32", "ldr x30, [x30]", gnuBack}},
		{"prfm literal", 0xd8000080, nil, []string{"nop", gnuBack}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := Patch{Site: pSite, Orig: a64Words(c.word)}
			tr, err := ARM64.Trampoline(&p, pTramp, c.prelude)
			if err != nil {
				t.Fatalf("Trampoline: %v", err)
			}
			if !bytes.HasPrefix(tr.Code, c.prelude) {
				t.Errorf("code % x does not start with the prelude % x", tr.Code, c.prelude)
			}
			want := []PCMap{{Tramp: pTramp + uint64(len(c.prelude)), Orig: pSite}}
			if diff := cmp.Diff(want, tr.PCs); diff != "" {
				t.Errorf("PCs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.want, gnuDisasm(t, tr.Code, pTramp)); diff != "" {
				t.Errorf("objdump of the trampoline (-want +got):\n%s", diff)
			}
		})
	}
}

// trampCase is a relocated instruction run from its trampoline and
// emulated in place by Displace, on the same registers and memory.
type trampCase struct {
	name string
	word uint32
	in   *fakeRegs
	mem  func(site uint64) *fakeMem // nil for none
}

// a64TrampCases are the PC-relative instructions and the registers that
// take each way of them.
func a64TrampCases() []trampCase {
	lit := func(off uint64, b ...byte) func(uint64) *fakeMem {
		return func(site uint64) *fakeMem { return newMem().poke(site+off, b) }
	}
	cases := []trampCase{
		{name: "b forward", word: 0x14000010, in: rg()},
		{name: "b back", word: 0x17ffffff, in: rg()},
		{name: "b far", word: 0x15000000, in: rg()},
		{name: "bl", word: 0x97fffff0, in: rg(aLR, 7, aX0, 5)},
		{name: "cbz x taken", word: 0xb4000080, in: rg(aX0, 0)},
		{name: "cbz x not", word: 0xb4000080, in: rg(aX0, 1<<40)},
		{name: "cbz w high bits", word: 0x34000080, in: rg(aX0, 1<<40)},
		{name: "cbz w not", word: 0x34000080, in: rg(aX0, 1)},
		{name: "cbnz w not", word: 0x35ffffe1, in: rg(aX1, 1<<32)},
		{name: "cbnz w taken", word: 0x35ffffe1, in: rg(aX1, 5)},
		{name: "cbz xzr", word: 0xb400009f, in: rg(aSPReg, aSP)},
		{name: "cbnz xzr", word: 0xb500009f, in: rg(aSPReg, aSP)},
		{name: "tbz bit 1 set", word: 0x36080080, in: rg(aX0, 2)},
		{name: "tbz bit 1 clear", word: 0x36080080, in: rg(aX0, 0xfffd)},
		{name: "tbnz bit 63 set", word: 0xb7f80041, in: rg(aX1, 1<<63)},
		{name: "tbnz bit 63 clear", word: 0xb7f80041, in: rg(aX1, 1<<62)},
		{name: "tbz bit 31 back", word: 0x36ff7e02, in: rg(aX2, 1<<31)},
		{name: "tbz bit 31 back taken", word: 0x36ff7e02, in: rg(aX2, 1<<32)},
		{name: "adr back", word: 0x10ffffe2, in: rg(aX2, 9)},
		{name: "adr odd", word: 0x50ffffe0, in: rg()}, // adr x0, .-2
		{name: "adr xzr", word: 0x1000001f, in: rg(aSPReg, aSP)},
		{name: "adrp next page", word: 0xb0000001, in: rg()},
		{name: "adrp round", word: 0xd0000060, in: rg()},
		{name: "adrp previous page", word: 0xf0ffffe3, in: rg()},
		{name: "adrp far", word: 0x90800000, in: rg()},
		{name: "adrp xzr", word: 0xb000001f, in: rg(aSPReg, aSP)},
		{name: "ldr x", word: 0x58000080, in: rg(), mem: lit(0x10, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11)},
		{name: "ldr x30 back", word: 0x58fffffe, in: rg(aLR, 3), mem: lit(^uint64(3), 1, 2, 3, 4, 5, 6, 7, 8)},
		{name: "ldr w zero-extends", word: 0x18000085, in: rg(5, ^uint64(0)), mem: lit(0x10, 1, 0, 0, 0x80)},
		{name: "ldrsw sign-extends", word: 0x98000087, in: rg(), mem: lit(0x10, 1, 0, 0, 0x80)},
		{name: "ldrsw positive", word: 0x98000087, in: rg(7, ^uint64(0)), mem: lit(0x10, 1, 0, 0, 0x7f)},
		{name: "prfm", word: 0xd8000080, in: rg()},
		{name: "nop", word: 0xd503201f, in: rg(aX0, 1)},
		{name: "ret", word: 0xd65f03c0, in: rg(aLR, 0x430000)},
		{name: "br", word: 0xd61f0020, in: rg(aX1, 0x440000)},
	}
	// Every condition under every NZCV value.
	for cc := range 16 {
		for nzcv := range 16 {
			cases = append(cases, trampCase{
				name: fmt.Sprintf("b.cond %d nzcv %04b", cc, nzcv),
				word: 0x54000080 | uint32(cc), in: rg(aX0, 1).fl(uint64(nzcv) << 28),
			})
		}
	}
	return cases
}

func TestTrampolineRunsARM64(t *testing.T) {
	const counter = 0x5555_0000_1000
	places := []struct{ site, tramp uint64 }{
		{pSite, pTramp},
		{aPC, 0x7400000},
		{pSite, pSite - 0x3fff000},
	}
	for _, pl := range places {
		for _, count := range []bool{false, true} {
			for _, c := range a64TrampCases() {
				t.Run(fmt.Sprintf("%#x/count=%v/%s", pl.site, count, c.name), func(t *testing.T) {
					testTrampolineRun(t, pl.site, pl.tramp, counter, count, c)
				})
			}
		}
	}
}

// testTrampolineRun plans, builds and runs one case's trampoline and
// compares its effect with Displace's emulation of the instruction in
// place: the same registers and memory, but x16 and x17 and the counter
// when it counts.
func testTrampolineRun(t *testing.T, site, tramp, counter uint64, count bool, c trampCase) {
	word := a64Words(c.word)
	p, err := ARM64.PlanPatch(word, site, site)
	if err != nil {
		t.Fatalf("PlanPatch: %v", err)
	}
	var prelude []byte
	if count {
		prelude = ARM64.CountCode(CountShared, counter)
	}
	tr, err := ARM64.Trampoline(&p, tramp, prelude)
	if err != nil {
		t.Fatalf("Trampoline: %v", err)
	}
	mem := newMem()
	if c.mem != nil {
		mem = c.mem(site)
	}
	d, err := ARM64.Displace(word, site, aSlot)
	if err != nil || d.Emulate == nil {
		t.Fatalf("Displace = %+v, %v; want an emulation", d, err)
	}
	want, wantMem := c.in.at(site), mem.clone()
	if err := d.Emulate(want, wantMem); err != nil {
		t.Fatalf("Emulate: %v", err)
	}
	got, gotMem := c.in.at(tramp), mem.clone()
	if count {
		gotMem.poke64(counter, 41)
	}
	if err := a64Exec(tr.Code, tramp, got, gotMem); err != nil {
		t.Fatalf("trampoline: %v\n% x", err, tr.Code)
	}
	if count {
		if n := gotMem.peek64(counter); n != 42 {
			t.Errorf("counter %d after, want 42", n)
		}
		if got.r[aX16] != counter || got.r[aX17] != 1 {
			t.Errorf("x16 %#x x17 %#x, want the counter's address and 1", got.r[aX16], got.r[aX17])
		}
		got.r[aX16], got.r[aX17] = want.r[aX16], want.r[aX17]
		for i := range uint64(8) {
			delete(gotMem.b, counter+i)
		}
	}
	if *got != *want {
		t.Errorf("registers after the trampoline:\n got %+v\nwant %+v", *got, *want)
	}
	if !equalMem(gotMem, wantMem) {
		t.Errorf("memory after the trampoline differs from the emulation's")
	}
}

func TestTrampolineRefusedARM64(t *testing.T) {
	const far = pSite + 0x10000000 // beyond B's reach of the site
	cases := []struct {
		name  string
		word  uint32
		tramp uint64
		want  []error
	}{
		{"brk", 0xd4200000, pTramp, []error{ErrNotRelocatable}},
		{"svc", 0xd4000001, pTramp, []error{ErrNotRelocatable}},
		{"ldxr", 0xc85f7c20, pTramp, []error{ErrNotRelocatable}},
		{"ldr q0 literal", 0x9c000080, pTramp, []error{ErrNotRelocatable}},
		{"blr", 0xd63f0200, pTramp, []error{ErrNotRelocatable}},
		{"blraa", 0xd73f0a11, pTramp, []error{ErrNotRelocatable}},
		{"cmpbr", 0x74000000, pTramp, []error{ErrNotRelocatable}},
		{"b far", 0x14000010, far, []error{ErrNotRelocatable, ErrOutOfReach}},
		{"bl far", 0x97fffff0, far, []error{ErrNotRelocatable, ErrOutOfReach}},
		{"b.eq far", 0x54000080, far, []error{ErrNotRelocatable, ErrOutOfReach}},
		{"b.al far", 0x5400008e, far, []error{ErrNotRelocatable, ErrOutOfReach}},
		{"cbz far", 0xb4000080, far, []error{ErrNotRelocatable, ErrOutOfReach}},
		{"tbnz far", 0xb7f80041, far, []error{ErrNotRelocatable, ErrOutOfReach}},
		{"stp far: the jump back", 0xa9bf7bfd, far, []error{ErrNotRelocatable, ErrOutOfReach}},
		{"adr far: the jump back", 0x10ffffe2, far, []error{ErrNotRelocatable, ErrOutOfReach}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := Patch{Site: pSite, Orig: a64Words(c.word)}
			tr, err := ARM64.Trampoline(&p, c.tramp, nil)
			for _, want := range c.want {
				if !errors.Is(err, want) {
					t.Errorf("Trampoline = %+v, %v; want %v", tr, err, want)
				}
			}
			if err != nil && !strings.Contains(err.Error(), fmt.Sprintf("%#x", c.tramp)) {
				t.Errorf("error %q does not name the trampoline", err)
			}
		})
	}
	p := Patch{Site: pSite, Orig: a64Words(0xa9bf7bfd)}
	for _, c := range []struct {
		name    string
		p       Patch
		addr    uint64
		prelude []byte
	}{
		{"trampoline misaligned", p, pTramp + 2, nil},
		{"site misaligned", Patch{Site: pSite + 1, Orig: p.Orig}, pTramp, nil},
		{"prelude of 3 bytes", p, pTramp, []byte{1, 2, 3}},
		{"empty patch", Patch{Site: pSite}, pTramp, nil},
		{"patch of 6 bytes", Patch{Site: pSite, Orig: append(a64Words(0xa9bf7bfd), 0, 0)}, pTramp, nil},
	} {
		if tr, err := ARM64.Trampoline(&c.p, c.addr, c.prelude); err == nil {
			t.Errorf("%s: Trampoline = %+v, want an error", c.name, tr)
		}
	}
}

func TestTrampolineReachARM64(t *testing.T) {
	// B +0x40 at pSite relocated at tramp, then B back from tramp+4 to
	// pSite+4: imm26 words reach [-2^27, 2^27-4].
	const target = pSite + 0x40
	cases := []struct {
		tramp uint64
		ok    bool
	}{
		{target - 0x7fffffc, true}, // B at its farthest forward
		{target - 0x8000000, false},
		{pSite + 0x8000000, true}, // B back at its farthest backward
		{pSite + 0x8000004, false},
	}
	for _, c := range cases {
		p := Patch{Site: pSite, Orig: a64Words(0x14000010)}
		tr, err := ARM64.Trampoline(&p, c.tramp, nil)
		switch {
		case c.ok && err != nil:
			t.Errorf("tramp %#x: %v", c.tramp, err)
		case !c.ok && !errors.Is(err, ErrOutOfReach):
			t.Errorf("tramp %#x: %v, want ErrOutOfReach", c.tramp, err)
		case c.ok:
			r := rg().at(c.tramp)
			if err := a64Exec(tr.Code, c.tramp, r, newMem()); err != nil || r.pc != target {
				t.Errorf("tramp %#x: ran to %#x, %v; want %#x", c.tramp, r.pc, err, target)
			}
		}
	}
}

func TestTrampolinePCsARM64(t *testing.T) {
	// Two instructions relocated after a prelude of two words: bl, then
	// b.eq. (PlanPatch plans one; Trampoline takes whole instructions.)
	prelude := a64Words(0xd503201f, 0xd503201f)
	p := Patch{Site: pSite, Orig: a64Words(0x97fffff0, 0x54000080)}
	tr, err := ARM64.Trampoline(&p, pTramp, prelude)
	if err != nil {
		t.Fatal(err)
	}
	// prelude 8, bl 3 movs + b = 16, b.ne + b = 8, b back 4.
	want := []PCMap{{pTramp + 8, pSite}, {pTramp + 24, pSite + 4}}
	if diff := cmp.Diff(want, tr.PCs); diff != "" {
		t.Fatalf("PCs (-want +got):\n%s", diff)
	}
	if len(tr.Code) != 36 {
		t.Fatalf("code of %d bytes, want 36", len(tr.Code))
	}
	got := gnuDisasm(t, tr.Code, pTramp)
	wantText := []string{
		"nop", "nop",
		"mov x30, #0x2348", "movk x30, #0xd041, lsl #16", "movk x30, #0xaaaa, lsl #32", "b 0xaaaad0412304",
		"b.ne 0xaaaad8000020", "b 0xaaaad0412358",
		"b 0xaaaad041234c",
	}
	if diff := cmp.Diff(wantText, got); diff != "" {
		t.Errorf("objdump (-want +got):\n%s", diff)
	}
	end := p.End()
	for _, c := range []struct{ pc, orig uint64 }{
		{pTramp, pSite},
		{pTramp + 4, pSite},
		{pTramp + 8, pSite},
		{pTramp + 20, pSite},
		{pTramp + 24, pSite + 4},
		{pTramp + 28, pSite + 4},
		{pTramp + 32, end},
	} {
		if got := tr.OrigPC(pTramp, end, c.pc); got != c.orig {
			t.Errorf("OrigPC(%#x) = %#x, want %#x", c.pc, got, c.orig)
		}
	}
	// The bl links x30 to its original return address and leaves for its
	// target.
	r := rg().at(pTramp)
	if err := a64Exec(tr.Code, pTramp, r, newMem()); err != nil || r.pc != pSite-0x40 || r.r[aLR] != pSite+4 {
		t.Errorf("bl: pc %#x x30 %#x, %v; want %#x, %#x", r.pc, r.r[aLR], err, pSite-0x40, pSite+4)
	}
	// The b.eq, run from its copy, takes its branch or comes back after
	// the patch.
	for _, c := range []struct{ flags, pc uint64 }{{psZ, pSite + 4 + 0x10}, {0, end}} {
		r := rg().fl(c.flags).at(pTramp + 24)
		if err := a64Exec(tr.Code, pTramp, r, newMem()); err != nil || r.pc != c.pc {
			t.Errorf("b.eq with flags %#x: pc %#x, %v; want %#x", c.flags, r.pc, err, c.pc)
		}
	}
}

func TestPatchJumpARM64(t *testing.T) {
	one := Patch{Site: pSite, Orig: a64Words(0xa9bf7bfd)}
	jump, err := ARM64.PatchJump(&one, pTramp)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"b 0xaaaad8000000"}, gnuDisasm(t, jump, pSite)); diff != "" {
		t.Errorf("objdump (-want +got):\n%s", diff)
	}
	two := Patch{Site: pSite, Orig: a64Words(0xa9bf7bfd, 0x910003fd)}
	jump, err = ARM64.PatchJump(&two, pSite-0x100)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"b 0xaaaad0412244", "brk #0x0"}, gnuDisasm(t, jump, pSite)); diff != "" {
		t.Errorf("objdump (-want +got):\n%s", diff)
	}
	for _, c := range []struct {
		tramp uint64
		word  uint32 // 0: ErrOutOfReach
	}{
		{pSite + 0x7fffffc, 0x15ffffff},
		{pSite + 0x8000000, 0},
		{pSite - 0x8000000, 0x16000000},
		{pSite - 0x8000004, 0},
		{pSite, 0x14000000},
		{0x7f0000000000, 0},
	} {
		jump, err := ARM64.PatchJump(&one, c.tramp)
		switch {
		case c.word == 0 && !errors.Is(err, ErrOutOfReach):
			t.Errorf("tramp %#x: % x, %v; want ErrOutOfReach", c.tramp, jump, err)
		case c.word != 0 && (err != nil || !bytes.Equal(jump, a64Words(c.word))):
			t.Errorf("tramp %#x: % x, %v; want %#08x", c.tramp, jump, err, c.word)
		}
	}
	for _, c := range []struct {
		name  string
		p     Patch
		tramp uint64
	}{
		{"tramp misaligned", one, pTramp + 2},
		{"site misaligned", Patch{Site: pSite + 2, Orig: one.Orig}, pTramp},
		{"empty", Patch{Site: pSite}, pTramp},
		{"6 bytes", Patch{Site: pSite, Orig: make([]byte, 6)}, pTramp},
	} {
		if jump, err := ARM64.PatchJump(&c.p, c.tramp); err == nil {
			t.Errorf("%s: PatchJump = % x, want an error", c.name, jump)
		}
	}
}

// TestCountingARM64: the atomic count with LSE, else the count in the
// thread's area, never an error.
func TestCountingARM64(t *testing.T) {
	const atomics = 1 << 8 // HWCAP_ATOMICS, arch/arm64/include/uapi/asm/hwcap.h
	for _, c := range []struct {
		hwcap uint64
		want  CountKind
	}{
		{atomics, CountShared},
		{0xefff, CountShared}, // a Neoverse core: fp asimd ... atomics cpuid ...
		{0xff, CountInArea},   // fp asimd evtstrm aes pmull sha1 sha2 crc32: Cortex-A72
		{0xffff &^ atomics, CountInArea},
		{0, CountInArea},
	} {
		if kind, err := ARM64.Counting(c.hwcap); err != nil || kind != c.want {
			t.Errorf("Counting(%#x) = %v, %v; want %v", c.hwcap, kind, err, c.want)
		}
	}
}

func TestCountCodeARM64(t *testing.T) {
	tail := []string{"mov x17, #0x1", "stadd x17, [x16]"}
	cases := []struct {
		addr uint64
		load []string
	}{
		{0x0000ffff_12345678, []string{"mov x16, #0x5678", "movk x16, #0x1234, lsl #16", "movk x16, #0xffff, lsl #32"}},
		{0x5555_0000_1000, []string{"mov x16, #0x1000", "movk x16, #0x5555, lsl #32"}},
		{0xaaaa_e000_0000, []string{"mov x16, #0xe0000000", "movk x16, #0xaaaa, lsl #32"}},
		{0x1_0000_0000, []string{"mov x16, #0x100000000"}},
		{0xfff8, []string{"mov x16, #0xfff8"}},
		{0x0000ffff_ffff_fff8, []string{"mov x16, #0xfff8", "movk x16, #0xffff, lsl #16", "movk x16, #0xffff, lsl #32"}},
		{0x0123_4567_89ab_cde8, []string{"mov x16, #0xcde8", "movk x16, #0x89ab, lsl #16", "movk x16, #0x4567, lsl #32", "movk x16, #0x123, lsl #48"}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%#x", c.addr), func(t *testing.T) {
			code := ARM64.CountCode(CountShared, c.addr)
			if diff := cmp.Diff(append(slices.Clone(c.load), tail...), gnuDisasm(t, code, pTramp)); diff != "" {
				t.Errorf("objdump (-want +got):\n%s", diff)
			}
			// Run it twice: one more each time; only x16 and x17 change;
			// the flags stay.
			in := rg(aX0, 1, aX1, 2, aLR, 3, aSPReg, aSP, aX16, 0xdead, aX17, 0xbeef).fl(psN | psC | 2<<10)
			mem := newMem().poke64(c.addr, 1<<32-1)
			r := in.at(pTramp)
			for n := range uint64(2) {
				r.pc = pTramp
				if err := a64Exec(code, pTramp, r, mem); err != nil {
					t.Fatal(err)
				}
				if got := mem.peek64(c.addr); got != 1<<32+n {
					t.Errorf("counter %#x, want %#x", got, 1<<32+n)
				}
			}
			want := in.clone()
			want.r[aX16], want.r[aX17], want.pc = c.addr, 1, pTramp+uint64(len(code))
			if *r != *want {
				t.Errorf("registers after:\n got %+v\nwant %+v", *r, *want)
			}
			// Position-independent: nothing PC-relative.
			for off := 0; off < len(code); off += 4 {
				if x, _ := ARM64.Decode(code[off:], pTramp); x.PCRel || x.Kind != Other {
					t.Errorf("%q: kind %v, PC-relative %v", x.Text, x.Kind, x.PCRel)
				}
			}
		})
	}
	for _, kind := range []CountKind{0, CountPerThread, CountShared + 1} {
		if code := ARM64.CountCode(kind, 0x5555_0000_1000); code != nil {
			t.Errorf("CountCode(%v) = % x, want nil", kind, code)
		}
	}
}

// TestPatchRandomARM64 plans and builds trampolines for random words:
// each is either refused for a fall-back reason or relocated whole, ends
// with the jump back, fits PROFILE's 64-byte cell with the longest
// prelude, and carries a plain instruction unchanged.
func TestPatchRandomARM64(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	prelude := ARM64.CountCode(CountShared, 0x0123_4567_89ab_cde8)
	reasons := map[string]int{}
	for range 200000 {
		word := rnd.Uint32()
		p, err := ARM64.PlanPatch(a64Words(word), pSite, pSite)
		if err != nil {
			r := Reason(err)
			if r != "not relocatable" && r != "too short" && r != "branch into" {
				t.Fatalf("%#08x: %v (%s)", word, err, r)
			}
			reasons[r]++
			continue
		}
		tr, err := ARM64.Trampoline(&p, pTramp, prelude)
		if err != nil {
			if !errors.Is(err, ErrOutOfReach) || !errors.Is(err, ErrNotRelocatable) {
				t.Fatalf("%#08x: Trampoline: %v", word, err)
			}
			reasons["out of reach"]++
			continue
		}
		reasons["ok"]++
		n := len(tr.Code)
		if n > 64 || n%4 != 0 || !bytes.HasPrefix(tr.Code, prelude) {
			t.Fatalf("%#08x: % x", word, tr.Code)
		}
		if back, _ := a64Branch(pTramp+uint64(n-4), p.End()); binary.LittleEndian.Uint32(tr.Code[n-4:]) != back {
			t.Fatalf("%#08x: % x does not end with B back", word, tr.Code)
		}
		if x, _ := decodeARM64(p.Orig, pSite); x.op == a64Plain && !bytes.Equal(tr.Code[len(prelude):n-4], p.Orig) {
			t.Fatalf("%#08x %q: plain instruction relocated as % x", word, x.Text, tr.Code[len(prelude):n-4])
		}
	}
	t.Logf("%v", reasons)
}

// TestDepthCodeARM64 checks the table form's shadow-stack code: its
// listing by the GNU disassembler, and what it does, run by a64Exec on a
// thread entering functions at known stack pointers.
// tableLookup is the listing of the code that finds a thread's area
// through the stack table at 0xfff0001000, the areas at 0xfff2000000:
// the start of the depth code's table form and of the record code.
var tableLookup = []string{
	"mov x16, sp", "ubfx x16, x16, #12, #22",
	"mov x17, #0x1000", "movk x17, #0xf000, lsl #16", "movk x17, #0xff, lsl #32",
	"ldr w16, [x17, x16, lsl #2]",
	"mov x17, #0xf2000000", "movk x17, #0xff, lsl #32",
	"add x16, x17, x16",
}

func TestDepthCodeARM64(t *testing.T) {
	const (
		table = 0xfff0001000
		areas = 0xfff2000000
		slots = 3
	)
	if _, ok := ARM64.DepthCode(Depth{Slots: 1024, GoABI: true, Table: table, Areas: areas}); ok {
		t.Error("a Go form")
	}
	if _, ok := ARM64.DepthCode(Depth{Slots: MaxTableSlots + 1, Table: table, Areas: areas}); ok {
		t.Error("more slots than an area holds")
	}
	d, ok := ARM64.DepthCode(Depth{Slots: slots, Table: table, Areas: areas})
	if !ok {
		t.Fatal("no depth code")
	}
	if len(d.Rollback) != 1 || d.Rollback[0].From != 0 || d.Rollback[0].To != len(d.Code) || d.Rollback[0].Restore != nil {
		t.Errorf("rollback %+v: want the whole code, nothing to restore", d.Rollback)
	}
	if _, err := exec.LookPath("aarch64-linux-gnu-objdump"); err == nil {
		want := append(slices.Clip(tableLookup),
			"ldr x17, [x16, #16]", "cmp x17, #0x3", "b.hi 0x90",
			"add x16, x16, x17, lsl #3", "tst x16, #0x3fff", "b.eq 0x64",
			"ldr x17, [x16, #40]", "cmp sp, x17", "b.eq 0x90",
			"b.cc 0x64", // 0x48, the popping loop
			"sub x16, x16, #0x8", "tst x16, #0x3fff", "b.eq 0x64",
			"ldr x17, [x16, #40]", "cmp sp, x17", "b 0x48",
			"and x17, x16, #0x3fff", "lsr x17, x17, #3", "cmp x17, #0x3", "b.cs 0x90", // 0x64, push
			"mov x17, sp", "str x17, [x16, #48]",
			"and x17, x16, #0x3fff", "lsr x17, x17, #3", "add x17, x17, #0x1",
			"and x16, x16, #0xffffffffffffc000", "str x17, [x16, #16]",
		)
		if got := gnuDisasm(t, d.Code, 0); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("listing:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}

	// The thread's stack is the pages of 0x7ff000000 to 0x7ff004000, owned
	// by area 1; any other page is in the discard area 0.
	const (
		top   = 0x7ff004000
		area1 = areas + DepthAreaAlign
	)
	mem := newMem()
	mem.lenient = true
	for sp := uint64(top - 0x4000); sp < top; sp += 1 << DepthTablePage {
		mem.poke(table+4*TableIndex(sp), binary.LittleEndian.AppendUint32(nil, DepthAreaAlign))
	}
	enter := func(sp uint64) {
		t.Helper()
		r := &fakeRegs{pc: pTramp}
		for i := range r.r {
			r.r[i] = 0x1111 * uint64(i)
		}
		r.r[31] = sp
		before := r.clone()
		if err := a64Exec(d.Code, pTramp, r, mem); err != nil {
			t.Fatal(err)
		}
		if r.pc != pTramp+uint64(len(d.Code)) {
			t.Fatalf("left at %#x", r.pc)
		}
		for i := range r.r {
			if i != 16 && i != 17 && r.r[i] != before.r[i] {
				t.Fatalf("x%d changed: %#x, was %#x", i, r.r[i], before.r[i])
			}
		}
	}
	frames := func(area uint64) []uint64 {
		n := mem.peek64(area + DepthCurrent)
		var keys []uint64
		for i := range min(n, 8) {
			keys = append(keys, mem.peek64(area+DepthStack+8*i))
		}
		return keys
	}
	for _, step := range []struct {
		name string
		sp   uint64
		want []uint64
	}{
		{"main", top - 0x100, []uint64{top - 0x100}},
		{"nested", top - 0x200, []uint64{top - 0x100, top - 0x200}},
		{"nested twice", top - 0x300, []uint64{top - 0x100, top - 0x200, top - 0x300}},
		{"a sibling", top - 0x300, []uint64{top - 0x100, top - 0x200, top - 0x300}},
		{"two returned, a sibling of the second", top - 0x200, []uint64{top - 0x100, top - 0x200}},
		{"nested", top - 0x280, []uint64{top - 0x100, top - 0x200, top - 0x280}},
		{"deeper than the slots", top - 0x380, []uint64{top - 0x100, top - 0x200, top - 0x280}},
		{"all returned", top - 0x80, []uint64{top - 0x80}},
		{"nested in it", top - 0x100, []uint64{top - 0x80, top - 0x100}},
	} {
		enter(step.sp)
		if got := frames(area1); !slices.Equal(got, step.want) {
			t.Errorf("%s (sp %#x): frames %#x, want %#x", step.name, step.sp, got, step.want)
		}
	}
	area := make([]byte, DepthAreaAlign)
	for i := range uint64(DepthAreaAlign) {
		area[i] = mem.b[area1+i]
	}
	if got := TableDepth(area, slots); got != 3 {
		t.Errorf("deepest %d, want 3", got)
	}
	// A stack nobody owns lands in the discard area; a torn count is left
	// alone.
	enter(top + 0x1000)
	if got := frames(areas); len(got) != 1 {
		t.Errorf("discard area: frames %#x", got)
	}
	mem.poke64(area1+DepthCurrent, 1<<40)
	enter(top - 0x100)
	if got := mem.peek64(area1 + DepthCurrent); got != 1<<40 {
		t.Errorf("a torn count became %d", got)
	}
}

// TestRecordCodeARM64 checks the ring's record code with the GNU
// disassembler: the area found through the stack table, the cursor's
// check, the ring-full breakpoint and where the thread goes on after it,
// the record, the commit last; one rollback range, the whole code, with
// nothing to restore.
func TestRecordCodeARM64(t *testing.T) {
	const (
		table = 0xfff0001000
		areas = 0xfff2000000
	)
	if _, ok := ARM64.RecordCode(Ring{Records: 4096, Table: table, Areas: areas, Goroutine: true}, 0); ok {
		t.Error("a goroutine's record code on arm64, where goroutine stacks are in no table")
	}
	if _, ok := ARM64.RecordCode(Ring{Records: 4096}, 0); ok {
		t.Error("record code without a stack table")
	}
	if _, ok := ARM64.RecordCode(Ring{Records: 1000, Table: table, Areas: areas}, 0); ok {
		t.Error("a ring of 1000 records (not a power of two) accepted")
	}
	rc, ok := ARM64.RecordCode(Ring{Records: 4096, Table: table, Areas: areas}, RecordTag(0x12345, true))
	if !ok {
		t.Fatal("no record code")
	}
	if len(rc.Rollback) != 1 || rc.Rollback[0].From != 0 || rc.Rollback[0].To != len(rc.Code) || rc.Rollback[0].Restore != nil {
		t.Errorf("rollback %+v: want the whole code, nothing to restore", rc.Rollback)
	}
	if rc.Full != 0x40 || rc.Skip != 0x2c {
		t.Errorf("full %#x, skip %#x: want after the brk at 0x3c, the cbnz at 0x2c", rc.Full, rc.Skip)
	}
	// 4096 records of 32 bytes: A is 2^17.
	want := append(slices.Clip(tableLookup),
		"ldr x17, [x16]", "eor x17, x17, x17, lsr #32", "cbnz w17, 0x44", // 0x24, retry
		"isb", "mrs x17, cntvct_el0", "str x17, [x16, #16]", "brk #0x0", "b 0x24",
		"ldr w17, [x16]", "add x16, x16, x17", // 0x44, ok
		"isb", "mrs x17, cntvct_el0", "str x17, [x16, #128]",
		"mov x17, sp", "str x17, [x16, #136]",
		"mov x17, #0x8d15", "movk x17, #0x4, lsl #16", "str x17, [x16, #144]",
		"and x17, x16, #0x1ffff", "add x17, x17, #0x20", "and x17, x17, #0x1ffff",
		"and x16, x16, #0xfffffffffffe0000", "stlr w17, [x16]",
	)
	if got := gnuDisasm(t, rc.Code, 0); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("listing:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	patched := slices.Clone(rc.Code)
	copy(patched[rc.Skip:], rc.Unchecked)
	if got := gnuDisasm(t, patched[rc.Skip:rc.Skip+4], uint64(rc.Skip)); len(got) != 1 || got[0] != "b 0x44" {
		t.Errorf("unchecked: %q, want b 0x44", got)
	}
}

// TestGoRecordCodeARM64 checks the record code of Go code with the GNU
// disassembler: the ring area from TPIDR_EL0, and where x28 holds a
// goroutine, the frame's key its distance from g.stack.hi and the record
// naming the goroutine, the tag marked; where x28 is 0, the stack
// pointer and no goroutine. Without the thread pointer there is none.
func TestGoRecordCodeARM64(t *testing.T) {
	if _, ok := ARM64.RecordCode(Ring{Records: 4096, Table: 1, Areas: 1, Goroutine: true}, 0); ok {
		t.Error("a goroutine's record code without the thread pointer (goroutine stacks are in no table)")
	}
	rc, ok := ARM64.RecordCode(Ring{Records: 4096, Goroutine: true, ThreadPointer: true}, RecordTag(0x12345, true))
	if !ok {
		t.Fatal("no record code")
	}
	if rc.Full != 0x20 || rc.Skip != 0xc || !rc.Scratch || !rc.ThreadPointer {
		t.Errorf("full %#x, skip %#x, scratch %v: want after the brk at 0x1c, the cbnz at 0xc, x16 and x17", rc.Full, rc.Skip, rc.Scratch)
	}
	want := []string{
		"mrs x16, tpidr_el0",
		"ldr x17, [x16]", "eor x17, x17, x17, lsr #32", "cbnz w17, 0x24", // 0x4, retry
		"isb", "mrs x17, cntvct_el0", "str x17, [x16, #16]", "brk #0x0", "b 0x4",
		"ldr w17, [x16]", "add x16, x16, x17", // 0x24, ok
		"isb", "mrs x17, cntvct_el0", "str x17, [x16, #128]",
		"cbz x28, 0x4c", "ldr x17, [x28, #8]", "sub x17, sp, x17", "neg x17, x17", "b 0x50",
		"mov x17, sp", "str x17, [x16, #136]", "str x28, [x16, #152]",
		"mov x17, #0x8d15", "movk x17, #0x4004, lsl #16", "str x17, [x16, #144]",
		"and x17, x16, #0x1ffff", "add x17, x17, #0x20", "and x17, x17, #0x1ffff",
		"and x16, x16, #0xfffffffffffe0000", "stlr w17, [x16]",
	}
	if got := gnuDisasm(t, rc.Code, 0); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("listing:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestCalibrationWork checks the calibration's work with the GNU
// disassemblers.
func TestCalibrationWork(t *testing.T) {
	want := slices.Repeat([]string{"mul x9, x9, x9"}, 8)
	if got := gnuDisasm(t, CalibrationWork(ARM64), 0); !slices.Equal(got, want) {
		t.Errorf("arm64 calibration work: %q", got)
	}
}
