package dwarf

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// TestSegmentChunks: a segment's bytes read in chunks, once each, from a
// file shorter than the header says (a file cut short, or hostile): the
// bytes it has come back, across a chunk's end too; past them a read
// fails, and no chunk is larger than codeChunk.
func TestSegmentChunks(t *testing.T) {
	file := make([]byte, codeChunk+1000)
	for i := range file {
		file[i] = byte(i * 7)
	}
	s := &segment{filesz: 4 * codeChunk, r: bytes.NewReader(file)}
	for _, c := range []struct {
		off uint64
		n   int
	}{{0, 16}, {codeChunk - 8, 16}, {codeChunk + 1000 - 16, 16}} {
		got := make([]byte, c.n)
		if err := s.read(got, c.off); err != nil || !bytes.Equal(got, file[c.off:c.off+uint64(c.n)]) {
			t.Errorf("at %d: % x, %v; want the file's bytes", c.off, got, err)
		}
	}
	if err := s.read(make([]byte, 16), codeChunk+1000-8); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("across the file's end: %v, want io.ErrUnexpectedEOF", err)
	}
	if err := s.read(make([]byte, 16), 3*codeChunk); err == nil {
		t.Error("a chunk past the file's end read")
	}
	for k, c := range s.chunks {
		if len(c) > codeChunk {
			t.Errorf("chunk %d of %d bytes", k, len(c))
		}
	}
	if len(s.chunks) != 2 {
		t.Errorf("%d chunks kept, want the 2 the file has", len(s.chunks))
	}
}
