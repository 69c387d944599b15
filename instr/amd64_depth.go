package instr

import (
	"encoding/binary"
)

// The call depth's code of amd64's trampolines (DepthCode): the shadow stack
// in the thread's block, after its counters.

// DepthCode returns the shadow-stack code of a trampoline (see [Depth]),
// with rcx (and rax in the Go form) saved in the block around it:
//
//	mov %rcx,%gs:D+0             C form: the key is rsp itself
//	mov %gs:D+16,%rcx            n, the frames on the shadow stack
//	test %rcx,%rcx; jz push
//	cmp %gs:D+40(,%rcx,8),%rsp   stack[n-1] against rsp
//	je done                      the same level: a sibling call (a loop
//	                             calling one function), nothing changes
//	1: jb push                   stack[n-1] is above: still live
//	dec %rcx; jz push            it has returned: pop it
//	cmp %gs:D+40(,%rcx,8),%rsp; jmp 1b
//	push: cmp $slots,%rcx; jae done
//	mov %rsp,%gs:D+48(,%rcx,8)
//	inc %rcx; mov %rcx,%gs:D+16
//	cmp %gs:D+24,%rcx; jbe done
//	mov %rcx,%gs:D+24            a new deepest nesting
//	done: mov %rsp,%gs:D+40      with d.Top: rsp is on top now (or
//	                             would be, past the slots)
//	mov %gs:D+0,%rcx
//
// With d.Top (the C form), the code starts with one compare:
//
//	cmp %rsp,%gs:D+40; je end    the last entry's rsp: a sibling call
//	                             changes nothing, and skips the rest
//
// (The rest placed out of line, after the trampoline's jump back, the
// common course would take no branch at all: 4 % faster on bench_mixed,
// whose hot calls are siblings, 9 % slower on Lua, whose are not, for
// their two branches more; docs/performance.md, "Counting at native
// speed".)
//
// The Go form keys frames by their distance from the goroutine's stack
// top (g.stack.hi, at 8(%r14)), in rax, and starts afresh when the
// goroutine is not the one of the frames. Only the flags change.
func (amd64) DepthCode(d Depth) (DepthCode, bool) {
	top := d.Top && !d.GoABI
	body := amd64DepthBody(d, top)
	if !top {
		return body, true
	}
	e := &amd64Emitter{offset: d.Offset}
	e.gs([]byte{0x48, 0x39}, 0x24, sibAbs, DepthTop) // cmp %rsp,%gs:D+40
	e.c = append(e.c, 0x0f, 0x84)                    // je end (rel32)
	e.c = binary.LittleEndian.AppendUint32(e.c, uint32(len(body.Code)))
	n := len(e.c)
	rb := []Rollback{{From: 0, To: n}}
	for _, r := range body.Rollback {
		r.From, r.To = r.From+n, r.To+n
		rb = append(rb, r)
	}
	return DepthCode{Code: append(e.c, body.Code...), Rollback: rb}, true
}

// amd64DepthBody returns DepthCode's code on its whole course, with top
// (Depth.Top) its store of the stack pointer left on top.
func amd64DepthBody(d Depth, top bool) DepthCode {
	e := &amd64Emitter{offset: d.Offset}
	// Short forward branches, their rel8 filled in at their target.
	var toPush, toDone []int
	e.mark()
	e.gs([]byte{0x48, 0x89}, 0x0c, sibAbs, DepthSave) // mov %rcx,%gs:D
	e.restore = append(e.restore, SavedReg{Reg: amd64RCX, Offset: d.Offset + DepthSave})
	e.mark()
	// compare is cmp stack[n-1] with the key: rsp, or rax in the Go form.
	compare := func() {
		if d.GoABI {
			e.gs([]byte{0x48, 0x3b}, 0x04, sibRCX8, DepthStack-8) // cmp stack[n-1],%rax: rax - stored
		} else {
			e.gs([]byte{0x48, 0x3b}, 0x24, sibRCX8, DepthStack-8) // cmp stack[n-1],%rsp: rsp - stored
		}
	}
	// live jumps when stack[n-1] is still live: its key shows it above.
	live := byte(0x72) // jb: rsp below the frame's
	if d.GoABI {
		e.goKey()
		live = 0x77 // ja: deeper than the frame
	}
	e.gs([]byte{0x48, 0x8b}, 0x0c, sibAbs, DepthCurrent) // mov %gs:D+16,%rcx
	e.c = append(e.c, 0x48, 0x85, 0xc9)                  // test %rcx,%rcx
	e.branch(0x74, &toPush)                              // jz push
	compare()
	e.branch(0x74, &toDone) // je done: a sibling call
	loop := len(e.c)
	e.branch(live, &toPush)             // j(b|a) push: live
	e.c = append(e.c, 0x48, 0xff, 0xc9) // dec %rcx
	e.branch(0x74, &toPush)             // jz push
	compare()
	e.c = append(e.c, 0xeb, byte(int8(loop-(len(e.c)+2)))) // jmp 1b
	e.land(toPush)
	e.c = append(e.c, 0x48, 0x81, 0xf9) // cmp $slots,%rcx
	e.c = binary.LittleEndian.AppendUint32(e.c, uint32(d.Slots))
	e.branch(0x73, &toDone) // jae done
	if d.GoABI {
		e.gs([]byte{0x48, 0x89}, 0x04, sibRCX8, DepthStack) // mov %rax,stack[n]
	} else {
		e.gs([]byte{0x48, 0x89}, 0x24, sibRCX8, DepthStack) // mov %rsp,stack[n]
	}
	e.c = append(e.c, 0x48, 0xff, 0xc1)                  // inc %rcx
	e.gs([]byte{0x48, 0x89}, 0x0c, sibAbs, DepthCurrent) // mov %rcx,%gs:D+16
	e.gs([]byte{0x48, 0x3b}, 0x0c, sibAbs, DepthMax)     // cmp %gs:D+24,%rcx
	e.branch(0x76, &toDone)                              // jbe done
	e.gs([]byte{0x48, 0x89}, 0x0c, sibAbs, DepthMax)     // mov %rcx,%gs:D+24
	e.land(toDone)
	if top {
		e.gs([]byte{0x48, 0x89}, 0x24, sibAbs, DepthTop) // mov %rsp,%gs:D+40
	}
	if d.GoABI {
		e.gs([]byte{0x48, 0x8b}, 0x04, sibAbs, DepthSave+8) // mov %gs:D+8,%rax
	}
	e.gs([]byte{0x48, 0x8b}, 0x0c, sibAbs, DepthSave) // mov %gs:D,%rcx
	return DepthCode{Code: e.c, Rollback: e.rollbacks()}
}

// The SIB bytes of DepthCode's operands: [disp32], [disp32+rcx*8].
const sibAbs, sibRCX8 = 0x25, 0xcd

// amd64Emitter builds DepthCode's code: instructions on the thread's block
// (GS-relative, from offset), short forward branches filled in at their
// target, and the points a thread is rolled back from, each with the
// registers saved before it.
type amd64Emitter struct {
	c       []byte
	offset  uint64
	rb      []Rollback
	restore []SavedReg
}

// gs emits the instruction op modrm sib disp32 with a GS override, its
// displacement offset+disp.
func (e *amd64Emitter) gs(op []byte, modrm byte, sib byte, disp uint64) {
	e.c = append(e.c, 0x65)
	e.c = append(e.c, op...)
	e.c = append(e.c, modrm, sib)
	e.c = binary.LittleEndian.AppendUint32(e.c, uint32(e.offset+disp))
}

// branch emits the short branch op, its rel8 noted in to for land.
func (e *amd64Emitter) branch(op byte, to *[]int) {
	e.c = append(e.c, op, 0)
	*to = append(*to, len(e.c)-1)
}

// land points the branches from at the code's end.
func (e *amd64Emitter) land(from []int) {
	for _, at := range from {
		e.c[at] = byte(len(e.c) - (at + 1))
	}
}

// mark starts a rollback range here, restoring the registers saved so
// far.
func (e *amd64Emitter) mark() {
	e.rb = append(e.rb, Rollback{From: len(e.c), Restore: append([]SavedReg(nil), e.restore...)})
}

// goKey emits the Go form's key: rax saved in the block, the shadow stack
// started afresh when the goroutine (r14) is not the one of its frames,
// then rax = g.stack.hi - rsp.
func (e *amd64Emitter) goKey() {
	e.gs([]byte{0x48, 0x89}, 0x04, sibAbs, DepthSave+8) // mov %rax,%gs:D+8
	e.restore = append(e.restore, SavedReg{Reg: amd64RAX, Offset: e.offset + DepthSave + 8})
	e.mark()
	e.gs([]byte{0x4c, 0x3b}, 0x34, sibAbs, DepthG) // cmp %gs:D+32,%r14
	var same []int
	e.branch(0x74, &same)                          // je: the same goroutine
	e.gs([]byte{0x4c, 0x89}, 0x34, sibAbs, DepthG) // mov %r14,%gs:D+32
	e.gs([]byte{0x48, 0xc7}, 0x04, sibAbs, DepthCurrent)
	e.c = append(e.c, 0, 0, 0, 0) // movq $0,%gs:D+16: a new shadow stack
	e.land(same)
	e.c = append(e.c, 0x49, 0x8b, 0x46, 0x08) // mov 8(%r14),%rax
	e.c = append(e.c, 0x48, 0x29, 0xe0)       // sub %rsp,%rax
}

// rollbacks returns the rollback ranges, each up to the next one's start
// and the last to the code's end.
func (e *amd64Emitter) rollbacks() []Rollback {
	rb := e.rb
	for i := range rb {
		if i+1 < len(rb) {
			rb[i].To = rb[i+1].From
		} else {
			rb[i].To = len(e.c)
		}
	}
	return rb
}
