package profile

import (
	"maps"
	"slices"
	"testing"
)

// writes records the writes into a memory.
type writes map[uint64][]byte

func (w writes) WriteMem(addr uint64, b []byte) error {
	w[addr] = append([]byte(nil), b...)
	return nil
}

// TestUnpatchRetired: a forked child's copy of the memory holds the
// breakpoints of the moment of its fork; those that coverage removed from
// the program since (retired) are taken out of the child too, else it
// dies of SIGTRAP at one (seen with line coverage: a line covered by the
// parent between the fork and the child's first stop).
func TestUnpatchRetired(t *testing.T) {
	tr := &tracer{}
	tr.parts.bp = newBreakpoints(tr)
	tr.choose()
	tr.parts.bp.sites[0x1000] = &site{addr: 0x1000, orig: []byte{0x55}}
	tr.parts.bp.retired[0x2000] = &site{addr: 0x2000, orig: []byte{0x48}}
	w := writes{}
	tr.parts.unpatch(w)
	if got := slices.Sorted(maps.Keys(w)); !slices.Equal(got, []uint64{0x1000, 0x2000}) {
		t.Errorf("wrote at %#x, want 0x1000 and 0x2000", got)
	}
	if w[0x2000][0] != 0x48 {
		t.Errorf("wrote %#x at 0x2000, want the original 0x48", w[0x2000])
	}
}
