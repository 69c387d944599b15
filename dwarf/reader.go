package dwarf

import (
	"encoding/binary"
	"errors"
)

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
