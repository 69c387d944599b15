package procmaps

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sourceprofiler/sprof/internal/elfid"
)

func TestParseMapsLine(t *testing.T) {
	tests := []struct {
		name string
		line string
		want Mapping
	}{
		{
			name: "program",
			line: "55d0c7a00000-55d0c7a02000 r--p 00000000 08:01 1234                       /usr/bin/prog",
			want: Mapping{Start: 0x55d0c7a00000, End: 0x55d0c7a02000, Perms: "r--p", Dev: "08:01", Inode: 1234, Path: "/usr/bin/prog"},
		},
		{
			name: "offset and hexadecimal device",
			line: "7f2a1c228000-7f2a1c3bd000 r-xp 00028000 fd:0a 4064378  /usr/lib/x86_64-linux-gnu/libc.so.6",
			want: Mapping{Start: 0x7f2a1c228000, End: 0x7f2a1c3bd000, Perms: "r-xp", Offset: 0x28000, Dev: "fd:0a", Inode: 4064378,
				Path: "/usr/lib/x86_64-linux-gnu/libc.so.6"},
		},
		{
			name: "path with spaces",
			line: "00400000-00401000 r-xp 00000000 08:01 42         /home/u/my  prog v2",
			want: Mapping{Start: 0x400000, End: 0x401000, Perms: "r-xp", Dev: "08:01", Inode: 42, Path: "/home/u/my  prog v2"},
		},
		{
			// The path must not be found by searching for its text, which
			// may occur earlier in the line.
			name: "path equal to an earlier field",
			line: "00400000-00401000 r-xp 00000000 08:01 42 p",
			want: Mapping{Start: 0x400000, End: 0x401000, Perms: "r-xp", Dev: "08:01", Inode: 42, Path: "p"},
		},
		{
			name: "anonymous",
			line: "7ffd2b1e0000-7ffd2b1e2000 rw-p 00000000 00:00 0",
			want: Mapping{Start: 0x7ffd2b1e0000, End: 0x7ffd2b1e2000, Perms: "rw-p", Dev: "00:00"},
		},
		{
			name: "anonymous with trailing space",
			line: "7ffd2b1e0000-7ffd2b1e2000 rw-p 00000000 00:00 0 ",
			want: Mapping{Start: 0x7ffd2b1e0000, End: 0x7ffd2b1e2000, Perms: "rw-p", Dev: "00:00"},
		},
		{
			name: "vdso",
			line: "7ffd2b1f0000-7ffd2b1f2000 r-xp 00000000 00:00 0                          [vdso]",
			want: Mapping{Start: 0x7ffd2b1f0000, End: 0x7ffd2b1f2000, Perms: "r-xp", Dev: "00:00", Path: "[vdso]"},
		},
		{
			name: "deleted",
			line: "5600a0000000-5600a0001000 r--p 00000000 08:01 99 /tmp/prog (deleted)",
			want: Mapping{Start: 0x5600a0000000, End: 0x5600a0001000, Perms: "r--p", Dev: "08:01", Inode: 99, Path: "/tmp/prog (deleted)"},
		},
		{
			name: "largest addresses",
			line: "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]",
			want: Mapping{Start: 0xffffffffff600000, End: 0xffffffffff601000, Perms: "--xp", Dev: "00:00", Path: "[vsyscall]"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseLine(tt.line)
			if err != nil {
				t.Fatalf("parseMapsLine: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseLine(%q) (-want +got):\n%s", tt.line, diff)
			}
		})
	}
}

func TestParseMapsLineErrors(t *testing.T) {
	tests := []struct {
		name, line, want string // want is in the error, after the quoted line
	}{
		{"empty", " ", "too few fields"},
		{"four fields", "00400000-00401000 r-xp 00000000 08:01", "too few fields"},
		{"no dash", "00400000 r-xp 00000000 08:01 42 /p", "bad address range"},
		{"bad start", "0040000g-00401000 r-xp 00000000 08:01 42 /p", "invalid syntax"},
		{"bad end", "00400000- r-xp 00000000 08:01 42 /p", "invalid syntax"},
		{"start too large", "10000000000000000-0 r-xp 00000000 08:01 42 /p", "value out of range"},
		{"bad offset", "00400000-00401000 r-xp 0000x000 08:01 42 /p", "invalid syntax"},
		{"hexadecimal inode", "00400000-00401000 r-xp 00000000 08:01 4a /p", "invalid syntax"},
		{"negative inode", "00400000-00401000 r-xp 00000000 08:01 -1 /p", "invalid syntax"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseLine(tt.line)
			if err == nil {
				t.Fatalf("ParseLine(%q) succeeded", tt.line)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, `"`+tt.line+`": `) || !strings.Contains(msg, tt.want) {
				t.Errorf("ParseLine(%q) = %q; want the quoted line and %q", tt.line, msg, tt.want)
			}
		})
	}
}

// procMaps is a maps file of a PIE program started from a path with a space,
// as the kernel prints it.
const procMaps = `5581a9e00000-5581a9e01000 r--p 00000000 08:01 3141     /home/u/my prog
5581a9e01000-5581a9e02000 r-xp 00001000 08:01 3141     /home/u/my prog
5581a9e02000-5581a9e03000 r--p 00002000 08:01 3141     /home/u/my prog
5581aa7c0000-5581aa7e1000 rw-p 00000000 00:00 0        [heap]
7f2a1c200000-7f2a1c228000 r--p 00000000 08:01 2718     /usr/lib/x86_64-linux-gnu/libc.so.6
7f2a1c228000-7f2a1c3bd000 r-xp 00028000 08:01 2718     /usr/lib/x86_64-linux-gnu/libc.so.6
7f2a1c400000-7f2a1c402000 rw-p 00000000 00:00 0 
7ffd2b1f0000-7ffd2b1f2000 r-xp 00000000 00:00 0        [vdso]
`

func TestParseMaps(t *testing.T) {
	maps, err := Parse([]byte(procMaps))
	if err != nil {
		t.Fatalf("parseMaps: %v", err)
	}
	var paths []string
	for _, m := range maps {
		paths = append(paths, m.Path)
	}
	want := []string{"/home/u/my prog", "/home/u/my prog", "/home/u/my prog", "[heap]",
		"/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6", "", "[vdso]"}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
	if maps[1].Start != 0x5581a9e01000 || maps[1].Offset != 0x1000 || maps[1].Inode != 3141 {
		t.Errorf("second Mapping %+v; want start 0x5581a9e01000, offset 0x1000, inode 3141", maps[1])
	}
}

func TestParseMapsEmpty(t *testing.T) {
	for _, in := range []string{"", "\n", "\n\n\n"} {
		maps, err := Parse([]byte(in))
		if err != nil || len(maps) != 0 {
			t.Errorf("Parse(%q) = %v, %v; want no mappings and no error", in, maps, err)
		}
	}
}

func TestParseMapsErrorNamesLine(t *testing.T) {
	// Empty lines are skipped but counted: the bad line is the fourth.
	in := "00400000-00401000 r-xp 00000000 08:01 42 /p\n\n00401000-00402000 r--p 00001000 08:01 42 /p\nbogus line here\n"
	_, err := Parse([]byte(in))
	if err == nil {
		t.Fatal("parseMaps succeeded on a bad line")
	}
	if want := `maps line 4: "bogus line here": too few fields`; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

func TestParseMapsLongLine(t *testing.T) {
	// A line is bounded at 1 MiB (the kernel's paths are at most PATH_MAX).
	line := "00400000-00401000 r-xp 00000000 08:01 42 /" + strings.Repeat("p", 1<<20)
	_, err := Parse([]byte(line + "\n"))
	if !errors.Is(err, bufio.ErrTooLong) {
		t.Errorf("parseMaps of a %d-byte line: %v, want %v", len(line), err, bufio.ErrTooLong)
	}
}

func TestModuleMapping(t *testing.T) {
	maps, err := Parse([]byte(procMaps + "7f2a1c500000-7f2a1c501000 r--p 00000000 08:02 3141     /other/prog\n"))
	if err != nil {
		t.Fatalf("parseMaps: %v", err)
	}
	tests := []struct {
		name   string
		file   string
		inode  uint64
		want   uint64
		wantOK bool
	}{
		{"program with a space", "my prog", 3141, 0x5581a9e00000, true},
		{"library", "libc.so.6", 2718, 0x7f2a1c200000, true},
		// Same inode on another device: the name tells them apart.
		{"same inode, other file", "prog", 3141, 0x7f2a1c500000, true},
		{"wrong inode", "my prog", 3142, 0, false},
		{"wrong name", "libc.so", 2718, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ModuleMapping(maps, []string{tt.file}, tt.inode)
			if got.Start != tt.want || ok != tt.wantOK {
				t.Errorf("ModuleMapping(%q, %d) = %#x, %v; want %#x, %v", tt.file, tt.inode, got.Start, ok, tt.want, tt.wantOK)
			}
			if ok && got.Offset != 0 {
				t.Errorf("ModuleMapping(%q, %d) took the mapping at offset %#x, want the first", tt.file, tt.inode, got.Offset)
			}
		})
	}
}

// TestLoadBiasFromMaps computes the bias of PIE programs from real maps
// lines, on kernels with 4, 16 and 64 KiB pages. The kernel maps a segment
// from its file offset and address rounded down to its page, so the first
// mapping's start and offset differ with the page size while the bias does
// not.
func TestLoadBiasFromMaps(t *testing.T) {
	const bias = 0xaaaad0000000
	tests := []struct {
		name     string
		maps     string
		linkBase uint64 // elfid.LinkBase of the program
	}{
		{"gcc PIE, 4K", "aaaad0000000-aaaad0001000 r--p 00000000 fe:01 7 /t/prog\n", 0},
		{"gcc PIE, 64K", "aaaad0000000-aaaad0010000 r-xp 00000000 fe:01 7 /t/prog\n", 0},
		// First PT_LOAD at offset 0x1000, address 0x1000 (text first, as
		// lld lays out some programs): on 16K pages it is mapped from
		// offset 0, at the bias itself.
		{"text at 0x1000, 4K", "aaaad0001000-aaaad0002000 r-xp 00001000 fe:01 7 /t/prog\n", 0},
		{"text at 0x1000, 16K", "aaaad0000000-aaaad0004000 r-xp 00000000 fe:01 7 /t/prog\n", 0},
		// Only the text of the file is mapped (its first page was
		// unmapped): the lowest mapping still gives the bias.
		{"first page unmapped", "aaaad0001000-aaaad0002000 r-xp 00001000 fe:01 7 /t/prog\n", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			maps, err := Parse([]byte(tt.maps))
			if err != nil {
				t.Fatal(err)
			}
			m, ok := ModuleMapping(maps, []string{"prog"}, 7)
			if !ok {
				t.Fatal("moduleMapping found nothing")
			}
			if got := elfid.LoadBias(m.Start, m.Offset, tt.linkBase); got != bias {
				t.Errorf("bias %#x, want %#x", got, bias)
			}
		})
	}
}

func FuzzParseMaps(f *testing.F) {
	f.Add([]byte(procMaps))
	f.Add([]byte("00400000-00401000 r-xp 00000000 08:01 42 /p (deleted)\n\n"))
	f.Add([]byte("0-0 r 0 0 0\n"))
	f.Add([]byte("ffffffffffffffff-0 r 0 0 18446744073709551615 [x]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		maps, err := Parse(data)
		if err != nil && maps != nil {
			t.Fatalf("parseMaps returned %d mappings and the error %v", len(maps), err)
		}
		for _, m := range maps {
			if m.Perms == "" || m.Dev == "" || strings.HasPrefix(m.Path, " ") {
				t.Fatalf("mapping %+v: an empty field or a path starting with a space", m)
			}
			if got, ok := ModuleMapping(maps, []string{filepath.Base(m.Path)}, m.Inode); !ok || got.Offset > m.Offset {
				t.Fatalf("moduleMapping returned %+v, %v; the file has a mapping at a lower offset: %+v", got, ok, m)
			}
		}
	})
}

// TestFileMappingThroughLinks finds a program run through symbolic links
// (issue 18: `profile clink` of a link to a profiled program failed):
// the kernel names its mapping after the file at the end of the links, a
// link in the same directory, in another, or a chain of two; a file of
// the link's name with the same inode elsewhere is not it.
func TestFileMappingThroughLinks(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "hello")
	if err := os.WriteFile(real, []byte("\x7fELF"), 0o755); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(real, &st); err != nil {
		t.Fatal(err)
	}
	link := func(target, name string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	same := link("hello", "clink")
	other := link("../hello", "bin/olink")
	chain := link("clink", "chain")
	maps := []Mapping{
		{Start: 0x5000, End: 0x6000, Perms: "r--p", Inode: st.Ino, Path: "/elsewhere/clink"},
		{Start: 0x10000, End: 0x11000, Perms: "r--p", Inode: st.Ino, Path: real},
		{Start: 0x11000, End: 0x12000, Perms: "r-xp", Offset: 0x1000, Inode: st.Ino, Path: real},
	}
	for _, path := range []string{real, same, other, chain} {
		m, ok := FileMapping(maps, path)
		if !ok || m.Start != 0x10000 {
			t.Errorf("FileMapping(%s) = %#x, %v; want the mapping of %s at 0x10000", path, m.Start, ok, real)
		}
	}
	if names := FileNames(chain); !slices.Equal(names, []string{"hello", "chain"}) {
		t.Errorf("FileNames(%s) = %q, want hello, then chain", chain, names)
	}
}

// TestInstances groups a file's mappings into the instances of its
// module, as maps show them: two loads of one library side by side (a
// dlmopen of a library already loaded), each with the RELRO part of its
// data segment a mapping of its own at the offset of the one before;
// arm64's layout, whose data segment maps the file from offset 0 again;
// a mapping of the file as data, which is no instance; and a file whose
// segments are unknown (span 0), one instance as before.
func TestInstances(t *testing.T) {
	twoLoads := `7fa2cf572000-7fa2cf573000 r--p 00000000 fe:00 58 /t/libsq.so
7fa2cf573000-7fa2cf574000 r-xp 00001000 fe:00 58 /t/libsq.so
7fa2cf574000-7fa2cf575000 r--p 00002000 fe:00 58 /t/libsq.so
7fa2cf575000-7fa2cf576000 r--p 00002000 fe:00 58 /t/libsq.so
7fa2cf576000-7fa2cf577000 rw-p 00003000 fe:00 58 /t/libsq.so
7fa2cf577000-7fa2cf57a000 rw-p 00000000 00:00 0
7fa2cf57a000-7fa2cf57b000 r--p 00000000 fe:00 58 /t/libsq.so
7fa2cf57b000-7fa2cf57c000 r-xp 00001000 fe:00 58 /t/libsq.so
7fa2cf57c000-7fa2cf57d000 r--p 00002000 fe:00 58 /t/libsq.so
7fa2cf57d000-7fa2cf57e000 r--p 00002000 fe:00 58 /t/libsq.so
7fa2cf57e000-7fa2cf57f000 rw-p 00003000 fe:00 58 /t/libsq.so
7fa2cf760000-7fa2cf761000 r--p 00000000 fe:00 58 /t/libsq.so
7fa2cf761000-7fa2cf762000 r-xp 00001000 fe:00 58 /t/libsq.so
7fa2cf762000-7fa2cf763000 r--p 00002000 fe:00 58 /t/libsq.so
7fa2cf763000-7fa2cf764000 r--p 00002000 fe:00 58 /t/libsq.so
7fa2cf764000-7fa2cf765000 rw-p 00003000 fe:00 58 /t/libsq.so
7fa2cf800000-7fa2cf805000 r--p 00000000 fe:00 58 /t/libsq.so
`
	arm64 := `ffff8a4a0000-ffff8a4a1000 r-xp 00000000 fe:01 77 /t/libsq.so
ffff8a4a1000-ffff8a4b0000 ---p 00001000 fe:01 77 /t/libsq.so
ffff8a4b0000-ffff8a4b1000 r--p 00000000 fe:01 77 /t/libsq.so
ffff8a4b1000-ffff8a4b2000 rw-p 00001000 fe:01 77 /t/libsq.so
ffff8a4c0000-ffff8a4c1000 r-xp 00000000 fe:01 77 /t/libsq.so
ffff8a4c1000-ffff8a4d0000 ---p 00001000 fe:01 77 /t/libsq.so
ffff8a4d0000-ffff8a4d1000 r--p 00000000 fe:01 77 /t/libsq.so
ffff8a4d1000-ffff8a4d2000 rw-p 00001000 fe:01 77 /t/libsq.so
`
	for _, tt := range []struct {
		name string
		maps string
		span uint64
		want [][2]uint64
	}{
		{"two loads and a data mapping", twoLoads, 0x5000, [][2]uint64{
			{0x7fa2cf572000, 0x7fa2cf577000}, {0x7fa2cf57a000, 0x7fa2cf57f000}, {0x7fa2cf760000, 0x7fa2cf765000}}},
		{"arm64, data from offset 0", arm64, 0x12000, [][2]uint64{
			{0xffff8a4a0000, 0xffff8a4b2000}, {0xffff8a4c0000, 0xffff8a4d2000}}},
		// A span too short: a mapping at a later offset begins no
		// instance, so the bias stays the first mapping's.
		{"span too short", twoLoads, 0x2000, [][2]uint64{
			{0x7fa2cf572000, 0x7fa2cf577000}, {0x7fa2cf57a000, 0x7fa2cf57f000}, {0x7fa2cf760000, 0x7fa2cf765000}}},
		{"span unknown", arm64, 0, [][2]uint64{{0xffff8a4a0000, 0xffff8a4d2000}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			maps, err := Parse([]byte(tt.maps))
			if err != nil {
				t.Fatal(err)
			}
			var got [][2]uint64
			for _, in := range Instances(maps, maps[0], tt.span) {
				if in.First.Start != in.Lo || in.First.Offset != 0 {
					t.Errorf("instance at %#x begins with the mapping at %#x, offset %#x", in.Lo, in.First.Start, in.First.Offset)
				}
				got = append(got, [2]uint64{in.Lo, in.Hi})
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("instances %#x, want %#x", got, tt.want)
			}
		})
	}
}
