package profile

import (
	"bytes"
	"testing"
)

// TestCodeArea: pieces are packed from the area's start, each at a
// 16-byte boundary whatever its size; used covers them all and nothing
// more; with no area mapped, nothing is used.
func TestCodeArea(t *testing.T) {
	a := newCodeArea(0x7f0000001000, 256)
	at := []uint64{a.alloc(5), a.alloc(16), a.alloc(17), a.alloc(1)}
	want := []uint64{0x7f0000001000, 0x7f0000001010, 0x7f0000001020, 0x7f0000001040}
	for i := range want {
		if at[i] != want[i] {
			t.Errorf("piece %d at %#x, want %#x", i, at[i], want[i])
		}
	}
	a.put(at[1], bytes.Repeat([]byte{0xcc}, 16))
	a.put(at[3], []byte{0x90})
	used := a.used()
	if len(used) != 0x50 {
		t.Fatalf("used %d bytes, want 80 (four pieces, the last padded to 16)", len(used))
	}
	if !bytes.Equal(used[0x10:0x20], bytes.Repeat([]byte{0xcc}, 16)) || used[0x40] != 0x90 || used[0] != 0 {
		t.Errorf("image % x", used)
	}
	if len(a.image) != 0x50 {
		t.Errorf("an image of %d bytes for 80 used of the area's 256: it grows as the area is used", len(a.image))
	}
	if none := newCodeArea(0, 64); none.mapped() || none.used() != nil {
		t.Errorf("no area: mapped %v, used %d bytes", none.mapped(), len(none.used()))
	}
}

// TestCodeAreaFull: an area of 64 bytes gives two slots of 24 bytes (32
// each, padded), then none: the third is refused (0), never given past
// the end, and what is used stays the area's 64 bytes. A room's Find in
// the area gives no address whose piece, padded to 16, would end past it
// (5 bytes where 8 are left),
// and one at an alignment wider than 16 is not looked for in the area
// at all (it would leave the room before it unused: the panic of a full
// area, gofmt's lines).
func TestCodeAreaFull(t *testing.T) {
	const base = 0x7f0000001000
	a := newCodeArea(base, 64)
	got := []uint64{a.slot(24), a.slot(24), a.slot(24)}
	if want := []uint64{base, base + 32, 0}; got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("slots at %#x, want %#x", got, want)
	}
	if len(a.used()) != 64 {
		t.Errorf("used %d bytes, want 64", len(a.used()))
	}
	r := &room{p: &planting{area: newCodeArea(base, 56)}}
	r.p.area.alloc(40) // (next at base+48: 8 bytes left, half a piece)
	if at, ok := r.Find(base, base+4096, 5, 16, 0, false); ok {
		t.Errorf("5 bytes, 16 padded, found at %#x past the area's end", at)
	}
	wide := &room{p: &planting{area: newCodeArea(base, 4096)}}
	wide.p.area.alloc(40)
	if at, ok := wide.Find(base, base+1<<20, 8, 256, 0, false); ok {
		t.Errorf("an alignment of 256 found in the area, at %#x", at)
	}
	if at, ok := wide.Find(base, base+1<<20, 8, 16, 0, false); !ok || at != base+48 {
		t.Errorf("8 bytes at 16 found at %#x (%v), want %#x", at, ok, base+48)
	}
	if none := newCodeArea(0, 64); none.slot(8) != 0 {
		t.Error("a slot with no area")
	}
}

// TestPlantingGC: the collector is held back (300 %) while planting up
// to bigPlanting sites, entries and line sites together, and runs at
// Go's default past them.
func TestPlantingGC(t *testing.T) {
	for _, c := range []struct {
		entries, lines int
		want           int
	}{{0, 0, 300}, {bigPlanting, 0, 300}, {bigPlanting - 10, 10, 300}, {bigPlanting, 1, 100}, {0, bigPlanting + 1, 100}} {
		p := &planting{entries: make([]int, c.entries)}
		if c.lines > 0 {
			p.lineSites = &lineSiteSet{addrs: make([]uint64, c.lines)}
		}
		if got := plantingGC(p); got != c.want {
			t.Errorf("%d entries and %d line sites: %d %%, want %d", c.entries, c.lines, got, c.want)
		}
	}
}
