package instr

import "encoding/binary"

// Function timing in-process: each thread has a ring of event records in
// its block, and the trampoline of every entry and exit of a timed
// function appends one record, the time of the CPU's counter, the stack
// pointer and what happened (which function, entered or left); PROFILE
// reads the rings while the program runs, and at its stops, and keeps the
// books from them (internal/profile/books.go). The ring is a single
// producer, single consumer queue: the thread writes a record, then moves
// the head on; PROFILE reads the records up to the head, then moves the
// tail on. A thread that finds its ring full stops at a breakpoint in the
// record code; PROFILE empties the ring and the thread tries again. No
// record is ever lost or overwritten.
//
// Offsets in the ring area (R, in the thread's block):
const (
	// RingSave holds two save slots for the registers the code uses.
	RingSave = 0
	// RingFullTime is the time a thread found its ring full, and
	// stopped.
	RingFullTime = 16
	// RingHead is the number of records written since the ring began:
	// the thread's. RingTail is the number read: PROFILE's. Each has a
	// cache line of its own.
	RingHead = 24
	RingTail = 64
	// RingRecords is where the records start.
	RingRecords = 128
	// RingRecordSize is the size of a record: the counter's time, the
	// stack pointer, the tag, and a word spare.
	RingRecordSize = 32
)

// RingSize is the size of a ring area of n records (a power of two).
func RingSize(n int) uint64 { return RingRecords + RingRecordSize*uint64(n) }

// Ring describes the ring area for RecordCode.
type Ring struct {
	// Offset is R, the area's offset in the thread's block.
	Offset uint64
	// Records is the number of records the ring holds, a power of two.
	Records int
}

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
const MaxRecordItem = 1<<29 - 1

// Unchecked is the byte that replaces the one at RecordCode.Skip.
func Unchecked(a Arch) byte {
	if a.Name() == "amd64" {
		return 0xeb // jmp rel8, over the same distance as the jb
	}
	return 0
}

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
}

// ReturnPop is what a return adds to the stack pointer: amd64's ret pops
// the return address; arm64's leaves the stack as it is.
func ReturnPop(a Arch) uint64 {
	if a.Name() == "amd64" {
		return 8
	}
	return 0
}

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
	return r
}

// RecordCode is the instrumentation of a timed entry or exit.
type RecordCode struct {
	Code []byte
	// Full is the offset in Code just after the breakpoint a thread hits
	// when its ring is full: where it stops, to go on once PROFILE has
	// emptied the ring. Skip is the offset of the conditional branch
	// over it, which Unchecked turns into a jump for code no tracer
	// serves any more (a task left running when the program has ended):
	// its records then go round the ring, and it never stops.
	Full, Skip int
	// Rollback says how to undo a thread stopped inside Code, as
	// [DepthCode.Rollback] does; a range whose Resume is not 0 resumes
	// there (the record is committed: only the registers come back).
	Rollback []Rollback
}

// CalibrationWork returns a piece of work for the calibration of a
// record's cost: records are timed between pieces of it, and without
// them, and what they add is their cost in a program that does something
// between its calls. On amd64 eight dependent multiplications of r8
// (imul $0x2c1b3c6d,%r8,%r8: REX.W+R+B 69 /r id), some 24 cycles; it
// changes r8 and the flags, which the calibration's thread gets back.
// Nil where the architecture has no record code.
func CalibrationWork(a Arch) []byte {
	if a.Name() != "amd64" {
		return nil
	}
	var c []byte
	for range 8 {
		c = append(c, 0x4d, 0x69, 0xc0, 0x6d, 0x3c, 0x1b, 0x2c)
	}
	return c
}
