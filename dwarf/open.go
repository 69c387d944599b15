package dwarf

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	stddwarf "debug/dwarf"

	"github.com/sourceprofiler/sprof/internal/elfid"
)

// file is what an open File keeps for Code and Lines: the binary (code bytes
// always come from it) and the DWARF data, possibly from a debug file.
type file struct {
	closers []io.Closer
	exec    []*segment
	data    *stddwarf.Data    // nil without DWARF
	cus     []*stddwarf.Entry // the unit entries, parallel to File.Units
	splits  []splitRef        // the split units read, for InlinedCalls
	// openDWO opens a split DWARF file (.dwo, .dwp) by path; nil when
	// none may be opened (newFile).
	openDWO func(path string) (io.ReaderAt, io.Closer, error)
}

// segment is an executable PT_LOAD of the binary. Its bytes are read
// once, in chunks of codeChunk as they are first asked for (Code): PREP
// decodes a function's instructions one at a time, and a read of the
// file each would be a system call each.
type segment struct {
	vaddr, memsz, filesz uint64
	r                    io.ReaderAt // the segment's file bytes
	mu                   sync.Mutex
	chunks               map[uint64][]byte // by index, each codeChunk bytes but the last
}

// closedReader is a closed file's segment: every read fails.
type closedReader struct{}

func (closedReader) ReadAt([]byte, int64) (int, error) { return 0, os.ErrClosed }

// codeChunk is the size of a segment's chunk read at once.
const codeChunk = 64 << 10

// read fills code with the segment's bytes from offset off, which the
// caller has checked lie within its file size.
func (s *segment) read(code []byte, off uint64) error {
	for len(code) > 0 {
		k := off / codeChunk
		c, err := s.chunk(k)
		if err != nil {
			return err
		}
		n := copy(code, c[off-k*codeChunk:])
		if n == 0 {
			return io.ErrUnexpectedEOF
		}
		code, off = code[n:], off+uint64(n)
	}
	return nil
}

// chunk returns chunk k of the segment, read the first time it is asked
// for: of a file shorter than its header says, the bytes it has, and
// none past them (read fails there), having allocated no more than one
// chunk.
func (s *segment) chunk(k uint64) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.chunks[k]; ok {
		return c, nil
	}
	c := make([]byte, min(codeChunk, s.filesz-k*codeChunk))
	n, err := s.r.ReadAt(c, int64(k*codeChunk))
	if err != nil && (n == 0 || !errors.Is(err, io.EOF)) {
		return nil, err
	}
	c = c[:n] // (a file cut short: what it has)
	if s.chunks == nil {
		s.chunks = map[uint64][]byte{}
	}
	s.chunks[k] = c
	return c, nil
}

// Open reads the ELF executable or shared library at path. When the file
// has no DWARF, Open looks for a separate debug file: by build ID under each
// of [DebugDirs], then by the .gnu_debuglink name beside the binary, in its
// .debug directory and under each of [DebugDirs] followed by the binary's
// directory, checking the link's CRC. Without any DWARF, the functions come
// from the symbol table.
//
// A function's name is its linkage name, found through
// DW_AT_specification and DW_AT_abstract_origin. A gcc clone keeps the
// suffix of its symbol ("scale.constprop.0", "foo.isra.0", "bar.part.0")
// rather than its origin's name, so a clone and the original stay apart and
// read as nm and perf print them; a cold part ("foo.cold") is a second
// range of foo. Functions the symbol table knows and the DWARF does not
// (C runtime start-up code) are added with Unit -1.
//
// Errors wrap [ErrNotELF], [ErrNotExecutable] or the operating system's error,
// and name the path.
func Open(path string) (*File, error) {
	return openFile(path, "", true)
}

// OpenWithDebug is like [Open] but reads the DWARF from the separate debug
// file debugPath (made with objcopy --only-keep-debug, or a distribution's
// debug package). Code bytes still come from the binary at path. It is an
// error if the debug file has no DWARF ([ErrNoDWARF]) or a build ID other than
// the binary's.
func OpenWithDebug(path, debugPath string) (*File, error) {
	if debugPath == "" {
		return Open(path)
	}
	return openFile(path, debugPath, false)
}

// Close releases the files opened by [Open]. Code and Lines fail after it.
func (f *File) Close() error {
	if f.impl == nil {
		return nil
	}
	var errs []error
	for _, c := range f.impl.closers {
		errs = append(errs, c.Close())
	}
	f.impl.closers = nil
	for _, s := range f.impl.exec {
		s.mu.Lock()
		s.chunks, s.r = nil, closedReader{}
		s.mu.Unlock()
	}
	return errors.Join(errs...)
}

// ExecRanges returns the link-time address ranges of the binary's executable
// PT_LOAD segments, in program-header order.
func (f *File) ExecRanges() []Range {
	if f.impl == nil {
		return nil
	}
	out := make([]Range, len(f.impl.exec))
	for i, s := range f.impl.exec {
		out[i] = Range{s.vaddr, s.vaddr + s.memsz}
	}
	return out
}

// Code returns the n bytes at the link-time address addr, which must lie
// with all n bytes in the file-backed part of one executable PT_LOAD segment
// of the binary.
func (f *File) Code(addr uint64, n int) (code []byte, err error) {
	if n < 0 {
		return nil, fmt.Errorf("read code of %s at %#x: negative length %d", f.Path, addr, n)
	}
	if f.impl == nil {
		return nil, fmt.Errorf("read code of %s at %#x: file not open", f.Path, addr)
	}
	defer catch(&err, "read code of "+f.Path)
	for _, s := range f.impl.exec {
		if addr < s.vaddr || addr-s.vaddr > s.filesz || uint64(n) > s.filesz-(addr-s.vaddr) {
			continue
		}
		code = make([]byte, n)
		if err := s.read(code, addr-s.vaddr); err != nil {
			return nil, fmt.Errorf("read code of %s at %#x: %w", f.Path, addr, err)
		}
		return code, nil
	}
	return nil, fmt.Errorf("read code of %s: %d bytes at %#x are not in an executable segment", f.Path, n, addr)
}

// openFile opens path (and debugPath, if given) and reads everything.
func openFile(path, debugPath string, search bool) (*File, error) {
	bin, osf, err := openELF(path)
	if err != nil {
		return nil, err
	}
	f := &File{Path: path, impl: &file{closers: []io.Closer{osf}, openDWO: openDWOFile}}
	var dbg *elf.File
	if debugPath != "" {
		d, dosf, err := openELF(debugPath)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("open debug file of %s: %w", path, err)
		}
		f.impl.closers = append(f.impl.closers, dosf)
		dbg = d
	}
	if err := f.load(bin, dbg, debugPath, search); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// newFile reads an ELF image from r without touching the file system (no
// debug-file search); split DWARF files are opened with openDWO, or not
// looked for if it is nil. The fuzz targets use it.
func newFile(r io.ReaderAt, name string, openDWO func(path string) (io.ReaderAt, io.Closer, error)) (*File, error) {
	bin, err := parseELF(r, name)
	if err != nil {
		return nil, err
	}
	f := &File{Path: name, impl: &file{openDWO: openDWO}}
	if err := f.load(bin, nil, "", false); err != nil {
		return nil, err
	}
	return f, nil
}

// openELF opens path as an ELF executable or shared library.
func openELF(path string) (*elf.File, *os.File, error) {
	osf, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	fi, err := osf.Stat()
	if err != nil {
		osf.Close()
		return nil, nil, err
	}
	switch {
	case fi.IsDir():
		osf.Close()
		return nil, nil, &fs.PathError{Op: "open", Path: path, Err: syscall.EISDIR}
	case !fi.Mode().IsRegular():
		osf.Close()
		return nil, nil, fmt.Errorf("open %s: %w: not a regular file", path, ErrNotELF)
	}
	ef, err := parseELF(osf, path)
	if err != nil {
		osf.Close()
		return nil, nil, err
	}
	return ef, osf, nil
}

// parseELF checks the magic number and type, then parses the headers.
func parseELF(r io.ReaderAt, path string) (ef *elf.File, err error) {
	var magic [len(elf.ELFMAG)]byte
	if _, err := r.ReadAt(magic[:], 0); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("open %s: %w", path, ErrNotELF)
		}
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if string(magic[:]) != elf.ELFMAG {
		return nil, fmt.Errorf("open %s: %w", path, ErrNotELF)
	}
	defer func() {
		if r := recover(); r != nil {
			ef, err = nil, fmt.Errorf("open %s: %w: malformed headers (panic: %v)", path, ErrNotELF, r)
		}
	}()
	ef, err = elf.NewFile(r)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w: %w", path, ErrNotELF, err)
	}
	if ef.Type != elf.ET_EXEC && ef.Type != elf.ET_DYN {
		return nil, fmt.Errorf("open %s: %w (%v)", path, ErrNotExecutable, ef.Type)
	}
	return ef, nil
}

// catch turns a panic of the standard library on hostile input into an
// error; debug/dwarf and debug/elf have panicked on fuzzed files before.
func catch(err *error, op string) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%s: malformed file (panic: %v)", op, r)
	}
}

// identify fills the fields that describe the binary itself.
func (f *File) identify(bin *elf.File) {
	f.Arch = goarch(bin)
	f.PIE = bin.Type == elf.ET_DYN
	f.Shared = f.PIE && isShared(bin)
	f.BuildID = elfid.BuildID(bin)
	f.LinkBase = elfid.LinkBase(bin)
	f.impl.exec = execSegments(bin)
}

// goarches spell ELF machines as GOARCH does, at the edge, as
// cmd/internal/objfile does: a table, not a choice (no code but a
// table names an architecture; TestNoArchChoices). Where a machine has
// two spellings, its entries tell them apart by class or byte order
// (ELFCLASSNONE, ELFDATANONE: any), the first that matches.
var goarches = []struct {
	machine elf.Machine
	class   elf.Class
	data    elf.Data
	name    string
}{
	{elf.EM_X86_64, elf.ELFCLASSNONE, elf.ELFDATANONE, "amd64"},
	{elf.EM_AARCH64, elf.ELFCLASSNONE, elf.ELFDATANONE, "arm64"},
	{elf.EM_386, elf.ELFCLASSNONE, elf.ELFDATANONE, "386"},
	{elf.EM_ARM, elf.ELFCLASSNONE, elf.ELFDATANONE, "arm"},
	{elf.EM_RISCV, elf.ELFCLASS64, elf.ELFDATANONE, "riscv64"},
	{elf.EM_LOONGARCH, elf.ELFCLASSNONE, elf.ELFDATANONE, "loong64"},
	{elf.EM_S390, elf.ELFCLASSNONE, elf.ELFDATANONE, "s390x"},
	{elf.EM_PPC64, elf.ELFCLASSNONE, elf.ELFDATA2LSB, "ppc64le"},
	{elf.EM_PPC64, elf.ELFCLASSNONE, elf.ELFDATANONE, "ppc64"},
}

// goarch spells the machine as GOARCH does (goarches), or as debug/elf
// names it where GOARCH has no spelling.
func goarch(ef *elf.File) string {
	for _, g := range goarches {
		if g.machine == ef.Machine && (g.class == elf.ELFCLASSNONE || g.class == ef.Class) && (g.data == elf.ELFDATANONE || g.data == ef.Data) {
			return g.name
		}
	}
	return ef.Machine.String()
}

// isShared tells a shared library from a PIE executable, both ET_DYN: a PIE
// has DF_1_PIE (binutils 2.26 and later, Go) or, for older linkers, a
// PT_INTERP and no DT_SONAME. libc.so.6 has a PT_INTERP and a DT_SONAME.
func isShared(ef *elf.File) (shared bool) {
	defer func() {
		if recover() != nil {
			shared = false
		}
	}()
	if flags, err := ef.DynValue(elf.DT_FLAGS_1); err == nil {
		for _, v := range flags {
			if elf.DynFlag1(v)&elf.DF_1_PIE != 0 {
				return false
			}
		}
	}
	if soname, err := ef.DynString(elf.DT_SONAME); err == nil && len(soname) > 0 {
		return true
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			return false
		}
	}
	return true
}

// execSegments lists the executable PT_LOAD segments, their file size
// clamped to what the file holds.
func execSegments(ef *elf.File) []*segment {
	var out []*segment
	for _, p := range ef.Progs {
		if p.Type != elf.PT_LOAD || p.Flags&elf.PF_X == 0 || p.Memsz == 0 {
			continue
		}
		if p.Vaddr+p.Memsz < p.Vaddr {
			continue // wraps around: hostile
		}
		out = append(out, &segment{
			vaddr:  p.Vaddr,
			memsz:  p.Memsz,
			filesz: min(p.Filesz, p.Memsz),
			r:      p,
		})
	}
	return out
}

// inExec reports whether [lo, hi) lies inside one executable segment.
func (x *file) inExec(lo, hi uint64) bool {
	for _, s := range x.exec {
		if lo >= s.vaddr && hi >= lo && hi <= s.vaddr+s.memsz {
			return true
		}
	}
	return false
}

// absDir is the directory of path, absolute and with symbolic links
// resolved as gdb does, for the debug-link search.
func absDir(path string) string {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	if p, err := filepath.Abs(path); err == nil {
		path = p
	}
	return filepath.Dir(path)
}
