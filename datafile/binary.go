package datafile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// Version is the binary format version this package writes. It reads
// this version and the ones listed in doc.go ([MinVersion] on).
const Version = 15

// MinVersion is the oldest format version this package reads: version 3
// differs from 4 only in the .pbt, which had no discarded runs, 4 from 5
// only in the statistics, which had no sampling figures, 5 from 6 only
// in the stacks, which had no CallerKey, 6 from 7 only in the plan,
// which had no LeftOut, 7 from 8 only in the statistics, which had no
// CostUncertainty, 8 from 9 only in the statistics, which had no
// CPUTime, and 9 from 10 only in the statistics, which had no waits
// (doc.go).
const MinVersion = 3

// The constants of the header (doc.go).
const (
	signature  = "MS-PROF/KR"
	headerSize = len(signature) + 2 + 1 + 1 + 8
	// maxBody bounds the body length a reader accepts.
	maxBody = 1 << 30
)

// Kind is the Kind of a data file, recorded in its header.
type Kind byte

// The three kinds of data file.
const (
	KindPlan   Kind = 1 // a .pbi, written by PREP phase I
	KindCounts Kind = 2 // a .pbo, one run written by PROFILE
	KindMerged Kind = 3 // a .pbt, the database PREP merges into and PLIST reads
)

// String names the Kind with its extension: "plan (.pbi)".
func (k Kind) String() string {
	switch k {
	case 0:
		return "data file"
	case KindPlan:
		return "plan (.pbi)"
	case KindCounts:
		return "counts (.pbo)"
	case KindMerged:
		return "merged profile (.pbt)"
	}
	return fmt.Sprintf("Kind %d", byte(k))
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// WritePlan writes p as a .pbi. It refuses an invalid plan.
func WritePlan(w io.Writer, p *Plan) error {
	return write(w, p)
}

// WriteCounts writes c as a .pbo. It refuses invalid counts.
func WriteCounts(w io.Writer, c *Counts) error {
	return write(w, c)
}

// WriteMerged writes m as a .pbt. It refuses an invalid database.
func WriteMerged(w io.Writer, m *Merged) error {
	return write(w, m)
}

// Write writes v, a *Plan, *Counts or *Merged, in the binary form of its
// kind.
func Write(w io.Writer, v any) error {
	return write(w, v)
}

// ReadPlan reads a .pbi and validates it.
func ReadPlan(r io.Reader) (*Plan, error) {
	v, err := read(r, KindPlan)
	if err != nil {
		return nil, err
	}
	return v.(*Plan), nil
}

// ReadCounts reads a .pbo and validates it.
func ReadCounts(r io.Reader) (*Counts, error) {
	v, err := read(r, KindCounts)
	if err != nil {
		return nil, err
	}
	return v.(*Counts), nil
}

// ReadMerged reads a .pbt and validates it.
func ReadMerged(r io.Reader) (*Merged, error) {
	v, err := read(r, KindMerged)
	if err != nil {
		return nil, err
	}
	return v.(*Merged), nil
}

// Read reads a data file of any Kind, validates it and returns a *Plan,
// *Counts or *Merged. Like the typed readers, it reads exactly one file from
// r and nothing after it.
func Read(r io.Reader) (any, error) {
	return read(r, 0)
}

func write(w io.Writer, v any) error {
	var k Kind
	var e *encoder
	var err error
	switch v := v.(type) {
	case *Plan:
		k, err = KindPlan, v.Validate()
		if err == nil {
			e = encodePlan(v)
		}
	case *Counts:
		k, err = KindCounts, v.Validate()
		if err == nil {
			e = encodeCounts(v)
		}
	case *Merged:
		k, err = KindMerged, v.Validate()
		if err == nil {
			e = encodeMerged(v)
		}
	default:
		return fmt.Errorf("write: unsupported type %T", v)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", k, err)
	}
	strs, rest := e.parts()
	if n := len(strs) + len(rest); n > maxBody {
		return fmt.Errorf("write %s: body of %d bytes exceeds the limit of %d", k, n, maxBody)
	}
	if err := writeFrame(w, k, strs, rest); err != nil {
		return fmt.Errorf("write %s: %w", k, err)
	}
	return nil
}

// writeFrame writes a whole file of Kind k: the header, the body given in
// parts, and the checksum.
func writeFrame(w io.Writer, k Kind, body ...[]byte) error {
	n := 0
	for _, b := range body {
		n += len(b)
	}
	h := make([]byte, 0, headerSize)
	h = append(h, signature...)
	h = binary.LittleEndian.AppendUint16(h, Version)
	h = append(h, byte(k), 0)
	h = binary.LittleEndian.AppendUint64(h, uint64(n))
	crc := crc32.Checksum(h, castagnoli)
	if _, err := w.Write(h); err != nil {
		return err
	}
	for _, b := range body {
		crc = crc32.Update(crc, castagnoli, b)
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	_, err := w.Write(binary.LittleEndian.AppendUint32(nil, crc))
	return err
}

// read reads one file of Kind want, or of any Kind if want is 0.
func read(r io.Reader, want Kind) (any, error) {
	what := "data file"
	if want != 0 {
		what = want.String()
	}
	k, version, body, err := readFrame(r, want)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	v, err := decode(k, version, body)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", k, err)
	}
	return v, nil
}

// readFrame reads and checks the header, the body and the checksum, in the
// order doc.go gives, and returns the Kind, the format version and the
// body.
func readFrame(r io.Reader, want Kind) (Kind, int, []byte, error) {
	var h [headerSize]byte
	if n, err := io.ReadFull(r, h[:]); err != nil {
		if !errors.Is(err, io.ErrUnexpectedEOF) && err != io.EOF {
			return 0, 0, nil, err
		}
		m := min(n, len(signature))
		if string(h[:m]) != signature[:m] {
			return 0, 0, nil, ErrSignature
		}
		return 0, 0, nil, fmt.Errorf("%w: %d bytes, the header has %d", ErrTruncated, n, headerSize)
	}
	if string(h[:len(signature)]) != signature {
		return 0, 0, nil, ErrSignature
	}
	v := int(binary.LittleEndian.Uint16(h[10:]))
	if v < MinVersion || v > Version {
		return 0, 0, nil, fmt.Errorf("%w %d, want %d to %d", ErrVersion, v, MinVersion, Version)
	}
	k := Kind(h[12])
	if k < KindPlan || k > KindMerged {
		return 0, 0, nil, &FormatError{Off: 12, Msg: fmt.Sprintf("unknown Kind %d", k)}
	}
	if want != 0 && k != want {
		return 0, 0, nil, fmt.Errorf("%w: %s, want %s", ErrKind, k, want)
	}
	if f := h[13]; f != 0 {
		return 0, 0, nil, &FormatError{Off: 13, Msg: fmt.Sprintf("unknown flags %#x", f)}
	}
	n := binary.LittleEndian.Uint64(h[14:])
	if n > maxBody {
		return 0, 0, nil, &FormatError{Off: 14, Msg: fmt.Sprintf("body length %d exceeds %d", n, maxBody)}
	}
	rest, err := readN(r, int(n)+4)
	if err != nil {
		return 0, 0, nil, err
	}
	body := rest[:n]
	// Neither checksum is printed: the one the content gives is what a
	// forged file would need.
	crc := crc32.Update(crc32.Checksum(h[:], castagnoli), castagnoli, body)
	if stored := binary.LittleEndian.Uint32(rest[n:]); stored != crc {
		return 0, 0, nil, ErrChecksum
	}
	return k, v, body, nil
}

// readN reads exactly n bytes. Its memory grows with what r delivers, not
// with n, so a hostile length costs nothing until the bytes are there.
func readN(r io.Reader, n int) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(min(n, 1<<20))
	got, err := buf.ReadFrom(io.LimitReader(r, int64(n)))
	if err != nil {
		return nil, err
	}
	if got < int64(n) {
		return nil, fmt.Errorf("%w: %d bytes after the header, want %d", ErrTruncated, got, n)
	}
	return buf.Bytes(), nil
}

// decode decodes and validates a body of Kind k written in format
// version.
func decode(k Kind, version int, body []byte) (any, error) {
	d := &decoder{buf: body, base: int64(headerSize), version: version}
	d.stringTable()
	switch k {
	case KindPlan:
		p := new(Plan)
		d.plan(p)
		if err := d.done(); err != nil {
			return nil, err
		}
		return p, p.Validate()
	case KindCounts:
		c := new(Counts)
		d.counts(c)
		if err := d.done(); err != nil {
			return nil, err
		}
		return c, c.Validate()
	default:
		m := new(Merged)
		d.merged(m)
		if err := d.done(); err != nil {
			return nil, err
		}
		return m, m.Validate()
	}
}
