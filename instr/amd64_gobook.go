package instr

import "encoding/binary"

// The books of goroutines on amd64 (Book.Go): a Go function's entry and
// exit keep the books of the goroutine that runs them, not of the thread.
// The code is the thread's code (amd64_book.go) with the book's words
// addressed from r11, the goroutine's book's base, which the thread's
// block caches with the goroutine it is for:
//
//	test %r14,%r14; jz stop              no goroutine (the runtime's code
//	                                     on a thread without one),
//	cmp %r14,%gs:CURG; jne stop          or not the goroutine found last:
//	mov %gs:CURBOOK,%r11                 to PROFILE, which finds its book
//
// and the stack pointer its frames are keyed by the distance from the
// goroutine's stack top (g.stack.hi, the second word of g), which
// survives the copying of goroutine stacks; deeper is smaller, as a
// stack pointer's:
//
//	mov %rsp,%rcx; sub 8(%r14),%rcx      (lea -sp(%rsp),%rcx at an exit
//	                                     sp above the entry's)
//
// The code writes nothing on the goroutine's stack: its closer is
// reached by a jump, and saves what it uses in the goroutine's book
// (BookCloserCode). Go checks a goroutine's stack for room only at a
// function's entry, before the entry's site; nothing below the stack
// pointer is the code's to use.

// x86R11 is r11's number in ModRM, its low three bits with REX.B.
const x86R11 = 11

// bk appends op with register reg and the book's word at disp: %gs:disp
// in the thread's block, or, for a Go function's code, disp(%r11) in the
// goroutine's book.
func (a *bookAsm) bk(op, reg byte, disp uint64) {
	if !a.g {
		a.abs(op, reg, disp)
		return
	}
	a.c = append(a.c, 0x49, op, 0x80|reg<<3|x86R11&7)
	a.c = binary.LittleEndian.AppendUint32(a.c, uint32(disp))
}

// ext appends op with register r, one of r8 to r15, and the operand
// %gs:disp (the thread's block).
func (a *bookAsm) ext(op, r byte, disp uint64) {
	a.c = append(a.c, 0x65, 0x4c, op, (r&7)<<3|0x04, 0x25)
	a.c = binary.LittleEndian.AppendUint32(a.c, uint32(disp))
}

// byRAX appends op with register reg and the operand %gs:disp(%rax), or
// for a Go function's code disp(%r11,%rax).
func (a *bookAsm) byRAX(op, reg byte, disp uint64) {
	if a.g {
		a.c = append(a.c, 0x49, op, 0x84|reg<<3, x86RAX<<3|x86R11&7)
	} else {
		a.c = append(a.c, 0x65, 0x48, op, 0x80|reg<<3|x86RAX)
	}
	a.c = binary.LittleEndian.AppendUint32(a.c, uint32(disp))
}

// goBook appends, for a Go function's code, the finding of the
// goroutine's book (see above), and returns where the displacements of
// the jumps to the breakpoint end, for landAt.
func (a *bookAsm) goBook(b Book) []int {
	a.c = append(a.c, 0x4d, 0x85, 0xf6, 0x0f, 0x84, 0, 0, 0, 0) // test %r14,%r14; jz stop
	none := len(a.c)
	a.ext(x86CmpStore, 14, b.Offset+BookCurG) // cmp %r14,%gs:CURG
	a.c = append(a.c, 0x0f, 0x85, 0, 0, 0, 0) // jne stop
	miss := len(a.c)
	a.ext(x86MovLoad, x86R11, b.Offset+BookCurBook)
	return []int{none, miss}
}

// goKey appends, for a Go function's code, the key of its frame into
// rcx: the stack pointer less sp, less the goroutine's stack top.
func (a *bookAsm) goKey(sp int) {
	if sp == 0 {
		a.c = append(a.c, 0x48, 0x89, 0xe1) // mov %rsp,%rcx
	} else {
		a.c = append(a.c, 0x48, 0x8d, 0x4c, 0x24, byte(int8(-sp))) // lea -sp(%rsp),%rcx
	}
	a.c = append(a.c, 0x49, 0x2b, 0x4e, 0x08) // sub 8(%r14),%rcx
}

// landAt points the rel32 jumps whose displacements end at each of ends
// at to.
func (a *bookAsm) landAt(ends []int, to int) {
	for _, end := range ends {
		binary.LittleEndian.PutUint32(a.c[end-4:], disp32(int64(to-end)))
	}
}

// saveRegs appends the saving of the registers the code uses in the
// book's save slots, in the thread's block, and returns them: rax and
// rdx, and rcx where rcx is set, r8 where r8 is; a Go function's code
// saves rcx and r11, and r8 in the fifth slot (BookSaveMore).
func (a *bookAsm) saveRegs(b Book, rcx, r8 bool) []SavedReg {
	saved := []SavedReg{{Reg: amd64RAX, Offset: b.Offset + BookSave}, {Reg: amd64RDX, Offset: b.Offset + BookSave + 8}}
	if rcx || a.g {
		saved = append(saved, SavedReg{Reg: amd64RCX, Offset: b.Offset + BookSave + 16})
	}
	switch {
	case a.g && r8:
		saved = append(saved, SavedReg{Reg: amd64R11, Offset: b.Offset + BookSave + 24}, SavedReg{Reg: amd64R8, Offset: b.Offset + BookSaveMore})
	case a.g:
		saved = append(saved, SavedReg{Reg: amd64R11, Offset: b.Offset + BookSave + 24})
	case r8:
		saved = append(saved, SavedReg{Reg: amd64R8, Offset: b.Offset + BookSave + 24})
	}
	for _, s := range saved {
		a.move(x86MovStore, s)
	}
	return saved
}

// restoreRegs appends the loading of the registers saved back.
func (a *bookAsm) restoreRegs(saved []SavedReg) {
	for _, s := range saved {
		a.move(x86MovLoad, s)
	}
}

// move appends op (a load or a store) between register s.Reg and its
// save slot.
func (a *bookAsm) move(op byte, s SavedReg) {
	switch s.Reg {
	case amd64RAX:
		a.abs(op, x86RAX, s.Offset)
	case amd64RDX:
		a.abs(op, x86RDX, s.Offset)
	case amd64RCX:
		a.abs(op, x86RCX, s.Offset)
	case amd64R8:
		a.ext(op, x86R8, s.Offset)
	case amd64R11:
		a.ext(op, x86R11, s.Offset)
	}
}
