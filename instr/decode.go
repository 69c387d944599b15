package instr

import (
	"errors"
	"fmt"
	"slices"
)

// Errors of Decode, wrapped in a [*DecodeError].
var (
	// ErrTruncated means the code ends inside the instruction.
	ErrTruncated = errors.New("truncated instruction")
	// ErrUnrecognized means the bytes are not an instruction the decoder
	// knows.
	ErrUnrecognized = errors.New("unrecognized instruction")
)

// DecodeError is the error of [Decoder.Decode] and [Boundaries]: the
// instruction at Addr, starting with Bytes, could not be decoded.
type DecodeError struct {
	Arch  string // GOARCH spelling
	Addr  uint64
	Bytes []byte // at most MaxInstLen bytes from Addr
	Err   error  // ErrTruncated or ErrUnrecognized
}

// Error says where decoding failed and on which bytes.
func (e *DecodeError) Error() string {
	return fmt.Sprintf("decode %s instruction at %#x (% x): %v", e.Arch, e.Addr, e.Bytes, e.Err)
}

// Unwrap returns ErrTruncated or ErrUnrecognized.
func (e *DecodeError) Unwrap() error { return e.Err }

// decodeError builds a DecodeError, keeping a copy of the first bytes of
// code so the error does not pin the caller's buffer.
func decodeError(a Decoder, code []byte, pc uint64, err error) *DecodeError {
	n := min(len(code), a.MaxInstLen())
	return &DecodeError{Arch: a.Name(), Addr: pc, Bytes: slices.Clone(code[:n]), Err: err}
}

// Boundaries decodes the code of one function linearly from its first
// instruction, located at start, and returns the address of every
// instruction in order. Decoding stops at the end of code; an instruction
// that cannot be decoded, or that runs past the end, is a [*DecodeError]
// naming its address.
func Boundaries(a Decoder, code []byte, start uint64) ([]uint64, error) {
	var addrs []uint64
	decode := a.bareDecoder()
	for off := 0; off < len(code); {
		pc := start + uint64(off)
		in, err := decode(code[off:], pc)
		if err != nil {
			// (The error as Decode words it.)
			if in, err = a.Decode(code[off:], pc); err != nil {
				return addrs, err
			}
		}
		if in.Len <= 0 || in.Len > len(code)-off {
			// Decode never does this; guard so a bug cannot loop forever.
			return addrs, decodeError(a, code[off:], pc, ErrTruncated)
		}
		addrs = append(addrs, pc)
		off += in.Len
	}
	return addrs, nil
}

// OnBoundary reports whether addr is one of bounds, a sorted result of
// [Boundaries]: only there may a breakpoint be planted.
func OnBoundary(bounds []uint64, addr uint64) bool {
	_, found := slices.BinarySearch(bounds, addr)
	return found
}
