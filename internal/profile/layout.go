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

	"github.com/sourceprofiler/sprof/internal/elfid"
	"github.com/sourceprofiler/sprof/internal/instr"
)

// layout returns the layout of planting p's code, made at its first
// use: the mechanisms that patch plan through it, each patch knowing the
// bytes after it as they will be.
func (t *tracer) layout(p *planting) *instr.Layout {
	if p.lay == nil {
		p.room = newRoom(t, p)
		p.lay = instr.NewLayout(t.arch, p.text.start, p.text.b, t.knownCode(p), p.room)
	}
	return p.lay
}

// knownCode returns what planting p knows to be code, for the rule that
// nothing that may be data is moved out: the plan's line sites and
// function entries in the module, the module's symbols, and the targets
// of its direct branches and calls.
func (t *tracer) knownCode(p *planting) func(uint64) bool {
	var known []uint64
	for _, l := range t.plan.Lines {
		if l.Module == p.mi {
			for _, a := range l.Addrs {
				known = append(known, a+p.bias)
			}
		}
	}
	for _, f := range t.plan.Funcs {
		if f.Module == p.mi {
			known = append(known, f.Entry+p.bias, f.Low+p.bias)
		}
	}
	path := t.plan.Modules[p.mi].Path
	if mapped := p.in.first.Path; mapped != "" {
		path = mapped
	}
	for _, a := range elfid.ReadFuncStarts(path) {
		known = append(known, a+p.bias)
	}
	slices.Sort(known)
	known = slices.Compact(known)
	return func(addr uint64) bool {
		_, ok := slices.BinarySearch(known, addr)
		return ok || t.scan.landings.has(addr)
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
func (t *tracer) putPlanned(p *planting, pl *instr.Planned, regions func(x *instr.Planned) []region, count int) []*tramp {
	order := slices.Clone(pl.Evicted)
	slices.Reverse(order)
	var out []*tramp
	for _, x := range append(order, pl) {
		tp := &tramp{addr: x.At, patch: x.Patch, code: x.Tramp, regions: regions(x)}
		if p.room.inPage(x.At) {
			p.paged = append(p.paged, span{x.At, x.Tramp.Code})
		} else {
			p.area.put(x.At, x.Tramp.Code)
		}
		w := patchWrite{addr: x.Patch.Site, jump: x.Jump, code: x.Tramp.Code, tramp: tp}
		if x == pl {
			w.count = count
		} else {
			w.movedOut = true
		}
		p.jumps = append(p.jumps, w)
		t.counters.add(tp)
		out = append(out, tp)
	}
	return out
}

// writePaged writes the trampolines of the room's pages of planting p,
// one write for the pieces of each page.
func (t *tracer) writePaged(p *planting) error {
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
		if err := t.mem.WriteMem(lo, buf); err != nil {
			return fmt.Errorf("write trampolines at %#x: %w", lo, err)
		}
		i = j
	}
	p.paged = nil
	return nil
}
