package dwarf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// The headers of the units of a .debug_info section, and the unit index of a
// .dwp package (.debug_cu_index).

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
