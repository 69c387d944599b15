package dwarf

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	stddwarf "debug/dwarf"
)

// The split units' own code: finding each skeleton's unit in the .dwo file it
// names or in the program's .dwp package, each file read once, and the unit
// checked by its DWO ID.

// dwoFinder finds the split units of a program in .dwo files and its .dwp
// package, reading each file once.
type dwoFinder struct {
	binPath string // the program, for the package beside it and relative names
	machine elf.Machine
	class   elf.Class
	order   binary.ByteOrder
	sec     map[string][]byte // the program's DWARF sections, by name without ".debug_"
	// open opens a file by path; nil when no file may be opened.
	open    func(path string) (io.ReaderAt, io.Closer, error)
	headers map[stddwarf.Offset]unitHeader // the program's units, by first DIE
	files   map[string]*dwoFile
	pkg     *dwoFile // the package, or nil
	pkgDone bool     // the package was looked for
}

// newDWOFinder returns the finder of the split units of the program at
// binPath whose DWARF, sections sec, is in src.
func newDWOFinder(binPath string, src *elf.File, sec map[string][]byte, open func(string) (io.ReaderAt, io.Closer, error)) *dwoFinder {
	return &dwoFinder{
		binPath: binPath,
		machine: src.Machine,
		class:   src.Class,
		order:   src.ByteOrder,
		sec:     sec,
		open:    open,
		files:   make(map[string]*dwoFile),
	}
}

// skeleton reads what the skeleton e of unit says of its split unit.
func (f *dwoFinder) skeleton(unit int32, e *stddwarf.Entry) (*skeleton, error) {
	if f.headers == nil {
		f.headers = make(map[stddwarf.Offset]unitHeader)
		for _, h := range unitHeaders(f.sec["info"], f.order) {
			f.headers[stddwarf.Offset(h.die)] = h
		}
	}
	h, ok := f.headers[e.Offset]
	if !ok {
		return nil, errors.New("malformed unit header")
	}
	sk := &skeleton{unit: unit, name: dwoName(e)}
	sk.compDir, _ = e.Val(stddwarf.AttrCompDir).(string)
	sk.base, _ = e.Val(stddwarf.AttrLowpc).(uint64)
	if v, ok := e.Val(stddwarf.AttrAddrBase).(int64); ok {
		sk.addrBase = uint64(v)
	} else if v, ok := e.Val(attrGNUAddrBase).(int64); ok {
		sk.addrBase = uint64(v)
	}
	if v, ok := e.Val(attrGNURangesBase).(int64); ok {
		sk.rangesBase = uint64(v)
	}
	hasID := false
	if h.version >= 5 && h.utype == utSkeleton {
		sk.id, hasID = h.id, true
	} else if v, ok := e.Val(attrGNUDwoID).(int64); ok {
		sk.id, hasID = uint64(v), true
	}
	switch {
	case sk.name == "":
		return nil, errors.New("the skeleton names no .dwo file")
	case !hasID:
		return nil, errors.New("the skeleton has no DWO ID")
	}
	return sk, nil
}

// find returns the split unit of sk: from the package if it has the unit,
// else from the first .dwo file found that does.
func (f *dwoFinder) find(sk *skeleton) (*splitUnit, error) {
	if f.open == nil {
		return nil, errors.New("split DWARF files not looked for")
	}
	pkg := f.findPackage()
	if pkg != nil && pkg.err == nil {
		if row, ok := pkg.rows[sk.id]; ok {
			return f.fromPackage(pkg, row, sk)
		}
	}
	var tried []string
	var firstErr error
	for _, p := range f.candidates(sk) {
		df := f.file(p)
		err := df.err
		if errors.Is(err, fs.ErrNotExist) {
			tried = append(tried, p)
			continue
		}
		if err == nil {
			var su *splitUnit
			if su, err = f.fromFile(df, sk); err == nil {
				return su, nil
			}
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	if firstErr != nil {
		return nil, firstErr
	}
	msg := "not found: no " + strings.Join(tried, ", no ")
	switch {
	case pkg == nil:
		msg += ", no " + f.packagePaths()[0]
	case pkg.err != nil:
		msg += fmt.Sprintf("; package %v", pkg.err)
	default:
		msg += fmt.Sprintf("; package %s has no DWO ID %#x", pkg.path, sk.id)
	}
	return nil, errors.New(msg)
}

// candidates lists where the .dwo file of sk may be: where the skeleton
// says (DW_AT_dwo_name in DW_AT_comp_dir), a relative compilation directory
// taken from the program's directory, then the name and its base name in
// the program's directory (a build tree moved with its objects). The DWO
// ID check rejects a wrong file.
func (f *dwoFinder) candidates(sk *skeleton) []string {
	var out []string
	add := func(p string) {
		if p = filepath.Clean(p); !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	dirs := []string{absDir(f.binPath)}
	if abs, err := filepath.Abs(f.binPath); err == nil {
		dirs = append(dirs, filepath.Dir(abs))
	}
	switch {
	case filepath.IsAbs(sk.name):
		add(sk.name)
	case filepath.IsAbs(sk.compDir):
		add(filepath.Join(sk.compDir, sk.name))
	case sk.compDir != "":
		for _, d := range dirs {
			add(filepath.Join(d, sk.compDir, sk.name))
		}
	}
	for _, d := range dirs {
		if !filepath.IsAbs(sk.name) {
			add(filepath.Join(d, sk.name))
		}
		add(filepath.Join(d, filepath.Base(sk.name)))
	}
	return out
}

// packagePaths lists where the program's package may be: prog.dwp beside
// the program, as gdb looks for it, and beside the file a symbolic link
// names.
func (f *dwoFinder) packagePaths() []string {
	out := []string{f.binPath + ".dwp"}
	if real, err := filepath.EvalSymlinks(f.binPath); err == nil {
		if p := real + ".dwp"; filepath.Clean(p) != filepath.Clean(out[0]) {
			out = append(out, p)
		}
	}
	return out
}

// findPackage opens the program's package the first time, and returns it
// (nil if there is none).
func (f *dwoFinder) findPackage() *dwoFile {
	if f.pkgDone {
		return f.pkg
	}
	f.pkgDone = true
	for _, p := range f.packagePaths() {
		df := f.file(p)
		if errors.Is(df.err, fs.ErrNotExist) {
			continue
		}
		if df.err == nil && df.rows == nil {
			df.err = fmt.Errorf("%s: no .debug_cu_index section: not a package", p)
		}
		f.pkg = df
		break
	}
	return f.pkg
}

// dwoFile is a .dwo file or a .dwp package.
type dwoFile struct {
	path  string
	err   error // why it cannot be used
	order binary.ByteOrder
	sec   map[string][]byte // by name without ".debug_" and ".dwo"
	// A package's index, by DWO ID, and its version (2 or 5).
	rows    map[uint64]dwpRow
	version int
	// A .dwo file's units, and those of its split units found by DWO ID.
	units []unitHeader
	ids   map[uint64]int
	used  map[int]bool // units (by info offset) already given to a skeleton
}

// file reads the file at path the first time, and returns it.
func (f *dwoFinder) file(p string) *dwoFile {
	if df, ok := f.files[p]; ok {
		return df
	}
	df := &dwoFile{path: p, used: make(map[int]bool)}
	if err := f.load(df); err != nil {
		var pe *fs.PathError
		if !errors.As(err, &pe) {
			err = fmt.Errorf("read %s: %w", p, err)
		}
		df.err = err
	}
	f.files[p] = df
	return df
}

// load reads the sections of a .dwo file or package; the file is closed
// when it returns.
func (f *dwoFinder) load(df *dwoFile) (err error) {
	defer catch(&err, "parse")
	r, c, err := f.open(df.path)
	if err != nil {
		return err
	}
	defer c.Close()
	ef, err := elf.NewFile(r)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: truncated", ErrNotELF)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotELF, err)
	}
	if ef.Machine != f.machine || ef.Class != f.class || ef.ByteOrder != f.order {
		return fmt.Errorf("%v %v %v, the program is %v %v %v", ef.Class, ef.Data, ef.Machine, f.class, dataOf(f.order), f.machine)
	}
	df.order = ef.ByteOrder
	df.sec, err = readSections(ef, func(name string) (string, bool) {
		if name == ".debug_cu_index" {
			return "cu_index", true
		}
		base, ok := strings.CutSuffix(name, ".dwo")
		if !ok {
			return "", false
		}
		suffix, ok := debugSuffix(base)
		return suffix, ok && slices.Contains(dwoSections, suffix)
	})
	if err != nil {
		return err
	}
	if len(df.sec["info"]) == 0 {
		return errors.New("no .debug_info.dwo section")
	}
	if index, ok := df.sec["cu_index"]; ok {
		df.rows, df.version, err = parseCUIndex(index, df.order)
		return err
	}
	df.units = unitHeaders(df.sec["info"], df.order)
	return nil
}

// dataOf names a byte order as ELF does.
func dataOf(order binary.ByteOrder) elf.Data {
	if order == binary.BigEndian {
		return elf.ELFDATA2MSB
	}
	return elf.ELFDATA2LSB
}

// unitSections are the sections one split unit is read from: those of its
// .dwo file, or its contributions to those of a package.
type unitSections struct {
	info, abbrev, str, strOffsets, rnglists []byte
}

// fromFile returns the split unit of sk in the .dwo file df.
func (f *dwoFinder) fromFile(df *dwoFile, sk *skeleton) (*splitUnit, error) {
	if df.rows != nil { // a package under a .dwo name
		row, ok := df.rows[sk.id]
		if !ok {
			return nil, fmt.Errorf("%s: package without DWO ID %#x", df.path, sk.id)
		}
		return f.fromPackage(df, row, sk)
	}
	sections := func(h unitHeader) unitSections {
		return unitSections{
			info:       df.sec["info"][h.start:h.end],
			abbrev:     df.sec["abbrev"],
			str:        df.sec["str"],
			strOffsets: df.sec["str_offsets"],
			rnglists:   df.sec["rnglists"],
		}
	}
	var probeErr error
	if df.ids == nil {
		df.ids = make(map[uint64]int)
		for i, h := range df.units {
			var id uint64
			if h.version >= 5 {
				if h.utype != utSplitCompile {
					continue // a type unit
				}
				id = h.id
			} else {
				// DWARF 4: the ID is an attribute of the unit.
				_, v, err := buildSplit(df.path, df.order, sections(h), nil, nil)
				if err != nil {
					if probeErr == nil {
						probeErr = err
					}
					continue
				}
				id = v
			}
			if _, dup := df.ids[id]; !dup {
				df.ids[id] = i
			}
		}
	}
	i, ok := df.ids[sk.id]
	if !ok {
		switch {
		case len(df.ids) == 1:
			for id := range df.ids {
				return nil, &idMismatch{df.path, id, sk.id}
			}
		case len(df.ids) > 1:
			return nil, fmt.Errorf("%s is from another build (none of its %d units has DWO ID %#x)", df.path, len(df.ids), sk.id)
		case probeErr != nil:
			return nil, fmt.Errorf("read %s: %w", df.path, probeErr)
		case len(df.units) == 0:
			return nil, fmt.Errorf("read %s: .debug_info.dwo: no readable unit header", df.path)
		}
		return nil, fmt.Errorf("%s: no split compilation unit", df.path)
	}
	h := df.units[i]
	if df.used[h.start] {
		return nil, fmt.Errorf("%s: the unit of DWO ID %#x is another skeleton's", df.path, sk.id)
	}
	df.used[h.start] = true
	su, id, err := buildSplit(df.path, df.order, sections(h), sk, f.sec)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", df.path, err)
	}
	if id != sk.id {
		return nil, &idMismatch{df.path, id, sk.id}
	}
	return su, nil
}

// fromPackage returns the split unit of sk, row row of package pkg.
func (f *dwoFinder) fromPackage(pkg *dwoFile, row dwpRow, sk *skeleton) (*splitUnit, error) {
	if pkg.used[int(row[sectInfo].off)] {
		return nil, fmt.Errorf("%s: the unit of DWO ID %#x is another skeleton's", pkg.path, sk.id)
	}
	pkg.used[int(row[sectInfo].off)] = true
	var s unitSections
	var err error
	pick := func(name string, col int) []byte {
		b, e := row.slice(pkg.sec[name], col)
		if e != nil && err == nil {
			err = fmt.Errorf("%s contribution of DWO ID %#x: %w", name, sk.id, e)
		}
		return b
	}
	s.info = pick("info", sectInfo)
	s.abbrev = pick("abbrev", sectAbbrev)
	s.strOffsets = pick("str_offsets", sectStrOffsets)
	if pkg.version >= 5 {
		s.rnglists = pick("rnglists", sectRnglists)
	}
	s.str = pkg.sec["str"]
	if err == nil && len(s.info) == 0 {
		err = fmt.Errorf("no info contribution for DWO ID %#x", sk.id)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", pkg.path, err)
	}
	su, id, err := buildSplit(pkg.path, pkg.order, s, sk, f.sec)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", pkg.path, err)
	}
	if id != sk.id {
		return nil, &idMismatch{pkg.path, id, sk.id}
	}
	return su, nil
}

// idMismatch: the unit found for a skeleton has another DWO ID.
type idMismatch struct {
	path      string
	got, want uint64
}

func (e *idMismatch) Error() string {
	return fmt.Sprintf("%s is from another build (DWO ID %#x, the program's skeleton has %#x)", e.path, e.got, e.want)
}

// openDWOFile opens a split DWARF file. It must be a regular file: opening
// a FIFO would block.
func openDWOFile(p string) (io.ReaderAt, io.Closer, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, &fs.PathError{Op: "open", Path: p, Err: errors.New("not a regular file")}
	}
	osf, err := os.Open(p)
	if err != nil {
		return nil, nil, err
	}
	return osf, osf, nil
}
