package instr

import (
	"encoding/binary"
	"sync/atomic"
)

// Timing in-process on amd64 (see ring.go): the ring is in the thread's
// block, which GS points to, at R. Its head and its tail are counts of
// the records written (the thread's, RingHead) and read (PROFILE's,
// RingTail), each in a cache line of its own; the ring is full when
// they are Records apart.

// GoRecordsNeedThreadPointer is false: Go's record code finds its ring
// in the thread's block through GS, as C's does; Go leaves GS alone (it
// keeps the goroutine in r14 and its thread-local storage in FS).
func (amd64) GoRecordsNeedThreadPointer() bool { return false }

// CounterOneClock is false: the TSC is each CPU's own counter, one clock
// across CPUs only where the kernel has checked that they agree and run
// at a constant rate, and it then takes the TSC as its clock source
// (arch/x86/kernel/tsc_sync.c), which PROFILE reads from sysfs.
func (amd64) CounterOneClock() bool { return false }

// RecordCode returns the code that appends a record with tag to the
// thread's ring (see [Ring]), at R in the block GS points to:
//
//	mov %rax,%gs:R+0; mov %rdx,%gs:R+8
//	retry: lfence; rdtsc; shl $32,%rdx; or %rdx,%rax   the time (lfence: exits)
//	mov %gs:R+24,%rdx; sub %gs:R+64,%rdx          records unread
//	cmp $N,%rdx; jb ok
//	mov %rax,%gs:R+16; int3; jmp retry  full: when it stopped, and stop
//	ok: mov %gs:R+24,%rdx; and $(N-1),%edx; shl $5,%edx
//	mov %rax,%gs:R+128(%rdx)           time
//	mov %rsp,%gs:R+136(%rdx)           stack pointer
//	movq $tag,%gs:R+144(%rdx)          item and entry or exit
//	incq %gs:R+24                      commit: the head moves on
//	mov %gs:R+0,%rax; mov %gs:R+8,%rdx
//
// For Go code (r.Goroutine) the stack pointer's word is, where r14, the
// goroutine register of Go's internal ABI, is not 0, the distance from
// the goroutine's stack top, and the record names the goroutine:
//
//	test %r14,%r14; jz thread
//	mov 8(%r14),%rax; sub %rsp,%rax; jmp store   g.stack.hi less the SP
//	thread: mov %rsp,%rax                       (r14 0: the thread's)
//	store: mov %rax,%gs:R+136(%rdx)
//	mov %r14,%gs:R+152(%rdx)                    the goroutine, or 0
//	movq $tag|G,%gs:R+144(%rdx)                 the tag, marked
//
// The lfence makes an exit's reading of the counter wait until the
// instructions before it are done: without it, the counter could be read
// before the function's last instructions, a long chain of dependent
// arithmetic, have run, and the function charged a fraction of its time.
// An entry's reading goes without (lfence costs as much as rdtsc: half
// of a record): read early, it moves the end of the caller's work before
// the call, some tens of cycles at most, into the callee's time, which
// the callee's exit, fenced, then bounds.
//
// The jb becomes jmp (0xeb) where the code is unchecked. rax and rdx carry arguments at an entry and results at a return: they
// come back as they were; only the flags change. A thread stopped before
// the commit starts again (the record's slot is the same until the head
// moves); after it, its registers come back from the save slots and it
// goes on after the code.
func (amd64) RecordCode(r Ring, tag uint64) (RecordCode, bool) {
	if r.Records <= 0 || r.Records&(r.Records-1) != 0 || r.Records > 1<<26 ||
		r.Offset+RingSize(r.Records) > 1<<31 || tag >= recordGoroutine {
		return RecordCode{}, false
	}
	var c []byte
	const sibAbs = 0x25 // [disp32]
	const modRAX, modRDX = 0x04, 0x14
	gs := func(op, modrm byte, disp uint64) {
		c = append(c, 0x65, 0x48, op, modrm, sibAbs)
		c = binary.LittleEndian.AppendUint32(c, uint32(r.Offset+disp))
	}
	// rec is an operand disp32(%rdx), the record's word at off.
	rec := func(op, modrm byte, off uint64) {
		c = append(c, 0x65, 0x48, op, modrm)
		c = binary.LittleEndian.AppendUint32(c, uint32(r.Offset+RingRecords+off))
	}
	saved := []SavedReg{
		{Reg: amd64RAX, Offset: r.Offset + RingSave},
		{Reg: amd64RDX, Offset: r.Offset + RingSave + 8},
	}
	gs(0x89, modRAX, RingSave)
	gs(0x89, modRDX, RingSave+8)
	saves := len(c)
	if tag&1 != 0 {
		c = append(c, 0x0f, 0xae, 0xe8) // lfence: an exit's time waits for the function's work
	}
	c = append(c, 0x0f, 0x31) // rdtsc
	c = append(c, 0x48, 0xc1, 0xe2, 0x20, 0x48, 0x09, 0xd0)
	gs(0x8b, modRDX, RingHead)
	gs(0x2b, modRDX, RingTail)
	c = append(c, 0x48, 0x81, 0xfa) // cmp $N,%rdx
	c = binary.LittleEndian.AppendUint32(c, uint32(r.Records))
	skip := len(c)
	c = append(c, 0x72, 0x0c) // jb ok
	gs(0x89, modRAX, RingFullTime)
	c = append(c, 0xcc) // int3
	full := len(c)
	c = append(c, 0xeb, byte(int8(saves-(len(c)+2)))) // jmp retry
	gs(0x8b, modRDX, RingHead)
	c = append(c, 0x81, 0xe2) // and $(N-1),%edx
	c = binary.LittleEndian.AppendUint32(c, uint32(r.Records-1))
	c = append(c, 0xc1, 0xe2, 0x05) // shl $5,%edx: a record's offset
	rec(0x89, 0x82, 0)              // mov %rax,disp(%rdx)
	if r.Goroutine {
		c = append(c, 0x4d, 0x85, 0xf6)       // test %r14,%r14
		c = append(c, 0x74, 0x09)             // jz thread
		c = append(c, 0x49, 0x8b, 0x46, 0x08) // mov 8(%r14),%rax
		c = append(c, 0x48, 0x29, 0xe0)       // sub %rsp,%rax
		c = append(c, 0xeb, 0x03)             // jmp store
		c = append(c, 0x48, 0x89, 0xe0)       // thread: mov %rsp,%rax
		rec(0x89, 0x82, 8)                    // store: mov %rax,disp(%rdx)
		c = append(c, 0x65, 0x4c, 0x89, 0xb2) // mov %r14,disp(%rdx)
		c = binary.LittleEndian.AppendUint32(c, uint32(r.Offset+RingRecords+24))
		tag |= recordGoroutine
	} else {
		rec(0x89, 0xa2, 8) // mov %rsp,disp(%rdx)
	}
	rec(0xc7, 0x82, 16) // movq $tag,disp(%rdx)
	c = binary.LittleEndian.AppendUint32(c, uint32(tag))
	gs(0xff, modRAX, RingHead) // incq: commit
	committed := len(c)
	gs(0x8b, modRAX, RingSave)
	gs(0x8b, modRDX, RingSave+8)
	return RecordCode{Code: c, Full: full, Skip: skip, Unchecked: []byte{0xeb}, Rollback: []Rollback{
		{From: 0, To: saves},
		{From: saves, To: committed, Restore: saved},
		{From: committed, To: len(c), Restore: saved, Resume: len(c)},
	}}, true
}

// ringUnread returns the tail's slot and the records between the tail
// and the head.
func (amd64) ringUnread(area []byte, records int) (first, n int) {
	head := atomic.LoadUint64(word64(area, RingHead))
	tail := atomic.LoadUint64(word64(area, RingTail))
	return int(tail & uint64(records-1)), int(min(head-tail, uint64(records)))
}

// ringRead moves the tail on by n; the tail is PROFILE's mark.
func (amd64) ringRead(area []byte, _, n int) uint64 {
	tail := atomic.LoadUint64(word64(area, RingTail)) + uint64(n)
	atomic.StoreUint64(word64(area, RingTail), tail)
	return tail
}

// ringReset sets the head and the tail to 0.
func (amd64) ringReset(area []byte, _ int) uint64 {
	atomic.StoreUint64(word64(area, RingHead), 0)
	atomic.StoreUint64(word64(area, RingTail), 0)
	return 0
}

// ringIntact: the tail is the mark, and the head at most records ahead
// of it (the thread writes no record before it sees room for it).
func (amd64) ringIntact(area []byte, records int, mark uint64) bool {
	head := atomic.LoadUint64(word64(area, RingHead))
	return atomic.LoadUint64(word64(area, RingTail)) == mark && head-mark <= uint64(records)
}

// ringResync sets the tail to the head: the ring is empty, and the
// thread's next record goes where its head says, any count. (The tail is
// PROFILE's alone: running or not.)
func (amd64) ringResync(area []byte, _ int, _ bool) (uint64, bool) {
	head := atomic.LoadUint64(word64(area, RingHead))
	atomic.StoreUint64(word64(area, RingTail), head)
	return head, true
}

// calibrationStep returns imul $0x2c1b3c6d,%r8,%r8 (REX.W+R+B 69 /r
// id): it changes r8 and the flags.
func (amd64) calibrationStep() []byte { return []byte{0x4d, 0x69, 0xc0, 0x6d, 0x3c, 0x1b, 0x2c} }
