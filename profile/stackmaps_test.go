package profile

import (
	"errors"
	"testing"

	"github.com/sourceprofiler/sprof/profile/procmaps"
)

// TestStackMaps: the memory map is read at the first question, and again
// only for an address outside the mappings it had; an address in no
// mapping of a fresh reading is not known, and its gap is not read again
// for; a map that cannot be read is not read again.
func TestStackMaps(t *testing.T) {
	current := []procmaps.Mapping{{Start: 0x10000, End: 0x20000}, {Start: 0x50000, End: 0x60000}}
	m := &stackMaps{read: func() ([]procmaps.Mapping, error) { return current, nil }}
	ask := func(sp uint64, wantLo, wantHi uint64, wantOK bool, reads int) {
		t.Helper()
		lo, hi, ok := m.StackAt(sp)
		if lo != wantLo || hi != wantHi || ok != wantOK || m.reads != reads {
			t.Errorf("StackAt(%#x) = %#x, %#x, %v after %d readings; want %#x, %#x, %v after %d",
				sp, lo, hi, ok, m.reads, wantLo, wantHi, wantOK, reads)
		}
	}
	ask(0x1f000, 0x10000, 0x20000, true, 1)
	ask(0x5f000, 0x50000, 0x60000, true, 1)
	current = append(current, procmaps.Mapping{Start: 0x30000, End: 0x31000}) // a stack mapped since
	ask(0x30800, 0x30000, 0x31000, true, 2)
	ask(0x40000, 0, 0, false, 3) // in no mapping: read once
	ask(0x48000, 0, 0, false, 3) // the same gap
	current[0].Start = 0x8000    // the stack grew
	ask(0x9000, 0x8000, 0x20000, true, 4)

	m = &stackMaps{read: func() ([]procmaps.Mapping, error) { return nil, errors.New("permission denied") }}
	ask(0x1f000, 0, 0, false, 1)
	ask(0x5f000, 0, 0, false, 1)
}
