// The stacks of an attached process's threads. A thread in a signal
// handler returns, when the handler ends, to where the signal interrupted
// it, a PC saved in the signal's frame on its stack (instr.SignalFrames),
// not in its registers: PROFILE reads them when it attaches, so that no
// patch covers one, and when it detaches, so that none returns into its
// code with the thread base the program had. A thread found in the middle
// of its calls returns to frames above its stack pointer
// (ownFramesAbove).

package profile

import (
	"sort"
	"strings"

	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/profile/procmaps"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// stackView is the process's memory map, in order (as /proc/PID/maps
// lists it), as instr.SignalFrames reads it.
type stackView []procmaps.Mapping

// find returns the mapping that holds addr.
func (v stackView) find(addr uint64) (procmaps.Mapping, bool) {
	i := sort.Search(len(v), func(i int) bool { return v[i].End > addr })
	if i < len(v) && v[i].Start <= addr {
		return v[i], true
	}
	return procmaps.Mapping{}, false
}

// StackEnd returns the end of the mapping that holds addr, 0 for none.
func (v stackView) StackEnd(addr uint64) uint64 {
	if m, ok := v.find(addr); ok {
		return m.End
	}
	return 0
}

// Executable reports whether addr is in an executable mapping.
func (v stackView) Executable(addr uint64) bool {
	m, ok := v.find(addr)
	return ok && strings.Contains(m.Perms, "x")
}

// threadStacks reads and mends the stacks of the program's stopped
// threads: the signal frames on them, and the pages of the stack table
// above their stack pointers. It is made for each use (stacksOf): the
// program's memory it reads is the tracer's at that moment.
type threadStacks struct {
	arch instr.Arch
	mem  instr.Memory
	proc process
	// counters are the memory shared with the program and the
	// trampolines written, ownArea tells PROFILE's code from the
	// program's (planter.ownArea).
	counters *counters
	ownArea  func(addr uint64) bool
	told     observers
}

// stacksOf returns the stacks of t's threads.
func stacksOf(t *tracer) threadStacks {
	return threadStacks{arch: t.arch, mem: t.mem, proc: t.proc, counters: t.parts.counters, ownArea: t.parts.plant.ownArea, told: t.told}
}

// framePCs returns the PCs saved in the signal frames on the stack of the
// stopped thread whose registers are regs: where handlers it is in will
// return (attachment.pcs, no patch covers one).
func (s threadStacks) framePCs(regs *ptrace.Regs, maps []procmaps.Mapping) []uint64 {
	var pcs []uint64
	for _, f := range instr.SignalFrames(s.arch, s.mem, regs, stackView(maps)) {
		pcs = append(pcs, f.PC())
	}
	return pcs
}

// settleFrames moves, before stopped thread tid is let go, each signal
// frame on its stack that would return into PROFILE's code to the
// program's own address where the thread goes on exactly as it would have
// (the trampoline's exact address, counters.exactPC), and reports whether
// a frame is left returning into PROFILE's code: its thread then keeps
// PROFILE's thread base (putBase), which that code reads, as a thread
// stopped inside it does. (The code stays mapped; its jump back leads to
// the program's.)
func (s threadStacks) settleFrames(tid int, maps []procmaps.Mapping) (keep bool) {
	var regs ptrace.Regs
	if s.proc.getRegs(tid, &regs) != nil {
		return false
	}
	for _, f := range instr.SignalFrames(s.arch, s.mem, &regs, stackView(maps)) {
		pc := f.PC()
		if !s.ownArea(pc) {
			continue
		}
		orig, ok := s.counters.exactPC(f, regs.ThreadBase())
		if ok {
			f.SetPC(orig)
			ok = f.Write(s.mem) == nil
		}
		s.told.note(frameSettledEvent{tid, pc, orig, ok})
		keep = keep || !ok
	}
	return keep
}

// exactPC returns, for registers r (a signal frame's) at a PC inside a
// trampoline, the program's address where they go on exactly as they
// would from there (instr.Trampoline.ExactPC), rolled out of the
// instrumentation's regions first as for a signal (rollOut; base is the
// thread's block): r is changed so. It reports false where there is no
// such address, or the PC is in no trampoline.
func (c *counters) exactPC(r instr.Regs, base uint64) (uint64, bool) {
	if c == nil {
		return 0, false
	}
	pc := r.PC()
	tr := trampAt(c.tramps, pc)
	if tr == nil {
		return 0, false
	}
	for _, rg := range tr.regions {
		start := tr.addr + uint64(rg.at)
		if pc >= start && c.rollOut(r, base, start, int(pc-start), rg.rollback) {
			break
		}
	}
	return tr.code.ExactPC(tr.addr, tr.patch.End(), r.PC())
}

// ownFramesAbove gives each thread, where a thread's area is found from
// its stack pointer through the stack table (arm64), the pages of its
// stack above the stack pointer it was stopped with: the frames of the
// calls it was in, where it returns to during the window. (A thread
// PROFILE sees start begins at its stack's top: ownStack's pages, at and
// below its stack pointer, are all of it. A thread found in the middle of
// its calls has frames above: main's loop, a page or more above the
// read(2) it waits in, whose records would go to the discard area.) The
// pages go up to the end of the stack's mapping, or to the page below the
// next thread's stack pointer in the same mapping, and only those that no
// thread has. sps are the threads' stack pointers, by thread; readMaps
// reads the memory map.
func (s threadStacks) ownFramesAbove(sps map[int]uint64, readMaps func() ([]procmaps.Mapping, error)) error {
	c := s.counters
	if c == nil || !c.layout.Table {
		return nil
	}
	maps, err := readMaps()
	if err != nil {
		return err
	}
	const page = 1 << instr.DepthTablePage
	for tid, sp := range sps {
		b, ok := c.blockOf[tid]
		if !ok || b == 0 {
			continue
		}
		m, ok := stackOf(maps, sp)
		if !ok {
			continue
		}
		top := m.End - 1
		for other, osp := range sps {
			if other != tid && sp < osp && osp <= top {
				top = osp&^(page-1) - 1
			}
		}
		lo := sp &^ (page - 1)
		if top < lo {
			continue
		}
		c.pointStack(lo, top, b, 0)
		if s, ok := c.stacks[b]; ok && s[1] < top {
			c.stacks[b] = [2]uint64{s[0], top}
		}
	}
	return nil
}
