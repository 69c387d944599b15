package dwarf

import (
	"bytes"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// DebugDirs are the root directories searched for separate debug files,
// as gdb's debug-file-directory: ROOT/.build-id/xx/rest.debug by build ID,
// and ROOT/<binary's directory>/<debuglink name>. Tests point it at a
// temporary directory; it is read by Open, so set it before opening.
var DebugDirs = []string{"/usr/lib/debug"}

// maxDebugLink bounds the .gnu_debuglink section (a file name and a CRC).
const maxDebugLink = 4096

// findDebugFile looks for a separate debug file of bin in the order of
// gdb and delve: by build ID, then by .gnu_debuglink beside the binary, in
// its .debug directory, and under each debug root. It returns the opened
// debug file, or nil; rejected candidates become warnings.
func (f *File) findDebugFile(bin *elf.File) (*elf.File, string) {
	if len(f.BuildID) >= 2 {
		id := hex.EncodeToString(f.BuildID)
		for _, root := range DebugDirs {
			path := filepath.Join(root, ".build-id", id[:2], id[2:]+".debug")
			if d := f.tryDebugFile(bin, path, nil); d != nil {
				return d, path
			}
		}
	}
	name, crc, ok := debugLink(bin)
	if !ok {
		return nil, ""
	}
	dir := absDir(f.Path)
	candidates := []string{filepath.Join(dir, name), filepath.Join(dir, ".debug", name)}
	for _, root := range DebugDirs {
		candidates = append(candidates, filepath.Join(root, dir, name))
	}
	for _, path := range candidates {
		if d := f.tryDebugFile(bin, path, &crc); d != nil {
			return d, path
		}
	}
	return nil, ""
}

// tryDebugFile opens path as the debug file of bin: it must exist, not be
// the binary itself, match the CRC when one is given, be an ELF file of the
// same machine and build ID, and hold DWARF.
func (f *File) tryDebugFile(bin *elf.File, path string, crc *uint32) *elf.File {
	fi, err := os.Stat(path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			f.warn("debug file %s: %v", path, err)
		}
		return nil
	}
	if self, err := os.Stat(f.Path); err == nil && os.SameFile(fi, self) {
		return nil
	}
	if crc != nil {
		got, err := fileCRC(path)
		if err != nil {
			f.warn("debug file %s: %v", path, err)
			return nil
		}
		if got != *crc {
			f.warn("debug file %s: CRC %08x does not match .gnu_debuglink CRC %08x of %s: ignored", path, got, *crc, f.Path)
			return nil
		}
	}
	d, osf, err := openELF(path)
	if err != nil {
		f.warn("debug file %s: %v", path, err)
		return nil
	}
	if err := matchDebug(bin, d, f.BuildID); err != nil {
		osf.Close()
		f.warn("debug file %s: %v: ignored", path, err)
		return nil
	}
	if !hasDWARF(d) {
		osf.Close()
		f.warn("debug file %s: %v: ignored", path, ErrNoDWARF)
		return nil
	}
	f.impl.closers = append(f.impl.closers, osf)
	return d
}

// debugLink reads .gnu_debuglink: a NUL-terminated file name, padding to 4
// bytes, and the CRC32 of the debug file in the file's byte order.
func debugLink(ef *elf.File) (name string, crc uint32, ok bool) {
	s := ef.Section(".gnu_debuglink")
	if s == nil || s.Type == elf.SHT_NOBITS || s.Size > maxDebugLink {
		return "", 0, false
	}
	data, err := s.Data()
	if err != nil {
		return "", 0, false
	}
	n := bytes.IndexByte(data, 0)
	if n <= 0 {
		return "", 0, false
	}
	off := (uint64(n) + 1 + 3) &^ 3
	if off+4 > uint64(len(data)) {
		return "", 0, false
	}
	// The link names a file, not a path: never let it climb directories.
	name = filepath.Base(string(data[:n]))
	if name == "." || name == ".." || name == string(filepath.Separator) {
		return "", 0, false
	}
	return name, ef.ByteOrder.Uint32(data[off:]), true
}

// fileCRC is the CRC32 (IEEE, as gnu_debuglink_crc32) of the file at path.
func fileCRC(path string) (uint32, error) {
	fh, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer fh.Close()
	h := crc32.NewIEEE()
	if _, err := io.Copy(h, fh); err != nil {
		return 0, fmt.Errorf("compute CRC of %s: %w", path, err)
	}
	return h.Sum32(), nil
}
