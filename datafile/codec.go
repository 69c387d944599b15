package datafile

import (
	"encoding/binary"
	"fmt"
	"math"
)

// The section ids of the body (doc.go).
const (
	secStrings byte = 1 + iota
	secPlan
	secModules
	secFuncs
	secLines
	secCounts
	secRuns
	secStats
	secDiscarded
)

// encoder builds a body: the string table, collected while the other
// sections are encoded, and the other sections.
type encoder struct {
	index map[string]uint64
	strs  []string
	body  []byte // the sections after the string table
}

// newEncoder returns an encoder for about strs distinct strings.
func newEncoder(strs int) *encoder {
	return &encoder{index: make(map[string]uint64, strs)}
}

// payload is the content of one section being encoded, written at the
// end of the body.
type payload struct {
	e *encoder
	b []byte
}

// section appends section id to the body, its content written by fill
// straight after a length of one byte, and moved up in place where the
// length takes more: no section is built apart and copied in.
func (e *encoder) section(id byte, fill func(w *payload)) {
	at := len(e.body) + 2
	w := &payload{e: e, b: append(e.body, id, 0)}
	fill(w)
	b, n := w.b, uint64(len(w.b)-at)
	var size [binary.MaxVarintLen64]byte
	k := binary.PutUvarint(size[:], n)
	if k > 1 {
		b = append(b, size[1:k]...) // (room for the length's other bytes)
		copy(b[at+k-1:], b[at:at+int(n)])
	}
	copy(b[at-1:], size[:k])
	e.body = b
}

// parts returns the body in two parts: the string table, which comes
// first, and the other sections.
func (e *encoder) parts() (strs, rest []byte) {
	size := 0
	for _, s := range e.strs {
		size += binary.MaxVarintLen64 + len(s)
	}
	t := make([]byte, 0, size+binary.MaxVarintLen64)
	t = binary.AppendUvarint(t, uint64(len(e.strs)))
	for _, s := range e.strs {
		t = binary.AppendUvarint(t, uint64(len(s)))
		t = append(t, s...)
	}
	sec := make([]byte, 0, len(t)+binary.MaxVarintLen64+1)
	sec = append(sec, secStrings)
	sec = binary.AppendUvarint(sec, uint64(len(t)))
	return append(sec, t...), e.body
}

func (w *payload) uvarint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }
func (w *payload) varint(v int64)   { w.b = binary.AppendVarint(w.b, v) }

// int writes a non-negative int; Validate has checked the sign.
func (w *payload) int(v int) { w.uvarint(uint64(v)) }

func (w *payload) bool(v bool) {
	if v {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}

func (w *payload) str(s string) {
	i, ok := w.e.index[s]
	if !ok {
		i = uint64(len(w.e.strs))
		w.e.index[s] = i
		w.e.strs = append(w.e.strs, s)
	}
	w.uvarint(i)
}

func (w *payload) bytes(b []byte) {
	w.uvarint(uint64(len(b)))
	w.b = append(w.b, b...)
}

func (w *payload) id(id ID) { w.b = append(w.b, id[:]...) }

func (w *payload) strs(list []string) {
	w.int(len(list))
	for _, s := range list {
		w.str(s)
	}
}

// decoder reads one section, or the whole body, with a sticky error: after
// the first failure every read returns a zero value, and callers check ok in
// their loops so that none runs on after it.
type decoder struct {
	buf     []byte
	off     int
	base    int64 // file offset of buf[0]
	strs    []string
	version int // the file's format version
	err     error
}

func (d *decoder) ok() bool { return d.err == nil }

func (d *decoder) remaining() int { return len(d.buf) - d.off }

func (d *decoder) fail(format string, args ...any) {
	d.failAt(d.off, format, args...)
}

func (d *decoder) failAt(off int, format string, args ...any) {
	if d.err == nil {
		d.err = &FormatError{Off: d.base + int64(off), Msg: fmt.Sprintf(format, args...)}
	}
}

func (d *decoder) u8() byte {
	if d.err != nil {
		return 0
	}
	if d.remaining() < 1 {
		d.fail("unexpected end of section")
		return 0
	}
	b := d.buf[d.off]
	d.off++
	return b
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.buf[d.off:])
	switch {
	case n == 0:
		d.fail("unexpected end of section")
		return 0
	case n < 0:
		d.fail("uvarint overflows 64 bits")
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.buf[d.off:])
	switch {
	case n == 0:
		d.fail("unexpected end of section")
		return 0
	case n < 0:
		d.fail("varint overflows 64 bits")
		return 0
	}
	d.off += n
	return v
}

// int reads a uvarint that must fit an int.
func (d *decoder) int() int {
	at := d.off
	v := d.uvarint()
	if v > math.MaxInt {
		d.failAt(at, "value %d out of range", v)
		return 0
	}
	return int(v)
}

// signed reads a varint that must fit an int.
func (d *decoder) signed() int {
	at := d.off
	v := d.varint()
	if int64(int(v)) != v {
		d.failAt(at, "value %d out of range", v)
		return 0
	}
	return int(v)
}

// count reads the length of a list whose elements take at least size bytes
// each, and checks it against the bytes remaining: what it returns is safe
// to allocate.
func (d *decoder) count(size int) int {
	at := d.off
	n := d.uvarint()
	if n > uint64(d.remaining()/size) {
		d.failAt(at, "count %d exceeds what the %d remaining bytes can hold", n, d.remaining())
		return 0
	}
	return int(n)
}

func (d *decoder) bool() bool {
	at := d.off
	switch b := d.u8(); b {
	case 0:
		return false
	case 1:
		return true
	default:
		d.failAt(at, "bool %d is neither 0 nor 1", b)
		return false
	}
}

func (d *decoder) str() string {
	at := d.off
	i := d.uvarint()
	if i >= uint64(len(d.strs)) {
		d.failAt(at, "string %d out of range (%d strings)", i, len(d.strs))
		return ""
	}
	return d.strs[i]
}

// raw returns the next n bytes, not copied.
func (d *decoder) raw(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n > d.remaining() {
		d.fail("%d bytes wanted, %d remaining", n, d.remaining())
		return nil
	}
	b := d.buf[d.off : d.off+n]
	d.off += n
	return b
}

// bytes reads a byte string; the empty one reads as nil.
func (d *decoder) bytes() []byte {
	n := d.count(1)
	if n == 0 {
		return nil
	}
	return append([]byte(nil), d.raw(n)...)
}

func (d *decoder) id() ID {
	var id ID
	copy(id[:], d.raw(len(id)))
	return id
}

func (d *decoder) method() Method {
	at := d.off
	v := d.uvarint()
	if v > math.MaxUint16 {
		d.failAt(at, "method %d out of range", v)
		return 0
	}
	return Method(v)
}

func (d *decoder) strList() []string {
	n := d.count(1)
	if n == 0 {
		return nil
	}
	list := make([]string, n)
	for i := 0; i < n && d.ok(); i++ {
		list[i] = d.str()
	}
	return list
}

// section opens the next section, which must have the given id. The caller
// reads its payload and then calls end.
func (d *decoder) section(id byte) *decoder {
	at := d.off
	if got := d.u8(); d.ok() && got != id {
		d.failAt(at, "section %d where section %d was expected", got, id)
	}
	n := d.count(1)
	s := &decoder{base: d.base + int64(d.off), strs: d.strs, version: d.version, err: d.err}
	if d.ok() {
		s.buf = d.buf[d.off : d.off+n]
		d.off += n
	}
	return s
}

// end checks that s, a section opened by d.section, was read exactly, and
// makes its error d's.
func (d *decoder) end(s *decoder) {
	if s.ok() && s.remaining() != 0 {
		s.fail("%d unread bytes at the end of the section", s.remaining())
	}
	if d.err == nil {
		d.err = s.err
	}
}

// stringTable reads section 1.
func (d *decoder) stringTable() {
	s := d.section(secStrings)
	n := s.count(1)
	if n > 0 {
		d.strs = make([]string, n)
	}
	for i := 0; i < n && s.ok(); i++ {
		m := s.count(1)
		d.strs[i] = string(s.raw(m))
	}
	d.end(s)
}

// done checks that the whole body was read.
func (d *decoder) done() error {
	if d.ok() && d.remaining() != 0 {
		d.fail("%d bytes after the last section", d.remaining())
	}
	return d.err
}
