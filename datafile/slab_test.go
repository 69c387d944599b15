package datafile

import (
	"bytes"
	"slices"
	"testing"
)

// TestLineAddrsApart: a plan's line addresses, read back from slabs
// (addrSlab at a time, some lines across a slab's end), are each line's
// own: every line's as written, and a line's grown by append leaves the
// next line's as it was.
func TestLineAddrsApart(t *testing.T) {
	p := bigPlan(10)
	p.Method = LineCounting
	p.Lines = nil
	for i := range 3 * addrSlab / 5 {
		var addrs []uint64
		for k := range 1 + i%9 {
			addrs = append(addrs, uint64(0x1000+i*16+k))
		}
		p.Lines = append(p.Lines, Line{Module: 0, File: 0, Line: i + 1, Addrs: addrs})
	}
	p.ID = PlanID(p)
	var buf bytes.Buffer
	if err := WritePlan(&buf, p); err != nil {
		t.Fatal(err)
	}
	got, err := ReadPlan(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for i := range p.Lines {
		if !slices.Equal(got.Lines[i].Addrs, p.Lines[i].Addrs) {
			t.Fatalf("line %d: %x, want %x", i, got.Lines[i].Addrs, p.Lines[i].Addrs)
		}
	}
	next := slices.Clone(got.Lines[1].Addrs)
	got.Lines[0].Addrs = append(got.Lines[0].Addrs, 0xdead)
	if !slices.Equal(got.Lines[1].Addrs, next) {
		t.Errorf("line 1's addresses %x after line 0's grew, want %x", got.Lines[1].Addrs, next)
	}
}
