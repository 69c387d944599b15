package instr

// The books of goroutines on arm64 (Book.Go): a Go function's entry and
// exit keep the books of the goroutine that runs them, as on amd64
// (amd64_gobook.go). A goroutine's stack is in no stack table, so the
// code finds the thread's area through TPIDR_EL0, which PROFILE sets to
// it for each thread of a program that has no other use for it (a Go
// program built without cgo, not a PIE: [Ring.ThreadPointer]); it saves
// x0-x3 in the area's book and x4, the key, in its fifth slot
// (BookSaveMore); the area caches the goroutine found last and its
// book's base, as a thread's block does on amd64; x28 is Go's goroutine
// register:
//
//	mrs x16, tpidr_el0                         the thread's area
//	stp x0, x1, [x16, #SAVE]; ...; str x4, [x16, #SAVEMORE]
//	(the time, by the thread's book's scale)
//	cbz x28, stop                              no goroutine
//	ldr x17, [x16, #CURG]; cmp x17, x28        not the goroutine found
//	b.ne stop                                  last: to PROFILE
//	ldr x16, [x16, #CURBOOK]                   the goroutine's book
//	ldr x4, [x28, #8]; sub x4, sp, x4          the key: sp less g.stack.hi
//	...                                        (the thread's code, x4 for sp)
//	mrs x16, tpidr_el0; ldp x0, x1, [x16, #SAVE]; ...; ldr x4, [x16, #SAVEMORE]
//
// The code writes nothing on the goroutine's stack, and has no closer:
// what a closer would close (a call a panic left open), PROFILE closes at
// the stop, by the books' rules (an arm64 exit is a four-byte RET or B,
// which a B replaces, so exits not seen are rare).

// a64MrsTPIDR is MRS Xt, TPIDR_EL0 (op0 3, op1 3, CRn 13, CRm 0, op2 2),
// Xt in bits 0-4; a64X4 the key's register, a64X28 Go's goroutine
// register.
const (
	a64MrsTPIDR = 0xd53bd040
	a64X4       = 4
	a64X28      = 28
)

// a64SubExtSP is SUB (extended register), UXTX: rd = sp - rm (rn 31 is
// sp in this form).
func a64SubExtSP(rd, rm uint32) uint32 { return 0xcb206000 | rm<<16 | a64SP<<5 | rd }

// goLocate appends the finding of the thread's area into x16, through
// the thread pointer.
func (a *a64Asm) goLocate() { a.emit(a64MrsTPIDR | a64X16) }

// goBook appends, for a Go function's code, the finding of the
// goroutine's book into x16 and of the frame's key into x4 (see above);
// a thread with no goroutine, or another than its area names, goes to
// label stop.
func (a *a64Asm) goBook(b Book) {
	a.cbz(a64X28, "stop")
	a.emit(a64Ldr(a64X17, a64X16, uint32(b.Offset+BookCurG)), a64CmpExt(a64X17, a64X28))
	a.bcond(condNE, "stop")
	a.emit(a64Ldr(a64X16, a64X16, uint32(b.Offset+BookCurBook)))
	a.emit(a64Ldr(a64X4, a64X28, 8), a64SubExtSP(a64X4, a64X4))
}

// goSave appends, for a Go function's code, the saving of x4 in the
// thread's area (x16), and returns its slot; nothing for other code.
func (a *a64Asm) goSave(b Book) []SavedReg {
	if !b.Go {
		return nil
	}
	a.emit(a64Str(a64X4, a64X16, uint32(b.Offset+BookSaveMore)))
	return []SavedReg{{Reg: a64X4, Offset: b.Offset + BookSaveMore}}
}

// find appends the finding of the book's area into x16: the thread's
// through its thread pointer for a Go function's code, else through the
// stack table.
func (a *a64Asm) find(b Book) {
	if b.Go {
		a.goLocate()
		return
	}
	a.locate(b.Table, b.Areas)
}

// key appends, for a Go function's code, the finding of its goroutine's
// book and its frame's key (goBook), and returns the register that holds
// the key its frames are compared by: x4, or sp.
func (a *a64Asm) key(b Book) uint32 {
	if !b.Go {
		return a64SP
	}
	a.goBook(b)
	return a64X4
}

// back appends, for a Go function's code, the finding of the thread's
// area again, where the registers were saved.
func (a *a64Asm) back(b Book) {
	if b.Go {
		a.goLocate()
	}
}

// restoreMore appends the loading of the registers more saves (goSave)
// and returns saved with them.
func (a *a64Asm) restoreMore(saved, more []SavedReg) []SavedReg {
	for _, s := range more {
		a.emit(a64Ldr(uint32(s.Reg), a64X16, uint32(s.Offset)))
	}
	return append(saved, more...)
}
