//go:build linux && (amd64 || arm64)

package ptrace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Offsets in the ring's first page, struct perf_event_mmap_page of
// linux/perf_event.h: data_head, data_tail, data_offset and data_size
// follow 1024 bytes of header and padding.
const (
	pageDataHead   = 1024
	pageDataTail   = 1032
	pageDataOffset = 1040
	pageDataSize   = 1048
)

// Record layout (linux/perf_event.h): a struct perf_event_header of u32
// type, u16 misc and u16 size (size counting the header), then the body.
// A PERF_RECORD_SAMPLE holds u64 ip, u32 pid, u32 tid; with a call
// chain, u64 nr and nr u64 entries (return addresses, and contexts such
// as PERF_CONTEXT_USER, from -4095 up); for a stack sampler, u64 abi and
// the registers of sample_regs_user (none when abi is 0,
// PERF_SAMPLE_REGS_ABI_NONE), then u64 size, size bytes of stack and,
// when size is not 0, u64 dyn_size, the bytes of it the kernel could
// copy. The registers come with a sampler of the kernel too, the stack
// only with a stack sampler. A PERF_RECORD_LOST holds u64 id, u64 lost.
const (
	recordHeaderSize = 8
	recordSampleSize = recordHeaderSize + 8 + 4 + 4
	recordLostSize   = recordHeaderSize + 8 + 8
)

// MaxStackCopy is the most stack a sampler copies with each sample: a
// record is at most 64 KiB.
const MaxStackCopy = 32 << 10

// Ring sizing: the data area holds at least ringSeconds of samples, as a
// power of two of pages between ringMinPages and ringMaxBytes (at least
// a page). The reader empties the rings every 20 ms: a tenth of a second
// leaves it room to be late, and keeps each thread's ring small, as the
// kernel charges the rings of every thread to perf_event_mlock_kb and
// then RLIMIT_MEMLOCK (one data page at 1 kHz: a program of thousands
// of threads fits). A stack sampler's records are a thousand times
// larger: its ring holds less time (RingHolds), at most stackRingBytes.
const (
	ringSeconds    = 0.1
	ringMinPages   = 1
	ringMaxBytes   = 64 << 12
	stackRingBytes = 128 << 12
)

// SamplerOptions say what a [Sampler] takes: a sample every Period of
// the thread's CPU time and, when Stack is not 0, with each sample the
// registers an unwinder starts from and a copy of the Stack bytes of the
// thread's stack above its stack pointer (rounded up to 8 bytes, at most
// MaxStackCopy); with Callchain, the return addresses the kernel finds
// following the thread's frame pointers (user space only, at most
// MaxCallchain of them). With Kernel, the ticks that fall while the
// thread runs in the kernel (its system calls, its page faults) are
// samples too, each with the user registers the thread will return to
// ([Sample.Kernel]); the kernel allows that only to a caller with
// CAP_PERFMON or under a perf_event_paranoid of 1 or less (EACCES
// otherwise).
type SamplerOptions struct {
	Period    time.Duration
	Stack     int
	Callchain bool
	Kernel    bool
}

// MaxCallchain is the most entries of a call chain a sample's record
// makes room for: the kernel's default perf_event_max_stack, 127, and its
// context entry.
const MaxCallchain = 128

// stackBytes returns the stack copy the options ask for, as the kernel
// takes it: a multiple of 8.
func (o SamplerOptions) stackBytes() int {
	return min((max(o.Stack, 0)+7)&^7, MaxStackCopy)
}

// recordSize is the size of one sample's record, at most.
func (o SamplerOptions) recordSize() int {
	n := recordSampleSize
	if o.Callchain {
		n += 8 + 8*MaxCallchain
	}
	if o.takesRegs() {
		n += 8 + 8*sampleRegsAt.n
	}
	if s := o.stackBytes(); s > 0 {
		n += 8 + s + 8
	}
	return n
}

// takesRegs reports whether the samples of o carry the user registers: a
// stack copy's unwinder starts from them, and a sample in the kernel
// takes its user program counter from them.
func (o SamplerOptions) takesRegs() bool { return o.Kernel || o.stackBytes() > 0 }

// Sample is one sample a [Sampler] read: the thread's program counter
// and, from a stack sampler, its registers and the copy of its stack (a
// sampler of the kernel takes the registers too).
// Stack is only valid during the call that receives it.
type Sample struct {
	PC uint64
	// Kernel is set for a sample taken while the thread ran in the
	// kernel (SamplerOptions.Kernel): PC and the registers are then the
	// user ones the thread will return to: the instruction after a
	// system call's (syscall, svc), or the one that faulted; PC is 0
	// where the kernel had none (a thread on its way out).
	Kernel bool
	// Regs is set when the kernel took the registers: SP, FP (the frame
	// pointer: rbp, x29) and, on arm64, LR (x30).
	Regs       bool
	SP, FP, LR uint64
	// Stack holds the bytes of the stack from SP up that the kernel
	// could copy (none past the stack's end).
	Stack []byte
	// Callchain holds the return addresses the kernel found following
	// the frame pointers, innermost first, after the PC (the contexts
	// left out). Only valid during the call that receives it.
	Callchain []uint64
	// PACMask holds the bits of a return address that pointer
	// authentication signs (arm64), for an unwinder to clear; 0 where
	// none are.
	PACMask uint64
}

// sampleRegIndex says where each register an unwinder needs comes among
// the registers of a sample (-1: none): sampleRegsAt, per architecture.
type sampleRegIndex struct {
	fp, sp, pc, lr, n int
}

// Sampler samples the user-space program counter of one thread on its CPU
// clock (PERF_COUNT_SW_TASK_CLOCK of perf_event_open(2)): the kernel writes
// a record to a ring shared with the caller every period of the thread's
// CPU time, and [Sampler.Read] takes them out. Ticks that fall while the
// thread runs in the kernel are dropped unless SamplerOptions.Kernel asks
// for them. A Sampler is not safe for concurrent use.
type Sampler struct {
	fd     int
	mem    []byte  // the whole mapping: the control page, then the data area
	data   []byte  // the data area of mem
	head   *uint64 // data_head in mem, written by the kernel
	tail   *uint64 // data_tail in mem, written by Read
	walk   ringWalk
	sample Sample
}

// OpenSampler opens a sampler of thread tid (any thread of any process the
// caller may trace), one sample every period of the thread's CPU time
// (PERF_COUNT_SW_TASK_CLOCK, sample_period in nanoseconds), user-space only
// (exclude_kernel=1, exclude_hv=1) unless o.Kernel, inherit=0, cpu=-1,
// enabled at once (disabled=0), sample_type = PERF_SAMPLE_IP|PERF_SAMPLE_TID,
// with the kernel or a stack copy PERF_SAMPLE_REGS_USER, with a stack copy
// PERF_SAMPLE_STACK_USER, with a ring of
// 1 + 2^n pages mapped read-write from the event's fd, n chosen so the ring
// holds at least a tenth of a second of samples at that period (RingHolds
// says what it holds). A thread of arm64 that tid names is stopped by the
// caller, for its pointer-authentication mask (PACMask). It returns an
// error wrapping the errno: callers test errors.Is(err, syscall.EACCES),
// EPERM, ENOSYS, ENOENT (the system refuses perf_event_open) or ESRCH
// (no such thread).
func OpenSampler(tid int, o SamplerOptions) (*Sampler, error) {
	if o.Period <= 0 {
		return nil, fmt.Errorf("sampler period %v: %w", o.Period, unix.EINVAL)
	}
	attr := unix.PerfEventAttr{
		Type: unix.PERF_TYPE_SOFTWARE,
		// Every field set here is in the first version of the struct,
		// which every kernel accepts; the stack's are in the third.
		Size:        unix.PERF_ATTR_SIZE_VER0,
		Config:      unix.PERF_COUNT_SW_TASK_CLOCK,
		Sample:      uint64(o.Period.Nanoseconds()),
		Sample_type: unix.PERF_SAMPLE_IP | unix.PERF_SAMPLE_TID,
		Bits:        unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv,
	}
	walk := ringWalk{callchain: o.Callchain}
	if o.Kernel {
		attr.Bits &^= unix.PerfBitExcludeKernel
	}
	if o.Callchain {
		attr.Sample_type |= unix.PERF_SAMPLE_CALLCHAIN
		attr.Bits |= unix.PerfBitExcludeCallchainKernel
	}
	if o.takesRegs() {
		attr.Size = unix.PERF_ATTR_SIZE_VER3
		attr.Sample_type |= unix.PERF_SAMPLE_REGS_USER
		attr.Sample_regs_user = sampleRegsMask
		walk.regs = sampleRegsAt
	}
	if n := o.stackBytes(); n > 0 {
		attr.Sample_type |= unix.PERF_SAMPLE_STACK_USER
		attr.Sample_stack_user = uint32(n)
		walk.stack = true
	}
	fd, err := unix.PerfEventOpen(&attr, tid, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("perf_event_open thread %d: %w", tid, err)
	}
	pageSize := os.Getpagesize()
	pages := ringPages(o, pageSize)
	mem, err := unix.Mmap(fd, 0, (1+pages)*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, &RingError{fmt.Errorf("map sample ring of thread %d: %w", tid, err)}
	}
	// Kernels before 4.1 leave data_offset and data_size at 0: the data
	// area is then every page after the first.
	off := binary.NativeEndian.Uint64(mem[pageDataOffset:])
	size := binary.NativeEndian.Uint64(mem[pageDataSize:])
	if off == 0 && size == 0 {
		off, size = uint64(pageSize), uint64(len(mem)-pageSize)
	}
	if off < uint64(pageSize) || size == 0 || off > uint64(len(mem)) || size > uint64(len(mem))-off {
		unix.Munmap(mem)
		unix.Close(fd)
		return nil, fmt.Errorf("sample ring of thread %d: data area of %d bytes at %d in a mapping of %d", tid, size, off, len(mem))
	}
	s := &Sampler{
		fd:   fd,
		mem:  mem,
		data: mem[off : off+size],
		head: (*uint64)(unsafe.Pointer(&mem[pageDataHead])),
		tail: (*uint64)(unsafe.Pointer(&mem[pageDataTail])),
		walk: walk,
	}
	if walk.regs.n > 0 {
		s.sample.PACMask = PACMask(tid)
	}
	return s, nil
}

// ringPages returns the number of data pages of a ring holding at least
// ringSeconds of samples of o: a power of two, at least ringMinPages, at
// most ringMaxBytes (stackRingBytes with a stack copy) or one page.
func ringPages(o SamplerOptions, pageSize int) int {
	limit := ringMaxBytes
	if o.stackBytes() > 0 {
		limit = stackRingBytes
	}
	bytes := ringSeconds * float64(time.Second) / float64(o.Period) * float64(o.recordSize())
	n := ringMinPages
	for (n*2)*pageSize <= limit && float64(n*pageSize) < bytes {
		n *= 2
	}
	return n
}

// RingHolds returns the CPU time of samples of o that a sampler's ring
// holds on this system: its reader must empty it more often.
func RingHolds(o SamplerOptions) time.Duration {
	if o.Period <= 0 {
		return 0
	}
	pageSize := os.Getpagesize()
	records := ringPages(o, pageSize) * pageSize / o.recordSize()
	return time.Duration(records) * o.Period
}

// Read calls fn with every sample written since the last Read, in order,
// and returns how many samples the kernel reported lost
// (PERF_RECORD_LOST) since then. The Sample is the Sampler's own, valid
// during the call. It frees the ring space it read (data_tail). Records
// other than samples and losses are skipped. A malformed ring stops the
// walk with an error after the samples before the bad record; the
// sampler is then of no further use.
func (s *Sampler) Read(fn func(*Sample)) (lost uint64, err error) {
	if s.mem == nil {
		return 0, errors.New("read sampler: closed")
	}
	// The atomic load orders the reads of the records after that of
	// data_head (the smp_rmb of perf_event.h), the atomic store the
	// reads before the release of their space (the smp_mb).
	head := atomic.LoadUint64(s.head)
	tail := atomic.LoadUint64(s.tail)
	tail, lost, err = s.walk.walk(s.data, head, tail, &s.sample, fn)
	atomic.StoreUint64(s.tail, tail)
	if err != nil {
		return lost, fmt.Errorf("read sampler: %w", err)
	}
	return lost, nil
}

// Close unmaps the ring and closes the event.
func (s *Sampler) Close() error {
	if s.mem == nil {
		return nil
	}
	err := unix.Munmap(s.mem)
	if cerr := unix.Close(s.fd); err == nil {
		err = cerr
	}
	s.mem, s.data, s.head, s.tail = nil, nil, nil, nil
	return err
}

// ringWalk is how the records of a ring are read: with a call chain
// when callchain is set, the registers regs says (none when regs.n is
// 0) and a stack copy when stack is set, as the sampler asked for them;
// and the buffers a stack that wraps around the ring's end is copied
// into, and the call chain.
type ringWalk struct {
	callchain bool
	regs      sampleRegIndex
	stack     bool
	wrapped   []byte
	chain     []uint64
}

// walk walks the records of ring, a perf data area, from position tail
// to position head (free-running byte counts, taken modulo len(ring)). It
// calls fn with each PERF_RECORD_SAMPLE, decoded into sm, in order, adds
// up the counts of the PERF_RECORD_LOST records and skips the rest; a
// record may wrap around the end of ring. It returns the position it
// reached: head, or on error the start of the bad record.
func (w *ringWalk) walk(ring []byte, head, tail uint64, sm *Sample, fn func(*Sample)) (newTail, lost uint64, err error) {
	size := uint64(len(ring))
	if head-tail > size {
		return tail, 0, fmt.Errorf("ring head %d and tail %d are more than its %d bytes apart", head, tail, size)
	}
	for tail != head {
		avail := head - tail
		if avail < recordHeaderSize {
			return tail, lost, fmt.Errorf("record at %d: %d bytes, short of a header", tail, avail)
		}
		typ := uint32(ringUint(ring, tail, 4))
		n := ringUint(ring, tail+6, 2)
		if n < recordHeaderSize || n > avail {
			return tail, lost, fmt.Errorf("record at %d: size %d, %d bytes left", tail, n, avail)
		}
		switch typ {
		case unix.PERF_RECORD_SAMPLE:
			sm.Kernel = ringUint(ring, tail+4, 2)&perfCPUModeMask == perfCPUModeKernel
			if err := w.decode(ring, tail, n, sm); err != nil {
				return tail, lost, err
			}
			fn(sm)
		case unix.PERF_RECORD_LOST:
			if n < recordLostSize {
				return tail, lost, fmt.Errorf("loss record at %d: size %d", tail, n)
			}
			lost += ringUint(ring, tail+recordHeaderSize+8, 8)
		}
		tail += n
	}
	return tail, lost, nil
}

// The processor's mode at a sample, in its header's misc field
// (PERF_RECORD_MISC_CPUMODE_MASK, PERF_RECORD_MISC_KERNEL).
const (
	perfCPUModeMask   = 7
	perfCPUModeKernel = 1
)

// decode reads the sample of n bytes at position at of ring into sm,
// whose Kernel field the header set. A sample in the kernel takes its
// PC from the user registers, 0 when it has none.
func (w *ringWalk) decode(ring []byte, at, n uint64, sm *Sample) error {
	if err := w.decodeBody(ring, at, n, sm); err != nil {
		return err
	}
	if sm.Kernel && !sm.Regs {
		sm.PC = 0
	}
	if len(sm.Callchain) > 0 && sm.Callchain[0] == sm.PC {
		sm.Callchain = sm.Callchain[1:] // (the chain begins with the user PC)
	}
	return nil
}

// decodeBody reads the fields of the sample of n bytes at position at of
// ring into sm.
func (w *ringWalk) decodeBody(ring []byte, at, n uint64, sm *Sample) error {
	if n < recordSampleSize {
		return fmt.Errorf("sample at %d: size %d", at, n)
	}
	sm.PC, sm.Regs, sm.Stack, sm.Callchain = ringUint(ring, at+recordHeaderSize, 8), false, nil, nil
	pos, end := at+recordSampleSize, at+n
	word := func() (uint64, bool) {
		if end-pos < 8 {
			return 0, false
		}
		pos += 8
		return ringUint(ring, pos-8, 8), true
	}
	if w.callchain {
		nr, ok := word()
		if !ok || nr > (end-pos)/8 {
			return fmt.Errorf("sample at %d: size %d, short of its call chain", at, n)
		}
		w.chain = w.chain[:0]
		for range nr {
			v, _ := word()
			if v < perfContextMax { // (not a context: PERF_CONTEXT_USER and the like)
				w.chain = append(w.chain, v)
			}
		}
		sm.Callchain = w.chain
	}
	if w.regs.n == 0 {
		return nil
	}
	abi, ok := word()
	if !ok {
		return fmt.Errorf("sample at %d: size %d, short of its registers", at, n)
	}
	if abi != 0 {
		var r [8]uint64
		for i := range w.regs.n {
			if r[i], ok = word(); !ok {
				return fmt.Errorf("sample at %d: size %d, short of its registers", at, n)
			}
		}
		sm.Regs = true
		sm.PC, sm.SP, sm.FP = r[w.regs.pc], r[w.regs.sp], r[w.regs.fp]
		if w.regs.lr >= 0 {
			sm.LR = r[w.regs.lr]
		}
	}
	if !w.stack {
		return nil
	}
	copied, ok := word()
	if !ok || copied > end-pos {
		return fmt.Errorf("sample at %d: size %d, short of its stack", at, n)
	}
	if copied == 0 {
		return nil
	}
	data := pos
	pos += copied
	dyn, ok := word()
	if !ok {
		return fmt.Errorf("sample at %d: size %d, short of its stack", at, n)
	}
	sm.Stack = w.bytes(ring, data, min(dyn, copied))
	return nil
}

// perfContextMax is PERF_CONTEXT_MAX: the entries of a call chain from
// it up are contexts, no address.
const perfContextMax = 1<<64 - 4095

// bytes returns the n bytes at position pos of ring: a slice of it, or
// where they wrap around its end a copy.
func (w *ringWalk) bytes(ring []byte, pos, n uint64) []byte {
	size := uint64(len(ring))
	off := pos % size
	if off+n <= size {
		return ring[off : off+n : off+n]
	}
	w.wrapped = append(w.wrapped[:0], ring[off:]...)
	w.wrapped = append(w.wrapped, ring[:n-(size-off)]...)
	return w.wrapped
}

// ringUint reads the n-byte (2, 4 or 8) native-endian integer at position
// pos of ring, wrapping around its end. ring is not empty.
func ringUint(ring []byte, pos, n uint64) uint64 {
	size := uint64(len(ring))
	off := pos % size
	if off+n <= size {
		b := ring[off : off+n]
		switch n {
		case 2:
			return uint64(binary.NativeEndian.Uint16(b))
		case 4:
			return uint64(binary.NativeEndian.Uint32(b))
		}
		return binary.NativeEndian.Uint64(b)
	}
	var b [8]byte
	for i := range n {
		b[i] = ring[(off+i)%size]
	}
	switch n {
	case 2:
		return uint64(binary.NativeEndian.Uint16(b[:]))
	case 4:
		return uint64(binary.NativeEndian.Uint32(b[:]))
	}
	return binary.NativeEndian.Uint64(b[:])
}
