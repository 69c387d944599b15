package elfid

import (
	"debug/elf"
	"os"
	"slices"
	"testing"
)

// TestOutsideEntries: the test binary's entry point is among its
// outside entries, and it is of fixed addresses unless it is ET_DYN.
func TestOutsideEntries(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	f, err := elf.Open(exe)
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	entries, fixed := OutsideEntries(f)
	if !slices.Contains(entries, f.Entry) {
		t.Errorf("entry point %#x not among %x", f.Entry, entries)
	}
	if fixed != (f.Type != elf.ET_DYN) {
		t.Errorf("fixed = %v for a file of type %v", fixed, f.Type)
	}
	if !slices.IsSorted(entries) {
		t.Errorf("not sorted: %x", entries)
	}
}
