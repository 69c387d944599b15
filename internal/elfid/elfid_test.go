package elfid

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// note encodes one ELF note in little-endian order.
func note(name string, typ uint32, desc []byte) []byte {
	var b bytes.Buffer
	n := []byte(name)
	if name != "" {
		n = append(n, 0)
	}
	binary.Write(&b, binary.LittleEndian, [3]uint32{uint32(len(n)), uint32(len(desc)), typ})
	b.Write(n)
	b.Write(make([]byte, align4(uint64(len(n)))-uint64(len(n))))
	b.Write(desc)
	b.Write(make([]byte, align4(uint64(len(desc)))-uint64(len(desc))))
	return b.Bytes()
}

func TestParseNotes(t *testing.T) {
	id := []byte{0xde, 0xad, 0xbe, 0xef, 1}
	abiTag := note("GNU", 1, []byte{0, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0})
	tests := []struct {
		name string
		data []byte
		want []byte
	}{
		{"build ID alone", note("GNU", ntGNUBuildID, id), id},
		{"after the ABI tag", append(abiTag, note("GNU", ntGNUBuildID, id)...), id},
		{"Go's own build ID is not it", note("Go", 4, []byte("abc/def")), nil},
		{"type 3 of another owner", note("XYZ", ntGNUBuildID, id), nil},
		{"empty descriptor", note("GNU", ntGNUBuildID, nil), nil},
		{"truncated descriptor", note("GNU", ntGNUBuildID, id)[:18], nil},
		{"name size beyond the data", []byte{0xff, 0xff, 0xff, 0xff, 4, 0, 0, 0, 3, 0, 0, 0}, nil},
		{"descriptor size overflows", []byte{4, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 3, 0, 0, 0, 'G', 'N', 'U', 0}, nil},
		{"shorter than a header", []byte{4, 0, 0}, nil},
		{"empty", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParseNotes(tt.data, binary.LittleEndian); !bytes.Equal(got, tt.want) {
				t.Errorf("ParseNotes = %x, want %x", got, tt.want)
			}
		})
	}
}

// TestBuildIDOfRealFiles compares BuildID with what readelf and the Go
// toolchain say of programs built here: gcc's note inside a PT_NOTE segment,
// and the Go linker's, which is outside it.
func TestBuildIDOfRealFiles(t *testing.T) {
	dir := t.TempDir()
	type built struct{ name, path string }
	var files []built
	if cc, err := exec.LookPath("gcc"); err == nil {
		src := filepath.Join(dir, "p.c")
		if err := os.WriteFile(src, []byte("int main(void) { return 0; }\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, pie := range []string{"-pie", "-no-pie"} {
			out := filepath.Join(dir, "c"+pie)
			if b, err := exec.Command(cc, pie, "-Wl,--build-id=sha1", "-o", out, src).CombinedOutput(); err != nil {
				t.Fatalf("gcc: %v\n%s", err, b)
			}
			files = append(files, built{"gcc " + pie, out})
		}
	}
	goSrc := filepath.Join(dir, "main.go")
	if err := os.WriteFile(goSrc, []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	goOut := filepath.Join(dir, "goprog")
	cmd := exec.Command("go", "build", "-ldflags=-B 0x0123456789abcdef", "-o", goOut, goSrc)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "GOFLAGS=", "CGO_ENABLED=0", "GO111MODULE=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	files = append(files, built{"go -B", goOut})

	for _, f := range files {
		t.Run(f.name, func(t *testing.T) {
			id, err := ReadBuildID(f.path)
			if err != nil {
				t.Fatal(err)
			}
			if want := readelfBuildID(t, f.path); want != nil && !bytes.Equal(id, want) {
				t.Errorf("build ID %x, readelf says %x", id, want)
			}
			switch {
			case strings.HasPrefix(f.name, "gcc") && len(id) != 20:
				t.Errorf("build ID %x, want the 20 bytes of --build-id=sha1", id)
			case f.name == "go -B" && !bytes.Equal(id, []byte{1, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}):
				t.Errorf("build ID %x, want 0123456789abcdef as given to the linker", id)
			}
		})
	}
}

// readelfBuildID returns what readelf -n prints as the build ID, or nil
// when readelf is not installed.
func readelfBuildID(t *testing.T, path string) []byte {
	t.Helper()
	out, err := exec.Command("readelf", "-n", path).Output()
	if err != nil {
		return nil
	}
	for _, line := range strings.Split(string(out), "\n") {
		if _, v, ok := strings.Cut(line, "Build ID: "); ok {
			id, err := hex.DecodeString(strings.TrimSpace(v))
			if err != nil {
				t.Fatalf("readelf build ID %q: %v", v, err)
			}
			return id
		}
	}
	t.Fatalf("readelf -n %s shows no build ID", path)
	return nil
}

func TestLinkBase(t *testing.T) {
	tests := []struct {
		name  string
		progs []*elf.Prog
		want  uint64
	}{
		{"PIE", []*elf.Prog{load(0, 0), load(0x2000, 0x2000)}, 0},
		{"non-PIE", []*elf.Prog{load(0, 0x400000), load(0x1000, 0x401000)}, 0x400000},
		{"text first, out of order", []*elf.Prog{load(0x3000, 0x404000), load(0x1000, 0x401000)}, 0x400000},
		{"Go on arm64", []*elf.Prog{load(0, 0x10000)}, 0x10000},
		{"not page-aligned", []*elf.Prog{load(0x10, 0x400010)}, 0x400000},
		{"offset beyond the address", []*elf.Prog{load(0x2000, 0x1000)}, 0},
		{"no loadable segment", []*elf.Prog{{ProgHeader: elf.ProgHeader{Type: elf.PT_NOTE}}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LinkBase(&elf.File{Progs: tt.progs}); got != tt.want {
				t.Errorf("LinkBase = %#x, want %#x", got, tt.want)
			}
		})
	}
}

func load(off, vaddr uint64) *elf.Prog {
	return &elf.Prog{ProgHeader: elf.ProgHeader{Type: elf.PT_LOAD, Off: off, Vaddr: vaddr}}
}

// TestLoadBias checks the bias against the kernel's rule for every page
// size: a segment at offset off and address vaddr is mapped from
// pagedown(off) at pagedown(bias+vaddr).
func TestLoadBias(t *testing.T) {
	for _, page := range []uint64{4 << 10, 16 << 10, 64 << 10} {
		for _, seg := range []struct{ off, vaddr uint64 }{{0, 0}, {0, 0x400000}, {0x1000, 0x1000}, {0x10, 0x400010}, {0, 0x10000}} {
			for _, bias := range []uint64{0, 0xaaaad0000000, 0x7f0000000000} {
				start := (bias + seg.vaddr) &^ (page - 1)
				offset := seg.off &^ (page - 1)
				got := LoadBias(start, offset, seg.vaddr-seg.off)
				if got != bias {
					t.Errorf("page %#x, segment %#x at %#x, bias %#x: LoadBias = %#x", page, seg.off, seg.vaddr, bias, got)
				}
			}
		}
	}
}

func TestPageSize(t *testing.T) {
	p := PageSize()
	if p < 4096 || p&(p-1) != 0 {
		t.Errorf("PageSize = %d, want a power of two of 4096 or more", p)
	}
}

// FuzzParseNotes checks that any note area gives no panic and, when a build
// ID is found, one that lies within the input.
func FuzzParseNotes(f *testing.F) {
	f.Add(note("GNU", ntGNUBuildID, []byte{1, 2, 3, 4}))
	f.Add(append(note("GNU", 1, make([]byte, 16)), note("GNU", ntGNUBuildID, make([]byte, 20))...))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 3, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		id := ParseNotes(data, binary.LittleEndian)
		if id != nil && (len(id) == 0 || !bytes.Contains(data, id)) {
			t.Fatalf("build ID %x is not a descriptor of the input", id)
		}
	})
}
