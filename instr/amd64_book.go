package instr

import "encoding/binary"

// The books kept in the program on amd64 (see book.go): the book is in
// the thread's block, which GS points to.

// x86 register numbers in ModRM, and the opcodes the book code uses.
const (
	x86RAX, x86RCX, x86RDX, x86RSP = 0, 1, 2, 4
	x86R8, x86R9, x86R10           = 8, 9, 10 // (their low three bits, with REX.R or REX.B)

	x86MovStore = 0x89 // mov r64 -> r/m64
	x86MovLoad  = 0x8b // mov r/m64 -> r64
	x86AddStore = 0x01 // add r64 to r/m64
	x86AddLoad  = 0x03 // add r/m64 to r64
	x86SubLoad  = 0x2b // sub r/m64 from r64
	x86CmpStore = 0x39 // cmp r/m64 with r64 (flags of r/m64 - r64)
	x86IncDec   = 0xff // inc (/0), dec (/1) r/m64
	x86MovImm   = 0xc7 // mov imm32 (sign-extended) -> r/m64
)

// bookAsm assembles book code: each operand in the block GS points to,
// at an absolute offset or at an offset from rdx (a frame); or, for a Go
// function's code (g), the book's words in the goroutine's book, from
// r11 (amd64_gobook.go).
type bookAsm struct {
	c       []byte
	g       bool
	untimed bool // (Book.Untimed)
}

// abs appends op with register reg (or the opcode extension) and the
// operand %gs:disp.
func (a *bookAsm) abs(op, reg byte, disp uint64) {
	a.c = append(a.c, 0x65, 0x48, op, reg<<3|0x04, 0x25)
	a.c = binary.LittleEndian.AppendUint32(a.c, uint32(disp))
}

// frame appends op with register reg and the operand %gs:disp(%rdx);
// disp may be negative (the frame below).
func (a *bookAsm) frame(op, reg byte, disp int64) {
	if a.g { // disp(%r11,%rdx)
		a.c = append(a.c, 0x49, op, 0x84|reg<<3, x86RDX<<3|x86R11&7)
		a.c = binary.LittleEndian.AppendUint32(a.c, uint32(int32(disp)))
		return
	}
	a.c = append(a.c, 0x65, 0x48, op, 0x80|reg<<3|x86RDX)
	a.c = binary.LittleEndian.AppendUint32(a.c, uint32(int32(disp)))
}

// time appends the time into rax, in nanoseconds: rdtsc, fenced first
// where fence is set, scaled by the book's BookScale (b at offset off);
// for an untimed book, 0 (xor %eax,%eax).
func (a *bookAsm) time(fence bool, off uint64) {
	if a.untimed {
		a.c = append(a.c, 0x31, 0xc0)
		return
	}
	if fence {
		a.c = append(a.c, 0x0f, 0xae, 0xe8) // lfence
	}
	a.c = append(a.c, 0x0f, 0x31, 0x48, 0xc1, 0xe2, 0x20, 0x48, 0x09, 0xd0) // rdtsc; shl $32,%rdx; or %rdx,%rax
	a.abs(0xf7, 4, off+BookScale)                                           // mulq %gs:SCALE (rdx:rax)
	a.c = append(a.c, 0x48, 0x0f, 0xac, 0xd0, BookScaleShift)               // shrd $32,%rdx,%rax
}

// offCPU appends, for the timed code of a book that is not a Go
// function's, the check that the thread stayed on its CPU since its last
// event (Book.Clock), the time in rax:
//
//	mov %gs:CLOCK+8,%edx; cmp %edx,%gs:LOCK; je 1f   the page's updates, as seen
//	mov %edx,%gs:LOCK; jmp stop                      else: noted, and to PROFILE
//	1:
//
// It returns where the jump to the breakpoint ends, for land (nil where
// the code checks nothing).
func (a *bookAsm) offCPU(b Book) []int {
	if a.g || a.untimed || b.Clock == 0 {
		return nil
	}
	a.c = append(a.c, 0x65, 0x8b, 0x14, 0x25)
	a.c = binary.LittleEndian.AppendUint32(a.c, uint32(b.Clock+PerfPageLock)) // mov %gs:CLOCK+8,%edx
	a.c = append(a.c, 0x65, 0x39, 0x14, 0x25)
	a.c = binary.LittleEndian.AppendUint32(a.c, uint32(b.Offset+BookLock)) // cmp %edx,%gs:LOCK
	a.c = append(a.c, 0x74, 0)                                             // je
	same := len(a.c)
	a.c = append(a.c, 0x65, 0x89, 0x14, 0x25)
	a.c = binary.LittleEndian.AppendUint32(a.c, uint32(b.Offset+BookLock)) // mov %edx,%gs:LOCK
	a.c = append(a.c, 0xeb, 0)                                             // jmp stop
	jump := len(a.c)
	a.land([]int{same}, len(a.c))
	return []int{jump}
}

// stop appends the breakpoint the thread stops at when the code leaves
// the event to PROFILE; cond is the short conditional jump (its opcode)
// that goes on without it. It returns the offset after the breakpoint.
func (a *bookAsm) stop(cond byte) int {
	a.c = append(a.c, cond, 1, 0xcc) // jcc over the int3
	return len(a.c)
}

// slow appends, where book b has a closer, the jump over the slow path
// when the check just made holds (cond, a short conditional jump), and
// the slow path: key leaves the stack pointer for the closer, the
// closer is called (call *CLOSER, through the word b.Closer names), and
// check checks again. It returns where the jump's displacement ends, to
// be landed past the breakpoint.
func (a *bookAsm) slow(b Book, cond byte, key, check func()) []int {
	if b.Closer == 0 {
		return nil
	}
	a.c = append(a.c, cond, 0)
	fast := len(a.c)
	key()
	a.closer(b)
	check()
	return []int{fast}
}

// closer appends the call of the closer, through the word b.Closer
// names: call *CLOSER; for a Go function's code, a jump, its return
// address in the goroutine's book (BookCloserCode):
//
//	lea 1f(%rip),%rcx; mov %rcx,SAVE+24(%r11); jmp *CLOSER; 1:
func (a *bookAsm) closer(b Book) {
	if a.g {
		var st bookAsm
		st.g = true
		st.bk(x86MovStore, x86RCX, b.Offset+BookSave+24)
		a.c = binary.LittleEndian.AppendUint32(append(a.c, 0x48, 0x8d, 0x0d), uint32(len(st.c)+7))
		a.c = append(append(a.c, st.c...), 0xff, 0x24, 0x25)
		a.c = binary.LittleEndian.AppendUint32(a.c, uint32(b.Closer))
		return
	}
	a.c = append(a.c, 0xff, 0x14, 0x25)
	a.c = binary.LittleEndian.AppendUint32(a.c, uint32(b.Closer))
}

// past returns a jump from the code's start past its end.
func (a *bookAsm) past() []byte {
	return binary.LittleEndian.AppendUint32([]byte{0xe9}, uint32(len(a.c)-5)) // jmp rel32
}

// bounds appends the checks that the top in rdx is in the shadow stack,
// from its first frame after the root to its end, which jump to the
// breakpoint where it is not: a top the program wrote over leaves the
// thread to PROFILE, and the code reads and writes nothing outside the
// book. above is the short conditional jump taken past the end (jae
// where the top may not be the end, ja where it may). It returns where
// the jumps' displacements are, for land.
func (a *bookAsm) bounds(b Book, above byte) []int {
	var jumps []int
	for _, c := range []struct {
		bound uint64
		jcc   byte
	}{{b.FrameAt(1), 0x72}, {b.FrameAt(b.Frames), above}} { // jb, then above
		a.c = append(a.c, 0x48, 0x81, 0xfa) // cmp $bound,%rdx
		a.c = binary.LittleEndian.AppendUint32(a.c, uint32(c.bound))
		a.c = append(a.c, c.jcc, 0)
		jumps = append(jumps, len(a.c))
	}
	return jumps
}

// land points the short jumps that end at each of ends at to.
func (a *bookAsm) land(ends []int, to int) {
	for _, end := range ends {
		a.c[end-1] = byte(int8(to - end))
	}
}

// BookEntryCode returns the code of the entry of function f that opens
// its call in the thread's book b:
//
//	mov %rax,%gs:B+0; mov %rdx,%gs:B+8
//	rdtsc; shl $32,%rdx; or %rdx,%rax             the time,
//	mulq %gs:SCALE; shrd $32,%rdx,%rax            in nanoseconds
//	(offCPU: jmp stop where the thread left its CPU)
//	mov %gs:TOP,%rdx                              the next frame
//	cmp $FIRST,%rdx; jb stop                      not in the shadow stack
//	cmp $END,%rdx; jae stop                       (written over), or full
//	cmp %rsp,%gs:SP-64(%rdx); ja ok               below the open call
//	mov %rsp,%gs:KEY; call *%gs:CLOSER            close the calls left at or
//	cmp %rsp,%gs:SP-64(%rdx); ja ok               below it, and look again
//	stop: int3                                    to PROFILE, which goes on at end
//	ok: mov %rax,%gs:T(%rdx); movq $0,%gs:CH(%rdx); mov %rsp,%gs:SP(%rdx)
//	mov %gs:HELD,%rax; mov %rax,%gs:HELD'(%rdx)
//	movq $0,%gs:BENEATH(%rdx); movq $0,%gs:KIDS(%rdx); movq $f,%gs:FN(%rdx)
//	add $64,%rdx; mov %rdx,%gs:TOP                commit: the frame open
//	incq %gs:OPEN(f)                              f's open calls
//	cmp %rdx,%gs:DEEPEST; jae 1f; mov %rdx,%gs:DEEPEST   the call depth
//	1: end: mov %gs:B+0,%rax; mov %gs:B+8,%rdx
//
// rax and rdx carry arguments at an entry: they come back as they were;
// only the flags change. The entry reads the counter without a fence:
// read early, it moves some tens of cycles of the caller's work into the
// call, which the exit's fenced reading bounds.
func (amd64) BookEntryCode(b Book, f int) (BookCode, bool) {
	if !b.fits(f) {
		return BookCode{}, false
	}
	a := bookAsm{g: b.Go, untimed: b.Untimed}
	saved := a.saveRegs(b, b.Nodes > 0, b.Nodes > 0)
	saves := len(a.c)
	a.time(false, b.Offset)
	waited := a.offCPU(b)
	var misses []int
	sp := byte(x86RSP)
	if a.g {
		misses = a.goBook(b)
		a.goKey(0)
		sp = x86RCX
	}
	a.bk(x86MovLoad, x86RDX, b.Offset+BookTop)
	jumps := a.bounds(b, 0x73) // jae: full
	a.frame(x86CmpStore, sp, FrameSP-BookFrameSize)
	fast := a.slow(b, 0x77, func() { // ja ok
		a.bk(x86MovStore, sp, b.Offset+BookKey) // frames at or below rsp
	}, func() { a.frame(x86CmpStore, sp, FrameSP-BookFrameSize) })
	stop := a.stop(0x77) // ja ok
	a.land(fast, stop)
	a.land(append(jumps, waited...), stop-1)
	a.landAt(misses, stop-1)
	var outside []int
	if !b.Counts(f) {
		// No call open, none moved out: not within the start function.
		a.c = append(a.c, 0x48, 0x81, 0xfa) // cmp $FIRST,%rdx
		a.c = binary.LittleEndian.AppendUint32(a.c, uint32(b.FrameAt(1)))
		a.c = append(a.c, 0x75, 0) // jne in
		in := len(a.c)
		a.bk(0x83, 7, b.FrameAt(0)+FrameSP) // cmpq $-1,ROOT.SP
		a.c = append(a.c, 0xff, 0x0f, 0x84, 0, 0, 0, 0)
		outside = append(outside, len(a.c)) // je out
		a.c[in-1] = byte(len(a.c) - in)
	}
	a.frame(x86MovStore, x86RAX, FrameTime)
	a.frame(x86MovImm, 0, FrameChildren)
	a.c = binary.LittleEndian.AppendUint32(a.c, 0)
	a.frame(x86MovStore, sp, FrameSP)
	a.bk(x86MovLoad, x86RAX, b.Offset+BookHeld)
	a.frame(x86MovStore, x86RAX, FrameHeld)
	a.frame(x86MovImm, 0, FrameBeneath)
	a.c = binary.LittleEndian.AppendUint32(a.c, 0)
	a.frame(x86MovImm, 0, FrameKids)
	a.c = binary.LittleEndian.AppendUint32(a.c, 0)
	a.frame(x86MovImm, 0, FrameFunc)
	a.c = binary.LittleEndian.AppendUint32(a.c, uint32(f))
	if b.Nodes > 0 {
		a.node(b, f, stop-1)
	}
	a.c = append(a.c, 0x48, 0x83, 0xc2, BookFrameSize) // add $64,%rdx
	a.bk(x86MovStore, x86RDX, b.Offset+BookTop)
	committed := len(a.c)
	a.bk(x86IncDec, 0, b.FigureAt(f)+FigureOpen)
	a.bk(x86CmpStore, x86RDX, b.Offset+BookDeepest)
	a.c = append(a.c, 0x73, 0) // jae over the mov
	over := len(a.c)
	a.bk(x86MovStore, x86RDX, b.Offset+BookDeepest)
	a.c[over-1] = byte(len(a.c) - over)
	a.landAt(outside, len(a.c)) // out:
	a.restoreRegs(saved)
	return BookCode{Code: a.c, Stop: stop, Saved: saved, Unchecked: a.past(), Rollback: []Rollback{
		{From: 0, To: saves},
		{From: saves, To: committed, Restore: saved},
		{From: committed, To: len(a.c), Finish: true},
	}}, true
}

// BookExitCode returns the code of an exit of function f that closes its
// call in the thread's book b, where the stack pointer is the entry's
// plus sp (0 at the function's own exit, 8 where its call has returned):
//
//	mov %rax,%gs:B+0; mov %rdx,%gs:B+8; mov %rcx,%gs:B+16
//	lfence; rdtsc; shl $32,%rdx; or %rdx,%rax         the time,
//	mulq %gs:SCALE; shrd $32,%rdx,%rax                in nanoseconds
//	(offCPU: jmp stop where the thread left its CPU)
//	mov %rax,%gs:LAST                                 the last exit's
//	mov %gs:TOP,%rdx                                  the next frame
//	cmp $FIRST,%rdx; jb stop; cmp $END,%rdx; ja stop  not in the shadow stack
//	cmp %rsp,%gs:SP-64(%rdx); je ok                   (lea -sp(%rsp),%rcx first
//	                                                  where sp is not 0)
//	ja done                                           deeper: it closes nothing
//	lea -sp-1(%rsp),%rcx; mov %rcx,%gs:KEY            close the calls left
//	call *%gs:CLOSER; cmp %rsp,%gs:SP-64(%rdx); je ok below it, and look again
//	stop: int3
//	ok: cmpq $f,%gs:FN-64(%rdx); jne done             another's: closes nothing
//	sub $64,%rdx; mov %rdx,%gs:TOP                    commit: the call closed
//	sub %gs:T(%rdx),%rax                              its time,
//	mov %gs:HELD,%rcx; sub %gs:HELD'(%rdx),%rcx; sub %rcx,%rax   less PROFILE's holds,
//	add %rax,%gs:CH-64(%rdx)                          the caller's children
//	mov %gs:BENEATH(%rdx),%rcx; inc %rcx; add %rcx,%gs:BENEATH-64(%rdx)
//	incq %gs:KIDS-64(%rdx)                            the calls beneath the caller
//	mov %rax,%rcx; sub %gs:CH(%rdx),%rcx              its own time
//	incq %gs:CALLS(f); add %rcx,%gs:SELF(f)
//	mov %gs:KIDS(%rdx),%rcx; add %rcx,%gs:KIDS(f)     the calls it made
//	decq %gs:OPEN(f); jnz 1f; add %rax,%gs:INCL(f)    the outermost call:
//	incq %gs:OUTER(f); mov %gs:BENEATH(%rdx),%rcx; add %rcx,%gs:BENEATH(f)
//	1: done: mov %gs:B+0,%rax; mov %gs:B+8,%rdx; mov %gs:B+16,%rcx
//
// rax and rdx carry results at a return, and rcx a tail call's argument:
// they come back as they were; only the flags change. The lfence makes
// the reading of the counter wait for the function's last instructions.
func (amd64) BookExitCode(b Book, f int, sp int) (BookCode, bool) {
	if !b.fits(f) || sp < 0 || sp > 127 {
		return BookCode{}, false
	}
	a := bookAsm{g: b.Go, untimed: b.Untimed}
	saved := a.saveRegs(b, true, b.Nodes > 0)
	saves := len(a.c)
	a.time(true, b.Offset)
	waited := a.offCPU(b)
	var misses []int
	if a.g {
		misses = a.goBook(b)
	}
	a.bk(x86MovStore, x86RAX, b.Offset+BookLast)
	a.bk(x86MovLoad, x86RDX, b.Offset+BookTop)
	jumps := a.bounds(b, 0x77) // ja: past the end
	check := func() {
		reg := byte(x86RSP)
		switch {
		case a.g:
			a.goKey(sp)
			reg = x86RCX
		case sp != 0:
			a.c = append(a.c, 0x48, 0x8d, 0x4c, 0x24, byte(int8(-sp))) // lea -sp(%rsp),%rcx
			reg = x86RCX
		}
		a.frame(x86CmpStore, reg, FrameSP-BookFrameSize)
	}
	check()
	a.c = append(a.c, 0x74, 0) // je ok
	fast := len(a.c)
	a.c = append(a.c, 0x0f, 0x87, 0, 0, 0, 0) // ja done: deeper than the open call, it closes nothing
	deeper := len(a.c)
	if b.Closer != 0 {
		if a.g {
			a.c = append(a.c, 0x48, 0x8d, 0x49, 0xff) // lea -1(%rcx),%rcx: frames below
		} else {
			a.c = append(a.c, 0x48, 0x8d, 0x4c, 0x24, byte(int8(-sp-1))) // lea -sp-1(%rsp),%rcx
		}
		a.bk(x86MovStore, x86RCX, b.Offset+BookKey)
		a.closer(b)
		check()
	}
	stop := a.stop(0x74) // je ok
	a.land([]int{fast}, stop)
	a.land(append(jumps, waited...), stop-1)
	a.landAt(misses, stop-1)
	// The open call is f's, or the exit closes nothing (another
	// function's call with the same stack pointer: one that jumped into
	// f, whose exit was not seen).
	a.frame(0x81, 7, FrameFunc-BookFrameSize) // cmpq $f,FN-64(frame)
	a.c = binary.LittleEndian.AppendUint32(a.c, uint32(f))
	a.c = append(a.c, 0x0f, 0x85, 0, 0, 0, 0) // jne done
	other := len(a.c)
	var node func(op, reg byte, disp uint64)
	if b.Nodes > 0 {
		// The call's node, checked: node 0 (none: PROFILE books the
		// call by its path) and a node the program wrote over stop the
		// thread before the commit. Its figures at r8.
		a.frameExt(x86MovLoad, x86R8, FrameNode-BookFrameSize) // mov NODE-64(frame),%r8
		a.nodeCheck(x86R8, b)
		a.jcc(0x73, stop-1) // jae stop
		node = a.nodeFigures(x86R8, b)
	}
	committed := a.closeTop(b)
	a.figures(a.bk, b.FigureAt(f), node)
	a.landAt([]int{deeper, other}, len(a.c)) // done:
	a.restoreRegs(saved)
	return BookCode{Code: a.c, Stop: stop, Saved: saved, Unchecked: a.past(), Rollback: []Rollback{
		{From: 0, To: saves},
		{From: saves, To: committed, Restore: saved},
		{From: committed, To: len(a.c), Finish: true},
	}}, true
}

// fits reports whether b has figures for function f and every offset of
// its code fits a displacement.
func (b Book) fits(f int) bool {
	return b.Frames >= 2 && f >= 0 && f < b.Funcs && b.Offset%64 == 0 &&
		b.Offset+b.Size() < 1<<31 && b.Closer < 1<<31 && int64(b.Clock) > -1<<31 && int64(b.Clock) < 1<<31-PerfPageLock && b.nodesFit()
}

// nest moves rsp down or up 16 bytes, leaving the flags.
func (amd64) nest(down bool) []byte {
	if down {
		return []byte{0x48, 0x8d, 0x64, 0x24, 0xf0} // lea -0x10(%rsp),%rsp
	}
	return []byte{0x48, 0x8d, 0x64, 0x24, 0x10} // lea 0x10(%rsp),%rsp
}

// closeTop appends the closing of the top frame at the time in rax, as
// an exit makes it: the top moved down (the commit, whose end it
// returns), then the call's time in rax, less what PROFILE held the
// thread since its entry, added to its caller's children, the calls
// beneath it and itself to its caller's calls beneath, one call to its
// caller's kids, and its own time in rcx.
func (a *bookAsm) closeTop(b Book) int {
	a.c = append(a.c, 0x48, 0x83, 0xea, BookFrameSize) // sub $64,%rdx
	a.bk(x86MovStore, x86RDX, b.Offset+BookTop)
	committed := len(a.c)
	a.frame(x86SubLoad, x86RAX, FrameTime)
	a.bk(x86MovLoad, x86RCX, b.Offset+BookHeld)
	a.frame(x86SubLoad, x86RCX, FrameHeld)
	a.c = append(a.c, 0x48, 0x29, 0xc8) // sub %rcx,%rax
	a.frame(x86AddStore, x86RAX, FrameChildren-BookFrameSize)
	a.frame(x86MovLoad, x86RCX, FrameBeneath)
	a.c = append(a.c, 0x48, 0xff, 0xc1) // inc %rcx
	a.frame(x86AddStore, x86RCX, FrameBeneath-BookFrameSize)
	a.frame(x86IncDec, 0, FrameKids-BookFrameSize)
	a.c = append(a.c, 0x48, 0x89, 0xc1) // mov %rax,%rcx
	a.frame(x86SubLoad, x86RCX, FrameChildren)
	return committed
}

// figures appends the figures' part of closing a call, its time in rax,
// its own in rcx and its frame at rdx, to the function's figures at fig,
// each operand made by operand (abs: a function the code knows; fig: the
// closer's, at r8): one more call, its own time added, its kids, one
// call open less, and, where that was its last open call, its time with
// children, one more outermost call and the calls beneath it.
//
// Where node is not nil, the call's node gets its figures too, each
// operand made by node (a node's call is always its outermost): one
// more call, its own time, its time with children, its kids and the
// calls beneath it, and the calls beneath the call are read before the
// function's open calls are counted down.
func (a *bookAsm) figures(operand func(op, reg byte, disp uint64), fig uint64, node func(op, reg byte, disp uint64)) {
	operand(x86IncDec, 0, fig+FigureCalls)
	operand(x86AddStore, x86RCX, fig+FigureSelf)
	if node != nil {
		node(x86IncDec, 0, FigureCalls)
		node(x86AddStore, x86RCX, FigureSelf)
		node(x86AddStore, x86RAX, FigureInclusive)
	}
	a.frame(x86MovLoad, x86RCX, FrameKids)
	operand(x86AddStore, x86RCX, fig+FigureKids)
	if node != nil {
		node(x86AddStore, x86RCX, FigureKids)
		a.frame(x86MovLoad, x86RCX, FrameBeneath)
		node(x86AddStore, x86RCX, FigureBeneath)
	}
	operand(x86IncDec, 1, fig+FigureOpen)
	a.c = append(a.c, 0x75, 0) // jnz over the outermost call's figures
	jnz := len(a.c)
	operand(x86AddStore, x86RAX, fig+FigureInclusive)
	operand(x86IncDec, 0, fig+FigureOuter)
	if node == nil {
		a.frame(x86MovLoad, x86RCX, FrameBeneath)
	}
	operand(x86AddStore, x86RCX, fig+FigureBeneath)
	a.c[jnz-1] = byte(len(a.c) - jnz)
}

// nodeCheck appends the check of the node in r (r8 or r10): a node of a
// call of b's (from RootNode+1 up), after which the flags say jae where
// it is not one (node 0 included: a call with no node); r is the node
// less the first's:
//
//	sub $2,%r; cmp $NODES-2,%r
func (a *bookAsm) nodeCheck(r byte, b Book) {
	a.c = append(a.c, 0x49, 0x83, 0xe8|r&7, RootNode+1, 0x49, 0x81, 0xf8|r&7)
	a.c = binary.LittleEndian.AppendUint32(a.c, uint32(b.Nodes-RootNode-1))
}

// nodeFigures appends, r checked (nodeCheck), the shift of r to its
// figures' offset from the first node's (shl $6,%r), and returns the
// operand maker of its figures.
func (a *bookAsm) nodeFigures(r byte, b Book) func(op, reg byte, disp uint64) {
	a.c = append(a.c, 0x49, 0xc1, 0xe0|r&7, figureShift)
	return a.indexed(r, b.NodeAt(RootNode+1))
}

// indexed returns an operand maker of %gs:base+disp(%r), r one of r8 to
// r15; for a Go function's code, base+disp(%r11,%r).
func (a *bookAsm) indexed(r byte, base uint64) func(op, reg byte, disp uint64) {
	return func(op, reg byte, disp uint64) {
		if a.g {
			a.c = append(a.c, 0x4b, op, 0x84|reg<<3, (r&7)<<3|x86R11&7)
			a.c = binary.LittleEndian.AppendUint32(a.c, uint32(base+disp))
			return
		}
		a.c = append(a.c, 0x65, 0x49, op, 0x80|reg<<3|byte(r&7))
		a.c = binary.LittleEndian.AppendUint32(a.c, uint32(base+disp))
	}
}

// jcc appends a conditional jump (its short opcode) to offset to, rel32.
func (a *bookAsm) jcc(short byte, to int) {
	a.c = append(a.c, 0x0f, short+0x10)
	a.c = binary.LittleEndian.AppendUint32(a.c, disp32(int64(to-(len(a.c)+4))))
}

// node appends the finding of the node of a call of function f, whose
// frame is at rdx (not yet open), from its caller's, in the table of
// book b: the key in rcx, the slot's offset in r8, the slots searched
// from the key's (NodeSlot) on; the node found goes in the frame. A free
// slot, the node missing, gets the next node, which the code adds (its
// key in the node and in the slot, the count one more); the table full,
// the thread stops at the breakpoint at stop (PROFILE starts the table
// again), the time back in rax:
//
//	mov %gs:NODE-64(%rdx),%rcx; shl $32,%rcx; or $f,%rcx   the key
//	mov %rcx,%r8; movabs $HASH,%rax; imul %rax,%r8
//	shr $(64-BITS),%r8; shl $4,%r8
//	1: cmp %rcx,%gs:TABLE(%r8); je 2f                      found
//	cmpq $0,%gs:TABLE(%r8); je 3f                          free: missing
//	add $16,%r8; and $SLOTS*16-1,%r8; jmp 1b
//	full: mov %gs:T(%rdx),%rax; jmp stop
//	3: mov %gs:COUNT,%rax; cmp $NODES,%rax; jae full
//	incq %gs:COUNT; mov %rax,%gs:TABLE+8(%r8)              the node, taken
//	shl $6,%rax; mov %rcx,%gs:NODES+KEY(%rax)              its key
//	mov %rcx,%gs:TABLE(%r8)                                found from now on
//	2: mov %gs:TABLE+8(%r8),%rcx; mov %rcx,%gs:NODE(%rdx)
//
// The count goes up before the slot is keyed: a thread rolled back to
// the code's start from between the two (a signal) takes a node more,
// which stays unused; from the key on, it finds the node.
func (a *bookAsm) node(b Book, f int, stop int) {
	bits := 0
	for 1<<bits < b.NodeSlots() {
		bits++
	}
	table := b.NodeTableAt()
	a.frame(x86MovLoad, x86RCX, FrameNode-BookFrameSize)
	a.c = append(a.c, 0x48, 0xc1, 0xe1, 32, 0x48, 0x81, 0xc9) // shl $32,%rcx; or $f,%rcx
	a.c = binary.LittleEndian.AppendUint32(a.c, uint32(f))
	a.c = append(a.c, 0x49, 0x89, 0xc8, 0x48, 0xb8) // mov %rcx,%r8; movabs $HASH,%rax
	a.c = binary.LittleEndian.AppendUint64(a.c, NodeHash)
	a.c = append(a.c, 0x4c, 0x0f, 0xaf, 0xc0)                               // imul %rax,%r8
	a.c = append(a.c, 0x49, 0xc1, 0xe8, byte(64-bits), 0x49, 0xc1, 0xe0, 4) // shr; shl $4,%r8
	slot := a.indexed(x86R8, table)
	loop := len(a.c)
	slot(x86CmpStore, x86RCX, 0)
	a.c = append(a.c, 0x0f, 0x84, 0, 0, 0, 0) // je found
	found := len(a.c)
	slot(0x83, 7, 0) // cmpq $0,...
	a.c = append(a.c, 0)
	a.c = append(a.c, 0x74, 0) // je free
	free := len(a.c)
	a.c = append(a.c, 0x49, 0x83, 0xc0, BookNodeSlotSize, 0x49, 0x81, 0xe0) // add $16,%r8; and $MASK,%r8
	a.c = binary.LittleEndian.AppendUint32(a.c, uint32(BookNodeSlotSize*b.NodeSlots()-1))
	a.c = append(a.c, 0xeb, byte(int8(loop-(len(a.c)+2)))) // jmp 1b
	full := len(a.c)
	a.frame(x86MovLoad, x86RAX, FrameTime)
	a.c = binary.LittleEndian.AppendUint32(append(a.c, 0xe9), disp32(int64(stop-(len(a.c)+5)))) // jmp stop
	a.land([]int{free}, len(a.c))
	a.bk(x86MovLoad, x86RAX, b.Offset+BookNodeCount)
	a.c = binary.LittleEndian.AppendUint32(append(a.c, 0x48, 0x3d), uint32(b.Nodes)) // cmp $NODES,%rax
	a.c = append(a.c, 0x73, byte(int8(full-(len(a.c)+2))))                           // jae full
	a.bk(x86IncDec, 0, b.Offset+BookNodeCount)
	slot(x86MovStore, x86RAX, 8)
	a.c = append(a.c, 0x48, 0xc1, 0xe0, figureShift) // shl $6,%rax
	a.byRAX(x86MovStore, x86RCX, b.NodeAt(0)+NodeKey)
	slot(x86MovStore, x86RCX, 0)
	binary.LittleEndian.PutUint32(a.c[found-4:], uint32(len(a.c)-found))
	slot(x86MovLoad, x86RCX, 8)
	a.frame(x86MovStore, x86RCX, FrameNode)
}

// fig appends op with register reg and the operand %gs:disp(%r8).
func (a *bookAsm) fig(op, reg byte, disp uint64) {
	if a.g { // disp(%r11,%r8)
		a.c = append(a.c, 0x4b, op, 0x84|reg<<3, x86R11&7)
		a.c = binary.LittleEndian.AppendUint32(a.c, uint32(disp))
		return
	}
	a.c = append(a.c, 0x65, 0x49, op, 0x80|reg<<3)
	a.c = binary.LittleEndian.AppendUint32(a.c, uint32(disp))
}

// figureShift is log2(BookFigureSize): a function's figures are at its
// number shifted by it.
const figureShift = 6

// disp32 is a signed displacement's 32 bits.
func disp32(v int64) uint32 { return uint32(int32(v)) }
