package instr

import (
	"encoding/binary"
	"slices"
	"sync/atomic"
)

// Timing in-process on arm64 (see ring.go): a thread's ring area is
// found from its stack pointer through the stack table, as a depth area
// is. Head and stop share one word, the cursor (RingCursor): in its low
// half the head, the byte offset from RingRecords of the next record the
// thread writes; in its high half the stop, the slot before the first
// that PROFILE has not read, which only PROFILE moves. The ring is full
// when they are equal: it holds one record fewer than its slots.

// GoRecordsNeedThreadPointer is true: the record code finds a thread's
// ring from the stack pointer through the stack table, and goroutine
// stacks, which Go allocates and moves, are in no table; Go's record
// code finds the ring through TPIDR_EL0 instead ([Ring.ThreadPointer]),
// which PROFILE sets for each thread where the program leaves it alone.
func (arm64) GoRecordsNeedThreadPointer() bool { return true }

// CounterOneClock is true: CNTVCT_EL0 reads the system counter, which
// the Generic Timer shares by every PE (Arm ARM, "The Generic Timer").
func (arm64) CounterOneClock() bool { return true }

// RecordCode returns the code that appends a record with tag to the
// thread's ring, found through the stack table as [DepthCode] finds a
// depth area (see [Ring]); R is the area, A the records' room
// (RingRecordSize × r.Records), to whose multiple of two areas are
// aligned:
//
//	mov x16, sp; ubfx x16, x16, #12, #22     the stack page's entry
//	mov x17, #Table; ldr w16, [x17, x16, lsl #2]
//	mov x17, #Areas; add x16, x17, x16       R
//	retry: ldr x17, [x16]                    the cursor: head, stop
//	eor x17, x17, x17, lsr #32; cbnz w17, ok head is not stop
//	isb; mrs x17, cntvct_el0; str x17, [x16, #16]
//	brk #0; b retry                          full: when it stopped, and stop
//	ok: ldr w17, [x16]; add x16, x16, x17    R + head
//	isb; mrs x17, cntvct_el0; str x17, [x16, #128]   time
//	mov x17, sp; str x17, [x16, #136]        stack pointer
//	movz x17, #tag; movk x17, #tag>>16, lsl #16
//	str x17, [x16, #144]                     item and entry or exit
//	and x17, x16, #A-1; add x17, x17, #32; and x17, x17, #A-1
//	and x16, x16, #~(A-1)
//	stlr w17, [x16]                          commit: the head moves on
//
// It uses x16 and x17 only, which AAPCS64 leaves free at an entry and at a
// return (see [Instrumenter.DepthCode]), and changes no flags. The ISB makes the
// counter's reading wait for the instructions before it, as amd64's
// lfence does. The records are written before the head that publishes
// them, with release; PROFILE reads the head with acquire, and moves the
// stop on after reading. A thread stopped anywhere before the commit
// starts again: nothing it wrote counts until the head moves. The cbnz
// becomes b where the code is unchecked.
func (arm64) RecordCode(r Ring, tag uint64) (RecordCode, bool) {
	if r.Goroutine {
		return goRecordCode(r, tag)
	}
	if r.Table == 0 || r.Records < 2 || r.Records&(r.Records-1) != 0 || RingStride(r.Records) > 1<<30 || tag > 1<<31-1 {
		return RecordCode{}, false
	}
	var locate []uint32
	locate = append(locate, 0x91000000|a64SP<<5|a64X16)                                                           // MOV x16, sp
	locate = append(locate, 0xd3400000|DepthTablePage<<16|(DepthTablePage+DepthTableBits-1)<<10|a64X16<<5|a64X16) // UBFX (UBFM)
	locate = append(locate, a64MovImm(a64X17, r.Table)...)
	locate = append(locate, 0xb8607800|a64X16<<16|a64X17<<5|a64X16) // LDR (register), 32-bit, LSL #2
	locate = append(locate, a64MovImm(a64X17, r.Areas)...)
	locate = append(locate, 0x8b000000|a64X16<<16|a64X17<<5|a64X16) // ADD (shifted register)
	key := []uint32{a64MovSP17, a64Str(a64X17, a64X16, RingRecords+8)}
	return arm64Record(r, tag, locate, key), true
}

// goRecordCode is arm64's record code for Go code (see [Ring.Goroutine]):
// the ring area is the one TPIDR_EL0 points to (r.ThreadPointer: PROFILE
// set it, for each thread, to the start of its area); the record is the
// table form's, but for the stack pointer's word, which where x28, Go's
// goroutine register, holds a goroutine is its distance from the
// goroutine's stack top, and the goroutine's, in the fourth word, and the
// tag's mark:
//
//	mrs x16, tpidr_el0                    R
//	retry: ... ok: ... time               (as the table form)
//	cbz x28, thread
//	ldr x17, [x28, #8]; sub x17, sp, x17  g.stack.hi, the SP less it
//	neg x17, x17; b store                 the distance
//	thread: mov x17, sp                   (x28 0: the thread's)
//	store: str x17, [x16, #136]
//	str x28, [x16, #152]                  the goroutine, or 0
//	movz x17, #tag; movk x17, #tag>>16 | G, lsl #16; str x17, [x16, #144]
//	(the commit, as the table form)
func goRecordCode(r Ring, tag uint64) (RecordCode, bool) {
	if !r.ThreadPointer || r.Records < 2 || r.Records&(r.Records-1) != 0 || RingStride(r.Records) > 1<<30 || tag >= recordGoroutine {
		return RecordCode{}, false
	}
	const x28 = 28
	locate := []uint32{0xd53bd040 | a64X16} // MRS x16, TPIDR_EL0 (op0 3, op1 3, CRn 13, CRm 0, op2 2)
	key := []uint32{
		0xb4000000 | 5<<5 | x28,                     // CBZ x28, thread: five words on
		0xf9400000 | 1<<10 | x28<<5 | a64X17,        // LDR x17, [x28, #8]
		0xcb206000 | a64X17<<16 | a64SP<<5 | a64X17, // SUB (extended register) x17, sp, x17, UXTX
		0xcb1103f1,                            // NEG x17, x17 (SUB x17, xzr, x17)
		0x14000002,                            // B store
		a64MovSP17,                            // thread: MOV x17, sp
		a64Str(a64X17, a64X16, RingRecords+8), // store
		a64Str(x28, a64X16, RingRecords+24),   // the goroutine
	}
	rc := arm64Record(r, tag|recordGoroutine, locate, key)
	rc.ThreadPointer = true
	return rc, true
}

// a64MovSP17 is MOV x17, sp (ADD (immediate) x17, sp, #0).
const a64MovSP17 = 0x91000000 | a64SP<<5 | a64X17

// a64Str is STR (immediate) of rt at off from rn.
func a64Str(rt, rn, off uint32) uint32 { return 0xf9000000 | off/8<<10 | rn<<5 | rt }

// arm64Record builds a record code of ring r with tag: locate, the
// instructions that leave the ring area in x16; the cursor's check, and
// the stop where the ring is full; the time; key, the instructions that
// store the frame's key (and the goroutine); the tag; the commit.
func arm64Record(r Ring, tag uint64, locate, key []uint32) RecordCode {
	const x16, x17 = a64X16, a64X17
	size := RingRecordSize * uint64(r.Records)
	bits := uint32(0)
	for 1<<bits < size {
		bits++
	}
	w := slices.Clone(locate)
	emit := func(ws ...uint32) { w = append(w, ws...) }
	// The bitmask immediates of A-1 (bits ones from bit 0) and of its
	// complement: N=1, immr, imms (C4.1 "Logical (immediate)").
	low := 1<<22 | (bits-1)<<10
	high := 1<<22 | (64-bits)<<16 | (63-bits)<<10
	and := func(rd, rn, mask uint32) uint32 { return 0x92000000 | mask | rn<<5 | rd }
	const (
		isb      = 0xd5033fdf
		mrsCount = 0xd53be040 | x17          // MRS x17, CNTVCT_EL0 (op0 3, op1 3, CRn 14, CRm 0, op2 2)
		loadCur  = 0xf9400000 | x16<<5 | x17 // LDR x17, [x16]
		loadHead = 0xb9400000 | x16<<5 | x17 // LDR w17, [x16]
	)
	retry := len(w)
	emit(loadCur, 0xca400000|x17<<16|32<<10|x17<<5|x17) // EOR (shifted register), LSR #32
	skip := len(w)
	emit(0x35000000 | 6<<5 | x17) // CBNZ w17, ok: six words on
	emit(isb, mrsCount, a64Str(x17, x16, RingFullTime))
	emit(0xd4200000) // BRK #0
	full := len(w)
	emit(0x14000000 | uint32(retry-full)&0x3ffffff) // B retry
	emit(loadHead, 0x8b000000|x17<<16|x16<<5|x16)   // ADD x16, x16, x17
	emit(isb, mrsCount, a64Str(x17, x16, RingRecords))
	emit(key...)
	emit(0xd2800000|uint32(tag&0xffff)<<5|x17, 0xf2800000|1<<21|uint32(tag>>16&0xffff)<<5|x17) // MOVZ, MOVK lsl 16
	emit(a64Str(x17, x16, RingRecords+16))
	emit(and(x17, x16, low), 0x91000000|RingRecordSize<<10|x17<<5|x17, and(x17, x17, low)) // ADD (immediate)
	emit(and(x16, x16, high))
	emit(0x889ffc00 | x16<<5 | x17) // STLR w17, [x16]
	code := make([]byte, 0, 4*len(w))
	for _, x := range w {
		code = binary.LittleEndian.AppendUint32(code, x)
	}
	unchecked := binary.LittleEndian.AppendUint32(nil, 0x14000006) // B ok
	return RecordCode{Code: code, Full: 4 * full, Skip: 4 * skip, Unchecked: unchecked, Scratch: true,
		Rollback: []Rollback{{From: 0, To: len(code)}}}
}

// ringUnread returns the slot after the stop and the records from there
// to the head.
func (arm64) ringUnread(area []byte, records int) (first, n int) {
	size := uint32(RingRecordSize * records)
	head := atomic.LoadUint32(word32(area, RingCursor))
	tail := (atomic.LoadUint32(word32(area, RingCursor+4)) + RingRecordSize) & (size - 1)
	return int(tail / RingRecordSize), int((head-tail)&(size-1)) / RingRecordSize
}

// ringRead moves the stop on by n records, round the ring; the stop is
// PROFILE's mark.
func (arm64) ringRead(area []byte, records, n int) uint64 {
	size := uint32(RingRecordSize * records)
	stop := (atomic.LoadUint32(word32(area, RingCursor+4)) + uint32(n)*RingRecordSize) & (size - 1)
	atomic.StoreUint32(word32(area, RingCursor+4), stop)
	return uint64(stop)
}

// ringReset sets the head to the first slot and the stop to the last.
func (arm64) ringReset(area []byte, records int) uint64 {
	stop := uint32(RingRecordSize * (records - 1))
	atomic.StoreUint32(word32(area, RingCursor), 0)
	atomic.StoreUint32(word32(area, RingCursor+4), stop)
	return uint64(stop)
}

// ringIntact: the stop is the mark, and the head a slot of the ring (the
// thread moves it on by a record, round the ring).
func (arm64) ringIntact(area []byte, records int, mark uint64) bool {
	head := atomic.LoadUint32(word32(area, RingCursor))
	return uint64(atomic.LoadUint32(word32(area, RingCursor+4))) == mark &&
		head < uint32(RingRecordSize*records) && head%RingRecordSize == 0
}

// ringResync, where the head is a slot, sets the stop, PROFILE's half,
// to the slot before it: the ring is empty from where the thread writes.
// Where it is not (misaligned, or past the ring), the thread, running,
// may be moving it on (its stlr writes the head half alone): the stop is
// set to where the head will be after its next record (the record code
// moves it on by one record from its low bits, round the ring), so that
// the record after finds the ring full and stops it. Stopped, it gets
// the head of the slot its low bits name, and the stop before it, in one
// store.
func (arm64) ringResync(area []byte, records int, running bool) (uint64, bool) {
	size := uint32(RingRecordSize * records)
	head := atomic.LoadUint32(word32(area, RingCursor))
	if head < size && head%RingRecordSize == 0 {
		stop := (head - RingRecordSize) & (size - 1)
		atomic.StoreUint32(word32(area, RingCursor+4), stop)
		return uint64(stop), true
	}
	if running {
		stop := ((head & (size - 1)) + RingRecordSize) & (size - 1)
		atomic.StoreUint32(word32(area, RingCursor+4), stop)
		return uint64(stop), false
	}
	head = head & (size - 1) &^ (RingRecordSize - 1)
	stop := (head - RingRecordSize) & (size - 1)
	atomic.StoreUint64(word64(area, RingCursor), uint64(stop)<<32|uint64(head))
	return uint64(stop), true
}

// calibrationStep returns mul x9, x9, x9 (MADD with XZR, C6.2 "MADD"):
// it changes x9.
func (arm64) calibrationStep() []byte { return binary.LittleEndian.AppendUint32(nil, 0x9b097d29) }
