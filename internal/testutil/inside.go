package testutil

import (
	"debug/elf"
	"testing"
)

// fixedLength are the machines whose instructions all have one length,
// and that length (arm64: a word).
var fixedLength = map[elf.Machine]uint64{elf.EM_AARCH64: 4}

// InsideInstruction returns an address in [lo, hi) of the program at path
// that is inside an instruction, not on a boundary: the second byte of
// its first instruction longer than a byte (x86-64, whose instructions'
// lengths length gives), or the middle of the first where all have one
// length (arm64: lo+2). The tests of crafted plans put a site there.
// (testutil does not import instr, whose tests import it.)
func InsideInstruction(t testing.TB, path string, lo, hi uint64, length func(code []byte, pc uint64) (int, error)) uint64 {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n, ok := fixedLength[f.Machine]; ok {
		return lo + n/2
	}
	code := make([]byte, hi-lo)
	for _, s := range f.Sections {
		if s.Type == elf.SHT_PROGBITS && s.Addr <= lo && hi <= s.Addr+s.Size {
			if _, err := s.ReadAt(code, int64(lo-s.Addr)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for pc := lo; pc < hi; {
		n, err := length(code[pc-lo:], pc)
		if err != nil {
			t.Fatalf("decode at %#x: %v", pc, err)
		}
		if n > 1 {
			return pc + 1
		}
		pc += uint64(n)
	}
	t.Fatalf("no instruction of more than a byte in [%#x, %#x)", lo, hi)
	return 0
}
