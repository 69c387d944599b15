package unwind_test

import (
	"debug/elf"
	"testing"

	"github.com/sourceprofiler/sprof/profile/unwind"
)

// FuzzParse feeds bytes as a CFI section (.eh_frame when eh, at a
// link-time address, else .debug_frame), then unwinds at pc through what
// parsed, for both architectures: bad or truncated CFI is an error or a
// stop reason, never a panic.
func FuzzParse(f *testing.F) {
	f.Add(debugFrame(cieAMD64, fdeSpec{0x1000, 0x100, restoreProg}), false, uint64(0x1003))
	f.Add(debugFrame(cieAMD64, fdeSpec{0x1000, 0x100, []byte{0x0f, 3, 0x77, 0, 0x06, 0x0b, 0x2d}}), false, uint64(0x1010))
	f.Add(debugFrame(cieAMD64, fdeSpec{0x1000, 0x100, []byte{0x16, 16, 3, 0x23, 0x99, 0x01}}), true, uint64(0x1000))
	if ef, err := elf.Open("/proc/self/exe"); err == nil {
		if s := ef.Section(".eh_frame"); s != nil {
			if data, err := s.Data(); err == nil && len(data) < 1<<20 {
				f.Add(data, true, s.Addr)
			}
		}
		ef.Close()
	}
	f.Fuzz(func(t *testing.T, data []byte, eh bool, pc uint64) {
		stack := synthStack(8, map[int]uint64{0: pc + 1, 1: pc + 2})
		for _, arch := range []unwind.Arch{unwind.AMD64, unwind.ARM64} {
			m, err := unwind.Parse([]unwind.Section{{Data: data, EH: eh, Addr: 0x400}}, 0, arch)
			if err != nil {
				if m != nil {
					t.Fatalf("module and error %v", err)
				}
				continue
			}
			regs := unwind.Regs{Arch: arch, PC: pc, SP: synthSP, FP: synthSP + 16, LR: pc + 3}
			pcs, _ := unwind.Unwind(regs, stack, func(uint64) *unwind.Module { return m }, 16)
			if len(pcs) == 0 || pcs[0] != pc || len(pcs) > 16 {
				t.Fatalf("frames %x from pc %#x", pcs, pc)
			}
		}
	})
}
