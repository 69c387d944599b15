package profile

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"os"

	"github.com/sourceprofiler/sprof/datafile"
)

// checkIdentity reports whether the file at path is still the file PREP read
// for module m: same build ID (when the module has one), size and
// modification time. A program relinked since PREP gives false.
func checkIdentity(path string, m *datafile.Module) (bool, error) {
	st, err := os.Stat(path)
	if err != nil {
		return false, err
	}
	if st.Size() != m.Size || st.ModTime().UnixNano() != m.ModTime {
		return false, nil
	}
	if len(m.BuildID) == 0 {
		return true, nil
	}
	id, err := buildID(path)
	if err != nil {
		return false, err
	}
	return bytes.Equal(id, m.BuildID), nil
}

// buildID returns the GNU build ID note of an ELF file, or nil. It looks in
// the note sections and then the PT_NOTE segments: the Go linker writes
// .note.gnu.build-id outside its PT_NOTE segment.
func buildID(path string) ([]byte, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read build id: %w", err)
	}
	defer f.Close()
	var notes []io.ReaderAt
	var sizes []uint64
	for _, s := range f.Sections {
		if s.Type == elf.SHT_NOTE {
			notes, sizes = append(notes, s), append(sizes, s.Size)
		}
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_NOTE {
			notes, sizes = append(notes, p), append(sizes, p.Filesz)
		}
	}
	for i, r := range notes {
		data := make([]byte, min(sizes[i], 1<<16))
		if _, err := r.ReadAt(data, 0); err != nil {
			continue
		}
		if id := findBuildID(data, f.ByteOrder); id != nil {
			return id, nil
		}
	}
	return nil, nil
}

// findBuildID walks the notes of a PT_NOTE segment for NT_GNU_BUILD_ID.
func findBuildID(data []byte, bo binary.ByteOrder) []byte {
	const ntGNUBuildID = 3
	align := func(n uint32) uint32 { return (n + 3) &^ 3 }
	for len(data) >= 12 {
		namesz, descsz, typ := bo.Uint32(data), bo.Uint32(data[4:]), bo.Uint32(data[8:])
		data = data[12:]
		if uint64(align(namesz))+uint64(align(descsz)) > uint64(len(data)) {
			return nil
		}
		name := data[:namesz]
		desc := data[align(namesz) : align(namesz)+descsz]
		if typ == ntGNUBuildID && string(bytes.TrimRight(name, "\x00")) == "GNU" {
			return append([]byte(nil), desc...)
		}
		data = data[align(namesz)+align(descsz):]
	}
	return nil
}
