package instr

import (
	"encoding/binary"
	"unsafe"
)

// Function timing in-process: each thread has a ring of event records in
// its block, and the trampoline of every entry and exit of a timed
// function appends one record, the time of the CPU's counter, the stack
// pointer and what happened (which function, entered or left); PROFILE
// reads the rings while the program runs, and at its stops, and keeps the
// books from them (profile/books.go). The ring is a single
// producer, single consumer queue: the thread writes a record, then moves
// the head on; PROFILE reads the records up to the head, then moves the
// tail on. A thread that finds its ring full stops at a breakpoint in the
// record code; PROFILE empties the ring and the thread tries again. No
// record is ever lost or overwritten.
//
// On amd64 the ring area is in the thread's block, which GS points to;
// on arm64, which has no thread register to spare, it is found from the
// stack pointer through the stack table, as the table form of [Depth]
// finds a depth area. Offsets in the ring area (R, in the thread's block
// on amd64):
const (
	// RingSave holds two save slots for the registers the code uses
	// (amd64).
	RingSave = 0
	// RingCursor (arm64) is the word both sides use: its low half is the
	// byte offset from RingRecords of the next record to write, the
	// head (the thread's), its high half the offset of the last slot
	// the thread may write before PROFILE has read more, the stop: the
	// slot before the first unread one (PROFILE's). The thread reads
	// both with one load, and the ring is full when they are equal.
	RingCursor = 0
	// RingFullTime is the time a thread found its ring full, and
	// stopped.
	RingFullTime = 16
	// RingHead (amd64) is the number of records written since the ring
	// began: the thread's. RingTail is the number read: PROFILE's. Each
	// has a cache line of its own.
	RingHead = 24
	RingTail = 64
	// RingRecords is where the records start.
	RingRecords = 128
	// RingRecordSize is the size of a record: the counter's time, the
	// stack pointer, the tag, and the goroutine of a Go record.
	RingRecordSize = 32
)

// RingSize is the size of a ring area of n records (a power of two).
func RingSize(n int) uint64 { return RingRecords + RingRecordSize*uint64(n) }

// Ring describes the ring area for RecordCode.
type Ring struct {
	// Offset is R, the area's offset in the thread's block (amd64).
	Offset uint64
	// Records is the number of records the ring holds, a power of two.
	Records int
	// Table and Areas are the stack table and the areas of its table
	// form (arm64), as [Depth]'s: the areas are RingStride(Records)
	// bytes apart and aligned to it.
	Table, Areas uint64
	// Goroutine asks for the records of Go code: where the goroutine
	// register holds a goroutine (not 0), the record names it (the
	// record's G) and keys the frame by its distance from the
	// goroutine's stack top, g.stack.hi less the stack pointer, which
	// survives the copying of goroutine stacks; the tag is marked. A
	// goroutine's records are in the rings of every thread that ran it,
	// and PROFILE puts them back in order by their times. Where the
	// register is 0 (runtime code that runs without a goroutine), the
	// record is the thread's, as C's are. On arm64 a goroutine's record
	// finds its thread's ring area through the thread pointer
	// (ThreadPointer: TPIDR_EL0, which PROFILE sets for each thread of a
	// program that has no other use for it), not through the stack table:
	// goroutine stacks are in none.
	Goroutine     bool
	ThreadPointer bool
}

// RingStride is how far apart, and aligned, the ring areas of the table
// form are: twice the records' room, so that the record code finds the
// area's start from a pointer to any of its records with one AND.
func RingStride(records int) uint64 { return 2 * RingRecordSize * uint64(records) }

// RingUnread returns the slot of the first record of ring area that
// PROFILE has not read, and how many there are, in a's protocol.
func RingUnread(a Instrumenter, area []byte, records int) (first, n int) {
	return a.ringUnread(area, records)
}

// RingRead frees the n records RingUnread returned first, or n of them:
// the thread may write their slots again. It returns PROFILE's mark, the
// word of the ring only PROFILE writes as it now stands, for
// [RingIntact].
func RingRead(a Instrumenter, area []byte, records, n int) (mark uint64) {
	return a.ringRead(area, records, n)
}

// RingReset empties a ring area, for a thread that has not begun
// writing to it, and returns PROFILE's mark (see [RingRead]).
func RingReset(a Instrumenter, area []byte, records int) (mark uint64) {
	return a.ringReset(area, records)
}

// RingIntact reports whether ring area is one the record code and
// PROFILE can have left: PROFILE's word as its last [RingRead] or
// [RingReset] left it (mark), and the thread's one it can have written
// from there. The area is in the program's memory, which the program may
// write over (a wild write): a ring whose words it changed must not be
// read (its records are not records), and may look full for ever, the
// thread stopping at every record.
func RingIntact(a Instrumenter, area []byte, records int, mark uint64) bool {
	return a.ringIntact(area, records, mark)
}

// RingResync takes back a ring area that is not intact, writing
// PROFILE's word alone where the thread may be writing its own
// (running): it empties it from where the thread writes its next record,
// dropping what it holds, or, where the thread's word is one the record
// code cannot have left (arm64: a head that is no slot, which the thread
// may be moving on), makes it look full at the thread's next record but
// one, so that the thread stops, and PROFILE, the thread stopped, takes
// it back whole (running false: both words). It returns PROFILE's mark
// (see [RingRead]); the ring is intact again once ok. The thread goes on
// writing records that PROFILE reads, and stops no more than a ring full
// of its records makes it.
func RingResync(a Instrumenter, area []byte, records int, running bool) (mark uint64, ok bool) {
	return a.ringResync(area, records, running)
}

// RingSlot returns the bytes of slot i of ring area.
func RingSlot(area []byte, i int) []byte {
	at := RingRecords + i*RingRecordSize
	return area[at : at+RingRecordSize]
}

// word64 and word32 are the words at off in b, for atomic access: the
// thread writes its side of a ring while PROFILE reads it.
func word64(b []byte, off int) *uint64 { return (*uint64)(unsafe.Pointer(&b[off])) }
func word32(b []byte, off int) *uint32 { return (*uint32)(unsafe.Pointer(&b[off])) }

// RecordTag is the tag of a record: item's entry, or with exit its exit.
func RecordTag(item int, exit bool) uint64 {
	tag := uint64(item) << 2
	if exit {
		tag |= 1
	}
	return tag
}

// ReturnTag is the tag of the record of item's exit made where a call of
// it returns: its stack pointer is the one at item's exit, plus the
// return address the exit popped.
func ReturnTag(item int) uint64 { return RecordTag(item, true) | 2 }

// MaxRecordItem is the largest item a record's tag names.
const MaxRecordItem = 1<<28 - 1

// recordGoroutine is the tag's mark of a goroutine's record (see
// [Ring.Goroutine]), which the record code adds.
const recordGoroutine = 1 << 30

// Record is one record read from a ring.
type Record struct {
	// Time is the CPU counter's value (amd64 TSC, arm64 CNTVCT_EL0).
	Time uint64
	SP   uint64
	Item int
	Exit bool
	// Returned marks an exit recorded where the call returned (see
	// ReturnTag): SP is then the exit's plus ReturnPop.
	Returned bool
	// G is the goroutine of a Go record (see [Ring.Goroutine]), 0 for a
	// thread's record; SP is then the distance from the goroutine's stack
	// top.
	G uint64
}

// ReturnPop is what a return adds to the stack pointer: amd64's ret pops
// the return address; arm64's leaves the stack as it is.
func ReturnPop(a ABI) uint64 { return a.returnPop() }

// ReadRecord decodes the record at the start of b.
func ReadRecord(b []byte) Record {
	tag := binary.LittleEndian.Uint64(b[16:])
	r := Record{
		Time: binary.LittleEndian.Uint64(b),
		SP:   binary.LittleEndian.Uint64(b[8:]),
		Item: int(tag >> 2 & MaxRecordItem),
		Exit: tag&1 != 0,
	}
	r.Returned = tag&2 != 0
	if tag&recordGoroutine != 0 {
		r.G = binary.LittleEndian.Uint64(b[24:])
	}
	return r
}

// RecordCode is the instrumentation of a timed entry or exit.
type RecordCode struct {
	Code []byte
	// Full is the offset in Code just after the breakpoint a thread hits
	// when its ring is full: where it goes on, once PROFILE has emptied
	// the ring (amd64's int3 leaves the thread there; PROFILE moves an
	// arm64 thread past its BRK). Skip is the offset of the conditional
	// branch over it, which Unchecked replaces with a jump for code no
	// tracer serves any more (a task left running when the program has
	// ended): its records then go round the ring, and it never stops.
	Full, Skip int
	Unchecked  []byte
	// Scratch marks code that changes registers the calling convention
	// leaves free only at entries and returns (arm64's x16 and x17): at
	// a jump out of a function it serves only a jump to another
	// function's entry, a tail call, not one to the function's own code
	// elsewhere (a cold part), where they may be live.
	Scratch bool
	// Rollback says how to undo a thread stopped inside Code, as
	// [DepthCode.Rollback] does; a range whose Resume is not 0 resumes
	// there (the record is committed: only the registers come back).
	Rollback []Rollback
	// ThreadPointer marks code that finds its ring through the thread
	// pointer (arm64's TPIDR_EL0, [Ring.ThreadPointer]): a thread that
	// stops on its full ring was writing to its own.
	ThreadPointer bool
}

// CalibrationWork returns a piece of work for the calibration of a
// record's cost: records are timed between pieces of it, and without
// them, and what they add is their cost in a program that does something
// between its calls. Eight dependent multiplications of one register,
// some 24 cycles (on amd64 of r8, on arm64 of x9: the architecture's
// calibrationStep); they change that register and the flags, which the
// calibration's thread gets back.
func CalibrationWork(a Instrumenter) []byte {
	var c []byte
	for range 8 {
		c = append(c, a.calibrationStep()...)
	}
	return c
}
