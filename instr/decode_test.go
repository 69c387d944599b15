package instr

import (
	"bufio"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// decodeCase is one line of testdata/ARCH.txt.
type decodeCase struct {
	line     int
	code     []byte // instruction then trailing bytes
	len      int    // bytes before |
	kind     string // Kind's String or "error"
	target   string // hex address, "-", or the error for kind "error"
	text     string
	trailing []byte
}

// readDecodeCases parses a decoder data file in x/arch's style.
func readDecodeCases(t testing.TB, name string) []decodeCase {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []decodeCase
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, "\t")
		if len(fields) != 4 {
			t.Fatalf("%s:%d: want 4 tab-separated fields, have %d", name, n, len(fields))
		}
		insn, trailing, ok := strings.Cut(fields[0], "|")
		if !ok {
			t.Fatalf("%s:%d: no | in %q", name, n, fields[0])
		}
		ib, err1 := hex.DecodeString(insn)
		tb, err2 := hex.DecodeString(trailing)
		if err := errors.Join(err1, err2); err != nil {
			t.Fatalf("%s:%d: %v", name, n, err)
		}
		cases = append(cases, decodeCase{
			line: n, code: append(ib, tb...), len: len(ib), trailing: tb,
			kind: fields[1], target: fields[2], text: fields[3],
		})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

// testDecodeFile checks every line of a data file at pc 0x1000.
func testDecodeFile(t *testing.T, a Arch, name string) {
	const pc = 0x1000
	for _, c := range readDecodeCases(t, name) {
		t.Run(strconv.Itoa(c.line), func(t *testing.T) {
			in, err := a.Decode(c.code, pc)
			if c.kind == "error" {
				want := map[string]error{"truncated": ErrTruncated, "unrecognized": ErrUnrecognized}[c.target]
				var de *DecodeError
				if !errors.Is(err, want) || !errors.As(err, &de) || de.Addr != pc {
					t.Fatalf("% x: got %+v, %v; want a DecodeError at %#x wrapping %v", c.code, in, err, pc, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("% x: %v", c.code, err)
			}
			target := "-"
			if in.PCRel {
				target = "0x" + strconv.FormatUint(in.Target, 16)
			} else if in.Target != 0 {
				t.Errorf("% x: Target %#x without PCRel", c.code, in.Target)
			}
			got := []string{strconv.Itoa(in.Len), in.Kind.String(), target, in.Text}
			want := []string{strconv.Itoa(c.len), c.kind, c.target, c.text}
			for i, field := range []string{"len", "kind", "target", "text"} {
				if got[i] != want[i] {
					t.Errorf("% x: %s = %q, want %q", c.code, field, got[i], want[i])
				}
			}
		})
	}
}

func TestDecodeAMD64(t *testing.T) { testDecodeFile(t, AMD64, "amd64.txt") }
func TestDecodeARM64(t *testing.T) { testDecodeFile(t, ARM64, "arm64.txt") }
