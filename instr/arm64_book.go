package instr

import "encoding/binary"

// The books kept in the program on arm64 (see book.go): a thread's book
// is in its area, found from the stack pointer through the stack table
// as a ring is (RecordCode); the time is the system counter's,
// CNTVCT_EL0, scaled to nanoseconds. The code uses x16 and x17, free at
// an entry and at a return (AAPCS64's intra-procedure-call registers),
// and x0-x3, which it saves in the book first and puts back last: they
// carry arguments at an entry and results at a return.

// locate appends the finding of the thread's area, into x16, through the
// stack table at table (as RecordCode's table form): areas plus the
// area's offset the table gives for the stack pointer's page.
func (a *a64Asm) locate(table, areas uint64) {
	a.emit(a64AddImm(a64X16, a64SP, 0))                                                                  // MOV x16, sp
	a.emit(0xd3400000 | DepthTablePage<<16 | (DepthTablePage+DepthTableBits-1)<<10 | a64X16<<5 | a64X16) // UBFX (UBFM)
	a.emit(a64MovImm(a64X17, table)...)
	a.emit(0xb8607800 | a64X16<<16 | a64X17<<5 | a64X16) // LDR (register), 32-bit, LSL #2
	a.emit(a64MovImm(a64X17, areas)...)
	a.emit(a64AddReg(a64X16, a64X17, a64X16))
}

// time appends the time into x0, in nanoseconds: the counter, read after
// an ISB where fence is set, scaled by the book's BookScale (x17 and x1
// changed); for an untimed book, 0 (mov x0, #0).
func (a *a64Asm) time(b Book, fence bool) {
	if b.Untimed {
		a.emit(a64MovImm(bookX0, 0)...)
		return
	}
	if fence {
		a.emit(a64ISB)
	}
	a.emit(a64MrsCounter|bookX0, a64Ldr(a64X17, a64X16, uint32(b.Offset+BookScale)))
	a.emit(a64Mul(bookX1, bookX0, a64X17), a64Umulh(bookX0, bookX0, a64X17), a64Extr(bookX0, bookX0, bookX1, BookScaleShift))
}

// offCPU appends, for the timed code of a book that is not a Go
// function's and has a clock (Book.Clock), the check that the thread
// stayed on its CPU since its last event, the time in x0 (x17 and x1
// changed). The page is at a fixed distance from the area, whatever the
// program wrote:
//
//	mov x17, #CLOCK+8; ldr w17, [x16, x17]         the page's updates,
//	ldr w1, [x16, #LOCK]; cmp w17, w1; b.eq 1f     as seen
//	str w17, [x16, #LOCK]; b stop                  else: noted, and to PROFILE
//	1:
func (a *a64Asm) offCPU(b Book) {
	if b.Clock == 0 || b.Go || b.Untimed {
		return
	}
	a.emit(a64MovImm(a64X17, b.Clock+PerfPageLock)...)
	a.emit(a64LdrReg32(a64X17, a64X16, a64X17), a64Ldr32(bookX1, a64X16, uint32(b.Offset+BookLock)), a64Cmp32(a64X17, bookX1))
	a.bcond(condEQ, "oncpu")
	a.emit(a64Str32(a64X17, a64X16, uint32(b.Offset+BookLock)))
	a.b("stop")
	a.label("oncpu")
}

// top appends the load of the top into x17 and its checks, to label
// stop where it is not in the shadow stack (cond: the condition taken
// past its end), and leaves the next frame's address in x17.
func (a *a64Asm) top(b Book, past uint32) {
	a.emit(a64Ldr(a64X17, a64X16, uint32(b.Offset+BookTop)))
	a.emit(a64SubsImm(a64XZR, a64X17, uint32(b.FrameAt(1))))
	a.bcond(condLO, "stop")
	a.emit(a64MovImm(bookX1, b.FrameAt(b.Frames))...)
	a.emit(a64CmpExt(a64X17, bookX1))
	a.bcond(past, "stop")
	a.emit(a64AddReg(a64X17, a64X16, a64X17))
}

// code returns the words as code, their branches resolved.
func (a *a64Asm) code() []byte { return a64Resolve(a.w, a.branches, a.labels) }

// BookEntryCode returns the code of the entry of function f that opens
// its call in the thread's book b (B its area, found as RecordCode's):
//
//	mov x16, sp; ubfx ...; ldr w16, [Table, ...]; add x16, Areas   B
//	stp x0, x1, [x16, #SAVE]
//	mrs x0, cntvct_el0; ldr x17, [x16, #SCALE]        the time, in
//	mul x1, x0, x17; umulh x0, x0, x17; extr x0, x0, x1, #32   nanoseconds
//	(offCPU: mov x17, #CLOCK+8; ...; b stop)          off its CPU since: to PROFILE
//	ldr x17, [x16, #TOP]                              the next frame
//	cmp x17, #FIRST; b.lo stop                        not in the shadow stack
//	mov x1, #END; cmp x17, x1; b.hs stop              (written over), or full
//	add x17, x16, x17
//	ldur x1, [x17, #SP-64]; cmp sp, x1; b.lo ok       below the open call
//	mov x1, sp; (closer)                              close the calls left at or
//	ldur x1, [x17, #SP-64]; cmp sp, x1; b.lo ok       below it, and look again
//	stop: brk #0                                      to PROFILE, which goes on at end
//	ok: str x0, [x17, #T]; str xzr, [x17, #CH]; mov x1, sp; str x1, [x17, #SP]
//	ldr x1, [x16, #HELD]; str x1, [x17, #HELD']
//	str xzr, [x17, #BENEATH]; str xzr, [x17, #KIDS]; mov x1, #f; str x1, [x17, #FN]
//	add x17, x17, #64; sub x1, x17, x16; str x1, [x16, #TOP]   commit: the frame open
//	ldr x0, [x16, #DEEPEST]; cmp x1, x0; b.ls 1f; str x1, [x16, #DEEPEST]   the depth
//	1: mov x17, #FIG(f); add x17, x16, x17
//	ldr x0, [x17, #OPEN]; add x0, x0, #1; str x0, [x17, #OPEN]   f's open calls
//	end: ldp x0, x1, [x16, #SAVE]
//
// Where b has a closer, x2 is saved too (str x2, [x16, #SAVE+16]), for
// the closer's return, and put back last. Where b keeps caller stacks
// (Book.Nodes), x2 and x3 are saved and put back as a pair (stp x2, x3,
// [x16, #SAVE+16]), and before the commit the call's node is found
// from its caller's (node: x0, the time stored in the frame, is free
// there), or added where it is missing; the table full stops the thread
// at the BRK, the commit not made, x0 the time again: PROFILE starts the
// table again and books the entry.
// The check of the CPU (offCPU), in the timed code of a function not
// Go's where b has a clock, writes BookLock before the commit: PROFILE
// reads it at any stop.
// Only the flags change, which no caller keeps across a call. The entry
// reads the counter without an ISB, as amd64's reads it without a fence.
func (arm64) BookEntryCode(b Book, f int) (BookCode, bool) {
	if !b.fitsA64(f) {
		return BookCode{}, false
	}
	var a a64Asm
	a.find(b)
	save := uint32(b.Offset + BookSave)
	a.emit(a64Stp(bookX0, bookX1, a64X16, save))
	if b.Nodes > 0 {
		a.emit(a64Stp(bookX2, bookX3, a64X16, save+16)) // (the node's search, and the closer's return)
	} else if b.Closer != 0 {
		a.emit(a64Str(bookX2, a64X16, save+16)) // (the closer's return)
	}
	more := a.goSave(b)
	saves := a.at()
	a.time(b, false)
	a.offCPU(b)
	key := a.key(b)
	a.top(b, condHS)
	check := func() {
		a.emit(a64Ldur(bookX1, a64X17, FrameSP-BookFrameSize), a64CmpExt(key, bookX1))
		a.bcond(condLO, "ok")
	}
	check()
	if b.Closer != 0 {
		a.emit(a64AddImm(bookX1, a64SP, 0)) // the key: frames at or below sp
		a.closer(b)
		check()
	}
	a.label("stop")
	a.emit(a64BRK)
	stop := a.at()
	a.label("ok")
	if !b.Counts(f) {
		// No call open, none moved out: not within the start function.
		a.emit(a64SubReg(bookX1, a64X17, a64X16), a64SubsImm(a64XZR, bookX1, uint32(b.FrameAt(1))))
		a.bcond(condNE, "in")
		a.emit(a64Ldr(bookX1, a64X16, uint32(b.FrameAt(0)+FrameSP)), a64CmnOne(bookX1))
		a.bcond(condEQ, "out")
		a.label("in")
	}
	a.emit(a64Str(bookX0, a64X17, FrameTime), a64Str(a64XZR, a64X17, FrameChildren))
	a.emit(a64AddImm(bookX1, key, 0), a64Str(bookX1, a64X17, FrameSP))
	a.emit(a64Ldr(bookX1, a64X16, uint32(b.Offset+BookHeld)), a64Str(bookX1, a64X17, FrameHeld))
	a.emit(a64Str(a64XZR, a64X17, FrameBeneath), a64Str(a64XZR, a64X17, FrameKids))
	a.emit(a64MovImm(bookX1, uint64(f))...)
	a.emit(a64Str(bookX1, a64X17, FrameFunc))
	if b.Nodes > 0 {
		a.node(b)
	}
	a.emit(a64AddImm(a64X17, a64X17, BookFrameSize), a64SubReg(bookX1, a64X17, a64X16))
	a.emit(a64Str(bookX1, a64X16, uint32(b.Offset+BookTop)))
	committed := a.at()
	a.emit(a64Ldr(bookX0, a64X16, uint32(b.Offset+BookDeepest)), a64CmpExt(bookX1, bookX0))
	a.bcond(condLS, "open")
	a.emit(a64Str(bookX1, a64X16, uint32(b.Offset+BookDeepest)))
	a.label("open")
	a.emit(a64MovImm(a64X17, b.FigureAt(f))...)
	a.emit(a64AddReg(a64X17, a64X16, a64X17))
	a.emit(a64Ldr(bookX0, a64X17, FigureOpen), a64AddImm(bookX0, bookX0, 1), a64Str(bookX0, a64X17, FigureOpen))
	a.label("out")
	a.back(b)
	a.emit(a64Ldp(bookX0, bookX1, a64X16, save))
	saved := []SavedReg{{Reg: bookX0, Offset: b.Offset + BookSave}, {Reg: bookX1, Offset: b.Offset + BookSave + 8}}
	if b.Nodes > 0 {
		saved = append(saved, SavedReg{Reg: bookX2, Offset: b.Offset + BookSave + 16}, SavedReg{Reg: bookX3, Offset: b.Offset + BookSave + 24})
		a.emit(a64Ldp(bookX2, bookX3, a64X16, save+16))
	} else if b.Closer != 0 {
		saved = append(saved, SavedReg{Reg: bookX2, Offset: b.Offset + BookSave + 16})
		a.emit(a64Ldr(bookX2, a64X16, save+16))
	}
	saved = a.restoreMore(saved, more)
	code := a.code()
	return BookCode{Code: code, Stop: stop, Saved: saved, Unchecked: a64Past(code), Scratch: true, Rollback: []Rollback{
		{From: 0, To: saves},
		{From: saves, To: committed, Restore: saved},
		{From: committed, To: len(code), Finish: true},
	}}, true
}

// BookExitCode returns the code of an exit of function f that closes its
// call in the thread's book b, where the stack pointer is the entry's
// plus sp (0 on arm64, whose return pops nothing, but for tests):
//
//	(B into x16, as at the entry)
//	stp x0, x1, [x16, #SAVE]; stp x2, x3, [x16, #SAVE+16]
//	isb; mrs x0, cntvct_el0; ...                      the time, in nanoseconds
//	(offCPU: mov x17, #CLOCK+8; ...; b stop)          off its CPU since: to PROFILE
//	str x0, [x16, #LAST]                              the last exit's
//	ldr x17, [x16, #TOP]; cmp x17, #FIRST; b.lo stop  not in the shadow stack
//	mov x1, #END; cmp x17, x1; b.hi stop
//	add x17, x16, x17; ldur x1, [x17, #SP-64]
//	cmp sp, x1; b.eq ok                               (sub x2, sp, #sp;
//	                                                  cmp x2, x1 where sp is not 0)
//	b.lo done                                         deeper: it closes nothing
//	sub x1, sp, #sp+1; (closer)                       close the calls left below
//	ldur x1, [x17, #SP-64]; cmp sp, x1; b.eq ok       it, and look again
//	stop: brk #0
//	ok: ldur x1, [x17, #FN-64]; mov x2, #f; cmp x1, x2
//	b.ne done                                         another's: closes nothing
//	sub x17, x17, #64; sub x1, x17, x16; str x1, [x16, #TOP]   commit: closed
//	ldr x1, [x17, #T]; sub x0, x0, x1                 its time,
//	ldr x1, [x16, #HELD]; ldr x2, [x17, #HELD']; sub x1, x1, x2; sub x0, x0, x1
//	                                                  less PROFILE's holds,
//	ldur x1, [x17, #CH-64]; add x1, x1, x0; stur x1, [x17, #CH-64]   the caller's children
//	ldr x1, [x17, #BENEATH]; add x1, x1, #1
//	ldur x2, [x17, #BENEATH-64]; add x2, x2, x1; stur x2, [x17, #BENEATH-64]
//	ldur x1, [x17, #KIDS-64]; add x1, x1, #1; stur x1, [x17, #KIDS-64]
//	ldr x1, [x17, #CH]; sub x1, x0, x1                its own time
//	mov x2, #FIG(f); add x2, x16, x2
//	calls += 1; self += x1; kids += the frame's kids  (ldr x3; add; str each)
//	open -= 1 (subs); b.ne done
//	incl += x0; outer += 1; beneath += the frame's beneath
//	done: ldp x0, x1, [x16, #SAVE]; ldp x2, x3, [x16, #SAVE+16]
//
// Where b keeps caller stacks (Book.Nodes), the call's node is read and
// checked before the commit, a node the book does not have (the
// program's writing) stopping the thread there:
//
//	ldur x3, [x17, #NODE-64]; sub x3, x3, #2              node 0 (none) or
//	mov x2, #NODES-2; cmp x3, x2; b.hs stop               beyond: PROFILE's
//
// and once the call is closed, its node gets its figures before the
// function does (nodeFigures), the own time worked out again after
// (x1 is the kids' and the calls beneath's register there):
//
//	mov x2, #NODE2; add x2, x16, x2; add x2, x2, x3, lsl #6
//	calls += 1; self += x1; incl += x0; kids, beneath += the frame's
//	ldr x1, [x17, #CH]; sub x1, x0, x1
//
// Only the flags change. The ISB makes the counter's reading wait for
// the function's last instructions, as amd64's lfence does.
func (arm64) BookExitCode(b Book, f int, sp int) (BookCode, bool) {
	if !b.fitsA64(f) || sp < 0 || sp > 4094 {
		return BookCode{}, false
	}
	var a a64Asm
	a.find(b)
	save := uint32(b.Offset + BookSave)
	a.emit(a64Stp(bookX0, bookX1, a64X16, save), a64Stp(bookX2, bookX3, a64X16, save+16))
	more := a.goSave(b)
	saves := a.at()
	a.time(b, true)
	a.offCPU(b)
	key := a.key(b)
	a.emit(a64Str(bookX0, a64X16, uint32(b.Offset+BookLast)))
	a.top(b, condHI)
	check := func() {
		a.emit(a64Ldur(bookX1, a64X17, FrameSP-BookFrameSize))
		if sp == 0 {
			a.emit(a64CmpExt(key, bookX1))
		} else {
			a.emit(a64SubImm(bookX2, key, uint32(sp)), a64CmpExt(bookX2, bookX1))
		}
	}
	check()
	a.bcond(condEQ, "ok")
	a.bcond(condLO, "done")
	if b.Closer != 0 {
		a.emit(a64SubImm(bookX1, a64SP, uint32(sp+1))) // the key: frames below the exit's
		a.closer(b)
		check()
		a.bcond(condEQ, "ok")
	}
	a.label("stop")
	a.emit(a64BRK)
	stop := a.at()
	a.label("ok")
	// The open call is f's, or the exit closes nothing (another
	// function's call with the same stack pointer: one that jumped into
	// f, whose exit was not seen).
	a.emit(a64Ldur(bookX1, a64X17, FrameFunc-BookFrameSize))
	a.emit(a64MovImm(bookX2, uint64(f))...)
	a.emit(a64CmpExt(bookX1, bookX2))
	a.bcond(condNE, "done")
	if b.Nodes > 0 {
		// The call's node, checked: node 0 (none: PROFILE books the
		// call by its path) and a node the program wrote over stop the
		// thread before the commit. x3 is the node less the first's.
		a.nodeCheck(b, bookX3, bookX2, "stop")
	}
	committed := a.closeTop(b, bookX2)
	if b.Nodes > 0 {
		a.emit(a64MovImm(bookX2, b.NodeAt(RootNode+1))...)
		a.emit(a64AddReg(bookX2, a64X16, bookX2), a64AddShift(bookX2, bookX2, bookX3, figureShift))
		a.nodeFigures(bookX2, bookX3, bookX1)
		a.emit(a64Ldr(bookX1, a64X17, FrameChildren), a64SubReg(bookX1, bookX0, bookX1)) // the own time again
	}
	a.emit(a64MovImm(bookX2, b.FigureAt(f))...)
	a.emit(a64AddReg(bookX2, a64X16, bookX2))
	a.figures(bookX2, bookX3, "done")
	a.label("done")
	a.back(b)
	a.emit(a64Ldp(bookX0, bookX1, a64X16, save), a64Ldp(bookX2, bookX3, a64X16, save+16))
	saved := a.restoreMore([]SavedReg{{Reg: bookX0, Offset: b.Offset + BookSave}, {Reg: bookX1, Offset: b.Offset + BookSave + 8},
		{Reg: bookX2, Offset: b.Offset + BookSave + 16}, {Reg: bookX3, Offset: b.Offset + BookSave + 24}}, more)
	code := a.code()
	return BookCode{Code: code, Stop: stop, Saved: saved, Unchecked: a64Past(code), Scratch: true, Rollback: []Rollback{
		{From: 0, To: saves},
		{From: saves, To: committed, Restore: saved},
		{From: committed, To: len(code), Finish: true},
	}}, true
}

// closer appends the call of the closer, its key in x1: the key stored,
// the closer's address read from the word b.Closer names (read-only to
// the program), and a branch to it with the return address in x2 (the
// link register, x30, is the function's own: it holds the return
// address at an entry and at an exit):
//
//	str x1, [x16, #KEY]; mov x1, #CLOSER; ldr x1, [x1]
//	adr x2, 1f; br x1
//	1:
func (a *a64Asm) closer(b Book) {
	a.emit(a64Str(bookX1, a64X16, uint32(b.Offset+BookKey)))
	a.emit(a64MovImm(bookX1, b.Closer)...)
	a.emit(a64Ldr(bookX1, bookX1, 0))
	a.emit(0x10000000|2<<5|bookX2, 0xd61f0000|bookX1<<5) // ADR x2, .+8; BR x1
}

// node appends the finding of the node of a call, whose frame is at x17
// (not yet open, its time stored, its function in x1), from its
// caller's, in the table of book b: the key in x1, the slot's offset in
// the table in x2, the table's address in x3, the slots searched from
// the key's (NodeSlot) on, each slot's key read into x0; the node found
// goes in the frame. A free slot, the node missing, gets the next node,
// which the code adds (its key in the node and in the slot, the count
// one more); the table full, the thread goes to label stop (PROFILE
// starts the table again), the time read back into x0 from the frame:
//
//	ldur x0, [x17, #NODE-64]; orr x1, x1, x0, lsl #32     the key
//	mov x2, #HASH; mul x2, x1, x2; lsr x2, x2, #(64-BITS); lsl x2, x2, #4
//	mov x3, #TABLE; add x3, x16, x3
//	1: ldr x0, [x3, x2]; cmp x0, x1; b.eq 2f              found
//	cbz x0, 3f                                            free: missing
//	add x2, x2, #16; and x2, x2, #SLOTS*16-1; b 1b
//	full: ldr x0, [x17, #T]; b stop
//	3: add x2, x3, x2; ldr x0, [x16, #COUNT]              the slot; the next node
//	mov x3, #NODES; cmp x0, x3; b.hs full
//	add x3, x0, #1; str x3, [x16, #COUNT]                 the node, taken
//	str x0, [x2, #8]                                      the slot's node
//	mov x3, #NODE0+KEY; add x3, x3, x0, lsl #6; add x3, x16, x3
//	str x1, [x3]                                          its key
//	str x1, [x2]; b 4f                                    found from now on
//	2: add x2, x3, x2
//	4: ldr x1, [x2, #8]; str x1, [x17, #NODE]
//
// The count goes up before the slot is keyed: a thread rolled back to
// the code's start from between the two (a signal) takes a node more,
// which stays unused; from the key on, it finds the node.
func (a *a64Asm) node(b Book) {
	bits := uint32(0)
	for 1<<bits < b.NodeSlots() {
		bits++
	}
	a.emit(a64Ldur(bookX0, a64X17, FrameNode-BookFrameSize), a64OrrShift(bookX1, bookX1, bookX0, 32))
	a.emit(a64MovImm(bookX2, NodeHash)...)
	a.emit(a64Mul(bookX2, bookX1, bookX2), a64Lsr(bookX2, bookX2, 64-bits), a64Lsl(bookX2, bookX2, 4))
	a.emit(a64MovImm(bookX3, b.NodeTableAt())...)
	a.emit(a64AddReg(bookX3, a64X16, bookX3))
	a.label("slot")
	a.emit(a64LdrReg(bookX0, bookX3, bookX2), a64CmpExt(bookX0, bookX1))
	a.bcond(condEQ, "found")
	a.cbz(bookX0, "free")
	a.emit(a64AddImm(bookX2, bookX2, BookNodeSlotSize), a64AndLow(bookX2, bookX2, bits+4))
	a.b("slot")
	a.label("full")
	a.emit(a64Ldr(bookX0, a64X17, FrameTime))
	a.b("stop")
	a.label("free")
	a.emit(a64AddReg(bookX2, bookX3, bookX2), a64Ldr(bookX0, a64X16, uint32(b.Offset+BookNodeCount)))
	a.emit(a64MovImm(bookX3, uint64(b.Nodes))...)
	a.emit(a64CmpExt(bookX0, bookX3))
	a.bcond(condHS, "full")
	a.emit(a64AddImm(bookX3, bookX0, 1), a64Str(bookX3, a64X16, uint32(b.Offset+BookNodeCount)))
	a.emit(a64Str(bookX0, bookX2, 8))
	a.emit(a64MovImm(bookX3, b.NodeAt(0)+NodeKey)...)
	a.emit(a64AddShift(bookX3, bookX3, bookX0, figureShift), a64AddReg(bookX3, a64X16, bookX3))
	a.emit(a64Str(bookX1, bookX3, 0), a64Str(bookX1, bookX2, 0))
	a.b("keyed")
	a.label("found")
	a.emit(a64AddReg(bookX2, bookX3, bookX2))
	a.label("keyed")
	a.emit(a64Ldr(bookX1, bookX2, 8), a64Str(bookX1, a64X17, FrameNode))
}

// nodeCheck appends the check of the node of the frame below x17, read
// into r less the first node's (RootNode+1), t the scratch: node 0 (a
// call with no node) and a node beyond the book's go to label fail.
func (a *a64Asm) nodeCheck(b Book, r, t uint32, fail string) {
	a.emit(a64Ldur(r, a64X17, FrameNode-BookFrameSize), a64SubImm(r, r, RootNode+1))
	a.emit(a64MovImm(int(t), uint64(b.Nodes-RootNode-1))...)
	a.emit(a64CmpExt(r, t))
	a.bcond(condHS, fail)
}

// closeTop appends the closing of the frame below x17, at the time in
// x0, as an exit makes it: the top moved down (the commit, whose end it
// returns), x17 the closed frame; then the call's time in x0, less what
// PROFILE held the thread since its entry, added to its caller's
// children, the calls beneath it and itself to its caller's calls
// beneath, one call to its caller's kids, and its own time in x1. It
// changes x1 and t.
func (a *a64Asm) closeTop(b Book, t uint32) int {
	a.emit(a64SubImm(a64X17, a64X17, BookFrameSize), a64SubReg(bookX1, a64X17, a64X16))
	a.emit(a64Str(bookX1, a64X16, uint32(b.Offset+BookTop)))
	committed := a.at()
	a.emit(a64Ldr(bookX1, a64X17, FrameTime), a64SubReg(bookX0, bookX0, bookX1))
	a.emit(a64Ldr(bookX1, a64X16, uint32(b.Offset+BookHeld)), a64Ldr(t, a64X17, FrameHeld))
	a.emit(a64SubReg(bookX1, bookX1, t), a64SubReg(bookX0, bookX0, bookX1))
	below := func(field int32) int32 { return field - BookFrameSize }
	a.emit(a64Ldur(bookX1, a64X17, below(FrameChildren)), a64AddReg(bookX1, bookX1, bookX0), a64Stur(bookX1, a64X17, below(FrameChildren)))
	a.emit(a64Ldr(bookX1, a64X17, FrameBeneath), a64AddImm(bookX1, bookX1, 1))
	a.emit(a64Ldur(t, a64X17, below(FrameBeneath)), a64AddReg(t, t, bookX1), a64Stur(t, a64X17, below(FrameBeneath)))
	a.emit(a64Ldur(bookX1, a64X17, below(FrameKids)), a64AddImm(bookX1, bookX1, 1), a64Stur(bookX1, a64X17, below(FrameKids)))
	a.emit(a64Ldr(bookX1, a64X17, FrameChildren), a64SubReg(bookX1, bookX0, bookX1))
	return committed
}

// figures appends the figures' part of closing a call, its time in x0,
// its own in x1 and its frame at x17, to the function's figures at the
// address in fig (t the scratch; x1 changed): one more call, its own
// time added, its kids, one call open less, and, where that was its last
// open call, its time with children, one more outermost call and the
// calls beneath it; else it goes to label done.
func (a *a64Asm) figures(fig, t uint32, done string) {
	a.inc(fig, t, FigureCalls)
	a.add(fig, t, FigureSelf, bookX1)
	a.emit(a64Ldr(bookX1, a64X17, FrameKids))
	a.add(fig, t, FigureKids, bookX1)
	a.emit(a64Ldr(t, fig, FigureOpen), a64SubsImm(t, t, 1), a64Str(t, fig, FigureOpen))
	a.bcond(condNE, done)
	a.add(fig, t, FigureInclusive, bookX0)
	a.inc(fig, t, FigureOuter)
	a.emit(a64Ldr(bookX1, a64X17, FrameBeneath))
	a.add(fig, t, FigureBeneath, bookX1)
}

// nodeFigures appends the figures' part of closing a call, its time in
// x0, its own in x1 and its frame at x17, to its node's figures at the
// address in node (t the scratch, v changed; a node's call is always its
// outermost): one more call, its own time, its time with children, its
// kids and the calls beneath it, each read into v.
func (a *a64Asm) nodeFigures(node, t, v uint32) {
	a.inc(node, t, FigureCalls)
	a.add(node, t, FigureSelf, bookX1)
	a.add(node, t, FigureInclusive, bookX0)
	a.emit(a64Ldr(v, a64X17, FrameKids))
	a.add(node, t, FigureKids, v)
	a.emit(a64Ldr(v, a64X17, FrameBeneath))
	a.add(node, t, FigureBeneath, v)
}

// add appends the addition of register reg to the word at field of the
// figures at the address in fig, t the scratch: ldr t; add t, t, reg;
// str t. inc adds one.
func (a *a64Asm) add(fig, t, field, reg uint32) {
	a.emit(a64Ldr(t, fig, field), a64AddReg(t, t, reg), a64Str(t, fig, field))
}

func (a *a64Asm) inc(fig, t, field uint32) {
	a.emit(a64Ldr(t, fig, field), a64AddImm(t, t, 1), a64Str(t, fig, field))
}

// BookCloserCode returns the closer of book b: reached from the book
// code (closer) with the time in x0, the book in x16, the next frame's
// address in x17, the key in the book and the return address in x2, it
// closes the frames at or below the key whose stack pointers are on the
// thread's stack (between its bounds), one after the other, at that
// time, as an exit would, and returns with the next frame's address in
// x17; it stops at a frame on another stack, or of no function the book
// knows, or, where b keeps caller stacks, of no node it has. It changes
// x1 and the flags, no other register; what it saves, it saves on the
// stack, below the stack pointer, which is free at an entry, an exit
// and a return site alike (48 bytes; 64 with nodes, x9 and x10 too):
//
//	stp x3, x4, [sp, #-48]!; stp x5, x6, [sp, #16]; stp x7, x8, [sp, #32]
//	ldr x4, [x16, #KEY]; ldr x5, [x16, #LO]
//	ldr x6, [x16, #HI]; sub x6, x6, x5                the stack's size
//	sub x1, x4, x5; cmp x1, x6; b.hs out              the key on it
//	loop: sub x1, x17, x16; cmp x1, #FIRST; b.ls out  no frame
//	ldur x1, [x17, #SP-64]; cmp x1, x4; b.hi out      above the key
//	sub x1, x1, x5; cmp x1, x6; b.hs out              on another stack
//	ldur x1, [x17, #FN-64]; mov x3, #FUNCS; cmp x1, x3; b.hs out
//	(ldur x9, [x17, #NODE-64]; sub x9, x9, #2; mov x3, #NODES-2
//	cmp x9, x3; b.hs out; mov x3, #NODE2; add x3, x16, x3
//	add x9, x3, x9, lsl #6                            with nodes: its node's)
//	mov x3, #FIG0; add x3, x16, x3; add x3, x3, x1, lsl #6   its figures
//	mov x7, x0                                        the time, kept
//	...                                               closed, as an exit closes it
//	                                                  (its node's figures first, x10
//	                                                  reading the frame's counts)
//	mov x0, x7; b loop
//	out: ldp x5, x6, [sp, #16]; ldp x7, x8, [sp, #32]; ldp x3, x4, [sp], #48
//	ret x2
func (arm64) BookCloserCode(b Book) ([]byte, bool) {
	if !b.fitsA64(0) || b.Go {
		return nil, false
	}
	const x3, x4, x5, x6, x7, x8, x9, x10 = 3, 4, 5, 6, 7, 8, 9, 10
	var a a64Asm
	saves := uint32(48) // x3 to x8, and x9 and x10 where b has nodes
	if b.Nodes > 0 {
		saves = 64
	}
	a.emit(0xa9800000|(0x80-saves/8)<<15|x4<<10|a64SP<<5|x3, a64Stp(x5, x6, a64SP, 16), a64Stp(x7, x8, a64SP, 32)) // STP, pre-index
	if b.Nodes > 0 {
		a.emit(a64Stp(x9, x10, a64SP, 48))
	}
	a.emit(a64Ldr(x4, a64X16, uint32(b.Offset+BookKey)), a64Ldr(x5, a64X16, uint32(b.Offset+BookStackLo)))
	a.emit(a64Ldr(x6, a64X16, uint32(b.Offset+BookStackHi)), a64SubReg(x6, x6, x5))
	a.emit(a64SubReg(bookX1, x4, x5), a64CmpExt(bookX1, x6))
	a.bcond(condHS, "out")
	a.label("loop")
	a.emit(a64SubReg(bookX1, a64X17, a64X16), a64SubsImm(a64XZR, bookX1, uint32(b.FrameAt(1))))
	a.bcond(condLS, "out")
	a.emit(a64Ldur(bookX1, a64X17, FrameSP-BookFrameSize), a64CmpExt(bookX1, x4))
	a.bcond(condHI, "out")
	a.emit(a64SubReg(bookX1, bookX1, x5), a64CmpExt(bookX1, x6))
	a.bcond(condHS, "out")
	a.emit(a64Ldur(bookX1, a64X17, FrameFunc-BookFrameSize))
	a.emit(a64MovImm(x3, uint64(b.Funcs))...)
	a.emit(a64CmpExt(bookX1, x3))
	a.bcond(condHS, "out")
	if b.Nodes > 0 {
		a.nodeCheck(b, x9, x3, "out")
		a.emit(a64MovImm(x3, b.NodeAt(RootNode+1))...)
		a.emit(a64AddReg(x3, a64X16, x3), a64AddShift(x9, x3, x9, figureShift))
	}
	a.emit(a64MovImm(x3, b.FigureAt(0))...)
	a.emit(a64AddReg(x3, a64X16, x3), a64AddShift(x3, x3, bookX1, figureShift))
	a.emit(a64AddImm(x7, bookX0, 0))
	a.closeTop(b, x8)
	if b.Nodes > 0 {
		a.nodeFigures(x9, x8, x10)
	}
	a.figures(x3, x8, "next")
	a.label("next")
	a.emit(a64AddImm(bookX0, x7, 0))
	a.emit(0x14000000 | uint32(a.labels["loop"]-len(a.w))&0x3ffffff) // B loop
	a.label("out")
	a.emit(a64Ldp(x5, x6, a64SP, 16), a64Ldp(x7, x8, a64SP, 32))
	if b.Nodes > 0 {
		a.emit(a64Ldp(x9, x10, a64SP, 48))
	}
	a.emit(0xa8c00000 | saves/8<<15 | x4<<10 | a64SP<<5 | x3) // LDP, post-index
	a.emit(0xd65f0000 | bookX2<<5)                            // RET x2
	return a.code(), true
}

// fitsA64 reports whether b has figures for function f, the stack table
// to find it by, and the offsets of its save slots, of its header and of
// its first frame within the immediates of the code's pairs of stores
// (STP's, up to 504), loads, stores and compare. The offsets of the
// figures and of the nodes' table and figures are moved into registers
// whole, within the 4 GiB of the book's end, as is the distance to the
// clock's lock word (Book.Clock), within 4 GiB of the area too.
func (b Book) fitsA64(f int) bool {
	return b.Frames >= 2 && f >= 0 && f < b.Funcs && b.Offset%16 == 0 && b.Table != 0 && b.Areas != 0 &&
		b.Offset+BookSave+16 <= 63*8 && b.FrameAt(1) < 1<<12 && b.Size()+b.Offset < 1<<32 && int64(b.Clock) > -1<<32 && int64(b.Clock) < 1<<32-PerfPageLock &&
		b.nodesFit() && (!b.Go || b.Closer == 0)
}

// a64Past returns a branch from the code's start past its end (B).
func a64Past(code []byte) []byte {
	return binary.LittleEndian.AppendUint32(nil, 0x14000000|uint32(len(code)/4)&0x3ffffff)
}

// nest moves sp down or up 16 bytes.
func (arm64) nest(down bool) []byte {
	if down {
		return binary.LittleEndian.AppendUint32(nil, 0xd10043ff) // sub sp, sp, #16
	}
	return binary.LittleEndian.AppendUint32(nil, 0x910043ff) // add sp, sp, #16
}
