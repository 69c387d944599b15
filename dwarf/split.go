package dwarf

import (
	"cmp"
	"fmt"
	"path"
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
