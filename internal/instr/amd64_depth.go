// x86-64's call depth code (DepthCode): the shadow stack of timed calls kept in the thread's block.

package instr

import (
	"encoding/binary"
)

// DepthCode returns the shadow-stack code of a trampoline (see [Depth]),
// with rcx (and rax in the Go form) saved in the block around it:
//
//	mov %rcx,%gs:D+0             C form: the key is rsp itself
//	mov %gs:D+16,%rcx            n, the frames on the shadow stack
//	test %rcx,%rcx; jz push
//	cmp %gs:D+32(,%rcx,8),%rsp   stack[n-1] against rsp
//	je done                      the same level: a sibling call (a loop
//	                             calling one function), nothing changes
//	1: jb push                   stack[n-1] is above: still live
//	dec %rcx; jz push            it has returned: pop it
//	cmp %gs:D+32(,%rcx,8),%rsp; jmp 1b
//	push: cmp $slots,%rcx; jae done
//	mov %rsp,%gs:D+40(,%rcx,8)
//	inc %rcx; mov %rcx,%gs:D+16
//	cmp %gs:D+24,%rcx; jbe done
//	mov %rcx,%gs:D+24            a new deepest nesting
//	done: mov %gs:D+0,%rcx
//
// The Go form keys frames by their distance from the goroutine's stack
// top (g.stack.hi, at 8(%r14)), in rax, and starts afresh when the
// goroutine is not the one of the frames. Only the flags change.
func (amd64) DepthCode(d Depth) (DepthCode, bool) {
	var c []byte
	gs := func(op []byte, modrm byte, sib byte, disp uint64) {
		c = append(c, 0x65)
		c = append(c, op...)
		c = append(c, modrm, sib)
		c = binary.LittleEndian.AppendUint32(c, uint32(d.Offset+disp))
	}
	const sibAbs, sibRCX8 = 0x25, 0xcd // [disp32], [disp32+rcx*8]
	// Short forward branches, their rel8 filled in at their target.
	var toPush, toDone []int
	branch := func(op byte, to *[]int) {
		c = append(c, op, 0)
		*to = append(*to, len(c)-1)
	}
	land := func(from []int) {
		for _, at := range from {
			c[at] = byte(len(c) - (at + 1))
		}
	}
	var rb []Rollback
	var restore []SavedReg
	mark := func() { rb = append(rb, Rollback{From: len(c), Restore: append([]SavedReg(nil), restore...)}) }
	mark()
	gs([]byte{0x48, 0x89}, 0x0c, sibAbs, DepthSave) // mov %rcx,%gs:D
	restore = append(restore, SavedReg{Reg: amd64RCX, Offset: d.Offset + DepthSave})
	mark()
	// compare is cmp stack[n-1] with the key: rsp, or rax in the Go form.
	compare := func() {
		if d.GoABI {
			gs([]byte{0x48, 0x3b}, 0x04, sibRCX8, DepthStack-8) // cmp stack[n-1],%rax: rax - stored
		} else {
			gs([]byte{0x48, 0x3b}, 0x24, sibRCX8, DepthStack-8) // cmp stack[n-1],%rsp: rsp - stored
		}
	}
	// live jumps when stack[n-1] is still live: its key shows it above.
	live := byte(0x72) // jb: rsp below the frame's
	if d.GoABI {
		gs([]byte{0x48, 0x89}, 0x04, sibAbs, DepthSave+8) // mov %rax,%gs:D+8
		restore = append(restore, SavedReg{Reg: amd64RAX, Offset: d.Offset + DepthSave + 8})
		mark()
		gs([]byte{0x4c, 0x3b}, 0x34, sibAbs, DepthG) // cmp %gs:D+32,%r14
		var same []int
		branch(0x74, &same)                          // je: the same goroutine
		gs([]byte{0x4c, 0x89}, 0x34, sibAbs, DepthG) // mov %r14,%gs:D+32
		gs([]byte{0x48, 0xc7}, 0x04, sibAbs, DepthCurrent)
		c = append(c, 0, 0, 0, 0) // movq $0,%gs:D+16: a new shadow stack
		land(same)
		c = append(c, 0x49, 0x8b, 0x46, 0x08) // mov 8(%r14),%rax
		c = append(c, 0x48, 0x29, 0xe0)       // sub %rsp,%rax
		live = 0x77                           // ja: deeper than the frame
	}
	gs([]byte{0x48, 0x8b}, 0x0c, sibAbs, DepthCurrent) // mov %gs:D+16,%rcx
	c = append(c, 0x48, 0x85, 0xc9)                    // test %rcx,%rcx
	branch(0x74, &toPush)                              // jz push
	compare()
	branch(0x74, &toDone) // je done: a sibling call
	loop := len(c)
	branch(live, &toPush)           // j(b|a) push: live
	c = append(c, 0x48, 0xff, 0xc9) // dec %rcx
	branch(0x74, &toPush)           // jz push
	compare()
	c = append(c, 0xeb, byte(int8(loop-(len(c)+2)))) // jmp 1b
	land(toPush)
	c = append(c, 0x48, 0x81, 0xf9) // cmp $slots,%rcx
	c = binary.LittleEndian.AppendUint32(c, uint32(d.Slots))
	branch(0x73, &toDone) // jae done
	if d.GoABI {
		gs([]byte{0x48, 0x89}, 0x04, sibRCX8, DepthStack) // mov %rax,stack[n]
	} else {
		gs([]byte{0x48, 0x89}, 0x24, sibRCX8, DepthStack) // mov %rsp,stack[n]
	}
	c = append(c, 0x48, 0xff, 0xc1)                    // inc %rcx
	gs([]byte{0x48, 0x89}, 0x0c, sibAbs, DepthCurrent) // mov %rcx,%gs:D+16
	gs([]byte{0x48, 0x3b}, 0x0c, sibAbs, DepthMax)     // cmp %gs:D+24,%rcx
	branch(0x76, &toDone)                              // jbe done
	gs([]byte{0x48, 0x89}, 0x0c, sibAbs, DepthMax)     // mov %rcx,%gs:D+24
	land(toDone)
	if d.GoABI {
		gs([]byte{0x48, 0x8b}, 0x04, sibAbs, DepthSave+8) // mov %gs:D+8,%rax
	}
	gs([]byte{0x48, 0x8b}, 0x0c, sibAbs, DepthSave) // mov %gs:D,%rcx
	for i := range rb {
		if i+1 < len(rb) {
			rb[i].To = rb[i+1].From
		} else {
			rb[i].To = len(c)
		}
	}
	return DepthCode{Code: c, Rollback: rb}, true
}
