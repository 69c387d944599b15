package instr

import (
	"encoding/binary"
	"fmt"
	"testing"
)

// ringWriter does what a thread's record code does to a ring area, in
// a's protocol: it reports false, writing nothing, when the ring is full.
func ringWriter(a Arch, area []byte, records int) func(time uint64) bool {
	size := uint64(RingRecordSize * records)
	return func(time uint64) bool {
		var at uint64
		if a.Name() == "arm64" {
			cur := binary.LittleEndian.Uint64(area[RingCursor:])
			if uint32(cur) == uint32(cur>>32) {
				return false
			}
			// (The record code writes at the head, wherever it is: a
			// head past the ring writes past it; here, round it.)
			at = uint64(uint32(cur)) & (size - 1)
			binary.LittleEndian.PutUint32(area[RingCursor:], uint32((at+RingRecordSize)&(size-1)))
		} else {
			head := binary.LittleEndian.Uint64(area[RingHead:])
			if head-binary.LittleEndian.Uint64(area[RingTail:]) >= uint64(records) {
				return false
			}
			at = head & uint64(records-1) * RingRecordSize
			binary.LittleEndian.PutUint64(area[RingHead:], head+1)
		}
		if at+8 <= size {
			binary.LittleEndian.PutUint64(area[RingRecords+at:], time)
		}
		return true
	}
}

// TestRingProtocol writes records into a ring as the record code does
// and reads them as PROFILE does, round the ring several times and
// through full rings: every record is read once, in order, and a ring of
// n records is full with n unread on amd64, n-1 on arm64 (whose head
// never reaches the slot before its first unread one).
func TestRingProtocol(t *testing.T) {
	const records = 8
	for _, a := range []Arch{AMD64, ARM64} {
		t.Run(a.Name(), func(t *testing.T) {
			area := make([]byte, RingSize(records))
			RingReset(a, area, records)
			write := ringWriter(a, area, records)
			capacity := records
			if a.Name() == "arm64" {
				capacity--
			}
			next, want := uint64(1), uint64(1)
			for round, batch := range []int{3, 5, 8, 1, 7, 20, 2} {
				wrote := 0
				for range batch {
					if !write(next) {
						break
					}
					next++
					wrote++
				}
				if full := min(batch, capacity); wrote != full {
					t.Fatalf("round %d: wrote %d of %d, want %d", round, wrote, batch, full)
				}
				first, n := RingUnread(a, area, records)
				if n != wrote {
					t.Fatalf("round %d: %d unread, want %d", round, n, wrote)
				}
				for i := range n {
					got := binary.LittleEndian.Uint64(RingSlot(area, (first+i)%records))
					if got != want {
						t.Fatalf("round %d: record %d is %d, want %d", round, i, got, want)
					}
					want++
				}
				RingRead(a, area, records, n)
				if _, n := RingUnread(a, area, records); n != 0 {
					t.Fatalf("round %d: %d unread after reading", round, n)
				}
			}
		})
	}
}

// TestRingDamaged writes over a ring's words as a program's wild write
// would (issue 31, item 23): a ring so written is not intact, and may
// look full for ever (the tail moved past the head, or the head far
// ahead); resynchronised, it is intact and empty, and takes records that
// PROFILE reads, in order, round the ring again.
func TestRingDamaged(t *testing.T) {
	const records = 8
	words := map[string]func(a Arch) int{
		"head": func(a Arch) int {
			if a.Name() == "arm64" {
				return RingCursor
			}
			return RingHead
		},
		"mark": func(a Arch) int {
			if a.Name() == "arm64" {
				return RingCursor + 4
			}
			return RingTail
		},
	}
	for _, a := range []Arch{AMD64, ARM64} {
		for word, at := range words {
			for _, v := range []uint32{0xffffffff, 0xabababab, 3, RingRecordSize * records} {
				t.Run(fmt.Sprintf("%s/%s=%#x", a.Name(), word, v), func(t *testing.T) {
					area := make([]byte, RingSize(records))
					mark := RingReset(a, area, records)
					write := ringWriter(a, area, records)
					for i := range uint64(3) {
						write(i)
					}
					if !RingIntact(a, area, records, mark) {
						t.Fatal("a ring written by the record code is not intact")
					}
					if a.Name() == "arm64" || word == "mark" {
						binary.LittleEndian.PutUint32(area[at(a):], v)
					} else {
						binary.LittleEndian.PutUint64(area[at(a):], uint64(v)<<32|uint64(v))
					}
					if RingIntact(a, area, records, mark) {
						t.Fatalf("%s written over with %#x: intact", word, v)
					}
					mark, ok := RingResync(a, area, records, true)
					if !ok {
						// (A head that is no slot: taken back whole when
						// its thread has stopped.)
						if RingIntact(a, area, records, mark) {
							t.Fatal("intact, the head no slot")
						}
						// The thread, running on, stops at its record
						// after next.
						if !write(1) || write(2) {
							t.Fatal("the thread does not stop at its second record")
						}
						mark, ok = RingResync(a, area, records, false)
					}
					if !ok || !RingIntact(a, area, records, mark) {
						t.Fatal("not intact once resynchronised")
					}
					if _, n := RingUnread(a, area, records); n != 0 {
						t.Fatalf("%d unread once resynchronised", n)
					}
					for round := range 3 {
						for i := range uint64(records - 1) {
							if !write(100 + i) {
								t.Fatalf("round %d: the ring is full after %d records", round, i)
							}
						}
						first, n := RingUnread(a, area, records)
						if n != records-1 {
							t.Fatalf("round %d: %d unread, want %d", round, n, records-1)
						}
						for i := range n {
							if got := binary.LittleEndian.Uint64(RingSlot(area, (first+i)%records)); got != 100+uint64(i) {
								t.Fatalf("round %d: record %d is %d", round, i, got)
							}
						}
						mark = RingRead(a, area, records, n)
						if !RingIntact(a, area, records, mark) {
							t.Fatalf("round %d: not intact after reading", round)
						}
					}
				})
			}
		}
	}
}

// TestGoRecordsNeedThreadPointer holds GoRecordsNeedThreadPointer to
// the record code it describes: where it is true, Go's record code is
// built only for a ring found through the thread pointer; where false,
// without it.
func TestGoRecordsNeedThreadPointer(t *testing.T) {
	for _, a := range []Arch{AMD64, ARM64} {
		t.Run(a.Name(), func(t *testing.T) {
			r := Ring{Records: 8, Table: 1, Goroutine: true}
			_, without := a.RecordCode(r, 0)
			r.ThreadPointer = true
			_, with := a.RecordCode(r, 0)
			need := a.GoRecordsNeedThreadPointer()
			if !with || without == need {
				t.Errorf("GoRecordsNeedThreadPointer %v; record code for Go with the thread pointer %v, without %v", need, with, without)
			}
		})
	}
}
