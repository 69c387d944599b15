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
	if none := newCodeArea(0, 64); none.mapped() || none.used() != nil {
		t.Errorf("no area: mapped %v, used %d bytes", none.mapped(), len(none.used()))
	}
}
