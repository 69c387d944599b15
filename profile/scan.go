// The module scan: a module's code decoded once before anything is
// planted in it (instr.MapCode), for its instruction boundaries, the
// places its jumps and calls land, and, timing in-process, its calls'
// returns and its functions' starts.

package profile

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/elfid"
	"github.com/sourceprofiler/sprof/profile/procmaps"
)

// scanCode decodes the code of module mi, at path, loaded with bias,
// mapped as in (scanModule), for what is planted in it: e.scan.code until it
// is planted, and the places its jumps land added to those of the
// modules planted before it (e.scan.landings: a patch covers none, whoever
// jumps there); timing in-process, the returns of its calls and its
// symbol table's function starts too.
func (e *planter) scanCode(maps []procmaps.Mapping, in procmaps.Instance, mi int, path string, bias uint64) {
	e.scan.code = e.scanModule(maps, in, mi, bias)
	w := e.wants()
	if !w.landings && !elfid.ReadIsGo(path) {
		return
	}
	for _, cm := range e.scan.code {
		e.scan.landings = append(e.scan.landings, cm.Jumps...)
		for target := range cm.Returns {
			e.scan.landings = append(e.scan.landings, target) // a call lands too
		}
		if w.attached {
			// In a process attached to, the threads are somewhere in
			// the code already: where each stopped, and where each
			// call returns, which its callers' frames may hold.
			e.scan.landings = append(e.scan.landings, cm.AfterCalls...)
		}
	}
	e.scan.landings = append(e.scan.landings, w.pcs...)
	slices.Sort(e.scan.landings)
	e.scan.landings = slices.Compact(e.scan.landings)
	if !w.returns {
		return
	}
	if e.scan.returns == nil {
		e.scan.returns, e.scan.starts = map[uint64][]uint64{}, map[uint64]bool{}
	}
	for _, cm := range e.scan.code {
		for target, rs := range cm.Returns {
			e.scan.returns[target] = append(e.scan.returns[target], rs...)
		}
	}
	for _, a := range elfid.ReadFuncStarts(path) {
		e.scan.starts[a+bias] = true
	}
}

// scanWants is what the scan of a module finds beyond its decoding, for
// the run's mechanisms: the places its jumps land (a function profile,
// or line trampolines; and a Go module's lines, which move after Go's
// restartable sequences only where nothing lands: linerestarts.go), and
// in a process attached to where its calls return and the threads' PCs
// (pcs) among them; timing in-process, its calls' returns and its
// functions' starts.
type scanWants struct {
	landings bool
	attached bool
	pcs      []uint64
	returns  bool
}

// codeScan is what the scans of the modules' code found, which the
// mechanisms plant by: the decoding of the module being planted, and of
// every module planted, the places where jumps land (landings), where
// the direct calls of each address return (returns), and where the
// symbol tables' functions start, cold parts aside (starts).
type codeScan struct {
	code     codeMaps // the module being planted, decoded
	landings landings
	returns  map[uint64][]uint64
	starts   map[uint64]bool
}

// forget forgets the landings, returns and function starts in [lo, hi):
// a module unloaded.
func (s *codeScan) forget(lo, hi uint64) {
	in := func(a uint64) bool { return a >= lo && a < hi }
	s.landings = slices.DeleteFunc(s.landings, in)
	for target, rs := range s.returns {
		if rs = slices.DeleteFunc(rs, in); in(target) || len(rs) == 0 {
			delete(s.returns, target)
		} else {
			s.returns[target] = rs
		}
	}
	for a := range s.starts {
		if in(a) {
			delete(s.starts, a)
		}
	}
}

// landings are the targets of the direct jumps and calls of a module's
// code, sorted: a patch may start at one but not cover one.
type landings []uint64

// codeMaps are the executable mappings of a module being planted,
// decoded (instr.CodeMap).
type codeMaps []*instr.CodeMap

// scanModule decodes the executable mappings of the module instance in,
// module mi of the plan loaded with bias: each planned function from its
// start to its end, the code between linearly. So are found where its
// jumps land (the jumps of a function's cold part, GCC's f.cold placed
// apart, back into it among them, and those of other functions into
// its first bytes, which decoding the function alone does not see),
// where its calls return, and where its instructions begin. It costs
// some 3 ms for 10,000 small functions on x86-64 (docs/performance.md).
func (e *planter) scanModule(maps []procmaps.Mapping, in procmaps.Instance, mi int, bias uint64) codeMaps {
	var funcs [][2]uint64
	for i := range e.plan.Funcs {
		if f := &e.plan.Funcs[i]; f.Module == mi && f.Low < f.High {
			funcs = append(funcs, [2]uint64{f.Low + bias, f.High + bias})
		}
	}
	var out codeMaps
	for _, m := range maps {
		if m.Inode != in.First.Inode || m.Path != in.First.Path || m.Start < in.Lo || m.End > in.Hi ||
			!strings.Contains(m.Perms, "x") || m.End-m.Start > 1<<30 {
			continue
		}
		code := make([]byte, m.End-m.Start)
		if err := (*e.mem).ReadMem(m.Start, code); err != nil {
			continue
		}
		out = append(out, instr.MapCode(e.arch, code, m.Start, funcs))
	}
	return out
}

// at returns the decoding that holds addr, or nil.
func (c codeMaps) at(addr uint64) *instr.CodeMap {
	for _, cm := range c {
		if cm.Contains(addr) {
			return cm
		}
	}
	return nil
}

// boundary returns nil when a site may be planted at addr (see
// instr.CodeMap.Boundary), else why not.
func (c codeMaps) boundary(addr uint64) error {
	cm := c.at(addr)
	if cm == nil {
		return fmt.Errorf("not in the module's code: %w", instr.ErrNotBoundary)
	}
	return cm.Boundary(addr)
}

// inIndirect reports whether addr is in a function with an indirect
// jump (instr.CodeMap.Indirect).
func (c codeMaps) inIndirect(addr uint64) bool {
	cm := c.at(addr)
	return cm != nil && cm.InIndirect(addr)
}

// has reports whether a jump lands at addr.
func (l landings) has(addr uint64) bool {
	_, ok := slices.BinarySearch(l, addr)
	return ok
}

// inside reports whether a jump lands in (lo, hi): past the first byte of
// a patch from lo to hi.
func (l landings) inside(lo, hi uint64) bool {
	i := sort.Search(len(l), func(i int) bool { return l[i] > lo })
	return i < len(l) && l[i] < hi
}

// spans are address ranges, sorted and not overlapping.
type spans [][2]uint64

// takenSpans returns the code the entries' patches and hops, and the
// breakpoints, take.
func takenSpans(jumps []patchWrite, sites map[uint64]*site) spans {
	var s spans
	for _, j := range jumps {
		// (A punned jump goes on over the bytes it shares with the code
		// after its patch.)
		s = append(s, [2]uint64{j.addr, j.addr + uint64(len(j.jump)+len(j.tramp.patch.Punned))})
		if j.hopCode != nil {
			s = append(s, [2]uint64{j.hop, j.hop + uint64(len(j.hopCode))})
		}
	}
	for addr, st := range sites {
		s = append(s, [2]uint64{addr, addr + uint64(len(st.orig))})
	}
	slices.SortFunc(s, func(a, b [2]uint64) int { return cmp.Compare(a[0], b[0]) })
	return s
}

// covers reports whether [lo, hi) overlaps a span.
func (s spans) covers(lo, hi uint64) bool {
	i := sort.Search(len(s), func(i int) bool { return s[i][1] > lo })
	return i < len(s) && s[i][0] < hi
}
