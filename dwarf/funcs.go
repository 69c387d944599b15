package dwarf

import (
	"cmp"
	"debug/elf"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	stddwarf "debug/dwarf"
)

// attrMIPSLinkageName is DW_AT_MIPS_linkage_name (0x2007), the linkage name
// of DWARF 2 and 3 producers.
const attrMIPSLinkageName stddwarf.Attr = 0x2007

// maxRefDepth bounds DW_AT_specification and DW_AT_abstract_origin chains
// (a hostile file may make them cycle).
const maxRefDepth = 16

// die is what a subprogram DIE says about itself.
type die struct {
	name, linkage string
	ref           stddwarf.Offset // DW_AT_specification or DW_AT_abstract_origin, 0 if none
	src           int32           // the DWARF it was read from: 0 the file's, k split unit k-1
	unit          int32           // index into walker.units, -1 outside a compilation unit
	declFile      int32           // index into the unit's file table, -1 if none
	declLine      int32
	external      bool
}

// candidate is a subprogram DIE with code.
type candidate struct {
	die     int32
	ranges  [][2]uint64
	entryPC uint64 // DW_AT_entry_pc, 0 if none
}

// walker reads all DIEs once, remembering every subprogram by offset for
// the specification and abstract-origin lookups, and every subprogram with
// code as a candidate function. The DIEs of a split unit are read from its
// .dwo file or .dwp package when the walk meets its skeleton.
type walker struct {
	d     *stddwarf.Data
	dies  []die
	index map[dieKey]int32
	cands []candidate
	units []Unit
	cus   []*stddwarf.Entry  // the file's unit entries (skeletons for split units)
	files map[int32][]string // file tables read so far, by unit

	dwo    *dwoFinder   // finds split units
	splits []*splitUnit // the split units read, die.src-1 indexes them
	kept   []splitRef   // those read whole, with their units
	lost   []lostUnit   // skeletons whose split unit could not be read
	lostWs []string     // why, for the first maxSplitWarnings of them

	alt       int   // DIEs referring to a dwz alternate file
	rangeErrs int   // functions whose ranges could not be read
	rangeErr  error // the first of them
	outside   int   // functions with a range outside every executable segment
	outName   string
}

// dieKey names a DIE: the DWARF it is in (die.src) and its offset there.
type dieKey struct {
	src int32
	off stddwarf.Offset
}

func newWalker(d *stddwarf.Data) *walker {
	return &walker{d: d, index: make(map[dieKey]int32), files: make(map[int32][]string)}
}

// walk reads every DIE once.
func (w *walker) walk() error {
	r := w.d.Reader()
	unit, lang := int32(-1), ""
	for {
		e, err := r.Next()
		if err != nil {
			return err
		}
		if e == nil {
			return nil
		}
		switch e.Tag {
		case stddwarf.TagCompileUnit, stddwarf.TagSkeletonUnit:
			unit = w.addUnit(e)
			if isSkeleton(e) {
				w.split(unit, e)
			}
			lang = w.units[unit].Language
		case stddwarf.TagPartialUnit, stddwarf.TagTypeUnit:
			// dwz partial units and type units hold no code of their own.
			unit, lang = -1, ""
		case stddwarf.TagSubprogram:
			w.subprogram(e, 0, unit)
			if lang == "go" && e.Children {
				// Go nests no functions in functions: skip the
				// parameters, variables, blocks and inlined calls.
				r.SkipChildren()
			}
		}
	}
}

// addUnit records a compilation unit and returns its index.
func (w *walker) addUnit(e *stddwarf.Entry) int32 {
	u := Unit{}
	u.Name, _ = e.Val(stddwarf.AttrName).(string)
	u.CompDir, _ = e.Val(stddwarf.AttrCompDir).(string)
	u.Producer, _ = e.Val(stddwarf.AttrProducer).(string)
	if code, ok := e.Val(stddwarf.AttrLanguage).(int64); ok {
		u.Language = language(code)
	}
	u.Path = unitPath(u)
	for _, f := range e.Field {
		if f.Class == stddwarf.ClassReferenceAlt || f.Class == stddwarf.ClassStringAlt {
			w.alt++
		}
	}
	w.units = append(w.units, u)
	w.cus = append(w.cus, e)
	return int32(len(w.units) - 1)
}

// unitPath joins the unit's name with its compilation directory. A rustc
// unit name carries its codegen unit after "/@/": the path ends before. A
// Go unit is named by its package path, which is no file.
func unitPath(u Unit) string {
	name := u.Name
	if u.Language == "rust" {
		name, _, _ = strings.Cut(name, "/@/")
	}
	if name == "" || filepath.IsAbs(name) || u.CompDir == "" || u.Language == "go" {
		return name
	}
	return filepath.Join(u.CompDir, name)
}

// subprogram records a subprogram DIE of the DWARF src, and a candidate
// when it has code.
func (w *walker) subprogram(e *stddwarf.Entry, src, unit int32) {
	d := die{unit: unit, declFile: -1, src: src}
	var low, high, entryPC uint64
	var hasLow, hasHigh, hasRanges bool
	var highOff int64
	highIsOff := false
	for i := range e.Field {
		f := &e.Field[i]
		if f.Class == stddwarf.ClassReferenceAlt || f.Class == stddwarf.ClassStringAlt {
			w.alt++
			continue
		}
		switch f.Attr {
		case stddwarf.AttrName:
			d.name, _ = f.Val.(string)
		case stddwarf.AttrLinkageName, attrMIPSLinkageName:
			d.linkage, _ = f.Val.(string)
		case stddwarf.AttrSpecification, stddwarf.AttrAbstractOrigin:
			d.ref, _ = f.Val.(stddwarf.Offset)
		case stddwarf.AttrDeclFile:
			d.declFile = int32Of(f.Val, -1)
		case stddwarf.AttrDeclLine:
			d.declLine = int32Of(f.Val, 0)
		case stddwarf.AttrExternal:
			d.external, _ = f.Val.(bool)
		case stddwarf.AttrLowpc:
			low, hasLow = f.Val.(uint64)
		case stddwarf.AttrHighpc:
			switch v := f.Val.(type) {
			case uint64:
				high, hasHigh = v, f.Class == stddwarf.ClassAddress
			case int64:
				highOff, highIsOff = v, true
			}
		case stddwarf.AttrRanges:
			hasRanges = true
		case stddwarf.AttrEntrypc:
			if f.Class == stddwarf.ClassAddress {
				entryPC, _ = f.Val.(uint64)
			}
		}
	}
	idx := int32(len(w.dies))
	w.dies = append(w.dies, d)
	w.index[dieKey{src, e.Offset}] = idx

	var ranges [][2]uint64
	switch {
	case hasRanges:
		var r [][2]uint64
		var err error
		if src > 0 {
			r, err = w.splits[src-1].ranges(e)
		} else {
			r, err = w.d.Ranges(e)
		}
		if err != nil {
			w.rangeErrs++
			if w.rangeErr == nil {
				w.rangeErr = fmt.Errorf("DIE at %#x: %w", e.Offset, err)
			}
			return
		}
		ranges = r
	case hasLow && highIsOff:
		ranges = [][2]uint64{{low, low + uint64(highOff)}}
	case hasLow && hasHigh:
		ranges = [][2]uint64{{low, high}}
	}
	if len(ranges) > 0 {
		w.cands = append(w.cands, candidate{die: idx, ranges: ranges, entryPC: entryPC})
	}
}

// int32Of converts an attribute's constant, or returns def when it is not
// one or out of range.
func int32Of(v any, def int32) int32 {
	if n, ok := v.(int64); ok && n >= 0 && n <= 1<<31-1 {
		return int32(n)
	}
	return def
}

// resolved is what a function's DIE and the DIEs it refers to say.
type resolved struct {
	linkage, name      string
	external           bool
	declUnit, declFile int32
	declLine           int32
	home               int32 // unit of the last DIE of the chain
}

// resolve follows DW_AT_specification and DW_AT_abstract_origin from the
// subprogram i, taking each fact from the first DIE that has it: a
// definition's own declaration line wins over its class declaration's.
func (w *walker) resolve(i int32) resolved {
	r := resolved{declFile: -1}
	for depth := 0; depth < maxRefDepth; depth++ {
		d := &w.dies[i]
		if r.linkage == "" {
			r.linkage = d.linkage
		}
		if r.name == "" {
			r.name = d.name
		}
		r.external = r.external || d.external
		if r.declFile < 0 && d.declFile >= 0 {
			r.declFile, r.declUnit = d.declFile, d.unit
		}
		if r.declLine == 0 {
			r.declLine = d.declLine
		}
		r.home = d.unit
		next, ok := w.index[dieKey{d.src, d.ref}]
		if d.ref == 0 || !ok {
			break
		}
		i = next
	}
	return r
}

// fileName returns entry n of the file table of unit u, reading the unit's
// line-program header the first time.
func (w *walker) fileName(u, n int32) string {
	if u < 0 || int(u) >= len(w.cus) || n < 0 {
		return ""
	}
	files, ok := w.files[u]
	if !ok {
		files = unitFiles(w.d, w.cus[u], w.units[u].CompDir)
		w.files[u] = files
	}
	if int(n) >= len(files) {
		return ""
	}
	return files[n]
}

// unitFiles returns the file table of the unit cu, whose directory is
// compDir, read from its line-program header: each name as line rows
// name files, "" for an entry without one.
func unitFiles(d *stddwarf.Data, cu *stddwarf.Entry, compDir string) []string {
	lr, err := d.LineReader(cu)
	if err != nil || lr == nil {
		return nil
	}
	var files []string
	for _, f := range lr.Files() {
		name := ""
		if f != nil {
			name = inCompDir(f.Name, compDir)
		}
		files = append(files, name)
	}
	return files
}

// funcs turns the candidates into functions: ranges outside every
// executable segment dropped, names resolved, entry range first.
func (w *walker) funcs(x *file, syms *symtab, module string) []Func {
	sources := make([]string, len(w.units))
	for i, u := range w.units {
		sources[i] = unitSource(u)
	}
	var out []Func
	for _, c := range w.cands {
		ranges := w.keepRanges(x, c)
		if len(ranges) == 0 {
			continue
		}
		r := w.resolve(c.die)
		name := r.linkage
		if name == "" {
			name = r.name
		}
		if u := w.dies[c.die].unit; u >= 0 && w.units[u].Language == "go" {
			// The Go linker names symbols with "." where the DWARF of
			// some generated functions still has "·" (type:.eq.T·1).
			name = strings.ReplaceAll(name, "·", ".")
		}
		entry := pickEntry(ranges, c.entryPC, name, syms)
		ranges[0], ranges[entry] = ranges[entry], ranges[0]
		slices.SortFunc(ranges[1:], func(a, b Range) int { return cmp.Compare(a.Low, b.Low) })
		if r.linkage == "" {
			// gcc gives static C++ functions no DW_AT_linkage_name: the
			// symbol table's mangled name tells overloads apart.
			name = syms.mangledAt(ranges[0].Low, name)
		}
		fn := Func{
			Name:     syms.cloneName(ranges[0].Low, name),
			Entry:    ranges[0].Low,
			Ranges:   ranges,
			Unit:     int(w.dies[c.die].unit),
			External: r.external,
		}
		if fn.Name != name {
			fn.External = false // gcc clones are local symbols
		}
		if fn.Name == "" {
			// The name is in a dwz alternate file, or missing: the
			// symbol table names the function.
			syms := syms.at(fn.Entry)
			if len(syms) == 0 {
				continue
			}
			fn.Name, fn.External = syms[0].name, syms[0].bind != elf.STB_LOCAL
		}
		fn.DeclFile, fn.DeclLine = w.fileName(r.declUnit, r.declFile), int(r.declLine)
		fn.Source = w.source(fn, r, sources, module)
		out = append(out, fn)
	}
	return out
}

// keepRanges returns the candidate's ranges that lie inside an executable
// segment. Ranges at 0 or -1 are functions the linker dropped
// (--gc-sections) whose DIEs stayed.
func (w *walker) keepRanges(x *file, c candidate) []Range {
	var out []Range
	for _, r := range c.ranges {
		lo, hi := r[0], r[1]
		switch {
		case lo >= hi || lo == 0 || lo == ^uint64(0):
			continue
		case !x.inExec(lo, hi):
			if !isTombstone(lo) {
				w.outside++
				if w.outName == "" {
					w.outName = w.resolve(c.die).name
				}
			}
			continue
		}
		out = append(out, Range{lo, hi})
	}
	return out
}

// isTombstone reports whether a range start is one of the values linkers
// write for discarded code: 0 or 1 (ld.bfd, which avoids 0 in
// .debug_ranges), ranges computed from such a base (below the first page),
// -1 and -2 (lld). No linker places code in the first 4 KiB, the smallest
// page of any target.
func isTombstone(lo uint64) bool {
	const firstPage = 4096
	return lo < firstPage || lo >= ^uint64(1)
}

// pickEntry returns the index of the range holding the entry: the one with
// DW_AT_entry_pc, else one starting at a symbol of the function that is not
// a cold part, else the first one not starting at a ".cold" symbol, else
// the first.
func pickEntry(ranges []Range, entryPC uint64, name string, syms *symtab) int {
	if len(ranges) == 1 {
		return 0
	}
	if entryPC != 0 {
		for i, r := range ranges {
			if r.Low <= entryPC && entryPC < r.High {
				return i
			}
		}
	}
	firstHot := -1
	for i, r := range ranges {
		syms := syms.at(r.Low)
		cold := false
		for _, s := range syms {
			if s.name == name {
				return i
			}
			if _, ok := coldParent(s.name); ok {
				cold = true
			}
		}
		if !cold && firstHot < 0 {
			firstHot = i
		}
	}
	return max(firstHot, 0)
}

// source names the unit a function belongs to. A function of an LTO unit
// ("<artificial>") belongs to the unit of its abstract origin.
func (w *walker) source(fn Func, r resolved, sources []string, module string) string {
	unit := fn.Unit
	if unit >= 0 && sources[unit] == "" && r.home >= 0 {
		unit = int(r.home)
	}
	if unit < 0 {
		return module
	}
	if s := sources[unit]; s != "" {
		return s
	}
	if w.units[unit].Language == "rust" {
		if s := rustCrateOfSymbol(fn.Name); s != "" {
			return s
		}
	}
	return module
}

// warnings reports what the walk met that makes its result incomplete.
func (w *walker) warnings(op string, src *elf.File) []string {
	var out []string
	if w.alt > 0 || src.Section(".gnu_debugaltlink") != nil {
		out = append(out, fmt.Sprintf("%s: uses dwz (%d references into a .gnu_debugaltlink file): unsupported; names the DWARF keeps there are taken from the symbol table", op, w.alt))
	}
	for _, why := range w.lostWs {
		out = append(out, fmt.Sprintf("%s: %s: its functions are taken from the symbol table", op, why))
	}
	if n := len(w.lost) - len(w.lostWs); n > 0 {
		out = append(out, fmt.Sprintf("%s: %d more split units unreadable: their functions are taken from the symbol table", op, n))
	}
	if w.rangeErrs > 0 {
		out = append(out, fmt.Sprintf("%s: %d functions with unreadable ranges ignored (first: %v)", op, w.rangeErrs, w.rangeErr))
	}
	if w.outside > 0 {
		out = append(out, fmt.Sprintf("%s: %d ranges outside every executable segment ignored (first in %q)", op, w.outside, w.outName))
	}
	return out
}
