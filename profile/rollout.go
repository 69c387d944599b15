package profile

import (
	"encoding/binary"
	"iter"
	"sort"

	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// The trampolines the counters know of (inprocess.go), and a thread
// stopped inside one rolled out of it: its registers back from its block
// and its PC where the region's rollback range says (signals.go), or the
// program's own address for it (frames, the watch).

// tramp is one written trampoline.
type tramp struct {
	addr  uint64
	patch instr.Patch
	code  instr.Trampoline
	// regions are its code a thread stopped for a signal is rolled out
	// of: the call depth's, or the records'.
	regions []region
}

// region is a piece of a trampoline's instrumentation that a signal must
// not interrupt: where it starts in the trampoline, how to roll a thread
// out of it (offsets from there), and for a record, where its ring-full
// breakpoint ends (0: none).
type region struct {
	at         int
	rollback   []instr.Rollback
	full, skip int
	unchecked  []byte
	// tp marks record code that finds its ring through the thread
	// pointer (instr.RecordCode.ThreadPointer).
	tp bool
	// book is set for book code (ledger.go), whose breakpoint ends at
	// bookStop.
	book     *bookSite
	bookStop int
}

// recordRegion is the region of record code rc at offset at of a
// trampoline.
func recordRegion(at int, rc *instr.RecordCode) region {
	return region{at: at, rollback: rc.Rollback, full: rc.Full, skip: rc.Skip, unchecked: rc.Unchecked, tp: rc.ThreadPointer}
}

// rolls reports whether trampolines have code a thread stopped for a
// signal must be rolled out of: the call depth's, the record code, a
// count in the thread's area (between its load and its store).
func (c *counters) rolls() bool {
	return c.keepsDepth() || (c != nil && (c.layout.Rings || c.layout.Books || c.saves || c.layout.Kind == instr.CountInArea))
}

// rollBack undoes a thread stopped inside a trampoline's depth or record
// code (its regions), before a signal handler runs (it may call profiled
// functions, whose trampolines use the same save slots): the registers
// saved so far come back from the thread's block and the thread resumes
// where the region's rollback range says, the start of the code, which is
// idempotent, or after a committed record. It reports whether regs
// changed.
func (c *counters) rollBack(regs *ptrace.Regs) bool {
	if !c.rolls() {
		return false
	}
	pc := regs.PC()
	for rg, start := range regionsAt(c.tramps, pc) {
		if c.rollOut(regs, regs.ThreadBase(), start, int(pc-start), rg.rollback) {
			return true
		}
	}
	return false
}

// rollOut rolls a thread (or a signal frame) at off in code starting at
// start out of it by the first of rollback's ranges that holds off, and
// reports whether one did; base is the thread's block (where threads
// have areas of the table, the area its stack pointer has, unless base
// names one: Go's book code finds the thread's through its pointer).
func (c *counters) rollOut(regs instr.Regs, base, start uint64, off int, rollback []instr.Rollback) bool {
	if c.layout.Table && base == 0 {
		// (The code saved them in the area it found from the stack
		// pointer, which it does not move.)
		base = c.layout.AreaAddr(c.tableArea(c.env.arch.SP(regs)))
	}
	for _, r := range rollback {
		if off < r.From || off >= r.To {
			continue
		}
		if r.Finish {
			// (Stepped to its end, as any code of PROFILE's, before
			// the signal is delivered: signals.deliverOutside.)
			return false
		}
		if len(r.Restore) > 0 {
			// The registers were saved in the thread's block.
			if !c.holds(base) {
				return false
			}
			block := c.shared.Bytes()[base-c.layout.ProgAddr:]
			for _, s := range r.Restore {
				regs.SetReg(s.Reg, binary.LittleEndian.Uint64(block[s.Offset:]))
			}
		}
		regs.SetPC(start + uint64(r.Resume))
		return true
	}
	return false
}

// origPC returns the program's own address for a PC inside a trampoline,
// and whether it was in one.
func (c *counters) origPC(pc uint64) (uint64, bool) {
	if c == nil {
		return 0, false
	}
	tr := trampAt(c.tramps, pc)
	if tr == nil {
		return 0, false
	}
	if pc >= tr.addr+uint64(len(tr.code.Code)) {
		return 0, false
	}
	return tr.code.OrigPC(tr.addr, tr.patch.End(), pc), true
}

// regionsAt yields the regions of the trampoline of tramps that holds
// pc which start at or before pc, each with its start, in order.
func regionsAt(tramps []*tramp, pc uint64) iter.Seq2[*region, uint64] {
	return func(yield func(*region, uint64) bool) {
		tr := trampAt(tramps, pc)
		if tr == nil {
			return
		}
		for i := range tr.regions {
			start := tr.addr + uint64(tr.regions[i].at)
			if pc >= start && !yield(&tr.regions[i], start) {
				return
			}
		}
	}
}

// trampAt returns the trampoline of tramps (sorted by address) that
// starts last at or before pc, the one that holds pc if any does; nil
// for none.
func trampAt(tramps []*tramp, pc uint64) *tramp {
	i := sort.Search(len(tramps), func(i int) bool { return tramps[i].addr > pc }) - 1
	if i < 0 {
		return nil
	}
	return tramps[i]
}
