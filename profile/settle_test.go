package profile

import (
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/profile/layout"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// TestSettleDepth: at a signal stop, the frames of the thread's shadow
// stack entered below its stack pointer have returned, and are popped
// (settleDepth); those at or above it stay. The stack of the case is
// main, f (returned), a handler and the f it called (both returned): an
// alarm that interrupts main's own code finds main alone, where the next
// handler would have found four callers. An alarm inside f's entry (its
// stack pointer the one f's frame was entered with) keeps f. Both forms:
// the thread's block (x86-64's GS base) and the stack table (arm64's).
// The last entry's stack pointer (instr.Depth.Top) is forgotten where
// frames were popped, kept where none was.
func TestSettleDepth(t *testing.T) {
	arch, err := instr.ForName(runtime.GOARCH)
	if err != nil {
		t.Skip(err)
	}
	const (
		mainSP    = 0x7fff_0000_8778
		fSP       = 0x7fff_0000_8648
		handlerSP = 0x7fff_0000_7a70
		progAddr  = 0x7f00_0000_0000
	)
	frames := []uint64{mainSP, fSP, handlerSP, handlerSP - 8}
	for _, table := range []bool{false, true} {
		for _, c := range []struct {
			sp   uint64
			want int
		}{
			{fSP + 8, 1},           // main's own code, above f's frame
			{fSP, 2},               // f's entry: f stays
			{handlerSP - 0x100, 4}, // below them all: nothing has returned
			{mainSP + 8, 0},        // main has returned
		} {
			tr := &tracer{arch: arch, plan: &datafile.Plan{}}
			cs := &counters{env: tr.counterEnv(), layout: layout.Layout{Kind: instr.CountPerThread, ProgAddr: progAddr, NBlocks: 2, Records: ringRecords, DepthSlots: depthSlots}, next: 2, blockOf: map[int]int{}}
			size := 0
			if table {
				cs.layout.Table, cs.layout.Stride = true, instr.DepthAreaAlign
				cs.layout.AreasAt = cs.layout.Stride
				cs.layout.TableAt = cs.layout.AreasAt + 2*cs.layout.Stride
				size = int(cs.layout.TableAt) + 4*instr.DepthTableSize
			} else {
				cs.layout.DepthAt = 64
				cs.layout.BlockSize = 64 + instr.DepthAreaSize(depthSlots)
				size = 2 * int(cs.layout.BlockSize)
			}
			shared, err := ptrace.NewShared(size)
			if err != nil {
				t.Skip(err)
			}
			defer shared.Close()
			cs.shared = shared
			tr.parts.counters = cs
			tr.choose()
			if table {
				cs.pointStack((handlerSP-0x1000)&^0xfff, mainSP+0x1000, 1, -1)
			}
			area := cs.area(1)
			for i, sp := range frames {
				binary.LittleEndian.PutUint64(area[instr.DepthStack+8*i:], sp)
			}
			binary.LittleEndian.PutUint64(area[instr.DepthCurrent:], uint64(len(frames)))
			binary.LittleEndian.PutUint64(area[instr.DepthTop:], frames[len(frames)-1])
			var regs ptrace.Regs
			arch.SetSP(&regs, c.sp)
			regs.SetThreadBase(cs.layout.BlockAddr(1))
			if !table && regs.ThreadBase() != cs.layout.BlockAddr(1) {
				continue // (arm64: no register for a block, only the table form)
			}
			tr.signals.settleDepth(tr.parts.counters, tr.plan, tr.arch, &regs)
			if got := binary.LittleEndian.Uint64(area[instr.DepthCurrent:]); got != uint64(c.want) {
				t.Errorf("table %v, stopped at sp %#x: %d frames left, want %d", table, c.sp, got, c.want)
			}
			wantTop := frames[len(frames)-1]
			if c.want < len(frames) {
				wantTop = 0
			}
			if got := binary.LittleEndian.Uint64(area[instr.DepthTop:]); got != wantTop {
				t.Errorf("table %v, stopped at sp %#x: the last entry's stack pointer %#x, want %#x", table, c.sp, got, wantTop)
			}
		}
	}
}
