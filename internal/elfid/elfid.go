// Package elfid holds the facts that identify an ELF file and place it in a
// running process: its GNU build ID, its link base, the load bias of a
// mapping, and the page size of the running system.
//
// PREP records the build ID and link base in the .pbi (through package
// dwarf) and PROFILE checks and uses them (package profile); both read them
// here, so that what PREP records is what PROFILE compares. PROFILE reads
// through it, too, the other facts of the files on the machine that runs
// the program (runtime.go): the span an instance of a library takes, a
// program's dynamic linker and that linker's rendezvous, and where the
// functions of a module start. PROFILE imports no ELF reader of its own.
// The package imports nothing of the project.
//
// # Security
//
// The readers take hostile files: every note read is bounded by
// [MaxNoteSize], and malformed notes end the search instead of panicking;
// FuzzParseNotes and FuzzRuntimeReaders hold them to it.
package elfid

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"os"
)

// MaxNoteSize bounds the bytes read from one note section or segment. A
// build ID note is 36 bytes; real note areas are a few hundred.
const MaxNoteSize = 1 << 16

// ntGNUBuildID is the type of the GNU build ID note (elf.h NT_GNU_BUILD_ID).
const ntGNUBuildID = 3

// BuildID returns the GNU build ID of f: the descriptor of its first
// NT_GNU_BUILD_ID note named "GNU", or nil when it has none. It looks in the
// note sections first, then in the PT_NOTE segments (a file without section
// headers). Both are needed: the Go linker writes .note.gnu.build-id outside
// its PT_NOTE segment.
func BuildID(f *elf.File) []byte {
	for _, s := range f.Sections {
		if s.Type == elf.SHT_NOTE {
			if id := findBuildID(s, s.Size, f.ByteOrder); id != nil {
				return id
			}
		}
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_NOTE {
			if id := findBuildID(p, p.Filesz, f.ByteOrder); id != nil {
				return id
			}
		}
	}
	return nil
}

// ReadBuildID returns the GNU build ID of the ELF file at path, or nil when
// it has none.
func ReadBuildID(path string) (id []byte, err error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read build ID of %s: %w", path, err)
	}
	defer f.Close()
	defer func() {
		// debug/elf has panicked on hostile headers before.
		if r := recover(); r != nil {
			id, err = nil, fmt.Errorf("read build ID of %s: malformed file (panic: %v)", path, r)
		}
	}()
	return BuildID(f), nil
}

// findBuildID reads a note area of size bytes (at most MaxNoteSize) and
// returns the build ID among its notes, or nil.
func findBuildID(r io.ReaderAt, size uint64, bo binary.ByteOrder) []byte {
	if size == 0 || size > MaxNoteSize {
		return nil
	}
	data := make([]byte, size)
	if n, _ := r.ReadAt(data, 0); uint64(n) != size {
		return nil
	}
	return ParseNotes(data, bo)
}

// ParseNotes walks ELF notes (namesz, descsz, type, then the name and the
// descriptor, each padded to 4 bytes; the ELF specification's "Note
// Section") and returns a copy of the descriptor of the first non-empty
// NT_GNU_BUILD_ID note named "GNU", or nil. A malformed note ends the walk.
func ParseNotes(data []byte, bo binary.ByteOrder) []byte {
	for len(data) >= 12 {
		namesz, descsz, typ := uint64(bo.Uint32(data)), uint64(bo.Uint32(data[4:])), bo.Uint32(data[8:])
		data = data[12:]
		nameEnd := align4(namesz)
		descEnd := nameEnd + align4(descsz)
		if nameEnd > uint64(len(data)) || descEnd > uint64(len(data)) {
			return nil
		}
		if typ == ntGNUBuildID && descsz > 0 && bytes.Equal(data[:namesz], []byte("GNU\x00")) {
			return bytes.Clone(data[nameEnd : nameEnd+descsz])
		}
		data = data[descEnd:]
	}
	return nil
}

func align4(n uint64) uint64 { return (n + 3) &^ 3 }

// LinkBase returns the link-time address of file offset 0: p_vaddr - p_offset
// of the loadable segment with the lowest file offset, which is where the
// kernel and the dynamic linker place the file's first mapping. It returns 0
// for a file without loadable segments or with a segment whose offset
// exceeds its address (no real linker makes one).
//
// LinkBase is not rounded to a page: see [LoadBias], which works for every
// page size.
func LinkBase(f *elf.File) uint64 {
	var first *elf.Prog
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && (first == nil || p.Off < first.Off) {
			first = p
		}
	}
	if first == nil || first.Off > first.Vaddr {
		return 0
	}
	return first.Vaddr - first.Off
}

// LoadBias returns the difference between run-time and link-time addresses
// of a module with the given [LinkBase], from the mapping of its first
// segment: the mapping starts at start and maps the file from offset.
//
// The kernel maps a segment from its offset rounded down to a page, at its
// address rounded down the same way, so start - offset is the run-time
// address of file offset 0 whatever the page size (4, 16 or 64 KiB), and
// minus LinkBase the bias.
func LoadBias(start, offset, linkBase uint64) uint64 {
	return start - offset - linkBase
}

// PageSize returns the page size of the running system: 4 KiB on x86-64,
// 4, 16 or 64 KiB on arm64 depending on the kernel. PROFILE maps its slots
// at page-aligned addresses with it.
func PageSize() uint64 {
	return uint64(os.Getpagesize())
}
