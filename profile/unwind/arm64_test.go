package unwind_test

import (
	"debug/elf"
	"encoding/binary"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/internal/testutil"
	"github.com/sourceprofiler/sprof/profile/unwind"
)

// The arm64 path, on any host: the unwind fixture cross-compiled with
// branch protection (every function signs its return address and its CFI
// holds DW_CFA_AARCH64_negate_ra_state), and a stopped state built by
// hand from its CFI as binutils reads it (readelf -wF, an interpreter of
// CFI independent of delve's): c stopped at a PC, with b, a and main
// above it, each caller's return address and frame pointer saved where
// the callee's CFA rules say, return addresses signed.

const (
	arm64Bias  = 0x5555_0000_0000         // where the PIE is "loaded"
	arm64SP    = 0x7fff_f000_0000         // c's stack pointer
	arm64Outer = 0x7f00_0000_1230         // main's return address: in no module
	pacMask    = 0x007f_0000_0000_0000    // NT_ARM_PAC_MASK of a 48-bit VA kernel
	pacBits    = 0x0025_0000_0000_0000    // a signature in those bits
	brkInsn    = 0xd4200000               // BRK #0
	blMask     = 0xfc000000               // BL's opcode bits
	blOp       = 0x94000000               // BL imm26
	x29Junk    = uint64(0x2929_2929_0000) // frame pointers of the callers
)

// arm64Fixture is the cross-compiled fixture, its symbols, code and CFI
// rows as readelf interprets them.
type arm64Fixture struct {
	path string
	mod  *unwind.Module
	syms map[string]elf.Symbol
	text *elf.Section
	code []byte
	rows []cfiRow
}

// cfiRow is one row of readelf -wF: from loc, the CFA rule and the
// registers' rules ("c-56", "u").
type cfiRow struct {
	loc, end uint64 // end: the FDE's end
	cfa      string
	regs     map[string]string
}

func buildARM64(t *testing.T) *arm64Fixture {
	t.Helper()
	cc := testutil.MustHaveTool(t, "aarch64-linux-gnu-gcc")
	readelf := testutil.MustHaveTool(t, "readelf")
	flags := []string{"-O2", "-mbranch-protection=standard", "-fPIE", "-pie"}
	prog := testutil.Fixture(t, "c-arm64", "unwind", flags, func(out string) *exec.Cmd {
		src := testutil.Root(t) + "/testdata/progs/c/unwind.c"
		return exec.Command(cc, append(append([]string{"-g"}, flags...), src, "-o", out)...)
	})
	fx := &arm64Fixture{path: prog, syms: map[string]elf.Symbol{}}
	f, err := elf.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC {
			fx.syms[s.Name] = s
		}
	}
	fx.text = f.Section(".text")
	if fx.code, err = fx.text.Data(); err != nil {
		t.Fatal(err)
	}
	if fx.mod, err = unwind.Load(prog, arm64Bias, unwind.ARM64); err != nil {
		t.Fatalf("load: %v", err)
	}
	raw, err := exec.Command(readelf, "--debug-dump=frames", prog).Output()
	if err != nil || !strings.Contains(string(raw), "DW_CFA_AARCH64_negate_ra_state") {
		t.Fatalf("readelf: %v; want DW_CFA_AARCH64_negate_ra_state in the CFI (branch protection)", err)
	}
	interp, err := exec.Command(readelf, "-wF", prog).Output()
	if err != nil {
		t.Fatal(err)
	}
	fx.rows = parseRows(t, string(interp))
	return fx
}

// parseRows reads readelf -wF's tables.
func parseRows(t *testing.T, out string) []cfiRow {
	var rows []cfiRow
	var cols []string
	var end uint64
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 5 && f[3] == "FDE":
			_, hi, _ := strings.Cut(f[5], "..")
			end, _ = strconv.ParseUint(hi, 16, 64)
		case len(f) > 0 && f[0] == "LOC":
			cols = f[1:]
		case len(f) == len(cols)+1 && len(f) > 1 && end != 0:
			loc, err := strconv.ParseUint(f[0], 16, 64)
			if err != nil {
				continue
			}
			r := cfiRow{loc: loc, end: end, cfa: f[1], regs: map[string]string{}}
			for i, c := range cols[1:] {
				r.regs[c] = f[i+2]
			}
			rows = append(rows, r)
		}
	}
	if len(rows) < 10 {
		t.Fatalf("readelf -wF: %d rows", len(rows))
	}
	return rows
}

// row returns the CFI row of the link-time address pc.
func (fx *arm64Fixture) row(t *testing.T, pc uint64) cfiRow {
	t.Helper()
	var best *cfiRow
	for i, r := range fx.rows {
		if r.loc <= pc && pc < r.end && (best == nil || r.loc > best.loc) {
			best = &fx.rows[i]
		}
	}
	if best == nil {
		t.Fatalf("no CFI row for %#x", pc)
	}
	return *best
}

// insn returns the addresses of the instructions of function fn that
// match.
func (fx *arm64Fixture) insns(t *testing.T, fn string, match func(pc uint64, w uint32) bool) []uint64 {
	t.Helper()
	s, ok := fx.syms[fn]
	if !ok {
		t.Fatalf("no function %s", fn)
	}
	var out []uint64
	for pc := s.Value; pc < s.Value+s.Size; pc += 4 {
		w := binary.LittleEndian.Uint32(fx.code[pc-fx.text.Addr:])
		if match(pc, w) {
			out = append(out, pc)
		}
	}
	return out
}

// returnTo returns the return address of caller's call to callee.
func (fx *arm64Fixture) returnTo(t *testing.T, caller, callee string) uint64 {
	t.Helper()
	target := fx.syms[callee].Value
	calls := fx.insns(t, caller, func(pc uint64, w uint32) bool {
		off := int64(int32(w<<6) >> 6 << 2) // imm26 * 4, signed
		return w&blMask == blOp && pc+uint64(off) == target
	})
	if len(calls) != 1 {
		t.Fatalf("%s calls %s at %x: want one call", caller, callee, calls)
	}
	return calls[0] + 4
}

// state builds the registers and the stack copy of the fixture stopped in
// c at the link-time address pcC, b, a and main above it: each frame's CFA
// from its row (sp+N: the CFA rules of gcc's arm64 code), the caller's
// return address (signed with pac) and frame pointer written where the
// row says, or the return address in x30 where the row leaves it there.
// It returns the frames' PCs an unwind must find, main's return address
// last.
func (fx *arm64Fixture) state(t *testing.T, pcC, pac uint64) (unwind.Regs, unwind.Stack, []uint64) {
	t.Helper()
	raB, raA, raMain := fx.returnTo(t, "b", "c"), fx.returnTo(t, "a", "b"), fx.returnTo(t, "main", "a")
	looks := []uint64{pcC, raB - 4, raA - 4, raMain - 4} // each frame's row: in the call
	rets := []uint64{raB + arm64Bias, raA + arm64Bias, raMain + arm64Bias, arm64Outer}
	regs := unwind.Regs{Arch: unwind.ARM64, PC: pcC + arm64Bias, SP: arm64SP, FP: x29Junk, LR: 0xbad0, PACMask: pacMask}
	mem := map[uint64]uint64{}
	sp, top := uint64(arm64SP), uint64(arm64SP)
	for i, look := range looks {
		r := fx.row(t, look)
		n, ok := strings.CutPrefix(r.cfa, "sp+")
		off, err := strconv.ParseUint(n, 10, 64)
		if !ok || err != nil {
			t.Fatalf("frame %d at %#x: CFA rule %q, want sp+N", i, look, r.cfa)
		}
		cfa := sp + off
		save := func(col string, v uint64) bool {
			n, ok := strings.CutPrefix(r.regs[col], "c-")
			if !ok {
				return false // unchanged: still in the register
			}
			off, err := strconv.ParseUint(n, 10, 64)
			if err != nil {
				t.Fatalf("rule %q", r.regs[col])
			}
			mem[cfa-off] = v
			top = max(top, cfa-off+8)
			return true
		}
		if !save("ra", rets[i]|pac) {
			if i != 0 {
				t.Fatalf("frame %d at %#x: the return address is in x30 past the first frame", i, look)
			}
			regs.LR = rets[i] | pac
		}
		save("x29", x29Junk+uint64(i)+1)
		save("x19", 0x1919)
		sp = max(sp, cfa)
	}
	data := make([]byte, top-arm64SP+64)
	for addr, v := range mem {
		binary.LittleEndian.PutUint64(data[addr-arm64SP:], v)
	}
	return regs, unwind.Stack{Addr: arm64SP, Data: data}, append([]uint64{pcC + arm64Bias}, rets...)
}

// name names the function of a link-time address.
func (fx *arm64Fixture) name(addr uint64) string {
	for n, s := range fx.syms {
		if addr >= s.Value && addr < s.Value+s.Size {
			return n
		}
	}
	return "?"
}

// TestUnwindARM64 unwinds the hand-built states of the cross-compiled
// fixture: c in its body (its return address and frame pointer saved on
// the stack), at its entry after paciasp (the CFA is SP, the signed return
// address in x30), and in its epilogue after ldp x29, x30 (where the CFI
// restores x30 to its CIE rule: in x30, not undefined), each giving c, b,
// a, main and main's return address, stripped of its signature, then no
// module. Without the mask, a signed return address is no code.
func TestUnwindARM64(t *testing.T) {
	fx := buildARM64(t)
	t.Logf("%s: %d FDEs", fx.path, fx.mod.FDEs())
	brk := fx.insns(t, "c", func(_ uint64, w uint32) bool { return w == brkInsn })
	autiasp := fx.insns(t, "c", func(_ uint64, w uint32) bool { return w == 0xd50323bf })
	if len(brk) != 1 || len(autiasp) == 0 {
		t.Fatalf("c: brk at %x, autiasp at %x: want one brk, an autiasp", brk, autiasp)
	}
	modules := func(pc uint64) *unwind.Module {
		if pc >= arm64Bias && pc < arm64Bias+1<<24 {
			return fx.mod
		}
		return nil
	}
	for _, tc := range []struct {
		name string
		pc   uint64
		pac  uint64
	}{
		{"body", brk[0], pacBits},
		{"body-unsigned", brk[0], 0},
		{"entry", fx.syms["c"].Value + 4, pacBits},
		{"epilogue", autiasp[0], pacBits},
	} {
		t.Run(tc.name, func(t *testing.T) {
			regs, stack, want := fx.state(t, tc.pc, tc.pac)
			pcs, stop := unwind.Unwind(regs, stack, modules, 16)
			var names []string
			for i, pc := range pcs[:min(len(pcs), 4)] {
				names = append(names, fx.name(pc-arm64Bias-uint64(min(i, 1))))
			}
			if !slices.Equal(pcs, want) || stop != unwind.StopNoModule {
				t.Fatalf("frames %x (%v), %v; want %x, %v", pcs, names, stop, want, unwind.StopNoModule)
			}
			if !slices.Equal(names, []string{"c", "b", "a", "main"}) {
				t.Errorf("frames %v, want c, b, a, main", names)
			}
			if tc.pac == 0 {
				return
			}
			regs.PACMask = 0
			pcs, stop = unwind.Unwind(regs, stack, modules, 16)
			if len(pcs) != 2 || pcs[1] != want[1]|pacBits || stop != unwind.StopNoModule {
				t.Errorf("without the mask: frames %x, %v; want c, b's signed return address, %v", pcs, stop, unwind.StopNoModule)
			}
		})
	}
}
