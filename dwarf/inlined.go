package dwarf

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	stddwarf "debug/dwarf"
)

// Inlined is one inlined call: a copy of a function's code that the
// compiler placed in another function (DW_TAG_inlined_subroutine, DWARF 5
// section 3.3.8.2). A function inlined four times into one caller has four,
// each with its own code.
type Inlined struct {
	// Ranges is the code of the copy, inside its caller's.
	Ranges []Range
	// CallFile and CallLine locate the call the copy stands for, in the
	// caller's source: the caller's line, not the copy's.
	CallFile string
	CallLine int
	// Parent indexes the inlined call whose code holds this one (a call
	// inlined into inlined code), or is -1 for a call in a function's own
	// code.
	Parent int
	// Origin names the function inlined, as [Func.Name] names a function
	// before the symbol table's say: its linkage name, else its plain
	// name, found through DW_AT_abstract_origin and DW_AT_specification
	// ("" where the DWARF gives none). Unit indexes File.Units: the unit
	// the call was compiled in, which holds a static function's own copy.
	Origin string
	Unit   int
}

// InlinedCalls returns every inlined call of the file's units (those of
// split units included, from their .dwo files), in the order of their
// DIEs: a call's Parent comes before it. Ranges outside every executable
// segment are left out, and a call left without code is dropped, its
// children then having its parent. InlinedCalls reads the DWARF on every
// call; callers keep the result.
func (f *File) InlinedCalls() (out []Inlined, err error) {
	return f.InlinedCallsIn(nil)
}

// InlinedCallsIn is [File.InlinedCalls] of the functions whose code in
// says is wanted (nil: all): in(low, high) reports whether any of the
// range [low, high) is. The DIEs of the other functions' bodies are not
// read, which spares most of the walk where few functions are wanted.
func (f *File) InlinedCallsIn(in func(low, high uint64) bool) (out []Inlined, err error) {
	if f.impl == nil || f.impl.data == nil {
		return nil, fmt.Errorf("read inlined calls of %s: %w", f.Path, ErrNoDWARF)
	}
	op := "read inlined calls of " + f.Path
	if f.DebugFile != "" {
		op = "read inlined calls of " + f.DebugFile
	}
	defer catch(&err, op)
	w := &inlineWalk{x: f.impl, files: map[int][]string{}, units: f.Units, origins: map[originKey]string{}, in: in}
	if err := w.walk(f.impl.data, nil, -1); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	for _, s := range f.impl.splits {
		if err := w.walk(s.su.d, s.su, s.unit); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", op, s.su.path, err)
		}
	}
	return w.out, nil
}

// splitRef is a split unit read at Open, kept for [File.InlinedCalls],
// with the index of its skeleton's unit.
type splitRef struct {
	unit int
	su   *splitUnit
}

// inlineWalk reads the inlined calls of one DWARF.
type inlineWalk struct {
	x     *file
	units []Unit
	files map[int][]string // file tables read so far, by unit
	out   []Inlined
	// origins are the names of the inlined functions found so far.
	origins map[originKey]string
	in      func(low, high uint64) bool // (InlinedCallsIn)
}

// originKey is a DIE of one DWARF: the file's own or a split unit's.
type originKey struct {
	d   *stddwarf.Data
	off stddwarf.Offset
}

// walk appends the inlined calls of d: the file's own DWARF (su nil), whose
// units are numbered as File.Units, or the split unit su of unit.
func (w *inlineWalk) walk(d *stddwarf.Data, su *splitUnit, unit int) error {
	r := d.Reader()
	// The enclosing inlined call at each depth of the DIE tree (-1: none).
	var stack []int
	if su == nil {
		unit = -1
	}
	for {
		e, err := r.Next()
		if err != nil {
			return err
		}
		if e == nil {
			return nil
		}
		if e.Tag == 0 { // the end of a DIE's children
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			continue
		}
		parent := -1
		if len(stack) > 0 {
			parent = stack[len(stack)-1]
		}
		here := parent
		switch e.Tag {
		case stddwarf.TagCompileUnit, stddwarf.TagSkeletonUnit:
			stack, here = stack[:0], -1
			if su == nil {
				unit++
			}
		case stddwarf.TagPartialUnit, stddwarf.TagTypeUnit:
			stack, here = stack[:0], -1
		case stddwarf.TagInlinedSubroutine:
			if in, ok := w.inlined(d, su, unit, e, parent); ok {
				here = len(w.out)
				w.out = append(w.out, in)
			}
		case stddwarf.TagSubprogram:
			if e.Children && !w.wanted(d, su, e) {
				// (A function not wanted, or one without code, an
				// abstract instance, whose calls have none either.)
				r.SkipChildren()
				continue
			}
		}
		if e.Children {
			stack = append(stack, here)
		}
	}
}

// wanted reports whether the body of subprogram e holds inlined calls
// the walk wants: with InlinedCallsIn's filter, those of a function with
// code it wants.
func (w *inlineWalk) wanted(d *stddwarf.Data, su *splitUnit, e *stddwarf.Entry) bool {
	if w.in == nil {
		return true
	}
	rs, err := w.ranges(d, su, e)
	if err != nil {
		return true // (let the calls' own ranges decide)
	}
	for _, r := range rs {
		if r[0] < r[1] && w.in(r[0], r[1]) {
			return true
		}
	}
	return false
}

// ranges returns the code ranges of DIE e, of d or of split unit su.
func (w *inlineWalk) ranges(d *stddwarf.Data, su *splitUnit, e *stddwarf.Entry) ([][2]uint64, error) {
	if su == nil {
		return d.Ranges(e)
	}
	rs, err := su.ranges(e)
	if err == nil && rs == nil {
		rs = lowHigh(e)
	}
	return rs, err
}

// inlined reads the inlined call e of unit whose enclosing call is parent;
// false when it has no code in an executable segment.
func (w *inlineWalk) inlined(d *stddwarf.Data, su *splitUnit, unit int, e *stddwarf.Entry, parent int) (Inlined, bool) {
	rs, err := w.ranges(d, su, e)
	if err != nil {
		return Inlined{}, false
	}
	in := Inlined{Parent: parent, Unit: unit}
	if off, ok := e.Val(stddwarf.AttrAbstractOrigin).(stddwarf.Offset); ok {
		in.Origin = w.originName(d, off)
		if unit >= 0 && unit < len(w.units) && w.units[unit].Language == "go" {
			in.Origin = strings.ReplaceAll(in.Origin, "·", ".") // (as Func.Name)
		}
	}
	for _, r := range rs {
		// (An arm64 PIE's code may start in its first page: the executable
		// segments, not isTombstone, tell a discarded range.)
		if r[0] < r[1] && r[0] != 0 && w.x.inExec(r[0], r[1]) {
			in.Ranges = append(in.Ranges, Range{r[0], r[1]})
		}
	}
	if len(in.Ranges) == 0 {
		return Inlined{}, false
	}
	slices.SortFunc(in.Ranges, func(a, b Range) int { return cmp.Compare(a.Low, b.Low) })
	if n, ok := e.Val(stddwarf.AttrCallFile).(int64); ok {
		in.CallFile = w.fileName(unit, n)
	}
	if n, ok := e.Val(stddwarf.AttrCallLine).(int64); ok && n > 0 && n < 1<<31 {
		in.CallLine = int(n)
	}
	return in, true
}

// originName returns the name of the function whose DIE is at off in d:
// the first linkage name, else the first plain name, along its chain of
// DW_AT_abstract_origin and DW_AT_specification (as resolve takes them
// for functions), "" where none can be read.
func (w *inlineWalk) originName(d *stddwarf.Data, off stddwarf.Offset) string {
	key := originKey{d, off}
	if name, ok := w.origins[key]; ok {
		return name
	}
	var linkage, name string
	r := d.Reader()
	for depth := 0; depth < maxRefDepth && linkage == ""; depth++ {
		r.Seek(off)
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		linkage, _ = e.Val(stddwarf.AttrLinkageName).(string)
		if linkage == "" {
			linkage, _ = e.Val(attrMIPSLinkageName).(string)
		}
		if name == "" {
			name, _ = e.Val(stddwarf.AttrName).(string)
		}
		next, ok := e.Val(stddwarf.AttrAbstractOrigin).(stddwarf.Offset)
		if !ok {
			next, ok = e.Val(stddwarf.AttrSpecification).(stddwarf.Offset)
		}
		if !ok || next == off {
			break
		}
		off = next
	}
	if linkage != "" {
		name = linkage
	}
	w.origins[key] = name
	return name
}

// fileName returns entry n of the file table of unit u, as line rows name
// files, reading the unit's line-program header the first time.
func (w *inlineWalk) fileName(u int, n int64) string {
	if u < 0 || u >= len(w.x.cus) || u >= len(w.units) || n < 0 {
		return ""
	}
	files, ok := w.files[u]
	if !ok {
		files = unitFiles(w.x.data, w.x.cus[u], w.units[u].CompDir)
		w.files[u] = files
	}
	if n >= int64(len(files)) {
		return ""
	}
	return files[n]
}

// lowHigh returns the range of e's DW_AT_low_pc and DW_AT_high_pc (an
// address, or a length from the low one), or nil.
func lowHigh(e *stddwarf.Entry) [][2]uint64 {
	low, ok := e.Val(stddwarf.AttrLowpc).(uint64)
	if !ok {
		return nil
	}
	f := e.AttrField(stddwarf.AttrHighpc)
	if f == nil {
		return nil
	}
	switch v := f.Val.(type) {
	case uint64:
		if f.Class == stddwarf.ClassAddress {
			return [][2]uint64{{low, v}}
		}
	case int64:
		if v > 0 {
			return [][2]uint64{{low, low + uint64(v)}}
		}
	}
	return nil
}
