package dwarf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	stddwarf "debug/dwarf"
)

// A split unit made readable by debug/dwarf (buildSplit: its sections sliced
// at the skeleton's bases, the GNU forms rewritten), and the address ranges of
// its entries.

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
