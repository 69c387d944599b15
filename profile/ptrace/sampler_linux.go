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
// A PERF_RECORD_SAMPLE with sample_type PERF_SAMPLE_IP|PERF_SAMPLE_TID
// holds u64 ip, u32 pid, u32 tid; a PERF_RECORD_LOST holds u64 id, u64
// lost.
const (
	recordHeaderSize = 8
	recordSampleSize = recordHeaderSize + 8 + 4 + 4
	recordLostSize   = recordHeaderSize + 8 + 8
)

// Ring sizing: the data area holds at least ringSeconds of samples, as a
// power of two of pages between ringMinPages and ringMaxPages. The reader
// empties the rings every 20 ms: a tenth of a second leaves it room to be
// late, and keeps each thread's ring small, as the kernel charges the
// rings of every thread to perf_event_mlock_kb and then RLIMIT_MEMLOCK
// (one data page at 1 kHz: a program of thousands of threads fits).
const (
	ringSeconds  = 0.1
	ringMinPages = 1
	ringMaxPages = 64
)

// Sampler samples the user-space program counter of one thread on its CPU
// clock (PERF_COUNT_SW_TASK_CLOCK of perf_event_open(2)): the kernel writes
// a record to a ring shared with the caller every period of the thread's
// CPU time, and [Sampler.Read] takes them out. Ticks that fall while the
// thread runs in the kernel are dropped, not charged to a user PC. A Sampler
// is not safe for concurrent use.
type Sampler struct {
	fd   int
	mem  []byte  // the whole mapping: the control page, then the data area
	data []byte  // the data area of mem
	head *uint64 // data_head in mem, written by the kernel
	tail *uint64 // data_tail in mem, written by Read
}

// OpenSampler opens a sampler of thread tid (any thread of any process the
// caller may trace), one sample every period of the thread's CPU time
// (PERF_COUNT_SW_TASK_CLOCK, sample_period in nanoseconds), user-space only
// (exclude_kernel=1, exclude_hv=1), inherit=0, cpu=-1, enabled at once
// (disabled=0), sample_type = PERF_SAMPLE_IP|PERF_SAMPLE_TID, with a ring of
// 1 + 2^n pages mapped read-write from the event's fd, n chosen so the ring
// holds at least a tenth of a second of samples at that period (1 data
// page minimum, 64 maximum). It returns an error wrapping the errno: callers
// test errors.Is(err, syscall.EACCES), EPERM, ENOSYS, ENOENT (the system
// refuses perf_event_open) or ESRCH (no such thread).
func OpenSampler(tid int, period time.Duration) (*Sampler, error) {
	if period <= 0 {
		return nil, fmt.Errorf("sampler period %v: %w", period, unix.EINVAL)
	}
	attr := unix.PerfEventAttr{
		Type: unix.PERF_TYPE_SOFTWARE,
		// Every field set here is in the first version of the struct,
		// which every kernel accepts.
		Size:        unix.PERF_ATTR_SIZE_VER0,
		Config:      unix.PERF_COUNT_SW_TASK_CLOCK,
		Sample:      uint64(period.Nanoseconds()),
		Sample_type: unix.PERF_SAMPLE_IP | unix.PERF_SAMPLE_TID,
		Bits:        unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv,
	}
	fd, err := unix.PerfEventOpen(&attr, tid, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("perf_event_open thread %d: %w", tid, err)
	}
	pageSize := os.Getpagesize()
	pages := ringPages(period, pageSize)
	mem, err := unix.Mmap(fd, 0, (1+pages)*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("map sample ring of thread %d: %w", tid, err)
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
	return &Sampler{
		fd:   fd,
		mem:  mem,
		data: mem[off : off+size],
		head: (*uint64)(unsafe.Pointer(&mem[pageDataHead])),
		tail: (*uint64)(unsafe.Pointer(&mem[pageDataTail])),
	}, nil
}

// ringPages returns the number of data pages of a ring holding at least
// ringSeconds of samples at period: a power of two between ringMinPages
// and ringMaxPages.
func ringPages(period time.Duration, pageSize int) int {
	bytes := ringSeconds * float64(time.Second) / float64(period) * recordSampleSize
	n := ringMinPages
	for n < ringMaxPages && float64(n*pageSize) < bytes {
		n *= 2
	}
	return n
}

// Read calls fn with the PC of every sample written since the last Read,
// in order, and returns how many samples the kernel reported lost
// (PERF_RECORD_LOST) since then. It frees the ring space it read
// (data_tail). Records other than samples and losses are skipped. A
// malformed ring stops the walk with an error after the samples before
// the bad record; the sampler is then of no further use.
func (s *Sampler) Read(fn func(pc uint64)) (lost uint64, err error) {
	if s.mem == nil {
		return 0, errors.New("read sampler: closed")
	}
	// The atomic load orders the reads of the records after that of
	// data_head (the smp_rmb of perf_event.h), the atomic store the
	// reads before the release of their space (the smp_mb).
	head := atomic.LoadUint64(s.head)
	tail := atomic.LoadUint64(s.tail)
	tail, lost, err = walkRing(s.data, head, tail, fn)
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

// walkRing walks the records of ring, a perf data area, from position tail
// to position head (free-running byte counts, taken modulo len(ring)). It
// calls fn with the IP of each PERF_RECORD_SAMPLE in order, adds up the
// counts of the PERF_RECORD_LOST records and skips the rest; a record may
// wrap around the end of ring. It returns the position it reached: head,
// or on error the start of the bad record.
func walkRing(ring []byte, head, tail uint64, fn func(pc uint64)) (newTail, lost uint64, err error) {
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
			if n < recordSampleSize {
				return tail, lost, fmt.Errorf("sample at %d: size %d", tail, n)
			}
			fn(ringUint(ring, tail+recordHeaderSize, 8))
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
