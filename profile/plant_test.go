package profile

import (
	"debug/elf"
	"runtime"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/elfid"
	"github.com/sourceprofiler/sprof/internal/testutil"
	"github.com/sourceprofiler/sprof/profile/procmaps"
)

func TestSlotArea(t *testing.T) {
	for _, c := range []struct {
		name  string
		maps  []procmaps.Mapping
		start uint64
		end   uint64 // the instance's end (its segments' span)
		page  uint64 // the system's page size; 4 KiB when 0
		want  uint64
	}{
		{
			name: "PIE program: just below",
			maps: []procmaps.Mapping{
				{Start: 0x5555_5555_4000, End: 0x5555_5555_9000},
				{Start: 0x7fff_f7fc_3000, End: 0x7fff_f7fc_7000},
			},
			start: 0x5555_5555_4000,
			end:   0x5555_5555_9000,
			want:  0x5555_5554_3000,
		},
		{
			name:  "non-PIE C on amd64: just below",
			maps:  []procmaps.Mapping{{Start: 0x400000, End: 0x404000}, {Start: 0x7f00_0000_0000, End: 0x7f00_0001_0000}},
			start: 0x400000,
			end:   0x404000,
			want:  0x3ef000,
		},
		{
			// Go on arm64 links at 0x10000; its bss is an anonymous
			// mapping right after the file's.
			name: "Go at 0x10000: above the bss",
			maps: []procmaps.Mapping{
				{Start: 0x10000, End: 0xa7000}, {Start: 0xa7000, End: 0x140000},
				{Start: 0x140000, End: 0x160000}, {Start: 0x160000, End: 0x190000},
				{Start: 0x40_0000_0000, End: 0x40_0040_0000},
			},
			start: 0x10000,
			end:   0x160000,
			want:  0x1a0000,
		},
		{
			// A 64 KiB-page arm64 kernel: one page of slots, 16 guard
			// pages below the program, all aligned to 64 KiB, which
			// MAP_FIXED_NOREPLACE demands.
			name:  "PIE program, 64K pages",
			maps:  []procmaps.Mapping{{Start: 0xaaaa_d000_0000, End: 0xaaaa_d005_0000}},
			start: 0xaaaa_d000_0000,
			end:   0xaaaa_d005_0000,
			page:  0x10000,
			want:  0xaaaa_cfef_0000,
		},
		{
			name:  "Go at 0x10000, 16K pages: above the bss",
			maps:  []procmaps.Mapping{{Start: 0x10000, End: 0xa8000}, {Start: 0xa8000, End: 0x13c000}},
			start: 0x10000,
			end:   0xa8000,
			page:  0x4000,
			want:  0x17c000,
		},
		{
			// A library mapped at start-up on arm64 (seen in the VM):
			// libc below it, the counters' 1 GiB mapping right above
			// it, which is no part of the library.
			name: "library between libc and the counters: below libc",
			maps: []procmaps.Mapping{
				{Start: 0xffff_5e5a_0000, End: 0xffff_5e74_2000, Path: "/lib/libc.so.6"},
				{Start: 0xffff_5e74_2000, End: 0xffff_5e74_f000},
				{Start: 0xffff_5e75_0000, End: 0xffff_5e75_1000, Path: "/t/libdlllib.so"},
				{Start: 0xffff_5e75_1000, End: 0xffff_5e77_1000, Path: "/t/libdlllib.so"},
				{Start: 0xffff_5e77_7000, End: 0xffff_9f7f_8000, Path: "/memfd:sprof-counters (deleted)"},
				{Start: 0xffff_9f7f_8000, End: 0xffff_9f81_f000, Path: "/lib/ld-linux-aarch64.so.1"},
			},
			start: 0xffff_5e75_0000,
			end:   0xffff_5e77_1000,
			want:  0xffff_5e58_f000,
		},
		{
			name: "no gap within reach",
			maps: []procmaps.Mapping{
				{Start: 0, End: 0x20000000}, {Start: 0x20000000, End: 0x7fff_0000_0000},
			},
			start: 0x10000000,
			end:   0x10001000,
			want:  0,
		},
	} {
		page := c.page
		if page == 0 {
			page = 0x1000
		}
		size := page // one page of slots
		got := slotArea(c.maps, c.start, c.end, size, page)
		if got != c.want {
			t.Errorf("%s: slotArea = %#x, want %#x", c.name, got, c.want)
		}
		if got%page != 0 {
			t.Errorf("%s: slotArea = %#x, not aligned to the %#x-byte page", c.name, got, page)
		}
	}
}

// TestTakenSpans: what entries' patches take, which no exit's patch or
// breakpoint may touch: a punned jump's bytes beyond its patch, a hop,
// a breakpoint.
func TestTakenSpans(t *testing.T) {
	punned := patchWrite{addr: 0x1000, jump: []byte{0xe9, 0x10, 0x20}, tramp: &tramp{patch: instr.Patch{Punned: []byte{0x30, 0x00}}}}
	short := patchWrite{addr: 0x2000, jump: []byte{0xeb, 0x10}, hop: 0x2012, hopCode: []byte{0xe9, 1, 2, 3, 4}, tramp: &tramp{}}
	taken := takenSpans([]patchWrite{punned, short}, map[uint64]*site{0x3000: {orig: []byte{0x55}}})
	for _, c := range []struct {
		lo, hi uint64
		want   bool
	}{
		{0x1004, 0x1005, true}, // the punned jump's last byte, the code's too
		{0x1005, 0x1006, false},
		{0x0ffb, 0x1000, false},
		{0x2001, 0x2002, true},
		{0x2002, 0x2012, false},
		{0x2016, 0x2017, true}, // the hop's last byte
		{0x2017, 0x3000, false},
		{0x2ffe, 0x3001, true}, // the breakpoint
	} {
		if got := taken.covers(c.lo, c.hi); got != c.want {
			t.Errorf("[%#x, %#x) covered: %v, want %v", c.lo, c.hi, got, c.want)
		}
	}
}

// TestFuncStarts: the functions' starts from the symbol table
// (elfid.ReadFuncStarts), without GCC's cold parts (a jump to one is no
// tail call).
func TestFuncStarts(t *testing.T) {
	prog := testutil.BuildC(t, "coldpart", "-O2")
	f, err := elf.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.Symbols()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	starts := map[uint64]bool{}
	for _, a := range elfid.ReadFuncStarts(prog) {
		starts[a] = true
	}
	cold := 0
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 {
			continue
		}
		isCold := strings.Contains(s.Name, ".cold")
		if isCold {
			cold++
		}
		if starts[s.Value] == isCold {
			t.Errorf("%s at %#x: a start %v, want %v", s.Name, s.Value, starts[s.Value], !isCold)
		}
	}
	// (GCC for arm64 made no cold part of coldpart.c.)
	if cold == 0 && runtime.GOARCH == "amd64" {
		t.Errorf("no cold part in %s", prog)
	}
}
