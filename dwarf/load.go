package dwarf

import (
	"bytes"
	"cmp"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	stddwarf "debug/dwarf"

	"github.com/sourceprofiler/sprof/internal/elfid"
)

// load reads everything Open promises from the binary bin and the debug
// file dbg (nil when none was named).
func (f *File) load(bin, dbg *elf.File, dbgPath string, search bool) (err error) {
	defer catch(&err, "read "+f.Path)
	f.identify(bin)
	f.Imports = readImports(bin)
	f.Needed, f.RunPath = readNeeded(bin)
	src := bin // the file whose DWARF is read
	switch {
	case dbg != nil:
		if err := matchDebug(bin, dbg, f.BuildID); err != nil {
			return fmt.Errorf("open debug file %s of %s: %w", dbgPath, f.Path, err)
		}
		if !hasDWARF(dbg) {
			return fmt.Errorf("open debug file %s of %s: %w", dbgPath, f.Path, ErrNoDWARF)
		}
		src, f.DebugFile = dbg, dbgPath
	case search && !hasDWARF(bin):
		if d, path := f.findDebugFile(bin); d != nil {
			src, dbg, f.DebugFile = d, d, path
		}
	}

	syms, dynamic, err := readSymbols(bin, dbg, f.impl)
	if err != nil {
		f.warn("read symbols of %s: %v", f.Path, err)
	}
	module := filepath.Base(f.Path)
	var lost []lostUnit
	if hasDWARF(src) {
		if lost, err = f.readDWARF(src, syms, module); err != nil {
			f.warn("%v: functions taken from the symbol table", err)
			f.Funcs, f.Units, f.HasDWARF = nil, nil, false
			f.impl.data, f.impl.cus, f.impl.splits = nil, nil, nil
		}
	}
	f.ExportsOnly = dynamic && !f.HasDWARF
	f.Funcs = append(f.Funcs, adopt(symbolFuncs(syms, f.Funcs, module), lost)...)
	slices.SortStableFunc(f.Funcs, func(a, b Func) int { return cmp.Compare(a.Entry, b.Entry) })
	f.Funcs = slices.CompactFunc(f.Funcs, func(a, b Func) bool { return a.Entry == b.Entry })
	return nil
}

// warn records a non-fatal problem.
func (f *File) warn(format string, args ...any) {
	f.Warnings = append(f.Warnings, fmt.Sprintf(format, args...))
}

// readDWARF loads the DWARF of src and lists units and functions, reading
// split units from their .dwo files or .dwp package. It returns the units
// whose split DWARF could not be read.
func (f *File) readDWARF(src *elf.File, syms *symtab, module string) (lost []lostUnit, err error) {
	op := "read DWARF of " + f.Path
	if f.DebugFile != "" {
		op = "read DWARF of " + f.DebugFile
	}
	defer catch(&err, op)
	d, sec, err := loadDWARF(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	w := newWalker(d)
	w.dwo = newDWOFinder(f.Path, src, sec, f.impl.openDWO)
	if err := w.walk(); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	f.impl.data, f.impl.cus, f.impl.splits = d, w.cus, w.kept
	f.Units = w.units
	f.HasDWARF = true
	f.Funcs = w.funcs(f.impl, syms, module)
	f.Warnings = append(f.Warnings, w.warnings(op, src)...)
	return w.lost, nil
}

// hasDWARF reports whether ef holds a .debug_info section with contents
// (in a stripped binary it is gone; in a debug file .text is NOBITS but
// .debug_info is not).
func hasDWARF(ef *elf.File) bool {
	for _, s := range ef.Sections {
		if (s.Name == ".debug_info" || s.Name == ".zdebug_info") && s.Type != elf.SHT_NOBITS && s.Size > 0 {
			return true
		}
	}
	return false
}

// dwarfSections are the sections PREP reads; location lists, type units,
// frames and name indexes are not needed and not loaded.
var dwarfSections = []string{"info", "abbrev", "str", "line", "ranges", "addr", "line_str", "str_offsets", "rnglists"}

// maxRatio bounds the declared uncompressed size of a compressed section
// relative to its stored size (zlib cannot exceed 1032:1; real zstd debug
// sections compress about 10:1), so a small hostile file cannot make us
// inflate gigabytes.
const maxRatio = 2048

// loadDWARF reads the DWARF sections of ef. Unlike elf.File.DWARF it reads
// only the sections needed and applies no relocations (ET_REL files are
// refused earlier). It returns the sections too, by name without
// ".debug_": split units need the binary's .debug_addr and .debug_ranges.
func loadDWARF(ef *elf.File) (*stddwarf.Data, map[string][]byte, error) {
	sec, err := readSections(ef, func(name string) (string, bool) {
		suffix, ok := debugSuffix(name)
		return suffix, ok && slices.Contains(dwarfSections, suffix)
	})
	if err != nil {
		return nil, nil, err
	}
	if len(sec["info"]) == 0 {
		return nil, nil, ErrNoDWARF
	}
	d, err := stddwarf.New(sec["abbrev"], nil, nil, sec["info"], sec["line"], nil, sec["ranges"], sec["str"])
	if err != nil {
		return nil, nil, err
	}
	for _, name := range []string{"addr", "line_str", "str_offsets", "rnglists"} {
		if b := sec[name]; b != nil {
			if err := d.AddSection(".debug_"+name, b); err != nil {
				return nil, nil, fmt.Errorf("section .debug_%s: %w", name, err)
			}
		}
	}
	return d, sec, nil
}

// debugSuffix returns what follows ".debug_" (or ".zdebug_", the old GNU
// compressed form) in a section name.
func debugSuffix(name string) (string, bool) {
	if suffix, ok := strings.CutPrefix(name, ".debug_"); ok {
		return suffix, true
	}
	return strings.CutPrefix(name, ".zdebug_")
}

// readSections reads the sections of ef that want names, the first of each
// name, uncompressed, keyed by what want returns. NOBITS sections are
// skipped.
func readSections(ef *elf.File, want func(name string) (string, bool)) (map[string][]byte, error) {
	sec := make(map[string][]byte)
	for _, s := range ef.Sections {
		key, ok := want(s.Name)
		if !ok || sec[key] != nil || s.Type == elf.SHT_NOBITS {
			continue
		}
		if err := checkSize(s); err != nil {
			return nil, err
		}
		b, err := s.Data()
		if err != nil {
			return nil, fmt.Errorf("section %s: %w", s.Name, err)
		}
		sec[key] = b
	}
	return sec, nil
}

// checkSize refuses a compressed section whose declared size is
// implausible for its stored size.
func checkSize(s *elf.Section) error {
	size := s.Size
	if s.Flags&elf.SHF_COMPRESSED == 0 {
		if !strings.HasPrefix(s.Name, ".zdebug_") {
			return nil // read as stored; bounded by the file
		}
		// Old GNU format: "ZLIB" and a big-endian 64-bit size.
		var hdr [12]byte
		if n, _ := s.ReadAt(hdr[:], 0); n != len(hdr) || string(hdr[:4]) != "ZLIB" {
			return nil
		}
		size = binary.BigEndian.Uint64(hdr[4:])
	}
	if size/maxRatio > s.FileSize+1<<20/maxRatio {
		return fmt.Errorf("section %s: uncompressed size %d implausible for %d stored bytes", s.Name, size, s.FileSize)
	}
	return nil
}

// matchDebug checks that a named debug file belongs to the binary.
func matchDebug(bin, dbg *elf.File, id []byte) error {
	if bin.Machine != dbg.Machine || bin.Class != dbg.Class {
		return fmt.Errorf("machine %v %v, binary is %v %v", dbg.Class, dbg.Machine, bin.Class, bin.Machine)
	}
	if dbgID := elfid.BuildID(dbg); id != nil && dbgID != nil && !bytes.Equal(id, dbgID) {
		return fmt.Errorf("build ID %x, binary has %x", dbgID, id)
	}
	return nil
}
