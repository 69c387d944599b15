package instr

import "encoding/binary"

// The closer of the books kept in the program on amd64 (see book.go).

// BookCloserCode returns the closer of book b: called from the book code
// (call *%gs:CLOSER) with the time in rax, the top in rdx and the stack
// pointer in the book's key, it closes the frames at or below the key
// whose stack pointers are on the thread's stack (between its bounds),
// one after the other, at that time, as an exit would, and returns with
// the top in rdx; it stops at a frame on another stack, or of no
// function the book knows. It changes no other register, nor the flags
// the book code does not change; what it saves, it saves on the stack
// (a call's return address is there already: the stack below it is
// free at an entry, an exit and a return site alike).
//
//	push %r8; push %r9; push %rcx; mov %gs:KEY,%rcx
//	mov %gs:HI,%r9; sub %gs:LO,%r9                    the stack's size
//	mov %rcx,%r8; sub %gs:LO,%r8; cmp %r9,%r8; jae out   the key on it
//	loop: cmp $FIRST,%rdx; jbe out                    no frame
//	mov %gs:SP-64(%rdx),%r8; cmp %rcx,%r8; ja out     above the key
//	sub %gs:LO,%r8; cmp %r9,%r8; jae out              on another stack
//	mov %gs:FN-64(%rdx),%r8; cmp $FUNCS,%r8; jae out; shl $6,%r8
//	sub $64,%rdx; mov %rdx,%gs:TOP; push %rax         closed, as an exit
//	...                                               closes it (BookExitCode)
//	pop %rax; mov %gs:KEY,%rcx; jmp loop
//	out: pop %rcx; pop %r9; pop %r8; ret
//
// A Go function's closer (b.Go) is reached by a jump, its return address
// in the goroutine's book, and saves what it uses there too, not on the
// goroutine's stack: the book's save slots (the goroutine's book does
// not use them) hold the time (0), r8 (8), r9 (16) and the return
// address (24), with caller stacks r10 in goCloserR10, and it ends with
// the key back in rcx:
//
//	mov %r8,8(%r11); mov %r9,16(%r11); mov KEY(%r11),%rcx
//	...                                           as above, from r11
//	out: mov KEY(%r11),%rcx; mov 8(%r11),%r8; mov 16(%r11),%r9
//	jmp *24(%r11)
func (amd64) BookCloserCode(b Book) ([]byte, bool) {
	if !b.fits(0) {
		return nil, false
	}
	a := bookAsm{g: b.Go}
	a.closerSaves(b)
	a.bk(x86MovLoad, x86RCX, b.Offset+BookKey)
	var outs []int
	out := func(jcc byte) { // jcc rel32, to out
		a.c = append(a.c, 0x0f, jcc+0x10, 0, 0, 0, 0)
		outs = append(outs, len(a.c))
	}
	a.bkExt(x86MovLoad, x86R9, b.Offset+BookStackHi)
	a.bkExt(x86SubLoad, x86R9, b.Offset+BookStackLo)
	a.c = append(a.c, 0x49, 0x89, 0xc8) // mov %rcx,%r8
	a.bkExt(x86SubLoad, x86R8, b.Offset+BookStackLo)
	a.c = append(a.c, 0x4d, 0x39, 0xc8) // cmp %r9,%r8
	out(0x73)                           // jae out
	loop := len(a.c)
	a.c = append(a.c, 0x48, 0x81, 0xfa) // cmp $FIRST,%rdx
	a.c = binary.LittleEndian.AppendUint32(a.c, uint32(b.FrameAt(1)))
	out(0x76)                                                    // jbe out
	a.frameExt(x86MovLoad, x86R8, FrameSP-BookFrameSize)         // mov SP-64(frame),%r8
	a.c = append(a.c, 0x49, 0x39, 0xc8)                          // cmp %rcx,%r8
	out(0x77)                                                    // ja out
	a.bkExt(x86SubLoad, x86R8, b.Offset+BookStackLo)             //
	a.c = append(a.c, 0x4d, 0x39, 0xc8)                          // cmp %r9,%r8
	out(0x73)                                                    // jae out
	a.frameExt(x86MovLoad, x86R8, FrameFunc-BookFrameSize)       // mov FN-64(frame),%r8
	a.c = append(a.c, 0x49, 0x81, 0xf8)                          // cmp $FUNCS,%r8
	a.c = binary.LittleEndian.AppendUint32(a.c, uint32(b.Funcs)) //
	out(0x73)                                                    // jae out
	a.c = append(a.c, 0x49, 0xc1, 0xe0, figureShift)             // shl $6,%r8: the figures' offset
	var node func(op, reg byte, disp uint64)
	if b.Nodes > 0 {
		a.frameExt(x86MovLoad, x86R10, FrameNode-BookFrameSize) // mov NODE-64(frame),%r10
		a.nodeCheck(x86R10, b)
		out(0x73) // jae out
		node = a.nodeFigures(x86R10, b)
	}
	if a.g {
		a.bk(x86MovStore, x86RAX, b.Offset+BookSave)
	} else {
		a.c = append(a.c, 0x50) // push %rax
	}
	a.closeTop(b)
	a.figures(a.fig, b.FigureAt(0), node)
	if a.g {
		a.bk(x86MovLoad, x86RAX, b.Offset+BookSave)
	} else {
		a.c = append(a.c, 0x58) // pop %rax
	}
	a.bk(x86MovLoad, x86RCX, b.Offset+BookKey)
	a.c = binary.LittleEndian.AppendUint32(append(a.c, 0xe9), disp32(int64(loop-(len(a.c)+5)))) // jmp loop
	a.landAt(outs, len(a.c))
	a.closerReturn(b)
	return a.c, true
}

// closerSaves appends the closer's saving of the registers it uses: on
// the stack, or for a Go function's closer in the goroutine's book.
func (a *bookAsm) closerSaves(b Book) {
	if a.g {
		a.bkExt(x86MovStore, x86R8, b.Offset+BookSave+8)
		a.bkExt(x86MovStore, x86R9, b.Offset+BookSave+16)
		if b.Nodes > 0 {
			a.bkExt(x86MovStore, x86R10, b.Offset+goCloserR10)
		}
		return
	}
	a.c = append(a.c, 0x41, 0x50, 0x41, 0x51, 0x51) // push %r8; push %r9; push %rcx
	if b.Nodes > 0 {
		a.c = append(a.c, 0x41, 0x52) // push %r10
	}
}

// closerReturn appends the closer's end: the registers it saved back,
// and its return (a Go function's, with the key back in rcx, through
// the return address in the goroutine's book).
func (a *bookAsm) closerReturn(b Book) {
	if a.g {
		a.bk(x86MovLoad, x86RCX, b.Offset+BookKey)
		a.bkExt(x86MovLoad, x86R8, b.Offset+BookSave+8)
		a.bkExt(x86MovLoad, x86R9, b.Offset+BookSave+16)
		if b.Nodes > 0 {
			a.bkExt(x86MovLoad, x86R10, b.Offset+goCloserR10)
		}
		a.c = append(a.c, 0x41, 0xff, 0xa3) // jmp *SAVE+24(%r11)
		a.c = binary.LittleEndian.AppendUint32(a.c, uint32(b.Offset+BookSave+24))
		return
	}
	if b.Nodes > 0 {
		a.c = append(a.c, 0x41, 0x5a) // pop %r10
	}
	a.c = append(a.c, 0x59, 0x41, 0x59, 0x41, 0x58, 0xc3) // pop %rcx; pop %r9; pop %r8; ret
}

// goCloserR10 is where a Go function's closer with caller stacks saves
// r10 in the goroutine's book: the word of a thread's block that caches
// a goroutine, which a goroutine's book does not use.
const goCloserR10 = BookCurG

// bkExt appends op with register r, one of r8 to r15, and the book's
// word at disp (as bk).
func (a *bookAsm) bkExt(op, r byte, disp uint64) {
	if !a.g {
		a.ext(op, r, disp)
		return
	}
	a.c = append(a.c, 0x4d, op, 0x80|(r&7)<<3|x86R11&7)
	a.c = binary.LittleEndian.AppendUint32(a.c, uint32(disp))
}

// frameExt appends op with register r, one of r8 to r15, and the word
// at disp from the frame at rdx (as frame).
func (a *bookAsm) frameExt(op, r byte, disp int64) {
	if a.g { // disp(%r11,%rdx)
		a.c = append(a.c, 0x4d, op, 0x84|(r&7)<<3, x86RDX<<3|x86R11&7)
	} else { // %gs:disp(%rdx)
		a.c = append(a.c, 0x65, 0x4c, op, 0x80|(r&7)<<3|x86RDX)
	}
	a.c = binary.LittleEndian.AppendUint32(a.c, disp32(disp))
}
