package instr

import (
	"encoding/binary"
	"sync/atomic"
)

// Timing in-process on arm64 (see ring.go): a thread's ring area is
// found from its stack pointer through the stack table, as a depth area
// is. Head and stop share one word, the cursor (RingCursor): in its low
// half the head, the byte offset from RingRecords of the next record the
// thread writes; in its high half the stop, the slot before the first
// that PROFILE has not read, which only PROFILE moves. The ring is full
// when they are equal: it holds one record fewer than its slots.

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
	size := RingRecordSize * uint64(r.Records)
	if r.Goroutine {
		return goRecordCode(r, tag)
	}
	if r.Table == 0 || r.Records < 2 || r.Records&(r.Records-1) != 0 || RingStride(r.Records) > 1<<30 || tag > 1<<31-1 {
		return RecordCode{}, false
	}
	const x16, x17, sp = 16, 17, 31
	bits := uint32(0)
	for 1<<bits < size {
		bits++
	}
	var w []uint32
	emit := func(ws ...uint32) { w = append(w, ws...) }
	str := func(rt, rn, off uint32) uint32 { return 0xf9000000 | off/8<<10 | rn<<5 | rt } // STR (immediate)
	// The bitmask immediates of A-1 (bits ones from bit 0) and of its
	// complement: N=1, immr, imms (C4.1 "Logical (immediate)").
	low := 1<<22 | (bits-1)<<10
	high := 1<<22 | (64-bits)<<16 | (63-bits)<<10
	and := func(rd, rn, mask uint32) uint32 { return 0x92000000 | mask | rn<<5 | rd }
	const (
		isb      = 0xd5033fdf
		mrsCount = 0xd53be040 | x17 // MRS x17, CNTVCT_EL0 (op0 3, op1 3, CRn 14, CRm 0, op2 2)
		movSP    = 0x91000000 | sp<<5 | x17
		loadCur  = 0xf9400000 | x16<<5 | x17 // LDR x17, [x16]
		loadHead = 0xb9400000 | x16<<5 | x17 // LDR w17, [x16]
	)
	emit(0x91000000 | sp<<5 | x16)                                                               // MOV x16, sp
	emit(0xd3400000 | DepthTablePage<<16 | (DepthTablePage+DepthTableBits-1)<<10 | x16<<5 | x16) // UBFX (UBFM)
	emit(a64MovImm(x17, r.Table)...)
	emit(0xb8607800 | x16<<16 | x17<<5 | x16) // LDR (register), 32-bit, LSL #2
	emit(a64MovImm(x17, r.Areas)...)
	emit(0x8b000000 | x16<<16 | x17<<5 | x16) // ADD (shifted register)
	retry := len(w)
	emit(loadCur, 0xca400000|x17<<16|32<<10|x17<<5|x17) // EOR (shifted register), LSR #32
	skip := len(w)
	emit(0x35000000 | 6<<5 | x17) // CBNZ w17, ok: six words on
	emit(isb, mrsCount, str(x17, x16, RingFullTime))
	emit(0xd4200000) // BRK #0
	full := len(w)
	emit(0x14000000 | uint32(retry-full)&0x3ffffff) // B retry
	emit(loadHead, 0x8b000000|x17<<16|x16<<5|x16)   // ADD x16, x16, x17
	emit(isb, mrsCount, str(x17, x16, RingRecords))
	emit(movSP, str(x17, x16, RingRecords+8))
	emit(0xd2800000|uint32(tag&0xffff)<<5|x17, 0xf2800000|1<<21|uint32(tag>>16&0xffff)<<5|x17) // MOVZ, MOVK lsl 16
	emit(str(x17, x16, RingRecords+16))
	emit(and(x17, x16, low), 0x91000000|RingRecordSize<<10|x17<<5|x17, and(x17, x17, low)) // ADD (immediate)
	emit(and(x16, x16, high))
	emit(0x889ffc00 | x16<<5 | x17) // STLR w17, [x16]
	code := make([]byte, 0, 4*len(w))
	for _, x := range w {
		code = binary.LittleEndian.AppendUint32(code, x)
	}
	unchecked := binary.LittleEndian.AppendUint32(nil, 0x14000006) // B ok
	return RecordCode{Code: code, Full: 4 * full, Skip: 4 * skip, Unchecked: unchecked, Scratch: true,
		Rollback: []Rollback{{From: 0, To: len(code)}}}, true
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
	size := RingRecordSize * uint64(r.Records)
	if !r.ThreadPointer || r.Records < 2 || r.Records&(r.Records-1) != 0 || RingStride(r.Records) > 1<<30 || tag >= recordGoroutine {
		return RecordCode{}, false
	}
	tag |= recordGoroutine
	const x16, x17, x28, sp = 16, 17, 28, 31
	bits := uint32(0)
	for 1<<bits < size {
		bits++
	}
	var w []uint32
	emit := func(ws ...uint32) { w = append(w, ws...) }
	str := func(rt, rn, off uint32) uint32 { return 0xf9000000 | off/8<<10 | rn<<5 | rt } // STR (immediate)
	low := 1<<22 | (bits-1)<<10
	high := 1<<22 | (64-bits)<<16 | (63-bits)<<10
	and := func(rd, rn, mask uint32) uint32 { return 0x92000000 | mask | rn<<5 | rd }
	const (
		isb      = 0xd5033fdf
		mrsCount = 0xd53be040 | x17 // MRS x17, CNTVCT_EL0
		mrsTP    = 0xd53bd040 | x16 // MRS x16, TPIDR_EL0 (op0 3, op1 3, CRn 13, CRm 0, op2 2)
		movSP    = 0x91000000 | sp<<5 | x17
		loadCur  = 0xf9400000 | x16<<5 | x17 // LDR x17, [x16]
		loadHead = 0xb9400000 | x16<<5 | x17 // LDR w17, [x16]
	)
	emit(mrsTP)
	retry := len(w)
	emit(loadCur, 0xca400000|x17<<16|32<<10|x17<<5|x17) // EOR (shifted register), LSR #32
	skip := len(w)
	emit(0x35000000 | 6<<5 | x17) // CBNZ w17, ok: six words on
	emit(isb, mrsCount, str(x17, x16, RingFullTime))
	emit(0xd4200000) // BRK #0
	full := len(w)
	emit(0x14000000 | uint32(retry-full)&0x3ffffff) // B retry
	emit(loadHead, 0x8b000000|x17<<16|x16<<5|x16)   // ADD x16, x16, x17
	emit(isb, mrsCount, str(x17, x16, RingRecords))
	emit(0xb4000000 | 5<<5 | x28)                                                              // CBZ x28, thread: five words on
	emit(0xf9400000 | 1<<10 | x28<<5 | x17)                                                    // LDR x17, [x28, #8]
	emit(0xcb206000 | x17<<16 | sp<<5 | x17)                                                   // SUB (extended register) x17, sp, x17, UXTX
	emit(0xcb1103f1)                                                                           // NEG x17, x17 (SUB x17, xzr, x17)
	emit(0x14000002)                                                                           // B store
	emit(movSP)                                                                                // thread: MOV x17, sp
	emit(str(x17, x16, RingRecords+8))                                                         // store
	emit(str(x28, x16, RingRecords+24))                                                        // the goroutine
	emit(0xd2800000|uint32(tag&0xffff)<<5|x17, 0xf2800000|1<<21|uint32(tag>>16&0xffff)<<5|x17) // MOVZ, MOVK lsl 16
	emit(str(x17, x16, RingRecords+16))
	emit(and(x17, x16, low), 0x91000000|RingRecordSize<<10|x17<<5|x17, and(x17, x17, low)) // ADD (immediate)
	emit(and(x16, x16, high))
	emit(0x889ffc00 | x16<<5 | x17) // STLR w17, [x16]
	code := make([]byte, 0, 4*len(w))
	for _, x := range w {
		code = binary.LittleEndian.AppendUint32(code, x)
	}
	unchecked := binary.LittleEndian.AppendUint32(nil, 0x14000006) // B ok
	return RecordCode{Code: code, Full: 4 * full, Skip: 4 * skip, Unchecked: unchecked, Scratch: true,
		Rollback: []Rollback{{From: 0, To: len(code)}}, ThreadPointer: true}, true
}

// ringUnread returns the slot after the stop and the records from there
// to the head.
func (arm64) ringUnread(area []byte, records int) (first, n int) {
	size := uint32(RingRecordSize * records)
	head := atomic.LoadUint32(word32(area, RingCursor))
	tail := (atomic.LoadUint32(word32(area, RingCursor+4)) + RingRecordSize) & (size - 1)
	return int(tail / RingRecordSize), int((head-tail)&(size-1)) / RingRecordSize
}

// ringRead moves the stop on by n records, round the ring.
func (arm64) ringRead(area []byte, records, n int) {
	size := uint32(RingRecordSize * records)
	stop := atomic.LoadUint32(word32(area, RingCursor+4))
	atomic.StoreUint32(word32(area, RingCursor+4), (stop+uint32(n)*RingRecordSize)&(size-1))
}

// ringReset sets the head to the first slot and the stop to the last.
func (arm64) ringReset(area []byte, records int) {
	atomic.StoreUint32(word32(area, RingCursor), 0)
	atomic.StoreUint32(word32(area, RingCursor+4), uint32(RingRecordSize*(records-1)))
}

// calibrationStep returns mul x9, x9, x9 (MADD with XZR, C6.2 "MADD"):
// it changes x9.
func (arm64) calibrationStep() []byte { return binary.LittleEndian.AppendUint32(nil, 0x9b097d29) }
