// The layout of a module's patches (instr.Layout): every jump PROFILE
// writes over a function's entry or a line's site replaces that one
// instruction, so whatever lands anywhere else in the code, seen by the
// module scan or not, finds the program's own instruction there, or a
// jump to a trampoline that runs it (docs/linux.md, "Where PROFILE
// plants").

package profile

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/elfid"
)

// layout returns the layout of planting p's code, made at its first
// use: the mechanisms that patch plan through it, each patch knowing the
// bytes after it as they will be.
func (e *planter) layout(p *planting) *instr.Layout {
	if p.lay == nil {
		p.room = newRoom(e, p)
		p.lay = instr.NewLayout(e.arch, p.text.start, p.text.b, e.knownCode(p), p.room)
		p.lay.Fill(e.fill(p))
	}
	return p.lay
}

// fill returns the alignment fill in planting p's code: after each
// function of the plan in its module, and of its symbol tables (a line
// plan's functions are not all in the plan: Go's generated ones), the
// architecture's fill (int3, nops) up to the next 16 bytes
// (instr.PaddingAfter), and no further than the next function's start.
// Nothing runs there.
func (e *planter) fill(p *planting) [][2]uint64 {
	starts := e.funcStarts(p, nil)
	end := p.text.start + uint64(len(p.text.b))
	var highs []uint64
	for _, f := range e.plan.Funcs {
		if f.Module == p.mi && f.Low < f.High {
			highs = append(highs, f.High+p.bias)
		}
	}
	for _, a := range elfid.ReadFuncEnds(e.modulePath(p)) {
		highs = append(highs, a+p.bias)
	}
	var out [][2]uint64
	for _, hi := range highs {
		if hi < p.text.start || hi >= end {
			continue
		}
		n := uint64(instr.PaddingAfter(e.arch, p.text.b[hi-p.text.start:], hi))
		if i, _ := slices.BinarySearch(starts, hi+1); i < len(starts) {
			n = min(n, starts[i]-hi)
		}
		if n > 0 {
			out = append(out, [2]uint64{hi, hi + n})
		}
	}
	slices.SortFunc(out, func(a, b [2]uint64) int { return cmp.Compare(a[0], b[0]) })
	return slices.CompactFunc(out, func(a, b [2]uint64) bool { return a[0] == b[0] })
}

// funcStarts returns to, with the starts and entries of the functions of
// planting p's module, the plan's and the symbols', sorted, each once.
func (e *planter) funcStarts(p *planting, to []uint64) []uint64 {
	for _, f := range e.plan.Funcs {
		if f.Module == p.mi {
			to = append(to, f.Entry+p.bias, f.Low+p.bias)
		}
	}
	for _, a := range elfid.ReadFuncStarts(e.modulePath(p)) {
		to = append(to, a+p.bias)
	}
	slices.Sort(to)
	return slices.Compact(to)
}

// modulePath returns the path of planting p's module as mapped.
func (e *planter) modulePath(p *planting) string {
	if mapped := p.in.First.Path; mapped != "" {
		return mapped
	}
	return e.plan.Modules[p.mi].Path
}

// knownCode returns what planting p knows to be code, for the rule that
// nothing that may be data is moved out: the plan's line sites and
// function entries in the module, the module's symbols, and the targets
// of its direct branches and calls.
func (e *planter) knownCode(p *planting) func(uint64) bool {
	var known []uint64
	for _, l := range e.plan.Lines {
		if l.Module == p.mi {
			for _, a := range l.Addrs {
				known = append(known, a+p.bias)
			}
		}
	}
	known = e.funcStarts(p, known)
	return func(addr uint64) bool {
		_, ok := slices.BinarySearch(known, addr)
		return ok || e.scan.landings.has(addr)
	}
}

// putPlanned puts patch pl, planned in p's layout, and the instructions
// it moved out into planting p: their trampolines into the area, or into
// the room's pages (written by writePaged), their jumps with the other
// jumps, each trampoline among the run's (regions gives its regions, for
// pl's own and for each moved out). It returns the trampolines, the
// instructions moved out first, deepest first: the order in which each
// comes after those its jump ends with. count is where pl's trampoline
// reads a line's counter (--explain).
func (e *planter) putPlanned(p *planting, pl *instr.Planned, regions func(x *instr.Planned) []region, count int) []*tramp {
	order := slices.Clone(pl.Evicted)
	slices.Reverse(order)
	var out []*tramp
	for _, x := range append(order, pl) {
		tp := &tramp{addr: x.At, patch: x.Patch, code: x.Tramp, regions: regions(x)}
		e.putCode(p, x.At, x.Tramp.Code)
		if x.HopCode != nil {
			// The hop: a thread stopped there has run nothing yet.
			if !x.HopInCode {
				e.putCode(p, x.Hop, x.HopCode)
			}
			p.counters.add(&tramp{addr: x.Hop, patch: x.Patch, code: instr.Trampoline{Code: x.HopCode, PCs: []instr.PCMap{{Tramp: x.Hop, Orig: x.Patch.Site}}, Exit: true}})
		}
		w := patchWrite{addr: x.Patch.Site, jump: x.Jump, code: x.Tramp.Code, tramp: tp}
		if x.HopInCode {
			w.hop, w.hopCode = x.Hop, x.HopCode // (written with the jumps, in the code)
		} else {
			w.farHop = x.Hop
		}
		if x == pl {
			w.count, w.evicts = count, len(pl.Evicted) > 0
		} else {
			w.movedOut = true
		}
		p.jumps = append(p.jumps, w)
		p.counters.add(tp)
		out = append(out, tp)
	}
	return out
}

// putCode puts code at addr, in planting p's area or one of its room's
// pages.
func (e *planter) putCode(p *planting, addr uint64, code []byte) {
	if p.room.inPage(addr) {
		p.paged = append(p.paged, span{addr, code})
	} else {
		p.area.put(addr, code)
	}
}

// writePaged writes the trampolines of the room's pages of planting p,
// one write for the pieces of each page.
func (e *planter) writePaged(p *planting) error {
	paged := p.paged
	slices.SortFunc(paged, func(a, b span) int { return cmp.Compare(a.addr, b.addr) })
	for i := 0; i < len(paged); {
		pg := p.room.page(paged[i].addr)
		j := i + 1
		for j < len(paged) && paged[j].addr < pg.addr+pg.size {
			j++
		}
		lo, hi := paged[i].addr, paged[j-1].addr+uint64(len(paged[j-1].b))
		buf := make([]byte, hi-lo)
		for _, sp := range paged[i:j] {
			copy(buf[sp.addr-lo:], sp.b)
		}
		if err := (*e.mem).WriteMem(lo, buf); err != nil {
			return fmt.Errorf("write trampolines at %#x: %w", lo, err)
		}
		i = j
	}
	p.paged = nil
	return nil
}
