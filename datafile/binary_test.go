package datafile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRoundTrip(t *testing.T) {
	for _, tv := range testValues(t) {
		t.Run(tv.name, func(t *testing.T) {
			b := encode(t, tv.v)
			got, err := Read(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if d := cmp.Diff(tv.v, got); d != "" {
				t.Errorf("read(write(v)) differs (-want +got):\n%s", d)
			}
			if again := encode(t, got); !bytes.Equal(again, b) {
				t.Errorf("writing the value read gives other bytes")
			}
			golden(t, tv.name+".golden", b)
		})
	}
}

func TestTypedReaders(t *testing.T) {
	plan, counts, merged := testPlan(FuncCounting), testCounts(FuncCounting, false), testMerged(t, FuncCounting)
	var b bytes.Buffer
	for _, err := range []error{WritePlan(&b, plan), WriteCounts(&b, counts), WriteMerged(&b, merged)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	// The readers read exactly one file each: three files in a row read
	// one after the other.
	r := bytes.NewReader(b.Bytes())
	p, err := ReadPlan(r)
	if err != nil {
		t.Fatalf("read plan: %v", err)
	}
	c, err := ReadCounts(r)
	if err != nil {
		t.Fatalf("read counts: %v", err)
	}
	m, err := ReadMerged(r)
	if err != nil {
		t.Fatalf("read merged: %v", err)
	}
	if r.Len() != 0 {
		t.Errorf("%d bytes left unread", r.Len())
	}
	for _, d := range []string{cmp.Diff(plan, p), cmp.Diff(counts, c), cmp.Diff(merged, m)} {
		if d != "" {
			t.Errorf("round trip differs (-want +got):\n%s", d)
		}
	}
}

func TestWriteRefusesInvalid(t *testing.T) {
	p := testPlan(FuncCounting)
	p.Funcs[1].Module = 7
	var b bytes.Buffer
	err := WritePlan(&b, p)
	if err == nil || !strings.Contains(err.Error(), "func 1: module 7 out of range") {
		t.Errorf("write of an invalid plan: error %v", err)
	}
	if b.Len() != 0 {
		t.Errorf("%d bytes written for an invalid plan", b.Len())
	}
	if err := Write(&b, "a string"); err == nil {
		t.Error("write of a string: no error")
	}
}

func TestWriteError(t *testing.T) {
	errDisk := errors.New("disk full")
	err := WriteCounts(failWriter{errDisk}, testCounts(FuncCounting, false))
	if !errors.Is(err, errDisk) {
		t.Errorf("error %v does not wrap the writer's", err)
	}
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

// TestTruncated cuts files at every offset: every prefix is truncated.
func TestTruncated(t *testing.T) {
	for _, tv := range testValues(t) {
		t.Run(tv.name, func(t *testing.T) {
			b := encode(t, tv.v)
			for n := range len(b) {
				_, err := Read(bytes.NewReader(b[:n]))
				if !errors.Is(err, ErrTruncated) {
					t.Fatalf("first %d of %d bytes: error %v, want ErrTruncated", n, len(b), err)
				}
			}
		})
	}
}

// TestFlipped changes every byte of a file in turn and checks which check
// catches it (doc.go gives their order).
func TestFlipped(t *testing.T) {
	b := encode(t, testCounts(FuncTiming, true))
	for off := range len(b) {
		bad := bytes.Clone(b)
		bad[off] ^= 0x01
		_, err := ReadCounts(bytes.NewReader(bad))
		var fe *FormatError
		var ok bool
		switch {
		case off < 10:
			ok = errors.Is(err, ErrSignature)
		case off < 12: // another version, or one read too (5 becomes 4)
			ok = errors.Is(err, ErrVersion) || errors.Is(err, ErrChecksum)
		case off == 12: // kind 2 becomes 3
			ok = errors.Is(err, ErrKind)
		case off == 13:
			ok = errors.As(err, &fe) && fe.Off == 13
		case off == 14: // the body length is one less or one more
			ok = errors.Is(err, ErrChecksum) || errors.Is(err, ErrTruncated)
		case off < headerSize: // 256 or more bytes more, or above the limit
			ok = errors.Is(err, ErrTruncated) || errors.As(err, &fe) && fe.Off == 14
		default:
			ok = errors.Is(err, ErrChecksum)
		}
		if !ok {
			t.Errorf("byte %d flipped: error %v", off, err)
		}
	}
}

// frameFile returns a file of Kind k whose body is the concatenation of
// parts, with a correct length and checksum.
func frameFile(k Kind, parts ...[]byte) []byte {
	return frame(k, bytes.Join(parts, nil))
}

// frame returns a file of Kind k with the given body.
func frame(k Kind, body []byte) []byte {
	var b bytes.Buffer
	if err := writeFrame(&b, k, body); err != nil {
		panic(err) // a bytes.Buffer does not fail
	}
	return b.Bytes()
}

func uv(v uint64) []byte { return binary.AppendUvarint(nil, v) }
func sv(v int64) []byte  { return binary.AppendVarint(nil, v) }

// sec returns a section.
func sec(id byte, parts ...[]byte) []byte {
	p := bytes.Join(parts, nil)
	return append(append([]byte{id}, uv(uint64(len(p)))...), p...)
}

// Sections of a small valid .pbo: one function counted 5 times.
var (
	noSampling = bytes.Join([][]byte{sv(0), uv(0), uv(0), uv(0), sv(0), uv(0), uv(0)}, nil)
	oneString  = sec(secStrings, uv(1), uv(3), []byte("cmd"))
	countsHead = sec(secCounts, make([]byte, 16), uv(uint64(FuncCounting)))
	oneRun     = sec(secRuns, uv(1), sv(1700000000), uv(0), []byte{0}, uv(0), uv(0), sv(0))
	oneHit     = sec(secStats, uv(0), sv(0), sv(0), uv(1), uv(5), uv(0), uv(0), uv(0), noSampling, sv(0), sv(0), []byte{0}, uv(0), uv(0), uv(0), uv(0), uv(0), uv(0), uv(0), uv(0))
)

func TestReadErrors(t *testing.T) {
	valid := frameFile(KindCounts, oneString, countsHead, oneRun, oneHit)
	withHeader := func(off int, v ...byte) []byte {
		b := bytes.Clone(valid)
		copy(b[off:], v)
		return b
	}
	tests := []struct {
		name string
		in   []byte
		want error // nil: a *FormatError
		off  int64 // its offset
	}{
		{"empty", nil, ErrTruncated, 0},
		{"signature prefix", []byte("MS-PROF"), ErrTruncated, 0},
		{"c source", []byte("#include <stdio.h>\nint main(void) { return 0; }\n"), ErrSignature, 0},
		{"elf", []byte("\x7fELF\x02\x01\x01\x00"), ErrSignature, 0},
		{"short foreign", []byte("MZ"), ErrSignature, 0},
		{"future version", withHeader(10, Version+1, 0), ErrVersion, 0},
		{"version 1, before run IDs", withHeader(10, 1, 0), ErrVersion, 0},
		{"version 2", withHeader(10, 2, 0), ErrVersion, 0},
		{"version zero", withHeader(10, 0, 0), ErrVersion, 0},
		{"plan Kind", withHeader(12, byte(KindPlan)), ErrKind, 0},
		{"merged Kind", withHeader(12, byte(KindMerged)), ErrKind, 0},
		{"unknown Kind", withHeader(12, 9), nil, 12},
		{"flags", withHeader(13, 0x80), nil, 13},
		{"huge body", withHeader(14, 1, 0, 0, 0x40, 0, 0, 0, 0), nil, 14},
		{"bad checksum", withHeader(len(valid)-1, valid[len(valid)-1]+1), ErrChecksum, 0},
		{"no sections", frameFile(KindCounts), nil, 22},
		{"missing stats", frameFile(KindCounts, oneString, countsHead, oneRun), nil, int64(22 + len(oneString) + len(countsHead) + len(oneRun))},
		{"sections swapped", frameFile(KindCounts, oneString, oneRun, countsHead, oneHit), nil, int64(22 + len(oneString))},
		{"section too long", frameFile(KindCounts, []byte{secStrings}, uv(100), uv(0)), nil, 23},
		{"string count too large", frameFile(KindCounts, sec(secStrings, uv(1<<40))), nil, 24},
		{"string too long", frameFile(KindCounts, sec(secStrings, uv(1), uv(9), []byte("ab"))), nil, 25},
		{"string index out of range", frameFile(KindCounts, oneString, countsHead,
			sec(secRuns, uv(1), sv(0), uv(1), []byte{0}, uv(0), uv(0), sv(0)), oneHit), nil, int64(22 + len(oneString) + len(countsHead) + 4)},
		{"bad bool", frameFile(KindCounts, oneString, countsHead,
			sec(secRuns, uv(1), sv(0), uv(0), []byte{2}, uv(0), uv(0), sv(0)), oneHit), nil, int64(22 + len(oneString) + len(countsHead) + 5)},
		{"two runs", frameFile(KindCounts, oneString, countsHead,
			sec(secRuns, uv(2), sv(0), uv(0), []byte{0}, uv(0), uv(0), sv(0), sv(0), uv(0), []byte{0}, uv(0), uv(0), sv(0)), oneHit), nil, int64(22 + len(oneString) + len(countsHead))},
		{"uvarint overflow", frameFile(KindCounts, oneString, countsHead, oneRun,
			sec(secStats, bytes.Repeat([]byte{0xff}, 11))), nil, int64(22 + len(oneString) + len(countsHead) + len(oneRun) + 2)},
		{"depth out of range", frameFile(KindCounts, oneString, countsHead, oneRun,
			sec(secStats, uv(1<<63), sv(0), sv(0), uv(0), uv(0), uv(0), uv(0))), nil, int64(22 + len(oneString) + len(countsHead) + len(oneRun) + 2)},
		{"varint overflow", frameFile(KindCounts, oneString, countsHead, oneRun,
			sec(secStats, uv(0), bytes.Repeat([]byte{0xff}, 11))), nil, int64(22 + len(oneString) + len(countsHead) + len(oneRun) + 3)},
		{"section ends early", frameFile(KindCounts, oneString, sec(secCounts, make([]byte, 16)), oneRun, oneHit), nil, int64(22 + len(oneString) + 2 + 16)},
		{"id cut short", frameFile(KindCounts, oneString, sec(secCounts, make([]byte, 9)), oneRun, oneHit), nil, int64(22 + len(oneString) + 2)},
		{"unread bytes in section", frameFile(KindCounts, oneString, sec(secCounts, make([]byte, 16), uv(521), []byte{0}), oneRun, oneHit), nil, int64(22 + len(oneString) + 2 + 18)},
		{"bytes after the sections", frameFile(KindCounts, oneString, countsHead, oneRun, oneHit, []byte{0}), nil, int64(len(valid) - 4)},
		{"method out of range", frameFile(KindCounts, oneString, sec(secCounts, make([]byte, 16), uv(1<<16)), oneRun, oneHit), nil, int64(22 + len(oneString) + 2 + 16)},
	}
	if _, err := ReadCounts(bytes.NewReader(valid)); err != nil {
		t.Fatalf("the valid base file: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := ReadCounts(bytes.NewReader(tt.in))
			if v != nil {
				t.Errorf("got a value with error %v", err)
			}
			if tt.want != nil {
				if !errors.Is(err, tt.want) {
					t.Errorf("error %v, want %v", err, tt.want)
				}
				return
			}
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v, want a *FormatError", err)
			}
			if fe.Off != tt.off {
				t.Errorf("error %v at offset %d, want %d", err, fe.Off, tt.off)
			}
		})
	}
}

// TestReadValidates checks that a well-formed file with inconsistent
// content is refused by Validate.
func TestReadValidates(t *testing.T) {
	p := testPlan(FuncCounting)
	p.Funcs[2].Module = 5
	strs, rest := encodePlan(p).parts()
	b := frameFile(KindPlan, strs, rest)
	_, err := ReadPlan(bytes.NewReader(b))
	if err == nil || !strings.Contains(err.Error(), "func 2: module 5 out of range (2 modules)") {
		t.Errorf("error %v, want the validation error", err)
	}
	// An inlined call inside a call that comes after it.
	p = uncountedPlan()
	p.Inlined[0].Parent = 2
	strs, rest = encodePlan(p).parts()
	if _, err := ReadPlan(bytes.NewReader(frameFile(KindPlan, strs, rest))); err == nil || !strings.Contains(err.Error(), "inlined call 0: parent 2 is not a call before it") {
		t.Errorf("error %v, want the inlined call's validation error", err)
	}
}

// TestDecodeInlined reads malformed lists of inlined calls: a count no
// bytes could hold, a parent past 64 bits, and a list cut short are
// format errors at their offset, with nothing allocated for what is not
// there (a parent out of the list's range is Validate's: TestReadValidates).
func TestDecodeInlined(t *testing.T) {
	for _, c := range []struct {
		name string
		in   []byte
		off  int64
	}{
		{"too many calls", uv(1 << 40), 0},
		{"too many ranges", bytes.Join([][]byte{uv(1), uv(0), sv(-1), uv(1 << 40)}, nil), 3},
		{"parent overflows 64 bits", bytes.Join([][]byte{uv(1), uv(0), bytes.Repeat([]byte{0xff}, 10), []byte{0x01}, uv(0)}, nil), 2},
		{"range cut short", bytes.Join([][]byte{uv(1), uv(0), sv(-1), uv(1), uv(0x1000)}, nil), 6},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := &decoder{buf: c.in}
			got := d.inlined()
			var fe *FormatError
			if !errors.As(d.err, &fe) || fe.Off != c.off {
				t.Errorf("inlined calls %+v, error %v; want a format error at offset %d", got, d.err, c.off)
			}
		})
	}
	d := &decoder{buf: bytes.Join([][]byte{uv(1), uv(3), sv(-1), uv(1), uv(0x1000), uv(0x1010)}, nil)}
	if got, want := d.inlined(), []Inlined{{Func: 3, Parent: -1, Ranges: []Range{{0x1000, 0x1010}}}}; d.err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("inlined calls %+v (%v), want %+v", got, d.err, want)
	}
}

// TestReadIOError checks that a failing reader's error comes through.
func TestReadIOError(t *testing.T) {
	errIO := errors.New("input/output error")
	b := encode(t, testPlan(FuncCounting))
	for _, n := range []int{5, headerSize, len(b) - 2} {
		r := io.MultiReader(bytes.NewReader(b[:n]), iotestErr{errIO})
		if _, err := ReadPlan(r); !errors.Is(err, errIO) {
			t.Errorf("failure after %d bytes: error %v", n, err)
		}
	}
}

type iotestErr struct{ err error }

func (r iotestErr) Read([]byte) (int, error) { return 0, r.err }

// TestReadOlderVersions reads the files of format versions 3 to 14
// (testdata/v3 to v14, the goldens written before versions 4 to 15): each
// holds the value of its name (a .pbt of version 3 has no discarded runs,
// no file before version 5 has sampling figures, none before version 6
// the keys of its stacks' caller stacks, no plan before version 7 what
// the default selection left out, no run before version 8 its cost
// uncertainty, none before version 9 its threads' time on a CPU, and
// none before version 10 its calls' waits: Waits nil, none before
// version 11 its samples in PROFILE's code or an uncounted plan, and
// none before version 12 its sampled stacks' numbers, none before
// version 13 its samples in the kernel, no plan before version 14 its
// inlined calls, none before version 15 its branches), and is written
// again in this version.
func TestReadOlderVersions(t *testing.T) {
	// values are the test values as a file of version v holds them.
	values := func(version uint16) map[string]any {
		out := map[string]any{}
		for _, tv := range testValues(t) {
			v := version
			var st *Stats
			var p *Plan
			switch tv := tv.v.(type) {
			case *Plan:
				p = tv
			case *Counts:
				st = &tv.Stats
				if tv.Method == LineCoverage && v < 15 {
					// (Its plan had no branches.)
					p := testPlan(LineCoverage)
					p.Branches = nil
					tv.PlanID = PlanID(p)
				}
			case *Merged:
				st, p = &tv.Stats, &tv.Plan
			}
			if st != nil && v < 6 {
				for i := range st.Stacks {
					st.Stacks[i].CallerKey = 0
				}
			}
			if p != nil && v < 7 {
				p.LeftOut = nil
			}
			if st != nil && v < 8 {
				st.CostUncertainty = 0
			}
			if st != nil && v < 9 {
				st.CPUTime = 0
			}
			if st != nil && v < 12 {
				st.Sampling.Stacks, st.Sampling.StacksCut = 0, 0
			}
			if p != nil && v < 14 {
				p.Inlined = nil
			}
			if v < 15 {
				if p != nil {
					p.Branches = nil
				}
				if st != nil {
					st.Branches, st.Unprobed = nil, nil
				}
			}
			if st != nil && v < 13 {
				st.Sampling.Kernel, st.Sampling.KernelSamples, st.Sampling.KernelChildSamples = 0, nil, nil
			}
			if v < 11 {
				// (The test values' own: set for version 11.)
				if st != nil {
					st.Sampling.Overhead = 0
				}
				if p != nil {
					p.Uncounted = false
				}
			}
			if st != nil && v < 10 {
				st.Waits = nil
				for i := range st.Stacks {
					st.Stacks[i].Wait, st.Stacks[i].ChildWait = 0, 0
				}
			}
			out[tv.name] = tv.v
		}
		return out
	}
	for version, files := range map[uint16]int{3: 9, 4: 10, 5: 13, 6: 13, 7: 13, 8: 13, 9: 13, 10: 13, 11: 14, 12: 14, 13: 14, 14: 14} {
		values := values(version)
		dir := fmt.Sprintf("v%d", version)
		names, err := filepath.Glob(filepath.Join("testdata", dir, "*.golden"))
		if err != nil || len(names) != files {
			t.Fatalf("%d files of version %d, want %d: %v", len(names), version, files, err)
		}
		for _, name := range names {
			t.Run(dir+"/"+filepath.Base(name), func(t *testing.T) {
				b, err := os.ReadFile(name)
				if err != nil {
					t.Fatal(err)
				}
				if v := binary.LittleEndian.Uint16(b[10:]); v != version {
					t.Fatalf("format version %d, want %d", v, version)
				}
				got, err := Read(bytes.NewReader(b))
				if err != nil {
					t.Fatalf("read: %v", err)
				}
				if d := cmp.Diff(values[strings.TrimSuffix(filepath.Base(name), ".golden")], got); d != "" {
					t.Errorf("value read differs (-want +got):\n%s", d)
				}
				// Written again, it is a file of this version.
				if v := binary.LittleEndian.Uint16(encode(t, got)[10:]); v != Version {
					t.Errorf("written as version %d, want %d", v, Version)
				}
			})
		}
	}
}

// TestDiscardedSection checks the section of discarded runs: a .pbt of
// version 4 or later must have it, one of version 3 must not, and none is
// empty. (The files of version 3 are those of version 4 without it.)
func TestDiscardedSection(t *testing.T) {
	v4, err := os.ReadFile(filepath.Join("testdata", "v4", "merged-fc-rerun.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadMerged(bytes.NewReader(v4)); err != nil {
		t.Fatalf("the valid file: %v", err)
	}
	// The last section is the discarded runs': two IDs of 3 bytes.
	last := sec(secDiscarded, uv(2), uv(3), []byte{0x5e, 0xed, 1}, uv(3), []byte{0x5e, 0xed, 2})
	body := v4[headerSize : len(v4)-4]
	if !bytes.HasSuffix(body, last) {
		t.Fatalf("the body does not end with the discarded runs")
	}
	without := body[:len(body)-len(last)]
	asVersion := func(b []byte, v uint16) []byte {
		b = bytes.Clone(b)
		binary.LittleEndian.PutUint16(b[10:], v)
		return reframe(b[:len(b)-4])
	}
	var fe *FormatError
	if _, err := ReadMerged(bytes.NewReader(asVersion(frameFile(KindMerged, without), 4))); !errors.As(err, &fe) || !strings.Contains(err.Error(), "unexpected end of section") {
		t.Errorf("version 4 without the section: %v", err)
	}
	v3, err := ReadMerged(bytes.NewReader(asVersion(frameFile(KindMerged, without), 3)))
	if err != nil || v3.Discarded != nil {
		t.Errorf("version 3: %v, discarded %v", err, v3)
	}
	if _, err := ReadMerged(bytes.NewReader(asVersion(v4, 3))); !errors.As(err, &fe) || !strings.Contains(err.Error(), "after the last section") {
		t.Errorf("version 3 with the section: %v", err)
	}
	strs, rest := encodeMerged(testRerun(t)).parts()
	if !bytes.HasSuffix(rest, last) {
		t.Fatalf("the body of this version does not end with the discarded runs")
	}
	empty := sec(secDiscarded, uv(1), uv(0))
	_, err = ReadMerged(bytes.NewReader(frameFile(KindMerged, strs, rest[:len(rest)-len(last)], empty)))
	if err == nil || !strings.Contains(err.Error(), "discarded run 0 has no id") {
		t.Errorf("an empty discarded id: %v", err)
	}
}

// TestEncoderSections: a section's content is written in the body where
// it ends, its length before it moved up in place where the length takes
// more than a byte: sections of 0, 127, 128, 16,383, 16,384 and 2^21
// bytes, one after the other, read back whole by the decoder.
func TestEncoderSections(t *testing.T) {
	sizes := []int{0, 127, 128, 16383, 16384, 1 << 21}
	e := newEncoder(0)
	for i, n := range sizes {
		e.section(byte(i+1), func(w *payload) {
			for k := range n {
				w.b = append(w.b, byte(k*7+i))
			}
		})
	}
	d := &decoder{buf: e.body}
	for i, n := range sizes {
		s := d.section(byte(i + 1))
		if s.remaining() != n {
			t.Fatalf("section %d: %d bytes, want %d", i+1, s.remaining(), n)
		}
		for k := range n {
			if b := s.buf[s.off+k]; b != byte(k*7+i) {
				t.Fatalf("section %d: byte %d is %d, want %d", i+1, k, b, byte(k*7+i))
			}
		}
		s.off += n
		d.end(s)
	}
	if d.err != nil || d.remaining() != 0 {
		t.Errorf("the body: %v, %d bytes left", d.err, d.remaining())
	}
}
