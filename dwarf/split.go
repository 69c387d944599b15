package dwarf

import (
	"bytes"
	"cmp"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	stddwarf "debug/dwarf"
)

// Split DWARF (gcc -gsplit-dwarf): the program keeps a skeleton of each
// unit (DWARF 5 section 3.1.2), with its address ranges, line table,
// .debug_addr table and the name of the .dwo file that holds the rest
// (section 7.3.2); dwp and llvm-dwp gather .dwo files into one package,
// prog.dwp, indexed by DWO ID (section 7.3.5). gcc's -gdwarf-4 -gsplit-dwarf
// writes the GNU extension DWARF 5 was made from
// (gcc.gnu.org/wiki/DebugFission): the same layout with DW_AT_GNU_*
// attributes and DW_FORM_GNU_addr_index and DW_FORM_GNU_str_index.

// Attributes and forms of the GNU extension.
const (
	attrGNUDwoName    stddwarf.Attr = 0x2130
	attrGNUDwoID      stddwarf.Attr = 0x2131
	attrGNURangesBase stddwarf.Attr = 0x2132
	attrGNUAddrBase   stddwarf.Attr = 0x2133

	formGNUAddrIndex = 0x1f01
	formGNUStrIndex  = 0x1f02
)

// Forms of DWARF 5 (section 7.5.6, table 7.6).
const (
	formStrx          = 0x1a
	formAddrx         = 0x1b
	formImplicitConst = 0x21
)

// Unit types of DWARF 5 (section 7.5.1, table 7.2).
const (
	utType         = 0x02
	utSkeleton     = 0x04
	utSplitCompile = 0x05
	utSplitType    = 0x06
)

// Columns of a package index (DW_SECT_*, DWARF 5 section 7.3.5.3, table
// 7.1). The GNU version 2 index numbers INFO, ABBREV and STR_OFFSETS alike;
// its 8 is DW_SECT_MACRO.
const (
	sectInfo       = 1
	sectAbbrev     = 3
	sectStrOffsets = 6
	sectRnglists   = 8
)

// dwoSections are the sections of a .dwo file (".debug_X.dwo") that
// PREP reads.
var dwoSections = []string{"info", "abbrev", "str", "str_offsets", "rnglists"}

// maxSplitWarnings bounds the warnings about unreadable split units: a
// build tree removed after linking loses every .dwo file at once.
const maxSplitWarnings = 8

// isSkeleton reports whether the unit entry e is the skeleton of a split
// unit: DW_TAG_skeleton_unit, or a DWARF 4 unit naming a .dwo file.
func isSkeleton(e *stddwarf.Entry) bool {
	return e.Tag == stddwarf.TagSkeletonUnit || e.Val(stddwarf.AttrDwoName) != nil || e.Val(attrGNUDwoName) != nil
}

// skeleton is what a skeleton unit says of its split unit.
type skeleton struct {
	unit       int32 // index into walker.units
	name       string
	compDir    string
	id         uint64 // DWO ID
	addrBase   uint64 // where the unit's addresses start in .debug_addr
	rangesBase uint64 // DWARF 4: where its range lists start in .debug_ranges
	base       uint64 // DW_AT_low_pc: the base address of its range lists
}

// dwoName returns the .dwo file a skeleton names.
func dwoName(e *stddwarf.Entry) string {
	if s, ok := e.Val(stddwarf.AttrDwoName).(string); ok {
		return s
	}
	s, _ := e.Val(attrGNUDwoName).(string)
	return s
}

// split reads the split unit of the skeleton e, the walker's unit unit.
// When it cannot, the unit's functions will come from the symbol table.
func (w *walker) split(unit int32, e *stddwarf.Entry) {
	sk, err := w.dwo.skeleton(unit, e)
	if err == nil {
		err = w.readSplit(sk)
	}
	if err != nil {
		w.lose(unit, e, err)
	}
}

// readSplit finds and walks the split unit of sk. On failure it leaves the
// walker as it was.
func (w *walker) readSplit(sk *skeleton) (err error) {
	su, err := w.dwo.find(sk)
	if err != nil {
		return err
	}
	saved := w.units[sk.unit]
	nd, nc := len(w.dies), len(w.cands)
	alt, rangeErrs, rangeErr, outside, outName := w.alt, w.rangeErrs, w.rangeErr, w.outside, w.outName
	// The unit keeps its number even if it fails, so the index entries
	// it leaves name no other unit's DIEs.
	w.splits = append(w.splits, su)
	src := int32(len(w.splits))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed file (panic: %v)", r)
		}
		if err != nil {
			w.dies, w.cands, w.units[sk.unit] = w.dies[:nd], w.cands[:nc], saved
			w.alt, w.rangeErrs, w.rangeErr, w.outside, w.outName = alt, rangeErrs, rangeErr, outside, outName
			err = fmt.Errorf("read %s: %w", su.path, err)
		}
	}()
	r := su.d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			return err
		}
		if e == nil {
			break
		}
		switch e.Tag {
		case stddwarf.TagCompileUnit:
			w.splitUnitEntry(sk.unit, e)
		case stddwarf.TagSubprogram:
			w.subprogram(e, src, sk.unit)
		}
	}
	w.units[sk.unit].DWO = su.path
	w.kept = append(w.kept, splitRef{int(sk.unit), su})
	return nil
}

// splitUnitEntry completes the unit from the split unit's own entry:
// name, producer, language; the compilation directory when it has one.
func (w *walker) splitUnitEntry(unit int32, e *stddwarf.Entry) {
	u := &w.units[unit]
	if s, ok := e.Val(stddwarf.AttrName).(string); ok {
		u.Name = s
	}
	if s, ok := e.Val(stddwarf.AttrCompDir).(string); ok {
		u.CompDir = s
	}
	if s, ok := e.Val(stddwarf.AttrProducer).(string); ok {
		u.Producer = s
	}
	if code, ok := e.Val(stddwarf.AttrLanguage).(int64); ok {
		u.Language = language(code)
	}
	u.Path = unitPath(*u)
}

// lostUnit is a skeleton whose split unit could not be read: the symbol
// table's functions inside its ranges are its functions.
type lostUnit struct {
	unit   int32
	source string
	ranges []Range
}

// lose records that the split unit of skeleton e could not be read, and why.
func (w *walker) lose(unit int32, e *stddwarf.Entry, why error) {
	u := &w.units[unit]
	u.SymbolsOnly = true
	name := dwoName(e)
	if u.Name == "" {
		// DWARF 5: file 0 of the line table is the primary source
		// file (section 6.2.4, item 20), the name the unit would have.
		u.Name = w.fileName(unit, 0)
		if rel, ok := strings.CutPrefix(u.Name, u.CompDir+"/"); ok && u.CompDir != "" {
			u.Name = rel
		}
		u.Path = unitPath(*u)
	}
	l := lostUnit{unit: unit, source: unitSource(*u)}
	if l.source == "" {
		// gcc names the .dwo after the object: x.o, x.dwo.
		l.source = objectName(path.Base(name))
	}
	for _, r := range safeRanges(w.d, e) {
		if r[0] < r[1] {
			l.ranges = append(l.ranges, Range{r[0], r[1]})
		}
	}
	w.lost = append(w.lost, l)
	if len(w.lostWs) < maxSplitWarnings {
		if name == "" {
			name = fmt.Sprintf("at %#x", e.Offset)
		}
		w.lostWs = append(w.lostWs, fmt.Sprintf("split unit %s: %v", name, why))
	}
}

// safeRanges returns the ranges of e, or none when they cannot be read.
func safeRanges(d *stddwarf.Data, e *stddwarf.Entry) (ranges [][2]uint64) {
	defer func() {
		if recover() != nil {
			ranges = nil
		}
	}()
	ranges, _ = d.Ranges(e)
	return ranges
}

// adopt gives the functions inside a lost unit's ranges (functions of the
// symbol table) that unit and its source: they are the program's own code,
// not code without debugging information.
func adopt(funcs []Func, lost []lostUnit) []Func {
	type span struct {
		Range
		unit   int32
		source string
	}
	var spans []span
	for _, l := range lost {
		for _, r := range l.ranges {
			spans = append(spans, span{r, l.unit, l.source})
		}
	}
	if len(spans) == 0 {
		return funcs
	}
	slices.SortStableFunc(spans, func(a, b span) int { return cmp.Compare(a.Low, b.Low) })
	for i := range funcs {
		fn := &funcs[i]
		j := sort.Search(len(spans), func(k int) bool { return spans[k].Low > fn.Entry }) - 1
		if fn.Unit < 0 && j >= 0 && fn.Entry < spans[j].High {
			fn.Unit, fn.Source = int(spans[j].unit), spans[j].source
		}
	}
	return funcs
}

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

// splitUnit is a split unit ready to walk.
type splitUnit struct {
	d        *stddwarf.Data
	path     string // the .dwo file or package
	version  int
	addrSize int
	order    binary.ByteOrder
	addr     []byte // the program's .debug_addr from the skeleton's base
	// rng holds the range lists: DWARF 5, the unit's .debug_rnglists.dwo
	// contribution, whose offsets array starts at rngBase; DWARF 4, the
	// program's .debug_ranges from the skeleton's base.
	rng     []byte
	rngBase uint64
	base    uint64 // the skeleton's DW_AT_low_pc
}

// buildSplit makes the debug/dwarf view of the one unit in s.info and
// returns it with the unit's DWO ID. sk and bin, the skeleton and the
// program's sections, may be nil to read the ID only.
//
// debug/dwarf takes the bases of a unit's indexes into .debug_addr,
// .debug_str_offsets and .debug_rnglists from the unit's own attributes,
// which a split unit has not: its addresses count from the skeleton's
// DW_AT_addr_base (DW_AT_GNU_addr_base), its strings and range lists from
// just after the header of its contributions (DWARF 5 sections 3.1.3 and
// 7.26, 7.29). So it gets each section sliced at the base. It knows neither
// DW_FORM_GNU_addr_index nor DW_FORM_GNU_str_index: the abbreviations are
// rewritten to DW_FORM_addrx and DW_FORM_strx, encoded alike.
func buildSplit(p string, order binary.ByteOrder, s unitSections, sk *skeleton, bin map[string][]byte) (su *splitUnit, id uint64, err error) {
	defer catch(&err, "parse")
	hs := unitHeaders(s.info, order)
	if len(hs) == 0 {
		return nil, 0, errors.New("malformed unit header")
	}
	h := hs[0]
	if h.addrSize != 4 && h.addrSize != 8 {
		return nil, 0, fmt.Errorf("address size %d", h.addrSize)
	}
	su = &splitUnit{path: p, version: h.version, addrSize: h.addrSize, order: order}
	strOffsets := s.strOffsets
	if h.version >= 5 {
		if h.utype != utSplitCompile {
			return nil, 0, fmt.Errorf("unit type %d, not a split compilation unit", h.utype)
		}
		id = h.id
		if len(strOffsets) > 0 {
			n, err := contributionHeader(strOffsets, order, 2)
			if err != nil {
				return nil, 0, fmt.Errorf(".debug_str_offsets.dwo: %w", err)
			}
			strOffsets = strOffsets[n:]
		}
		if len(s.rnglists) > 0 {
			n, err := contributionHeader(s.rnglists, order, 6)
			if err != nil {
				return nil, 0, fmt.Errorf(".debug_rnglists.dwo: %w", err)
			}
			su.rng, su.rngBase = s.rnglists, uint64(n)
		}
	}
	if sk != nil {
		su.base = sk.base
		addr := bin["addr"]
		if sk.addrBase > uint64(len(addr)) {
			return nil, 0, fmt.Errorf("the skeleton's address base %#x is beyond .debug_addr (%d bytes)", sk.addrBase, len(addr))
		}
		su.addr = addr[sk.addrBase:]
		if ranges := bin["ranges"]; h.version < 5 && sk.rangesBase <= uint64(len(ranges)) {
			su.rng = ranges[sk.rangesBase:]
		}
	}
	d, err := stddwarf.New(gnuForms(s.abbrev), nil, nil, s.info, nil, nil, nil, s.str)
	if err != nil {
		return nil, 0, err
	}
	add := map[string][]byte{".debug_addr": su.addr, ".debug_str_offsets": strOffsets}
	if h.version >= 5 && su.rng != nil {
		add[".debug_rnglists"] = su.rng[su.rngBase:]
	}
	for name, b := range add {
		if len(b) > 0 {
			if err := d.AddSection(name, b); err != nil {
				return nil, 0, fmt.Errorf("section %s: %w", name, err)
			}
		}
	}
	su.d = d
	if h.version < 5 {
		e, err := d.Reader().Next()
		if err != nil {
			return nil, 0, err
		}
		var ok bool
		if e != nil && e.Tag == stddwarf.TagCompileUnit {
			var v int64
			v, ok = e.Val(attrGNUDwoID).(int64)
			id = uint64(v)
		}
		if !ok {
			return nil, 0, errors.New("no split compilation unit with a DWO ID")
		}
	}
	return su, id, nil
}

// contributionHeader returns the size of the header of a DWARF 5
// contribution to .debug_str_offsets or .debug_rnglists: its length (4 or
// 12 bytes), version 5, and rest bytes more.
func contributionHeader(b []byte, order binary.ByteOrder, rest int) (int, error) {
	r := reader{b: b, order: order}
	if r.u32() == 0xffffffff {
		r.u64()
	}
	v := r.u16()
	r.skip(rest)
	switch {
	case r.err != nil:
		return 0, errors.New("truncated header")
	case v != 5:
		return 0, fmt.Errorf("header of version %d", v)
	}
	return r.off, nil
}

// ranges reads the range list of e, a DIE of the split unit. debug/dwarf
// would take the base address from the split unit, which has none: it is
// the skeleton's.
func (s *splitUnit) ranges(e *stddwarf.Entry) ([][2]uint64, error) {
	f := e.AttrField(stddwarf.AttrRanges)
	if f == nil {
		return nil, nil
	}
	var off uint64
	switch v := f.Val.(type) {
	case int64: // DW_FORM_sec_offset
		if v < 0 {
			return nil, fmt.Errorf("range list offset %d", v)
		}
		off = uint64(v)
	case uint64: // DW_FORM_rnglistx, resolved by debug/dwarf from rngBase
		off = s.rngBase + v
		if off < v {
			return nil, fmt.Errorf("range list offset %#x", v)
		}
	default:
		return nil, fmt.Errorf("DW_AT_ranges of class %v", f.Class)
	}
	if off >= uint64(len(s.rng)) {
		return nil, fmt.Errorf("range list offset %#x beyond the %d bytes of range lists", off, len(s.rng))
	}
	r := reader{b: s.rng, off: int(off), order: s.order}
	if s.version >= 5 {
		return s.rnglist(&r)
	}
	return s.rangeList(&r)
}

// rnglist reads a DWARF 5 range list (section 2.17.3).
func (s *splitUnit) rnglist(r *reader) ([][2]uint64, error) {
	base := s.base
	var out [][2]uint64
	for {
		var lo, hi uint64
		switch op := r.u8(); op {
		case 0x00: // DW_RLE_end_of_list
			return out, r.err
		case 0x01: // DW_RLE_base_addressx
			base = s.addrx(r, r.uleb())
			continue
		case 0x02: // DW_RLE_startx_endx
			lo = s.addrx(r, r.uleb())
			hi = s.addrx(r, r.uleb())
		case 0x03: // DW_RLE_startx_length
			lo = s.addrx(r, r.uleb())
			hi = lo + r.uleb()
		case 0x04: // DW_RLE_offset_pair
			lo = base + r.uleb()
			hi = base + r.uleb()
		case 0x05: // DW_RLE_base_address
			base = r.addr(s.addrSize)
			continue
		case 0x06: // DW_RLE_start_end
			lo = r.addr(s.addrSize)
			hi = r.addr(s.addrSize)
		case 0x07: // DW_RLE_start_length
			lo = r.addr(s.addrSize)
			hi = lo + r.uleb()
		default:
			if r.err == nil {
				r.err = fmt.Errorf("unknown range list entry %#x", op)
			}
		}
		if r.err != nil {
			return nil, r.err
		}
		out = append(out, [2]uint64{lo, hi})
	}
}

// rangeList reads a DWARF 4 range list (section 2.17.3 of DWARF 4).
func (s *splitUnit) rangeList(r *reader) ([][2]uint64, error) {
	base := s.base
	maxAddr := ^uint64(0) >> (64 - 8*s.addrSize)
	var out [][2]uint64
	for {
		lo, hi := r.addr(s.addrSize), r.addr(s.addrSize)
		switch {
		case r.err != nil:
			return nil, r.err
		case lo == 0 && hi == 0:
			return out, nil
		case lo == maxAddr:
			base = hi
		default:
			out = append(out, [2]uint64{base + lo, base + hi})
		}
	}
}

// addrx reads entry i of the unit's part of .debug_addr.
func (s *splitUnit) addrx(r *reader, i uint64) uint64 {
	if r.err != nil {
		return 0
	}
	n := uint64(s.addrSize)
	if i >= uint64(len(s.addr))/n {
		r.err = fmt.Errorf("address index %d beyond .debug_addr", i)
		return 0
	}
	a := reader{b: s.addr, off: int(i * n), order: s.order}
	return a.addr(s.addrSize)
}

// unitHeader is the header of a unit of a .debug_info section.
type unitHeader struct {
	start, die, end int // offsets of the unit, its first DIE, its end
	version         int
	utype           uint8 // DWARF 5 unit type
	addrSize        int
	id              uint64 // DWO ID of a DWARF 5 skeleton or split unit
}

// unitHeaders reads the unit headers of a .debug_info section (DWARF 5
// section 7.5.1), up to the first malformed one. As debug/dwarf, it skips
// units of length 0.
func unitHeaders(info []byte, order binary.ByteOrder) []unitHeader {
	var out []unitHeader
	for off := 0; off < len(info); {
		r := reader{b: info, off: off, order: order}
		length, offSize := uint64(r.u32()), 4
		switch {
		case length == 0xffffffff:
			length, offSize = r.u64(), 8
		case length >= 0xfffffff0:
			return out // reserved
		}
		if r.err != nil || length > uint64(len(info)-r.off) {
			return out
		}
		h := unitHeader{start: off, end: r.off + int(length)}
		off = h.end
		if length == 0 {
			continue
		}
		h.version = int(r.u16())
		if h.version >= 5 {
			h.utype = r.u8()
			h.addrSize = int(r.u8())
			r.skip(offSize) // abbreviations
			switch h.utype {
			case utSkeleton, utSplitCompile:
				h.id = r.u64()
			case utType, utSplitType:
				r.skip(8 + offSize) // signature, type offset
			}
		} else {
			r.skip(offSize)
			h.addrSize = int(r.u8())
		}
		if r.err != nil || r.off > h.end || uint64(r.off) > math.MaxUint32 {
			return out
		}
		h.die = r.off
		out = append(out, h)
	}
	return out
}

// dwpRow is a package's unit: its contributions, by DW_SECT_* column.
type dwpRow [9]contribution

// contribution is a part of a package's section.
type contribution struct {
	off, size uint32
	ok        bool
}

// slice returns the contribution in column col of sec, or nil if there is
// none.
func (row *dwpRow) slice(sec []byte, col int) ([]byte, error) {
	c := row[col]
	if !c.ok {
		return nil, nil
	}
	if uint64(c.off)+uint64(c.size) > uint64(len(sec)) {
		return nil, fmt.Errorf("bytes %#x+%#x beyond the section's %d", c.off, c.size, len(sec))
	}
	return sec[c.off : c.off+c.size], nil
}

// parseCUIndex reads the .debug_cu_index of a package (DWARF 5 section
// 7.3.5.3; version 2 is the GNU format of gcc.gnu.org/wiki/DebugFissionDWP):
// a header, a hash table of DWO IDs with a parallel table of rows, the
// column numbers, then each row's offsets and sizes.
func parseCUIndex(b []byte, order binary.ByteOrder) (map[uint64]dwpRow, int, error) {
	if len(b) < 16 {
		return nil, 0, errors.New("truncated .debug_cu_index")
	}
	var version int
	switch {
	case order.Uint32(b) == 2:
		version = 2
	case order.Uint16(b) == 5:
		version = 5
	default:
		return nil, 0, fmt.Errorf(".debug_cu_index of version %d", order.Uint16(b))
	}
	cols, units, slots := uint64(order.Uint32(b[4:])), uint64(order.Uint32(b[8:])), uint64(order.Uint32(b[12:]))
	size := uint64(len(b))
	if cols == 0 || cols > 64 || slots > size/12 || units > size/(8*cols) {
		return nil, 0, fmt.Errorf(".debug_cu_index of %d columns, %d units, %d slots in %d bytes", cols, units, slots, size)
	}
	colsAt := 16 + 12*slots
	offsetsAt := colsAt + 4*cols
	sizesAt := offsetsAt + 4*cols*units
	if sizesAt+4*cols*units > size {
		return nil, 0, errors.New("truncated .debug_cu_index")
	}
	rows := make(map[uint64]dwpRow)
	for i := range slots {
		id := order.Uint64(b[16+8*i:])
		row := uint64(order.Uint32(b[16+8*slots+4*i:]))
		if row == 0 {
			continue // an empty slot
		}
		if row > units {
			return nil, 0, fmt.Errorf(".debug_cu_index: row %d of %d", row, units)
		}
		if _, dup := rows[id]; dup {
			continue
		}
		var r dwpRow
		for j := range cols {
			col := order.Uint32(b[colsAt+4*j:])
			if col == 0 || col >= uint32(len(r)) {
				continue
			}
			k := 4 * ((row-1)*cols + j)
			r[col] = contribution{order.Uint32(b[offsetsAt+k:]), order.Uint32(b[sizesAt+k:]), true}
		}
		rows[id] = r
	}
	return rows, version, nil
}

// gnuForms rewrites DW_FORM_GNU_addr_index and DW_FORM_GNU_str_index in an
// abbreviation section to DW_FORM_addrx and DW_FORM_strx, which mean the
// same (an index, unsigned LEB128) and which debug/dwarf reads. Each new
// form takes as many bytes as the old (a padded LEB128), so no offset
// moves. abbrev is returned as it is when it has neither form.
func gnuForms(abbrev []byte) []byte {
	out, copied := abbrev, false
	r := reader{b: abbrev, order: binary.LittleEndian}
	for r.off < len(abbrev) && r.err == nil {
		if code := r.uleb(); code == 0 {
			continue // the end of a table
		}
		r.uleb() // tag
		r.u8()   // children
		for r.err == nil {
			attr := r.uleb()
			at := r.off
			form := r.uleb()
			if attr == 0 && form == 0 || r.err != nil {
				break
			}
			switch form {
			case formImplicitConst:
				r.uleb() // its value, a signed LEB128, skipped alike
			case formGNUAddrIndex, formGNUStrIndex:
				if !copied {
					out, copied = bytes.Clone(abbrev), true
				}
				newForm := uint64(formAddrx)
				if form == formGNUStrIndex {
					newForm = formStrx
				}
				putULEB(out[at:r.off], newForm)
			}
		}
	}
	return out
}

// putULEB writes v into b as an unsigned LEB128 number of len(b) bytes.
func putULEB(b []byte, v uint64) {
	for i := range b {
		c := byte(v & 0x7f)
		v >>= 7
		if i < len(b)-1 {
			c |= 0x80
		}
		b[i] = c
	}
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

// reader decodes bytes with a sticky error: after the first read past the
// end, every read returns 0.
type reader struct {
	b     []byte
	off   int
	order binary.ByteOrder
	err   error
}

var errTruncated = errors.New("truncated")

func (r *reader) next(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.b)-r.off {
		r.err = errTruncated
		return nil
	}
	p := r.b[r.off : r.off+n]
	r.off += n
	return p
}

func (r *reader) skip(n int) { r.next(n) }

func (r *reader) u8() uint8 {
	if p := r.next(1); p != nil {
		return p[0]
	}
	return 0
}

func (r *reader) u16() uint16 {
	if p := r.next(2); p != nil {
		return r.order.Uint16(p)
	}
	return 0
}

func (r *reader) u32() uint32 {
	if p := r.next(4); p != nil {
		return r.order.Uint32(p)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if p := r.next(8); p != nil {
		return r.order.Uint64(p)
	}
	return 0
}

// addr reads an address of size bytes (4 or 8).
func (r *reader) addr(size int) uint64 {
	if size == 4 {
		return uint64(r.u32())
	}
	return r.u64()
}

// uleb reads an unsigned LEB128 number; bits beyond 64 are dropped. It
// skips a signed one alike.
func (r *reader) uleb() uint64 {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		c := r.u8()
		if r.err != nil {
			return 0
		}
		if shift < 64 {
			v |= uint64(c&0x7f) << shift
		}
		if c&0x80 == 0 {
			return v
		}
	}
}
