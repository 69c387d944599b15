// Trampolines: how one entry's patch is chosen (a full jump, a short jump
// to a hop in the padding, a punned jump) and its trampoline built and
// placed, and the reasons an entry falls back to a breakpoint.

package profile

import (
	"errors"
	"fmt"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
)

// hopSpace is the padding where hops may go: the alignment padding after
// the module's planned functions that no patch covers, as free ranges.
type hopSpace struct {
	free [][2]uint64
}

// hopSpace finds the padding after each of items' functions, less what the
// patches in jumps cover.
func (e *planter) hopSpace(items []int, bias uint64, text moduleText, jumps []patchWrite) *hopSpace {
	covered := map[uint64]uint64{} // a patch's start, its end
	for _, j := range jumps {
		covered[j.addr] = j.addr + uint64(len(j.jump)+len(j.tramp.patch.Punned))
	}
	hs := &hopSpace{}
	for _, item := range items {
		f := &e.plan.Funcs[item]
		if f.Low >= f.High || f.High+bias < text.start {
			continue
		}
		hi := f.High + bias
		off := hi - text.start
		if off >= uint64(len(text.b)) {
			continue
		}
		pad := uint64(instr.PaddingAfter(e.arch, text.b[off:], hi))
		lo := hi
		for start, end := range covered {
			if start < hi && end > lo {
				lo = end // a tiny function's patch ran into its padding
			}
		}
		if lo+5 <= hi+pad {
			hs.free = append(hs.free, [2]uint64{lo, hi + pad})
		}
	}
	return hs
}

// remove takes [lo, hi) out of the free padding.
func (hs *hopSpace) remove(lo, hi uint64) {
	var free [][2]uint64
	for _, r := range hs.free {
		if r[1] <= lo || hi <= r[0] {
			free = append(free, r)
			continue
		}
		if r[0] < lo {
			free = append(free, [2]uint64{r[0], lo})
		}
		if hi < r[1] {
			free = append(free, [2]uint64{hi, r[1]})
		}
	}
	hs.free = free
}

// take allocates n bytes of padding that a short jump at site reaches
// (back and forward bytes from it), or returns false.
func (hs *hopSpace) take(site uint64, back, fwd int64, n uint64) (uint64, bool) {
	for i, r := range hs.free {
		if r[1]-r[0] < n {
			continue
		}
		if d := int64(r[0] - site); d >= -back && d <= fwd {
			hs.free[i][0] += n
			return r[0], true
		}
	}
	return 0, false
}

// entryTrampoline builds the trampoline at addr of the patch p of f's
// entry (item; its code [lo, hi)): the instrumentation (the count, and
// the call depth's code where there is a depth area; timing in-process,
// the entry's record), the replaced instructions relocated, and the jump
// back. Timing in-process, where the patch covers the function's exit (a
// function of a few bytes), the exit's record goes before the exit, which
// leaves: no jump back.
func (et *entryTrampolines) entryTrampoline(p *instr.Patch, addr uint64, f *datafile.Func, item int, lo, hi uint64) (instr.Trampoline, error) {
	env := &et.env
	c := env.counters
	prelude := func(code []byte) (instr.Trampoline, error) {
		k := entryIndex(p, f.Entry+lo-f.Low)
		if k == 0 {
			return env.arch.Trampoline(p, addr, code)
		}
		// (Planned at the function's start, carrying its stack check:
		// the count goes before the entry's instruction.)
		q := *p
		q.Before = make([][]byte, k+1)
		q.Before[k] = code
		return env.arch.Trampoline(&q, addr, nil)
	}
	if env.timer == nil {
		count := et.entryCount(item).Code
		if c.keepsDepth() && f.Frame != datafile.FrameNone {
			d, _ := et.depthCode(c.depthCode(f.Frame == datafile.FrameGoroutine))
			count = append(count[:len(count):len(count)], d.Code...)
		}
		return prelude(count)
	}
	entry := env.timer.eventCode(item, entryEvent)
	e := instr.ExitIndex(p, lo, hi)
	if e < 0 {
		return prelude(entry.code)
	}
	if entryIndex(p, f.Entry+lo-f.Low) > 0 {
		return instr.Trampoline{}, fmt.Errorf("an exit carried with the stack check: %w", instr.ErrNotRelocatable)
	}
	exit := env.timer.eventCode(item, exitEvent)
	upTo := *p
	upTo.Insts = p.Insts[:e+1]
	n := 0
	for _, in := range upTo.Insts {
		n += in.Len
	}
	upTo.Orig = p.Orig[:n]
	at := addr + uint64(len(entry.code))
	tr, err := instr.ExitTrampoline(env.arch, &upTo, at, exit.code)
	if err != nil {
		return instr.Trampoline{}, err
	}
	tr.Code = append(entry.code[:len(entry.code):len(entry.code)], tr.Code...)
	tr.At += len(entry.code)
	return tr, nil
}

// entryCount is the count of item at its function's entry, as the
// trampolines count (instr.Instrumenter.EntryCount): a Go function's,
// whose goroutine's stack is in no stack table, through the thread
// pointer where PROFILE sets it (counters.threadPointers); empty where
// the trampolines cannot count it.
func (et *entryTrampolines) entryCount(item int) instr.DepthCode {
	c := et.env.counters
	s := c.layout.Site(item)
	s.GoStack = et.env.plan.Funcs[item].Frame != datafile.FrameSP
	s.ThreadPointer = s.GoStack && c.threadPointers()
	d, _ := et.env.arch.EntryCount(c.layout.Kind, s)
	return d
}

// entryRegions returns the regions of the trampoline tr of item's entry (see
// entryTrampoline).
func (et *entryTrampolines) entryRegions(f *datafile.Func, item int, tr *instr.Trampoline, addr uint64, base int) []region {
	env := &et.env
	c := env.counters
	if env.timer == nil {
		// The count's (in the thread's area: between its load and its
		// store), then the call depth's.
		var rs []region
		count := et.entryCount(item)
		if len(count.Rollback) > 0 {
			rs = append(rs, region{at: base, rollback: count.Rollback})
		}
		if c.keepsDepth() && f.Frame != datafile.FrameNone {
			if d, ok := et.depthCode(c.depthCode(f.Frame == datafile.FrameGoroutine)); ok {
				rs = append(rs, region{at: base + len(count.Code), rollback: d.Rollback})
			}
		}
		return rs
	}
	entry := env.timer.eventCode(item, entryEvent)
	rs := []region{entry.at(base)}
	if tr.Exit {
		exit := env.timer.eventCode(item, exitEvent)
		rs = append(rs, exit.at(tr.At))
	}
	return rs
}

// entryIndex returns the index in p's instructions of the one at
// entry: 0 where p starts there (or after its landing pad), more where
// p starts earlier and carries the instructions before the entry (a Go
// function's stack check, Layout.PlanThrough).
func entryIndex(p *instr.Patch, entry uint64) int {
	at := p.Site
	for i, in := range p.Insts {
		if at == entry {
			return i
		}
		at += uint64(in.Len)
	}
	return 0
}

// preludeAt returns the offset in trampoline tr, at addr, of its patch
// p's instrumentation: 0, or where the code before the entry's
// instruction starts (entryIndex).
func preludeAt(p *instr.Patch, tr *instr.Trampoline, addr, entry uint64) int {
	if entryIndex(p, entry) == 0 {
		return 0
	}
	for _, m := range tr.PCs {
		if m.Orig == entry {
			return int(m.Tramp - addr)
		}
	}
	return 0
}

// entryScratch reports whether the instrumentation of item's entry uses
// registers the calling convention leaves free at a call, not at a branch
// of f's own (arm64's x16 and x17: the record code, the call depth's
// table form, the count in the thread's area).
func (et *entryTrampolines) entryScratch(item int) bool {
	env := &et.env
	if env.timer != nil {
		return env.timer.eventCode(item, entryEvent).scratch
	}
	l := &env.counters.layout
	return l.Kind == instr.CountInArea || (l.Table && env.counters.keepsDepth() && env.plan.Funcs[item].Frame != datafile.FrameNone)
}

// hopLen is the room of a hop: the longest full jump (amd64 jmp rel32).
const hopLen = 5

// Reasons for a breakpoint that are not the architecture's.
var (
	errNoExtent = errors.New("the plan does not hold the function's extent")
	errNoRoom   = errors.New("no room for trampolines near the module")
	errNoCode   = errors.New("the function's code could not be read")
	errNoHop    = errors.New("no padding within a short jump's reach for a hop")
	// errLoopEntry: a branch of the function goes back to its entry (a
	// loop, or a recursive call made a jump), where the registers the
	// instrumentation uses may be live.
	errLoopEntry = errors.New("a branch of the function to its own entry")
	// errGoArea: a Go function's entry, where threads count in their
	// areas of the stack table (arm64 without LSE), found from the stack
	// pointer: a goroutine's stack is in no table, and the thread pointer
	// is not PROFILE's to point at the area (probeCaps).
	errGoArea = errors.New("a Go function, whose goroutine's stack is in no stack table, in a program whose thread pointer its dynamic linker or C library sets (arm64 without LSE counts in the thread's area)")
)

// fallBackReason classifies why an entry keeps a breakpoint, in a few words.
func fallBackReason(err error) string {
	switch {
	case errors.Is(err, errNoExtent):
		return "extent unknown"
	case errors.Is(err, errNoRoom):
		return "no room"
	case errors.Is(err, errNoCode):
		return "code unreadable"
	case errors.Is(err, errNoHop):
		return "no hop"
	case errors.Is(err, errGoFrames):
		return "Go assembly, timed with breakpoints"
	case errors.Is(err, errGoClock):
		return "Go function, the counter not one clock"
	case errors.Is(err, errGoThreadPointer):
		return "Go function, the thread pointer not free"
	case errors.Is(err, errOverlap):
		return "overlaps another patch"
	case errors.Is(err, errLoopEntry):
		return "a loop to the entry"
	case errors.Is(err, errNotTailCall):
		return "a jump to no function's entry"
	case errors.Is(err, instr.ErrNoWindow):
		return "no room where its jump lands"
	case errors.Is(err, errGoAssembly):
		return "Go assembly, its registers not free"
	case errors.Is(err, errGoArea):
		return "Go function, no LSE"
	}
	return instr.Reason(err)
}
