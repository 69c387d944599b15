// The layout of the counters' memory (inprocess.go): where each thread's
// counters, call depth and ring are, and how its trampolines find them.

package profile

import (
	"encoding/binary"

	"github.com/sourceprofiler/sprof/instr"
)

// maxBlocks bounds the counter blocks, one per live thread; a thread
// beyond them shares the main thread's block, with a warning.
var maxBlocks = 4096 // a variable for the tests of the overflow

// depthSlots is the size of a thread's shadow stack: nesting deeper than
// that counts as that deep.
const depthSlots = 1024

// counterLayout is how the memory PROFILE shares with the program is laid
// out, and how a thread's part of it is found and addressed. It has the
// two forms of the architecture's count (instr.CountKind, chosen by
// instr.Instrumenter.Counting):
//
//   - Per-thread blocks (instr.CountPerThread, x86-64): every thread has
//     a block of its own, blockSize bytes, which its thread base (GS)
//     points at: a count names its counter by its offset in the block
//     (one incq %gs:offset, no lock), and the thread's shadow stack
//     (depthAt) or ring (ringAt) follows its counters in the block.
//   - Shared counters (instr.CountShared, arm64, which has no thread
//     register to spare): one block of counters, block 1, that every
//     thread adds to atomically, a count naming its counter's address.
//     Where threads keep a shadow stack or a ring (table), each has an
//     area of its own, stride bytes, found through the stack table, 4
//     bytes for each page of stack addresses (instr.TableIndex), which
//     PROFILE fills for each thread's stack at its first stop.
//
// Block 0, and area 0, are the discard: what is written there is no
// thread's of the program (a vfork child's, a thread's beyond the
// blocks). The memory is the blocks, then in the second form the areas
// (aligned to their stride) and the table, and last the guard
// (damage.go).
type counterLayout struct {
	kind      instr.CountKind
	progAddr  uint64 // where the memory is in the program
	blockSize uint64
	// nBlocks is the number of blocks, or of areas where threads have
	// areas of the table.
	nBlocks int
	// depthAt and ringAt are the offsets of a block's shadow stack and
	// its ring (per-thread blocks), 0 when it has none.
	depthAt, ringAt uint64
	// rings is set when threads have rings (function timing in-process,
	// ring.go): in their blocks, or as their areas of the table.
	rings bool
	// table is set where threads of the second form have areas: the
	// offsets of the areas and of the table, and the distance between
	// two areas.
	table            bool
	areasAt, tableAt uint64
	stride           uint64
}

// newCounterLayout lays out the memory for items counters per block,
// counted as kind says: the threads' shadow stacks go into their blocks
// where inBlock (the architecture keeps the call depth so), through the
// stack table where byTable, and rings, where the run has them, take
// their place. It returns the layout and its size, the guard not
// included; the layout is placed in the program once mapped (place).
func newCounterLayout(kind instr.CountKind, items int, inBlock, byTable, rings bool) (counterLayout, uint64) {
	l := counterLayout{kind: kind, blockSize: (uint64(max(items, 1))*8 + 63) &^ 63, rings: rings,
		table: byTable && kind == instr.CountShared, stride: instr.DepthAreaAlign}
	switch {
	case rings && l.table:
		// The rings are the table's areas (the books keep the depth,
		// from the records).
		l.stride = instr.RingStride(ringRecords)
	case rings:
		l.ringAt = l.blockSize
		l.blockSize += instr.RingSize(ringRecords)
	case inBlock && kind == instr.CountPerThread:
		l.depthAt = l.blockSize
		l.blockSize += (instr.DepthAreaSize(depthSlots) + 63) &^ 63
	}
	l.nBlocks = maxBlocks
	if kind == instr.CountShared {
		l.nBlocks = 2
	}
	for l.nBlocks > 2 && uint64(l.nBlocks)*l.blockSize > 1<<30 {
		l.nBlocks /= 2
	}
	size := uint64(l.nBlocks) * l.blockSize
	if l.table {
		// Room for the areas' alignment (known once mapped), the areas,
		// and the table.
		l.nBlocks = maxBlocks
		for l.nBlocks > 2 && uint64(l.nBlocks)*l.stride > 1<<30 {
			l.nBlocks /= 2
		}
		size += l.stride + uint64(l.nBlocks)*l.stride + 4*instr.DepthTableSize
	}
	return l, size
}

// place puts the layout at addr, where the memory is mapped in the
// program: the areas of the table start at the first multiple of their
// stride after the two blocks.
func (l *counterLayout) place(addr uint64) {
	l.progAddr = addr
	if l.table {
		areas := (addr + 2*l.blockSize + l.stride - 1) &^ (l.stride - 1)
		l.areasAt = areas - addr
		l.tableAt = l.areasAt + uint64(l.nBlocks)*l.stride
	}
}

// perThread reports whether threads have blocks of their own, found
// through their thread base (the first form).
func (l *counterLayout) perThread() bool { return l.kind == instr.CountPerThread }

// ownParts reports whether a thread has a part of the memory of its own:
// a block, or an area of the table.
func (l *counterLayout) ownParts() bool { return l.perThread() || l.table }

// keepsDepth reports whether trampolines keep the call depth.
func (l *counterLayout) keepsDepth() bool { return l.depthAt != 0 || (l.table && !l.rings) }

// counterRef is what a trampoline's count instruction names for item:
// its offset in a thread's block, or its address in block 1.
func (l *counterLayout) counterRef(item int) uint64 {
	if l.perThread() {
		return uint64(item) * 8
	}
	return l.progAddr + l.blockSize + uint64(item)*8
}

// countCode is the code of the count of item, as a's trampolines count
// (instr.Instrumenter.CountCode).
func (l *counterLayout) countCode(a instr.Instrumenter, item int) []byte {
	return a.CountCode(l.kind, l.counterRef(item))
}

// blockAddr is the address in the program of block b.
func (l *counterLayout) blockAddr(b int) uint64 { return l.progAddr + uint64(b)*l.blockSize }

// areaAddr is the address in the program of area b of the table.
func (l *counterLayout) areaAddr(b int) uint64 { return l.progAddr + l.areasAt + uint64(b)*l.stride }

// blockAt returns the block whose address is base (a thread base), none
// for the discard block or an address that is no block's.
func (l *counterLayout) blockAt(base uint64) (int, bool) {
	if base < l.progAddr || l.blockSize == 0 || (base-l.progAddr)%l.blockSize != 0 {
		return 0, false
	}
	b := (base - l.progAddr) / l.blockSize
	if b == 0 || b >= uint64(l.nBlocks) {
		return 0, false
	}
	return int(b), true
}

// counted is the end of the blocks that hold counts, from block 1: where
// threads have blocks, every block given so far (below next); else block
// 1 alone.
func (l *counterLayout) counted(next int) int {
	if l.kind == instr.CountShared {
		return 2
	}
	return next
}

// count is counter k of block b in mem.
func (l *counterLayout) count(mem []byte, b, k int) uint64 {
	return binary.LittleEndian.Uint64(mem[uint64(b)*l.blockSize+uint64(k)*8:])
}

// depth is what DepthCode needs for the trampolines of functions with
// frames of the given kind (goroutine: Go's internal ABI).
func (l *counterLayout) depth(goroutine bool) instr.Depth {
	d := instr.Depth{Offset: l.depthAt, Slots: depthSlots, GoABI: goroutine}
	if l.table {
		d.Table = l.progAddr + l.tableAt
		d.Areas = l.progAddr + l.areasAt
	}
	return d
}

// ring is what the record code of item's entry, or exit, needs.
func (l *counterLayout) ring() instr.Ring {
	r := instr.Ring{Offset: l.ringAt, Records: ringRecords}
	if l.table {
		r.Table = l.progAddr + l.tableAt
		r.Areas = l.progAddr + l.areasAt
	}
	return r
}

// depthArea returns, in mem, thread block b's depth area, or area b of
// the table.
func (l *counterLayout) depthArea(mem []byte, b int) []byte {
	if l.table {
		at := l.areasAt + uint64(b)*l.stride
		return mem[at : at+instr.DepthAreaAlign]
	}
	at := uint64(b)*l.blockSize + l.depthAt
	return mem[at : at+instr.DepthAreaSize(depthSlots)]
}

// ringArea returns, in mem, block b's ring area, or area b of the table.
func (l *counterLayout) ringArea(mem []byte, b int) []byte {
	at := uint64(b)*l.blockSize + l.ringAt
	if l.table {
		at = l.areasAt + uint64(b)*l.stride
	}
	return mem[at : at+instr.RingSize(ringRecords)]
}

// stackTable returns the stack table in mem.
func (l *counterLayout) stackTable(mem []byte) []byte {
	return mem[l.tableAt : l.tableAt+4*instr.DepthTableSize]
}

// pointStack points the stack table's entries in mem of the pages from
// lo to hi at area b: all of them, or where from is not -1, those that
// point at area from.
func (l *counterLayout) pointStack(mem []byte, lo, hi uint64, b, from int) {
	table := l.stackTable(mem)
	off := uint32(uint64(b) * l.stride)
	for page := lo; page <= hi; page += 1 << instr.DepthTablePage {
		e := table[4*instr.TableIndex(page):]
		if from < 0 || binary.LittleEndian.Uint32(e) == uint32(uint64(from)*l.stride) {
			binary.LittleEndian.PutUint32(e, off)
		}
	}
}

// tableArea is the area the stack table in mem gives a thread whose
// stack pointer is sp: the discard area where the entry is not one
// PROFILE writes (the table is in the program's memory, which a wild
// write may reach).
func (l *counterLayout) tableArea(mem []byte, sp uint64) int {
	off := uint64(binary.LittleEndian.Uint32(l.stackTable(mem)[4*instr.TableIndex(sp):]))
	if off%l.stride != 0 || off/l.stride >= uint64(l.nBlocks) {
		return 0
	}
	return int(off / l.stride)
}
