package datafile

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// addSeeds adds the testdata files matching pattern to the corpus, each
// also transformed by each of more.
func addSeeds(f *testing.F, pattern string, more ...func([]byte) []byte) {
	names, err := filepath.Glob(filepath.Join("testdata", pattern))
	if err != nil || len(names) == 0 {
		f.Fatalf("no seeds %s: %v", pattern, err)
	}
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		for _, m := range more {
			f.Add(m(b))
		}
	}
}

// FuzzRead checks that Read never panics and that whatever it accepts
// round-trips: Read(Write(v)) equals v, and Write is canonical. Each input
// is read as is and, so that the fuzzer gets past the checksum, as a
// header and a body given a correct length and checksum.
func FuzzRead(f *testing.F) {
	for _, dir := range []string{"", "v3/", "v4/", "v5/", "v6/", "v7/", "v8/", "v9/", "v10/", "v11/", "v12/", "v13/"} {
		addSeeds(f, dir+"*.golden", func(b []byte) []byte { return b[:len(b)-4] })
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkRoundTrip(t, data)
		if len(data) >= headerSize {
			checkRoundTrip(t, reframe(data))
		}
	})
}

// reframe returns data's header and body with the body length and the
// checksum made right.
func reframe(data []byte) []byte {
	b := bytes.Clone(data)
	binary.LittleEndian.PutUint64(b[14:], uint64(len(b)-headerSize))
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func checkRoundTrip(t *testing.T, data []byte) {
	v, err := Read(bytes.NewReader(data))
	if err != nil {
		if v != nil {
			t.Fatalf("value %T with error %v", v, err)
		}
		return
	}
	var b bytes.Buffer
	if err := Write(&b, v); err != nil {
		t.Fatalf("write of a value read: %v", err)
	}
	enc := bytes.Clone(b.Bytes())
	v2, err := Read(&b)
	if err != nil {
		t.Fatalf("read of a value written: %v", err)
	}
	if d := cmp.Diff(v, v2); d != "" {
		t.Fatalf("read(write(v)) differs (-v +read):\n%s", d)
	}
	b.Reset()
	if err := Write(&b, v2); err != nil || !bytes.Equal(b.Bytes(), enc) {
		t.Fatalf("writing equal values gives other bytes (%v)", err)
	}
}

// FuzzReadText checks that ReadText never panics and that whatever it
// accepts round-trips through the text and the binary forms.
func FuzzReadText(f *testing.F) {
	addSeeds(f, "*.txt")
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := ReadText(bytes.NewReader(data))
		if err != nil {
			return
		}
		var text bytes.Buffer
		if err := WriteText(&text, v); err != nil {
			t.Fatalf("write text of a value read: %v", err)
		}
		v2, err := ReadText(&text)
		if err != nil {
			t.Fatalf("read text of a value written: %v", err)
		}
		if d := cmp.Diff(v, v2); d != "" {
			t.Fatalf("text round trip differs (-v +read):\n%s", d)
		}
		var bin bytes.Buffer
		if err := Write(&bin, v); err != nil {
			t.Fatalf("write of a value read from text: %v", err)
		}
		v3, err := Read(&bin)
		if err != nil {
			t.Fatalf("read of a value written: %v", err)
		}
		if d := cmp.Diff(v, v3, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("binary round trip differs (-v +read):\n%s", d)
		}
	})
}
