package instr

import "encoding/binary"

// The books kept in the program on arm64 (see book.go): to come; its
// timing keeps the rings.

// BookEntryCode: arm64 keeps no book in the program yet; its timing
// keeps the rings.
func (arm64) BookEntryCode(Book, int) (BookCode, bool) { return BookCode{}, false }

// BookCloserCode: see BookEntryCode.
func (arm64) BookCloserCode(Book) ([]byte, bool) { return nil, false }

// BookExitCode: see BookEntryCode.
func (arm64) BookExitCode(Book, int, int) (BookCode, bool) { return BookCode{}, false }

// nest moves sp down or up 16 bytes.
func (arm64) nest(down bool) []byte {
	if down {
		return binary.LittleEndian.AppendUint32(nil, 0xd10043ff) // sub sp, sp, #16
	}
	return binary.LittleEndian.AppendUint32(nil, 0x910043ff) // add sp, sp, #16
}
