package elfid

import (
	"debug/elf"
	"slices"
)

// OutsideEntries returns the places of f's code that the system and
// other modules may start or call without a pointer the file holds: its
// entry point, its DT_INIT and DT_FINI functions, and the functions its
// dynamic symbol table defines (another module calls them through its
// PLT). Link-time addresses, sorted. fixed reports a file of fixed
// addresses (not ET_DYN), whose code may take a function's address as
// an immediate no relocation names.
func OutsideEntries(f *elf.File) (out []uint64, fixed bool) {
	if f.Entry != 0 {
		out = append(out, f.Entry)
	}
	for _, tag := range []elf.DynTag{elf.DT_INIT, elf.DT_FINI} {
		if vs, err := f.DynValue(tag); err == nil {
			out = append(out, vs...)
		}
	}
	syms, _ := f.DynamicSymbols()
	for _, s := range syms {
		if t := elf.ST_TYPE(s.Info); (t == elf.STT_FUNC || t == elf.STT_GNU_IFUNC) && s.Section != elf.SHN_UNDEF && s.Value != 0 {
			out = append(out, s.Value)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), f.Type != elf.ET_DYN
}

// ReadOutsideEntries is [OutsideEntries] of the file at path; a file
// that does not open is taken for one of fixed addresses.
func ReadOutsideEntries(path string) ([]uint64, bool) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, true
	}
	defer f.Close()
	return OutsideEntries(f)
}
