// The planting engine: what every mechanism that plants in the program
// uses (entries, exits, lines, breakpoints): the areas mapped next to a
// module and the pages mapped where punned jumps land (room.go), the
// layout of a module's patches (layout.go), the padding where hops go
// (trampolines.go), the scan of the module's code (scan.go), and the
// reads and writes of its code. The mechanisms choose what to plant; the
// planter gives them where, and writes it.

package profile

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/elfid"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/profile/procmaps"
)

// planter is the planting engine of a run.
type planter struct {
	arch instr.Arch
	plan *datafile.Plan
	// mem is the tracer's memory of the program (set when the process is
	// obtained; the injector's borrowedMem during a run of calls).
	mem  *instr.Memory
	warn func(*prf.Diagnostic)
	// calls makes the program map memory for it (mmap).
	calls *injector
	// mapArea maps the area next to a module (areaNear) and the room's
	// pages: mmap, or a fake in the unit tests of planting. (The
	// counters and the calibration blocks are mapped with mmap itself.)
	mapArea func(hint, size uint64) (uint64, error)
	// pageSize is the running system's page size (4, 16 or 64 KiB on
	// arm64), the unit of the areas.
	pageSize uint64
	// areas are the areas mapped next to each module's instance, by the
	// instance's start, unmapped with it (modules.go).
	areas map[uint64][][2]uint64
	// ownMaps are the executable areas PROFILE mapped in the program
	// (mmap): trampolines, slots, hops, the calibration's code, whether
	// or not a module's areas (areas) list them.
	ownMaps [][2]uint64
	// scan is what the scans of the modules' code found (scan.go), and
	// wants what the run's mechanisms need of each scan.
	scan  codeScan
	wants func() scanWants
}

// newPlanter returns the planting engine of t's run, on a system of
// pages of pageSize bytes.
func newPlanter(t *tracer, pageSize uint64) *planter {
	e := &planter{arch: t.arch, plan: t.plan, mem: &t.mem, warn: t.cfg.Warn, calls: t.parts.calls, pageSize: pageSize,
		areas: make(map[uint64][][2]uint64)}
	e.mapArea = e.mmap
	e.wants = func() scanWants {
		w := scanWants{landings: t.plan.Method.IsFunction() || t.parts.lines != nil, returns: t.parts.timer() != nil && t.plan.Method.IsFunction()}
		if t.attach != nil {
			w.attached, w.pcs = true, t.attach.pcs
		}
		return w
	}
	return e
}

// planting is the work of planting one module (plantModule): the module,
// and for a function profile its functions' code as read, the area next
// to it, what is left to plant, and the jumps built so far, which what is
// planted after them must not overlap.
type planting struct {
	mi   int
	bias uint64
	in   procmaps.Instance
	maps []procmaps.Mapping
	// lines is set for a line profile, whose sites are planted and
	// nothing else: lineSites are the sites left to plant, each with the
	// lines there (lineTrampolines takes those it can, the breakpoints
	// the rest), text the code from the first to past the last, and
	// spans what the breakpoints write there, with the jumps.
	lines     bool
	lineSites *lineSiteSet
	spans     []span
	// err is why the module cannot be planted at all.
	err   error
	items []int      // the functions planted, by index in the plan
	text  moduleText // their code
	area  *codeArea
	// entries are the functions whose entries are left to plant, one
	// for each address (an entry two names share is counted once): all,
	// or none once entryTrampolines planted them, handing those no jump
	// fits to the breakpoints itself. exits are the exits left to plant,
	// by function (timing).
	entries []int
	exits   map[int][]instr.Exit
	jumps   []patchWrite
	// hops is the padding where short jumps' hops go (padding).
	hops *hopSpace
	// lay is the layout of text's patches, and room where their
	// trampolines go (layout), paged those trampolines in the room's
	// pages, written in bulk (writePaged).
	lay   *instr.Layout
	room  *room
	paged []span
	// counters are the run's counters, which the trampolines put are
	// added to (putPlanned).
	counters *counters
}

// moduleText is a module's code as read from the program once: the span
// of every planned function's code.
type moduleText struct {
	start uint64
	b     []byte
}

// span is bytes to write at an address.
type span struct {
	addr uint64
	b    []byte
}

// patchWrite is a jump to write over an entry, its trampoline's code, and
// for a short jump its hop.
type patchWrite struct {
	addr    uint64
	jump    []byte
	code    []byte
	hop     uint64
	hopCode []byte
	tramp   *tramp
	// count is, in a line trampoline, the offset of the instruction
	// that reads the site's counter (instr.DepthCode.Count).
	count int
	// movedOut marks the jump of an instruction moved out of the way of
	// a site's jump (instr.Layout), whose trampoline only runs it.
	movedOut bool
	// evicts marks a site's jump whose trampoline carries out the
	// instruction moved out of its way (movedOut) too.
	evicts bool
	// farHop is where the jump lands when its window has no room for
	// the trampoline: a jump of full reach on to it (instr.Planned.Hop).
	farHop uint64
}

// mmap maps size bytes of private, anonymous, readable and executable
// memory in the program, near hint when that is free (injector.mmap),
// and notes it among PROFILE's own.
func (e *planter) mmap(hint, size uint64) (uint64, error) {
	addr, err := e.calls.mmap(hint, size)
	if err == nil {
		e.ownMaps = append(e.ownMaps, [2]uint64{addr, size})
	}
	return addr, err
}

// areaNear maps an area of size bytes, rounded up to pages, where code
// of instance in (mapped as maps say) reaches it, for what is planted
// there, and notes it, to be unmapped with the instance (forget). With
// no room there, it warns (PRF4644) and returns an area that is not
// mapped: nothing needing one is planted.
func (e *planter) areaNear(in procmaps.Instance, maps []procmaps.Mapping, size uint64) *codeArea {
	pages := (size + e.pageSize - 1) &^ (e.pageSize - 1)
	base, err := e.mapArea(slotArea(maps, in.Lo, in.Hi, pages, e.pageSize), pages)
	if err != nil {
		e.warn(prf.NoSlots(err))
		return newCodeArea(0, size)
	}
	e.areas[in.First.Start] = append(e.areas[in.First.Start], [2]uint64{base, pages})
	return newCodeArea(base, size)
}

// areaCells returns the bytes the area next to a module needs for the
// entries of items (module loaded with bias) and nExits exits: trampCell
// an entry (a trampoline, or a breakpoint's slot), a slot an exit; timing
// in-process, a trampoline an exit, and room for the return sites of the
// functions' calls too (see exitTrampolines).
func (e *planter) areaCells(items []int, bias uint64, nExits int, rings bool) uint64 {
	exitCell := uint64((e.arch.SlotSize() + 15) &^ 15)
	if rings {
		exitCell = trampCell
		calls := 0
		for _, item := range items {
			calls += len(e.scan.returns[e.plan.Funcs[item].Entry+bias])
		}
		nExits += min(calls, returnSites)
	}
	return uint64(len(items))*trampCell + uint64(nExits)*exitCell
}

// uniqueEntries returns items, loaded with bias, less those whose entry
// an earlier item has too.
func (e *planter) uniqueEntries(items []int, bias uint64) []int {
	seen := map[uint64]bool{}
	out := make([]int, 0, len(items))
	for _, item := range items {
		if addr := e.plan.Funcs[item].Entry + bias; !seen[addr] {
			seen[addr] = true
			out = append(out, item)
		}
	}
	return out
}

// plantable returns the functions of module mi, loaded with bias, whose
// entries may be planted; the others are warned about (checkEntry).
func (e *planter) plantable(mi int, bias uint64) []int {
	var items []int
	for i := range e.plan.Funcs {
		f := &e.plan.Funcs[i]
		if f.Module != mi {
			continue
		}
		if err := e.checkEntry(f, bias); err != nil {
			e.warn(prf.EntryRefused(f.Name, e.plan.Modules[mi].Name, err))
			continue
		}
		items = append(items, i)
	}
	return items
}

// checkEntry returns nil when f's entry, loaded with bias, may be
// planted: where the decoding of its module's code (e.scan.code) has an
// instruction boundary, inside no instruction of another function, and,
// when the plan gives its extent, its code decodes from its start to its
// end. Else why not: the plan does not describe the code the program has
// (a plan written by hand, or for another build).
func (e *planter) checkEntry(f *datafile.Func, bias uint64) error {
	entry := f.Entry + bias
	cm := e.scan.code.at(entry)
	if cm == nil {
		return fmt.Errorf("its entry %#x: not in the module's code: %w", f.Entry, instr.ErrNotBoundary)
	}
	if lo, hi := f.Low+bias, f.High+bias; f.Low < f.High && cm.Contains(lo) && cm.Contains(hi-1) {
		if err := cm.Decoded(lo, hi); err != nil {
			return fmt.Errorf("[%#x, %#x): %w", f.Low, f.High, err)
		}
	}
	if err := cm.Boundary(entry); err != nil {
		return fmt.Errorf("its entry %#x: %w", f.Entry, err)
	}
	return nil
}

// checkExits takes out of exits those whose instruction the decoding of
// the module's code does not begin where FindExits found it (never, but
// in a plan that does not describe the code), with a warning, and
// returns how many.
func (e *planter) checkExits(exits map[int][]instr.Exit) int {
	n := 0
	for item, es := range exits {
		f := &e.plan.Funcs[item]
		exits[item] = slices.DeleteFunc(es, func(x instr.Exit) bool {
			err := e.scan.code.boundary(x.PC)
			if err != nil {
				e.warn(prf.SiteRefused("exit", x.PC, f.Name, e.plan.Modules[f.Module].Name, err))
				n++
			}
			return err != nil
		})
	}
	return n
}

// padding returns the padding where the short jumps of planting p put
// their hops, found at the first need, once the entries' full jumps are
// known.
func (e *planter) padding(p *planting) *hopSpace {
	if p.hops == nil {
		p.hops = e.hopSpace(p.items, p.bias, p.text, p.jumps)
	}
	return p.hops
}

// readText reads the code of the functions items, loaded with bias, in
// one read. Functions whose extent the plan does not know, or a span too
// large to read at once, give an empty text: their entries keep
// breakpoints.
func (e *planter) readText(items []int, bias uint64) moduleText {
	lo, hi := ^uint64(0), uint64(0)
	for _, item := range items {
		f := &e.plan.Funcs[item]
		if f.Low < f.High {
			lo, hi = min(lo, f.Low), max(hi, f.High)
		}
	}
	if lo >= hi || hi-lo > 1<<30 {
		return moduleText{}
	}
	// And the padding after the last function, up to 16 bytes, where the
	// mapping allows.
	b := make([]byte, hi-lo+16)
	if err := (*e.mem).ReadMem(lo+bias, b); err != nil {
		b = b[:hi-lo]
		if err := (*e.mem).ReadMem(lo+bias, b); err != nil {
			return moduleText{}
		}
	}
	return moduleText{start: lo + bias, b: b}
}

// readCode reads up to len(b) bytes of code at addr; near the end of a
// mapping it reads what there is and zeroes the rest.
func (e *planter) readCode(addr uint64, b []byte) error {
	err := (*e.mem).ReadMem(addr, b)
	if err == nil {
		return nil
	}
	clear(b)
	end := (addr + e.pageSize) &^ (e.pageSize - 1)
	return (*e.mem).ReadMem(addr, b[:min(uint64(len(b)), end-addr)])
}

// write writes what planting p built into the program but the
// breakpoints: the area's code, the trampolines of the room's pages, then
// the jumps and hops with the breakpoints of lines, with the code between
// them (writeCode). It returns the jumps and hops written.
func (e *planter) write(p *planting) ([]span, error) {
	if used := p.area.used(); len(used) > 0 {
		if err := e.writeArea(p.area.base, used); err != nil {
			return nil, fmt.Errorf("write trampolines and slots: %w", err)
		}
	}
	if err := e.writePaged(p); err != nil {
		return nil, err
	}
	var jumps []span
	for _, j := range p.jumps {
		if j.hopCode != nil {
			jumps = append(jumps, span{j.hop, j.hopCode})
		}
		jumps = append(jumps, span{j.addr, j.jump})
	}
	// (The breakpoints of lines go with the jumps, in the same text.)
	if err := e.writeCode(p.text, append(slices.Clone(p.spans), jumps...)); err != nil {
		return nil, fmt.Errorf("patch the code: %w", err)
	}
	return jumps, nil
}

// writeArea writes code into an area PROFILE mapped, untouched so far.
// A write that fails is tried once more after a read of each of its
// pages: a write through /proc/PID/mem into a fresh private mapping
// without write permission was seen to fail with EIO, once in a great
// many runs (arm64, 16K pages, Linux 6.12), where the page it needs made
// by a read first is the path every other write of PROFILE's takes.
func (e *planter) writeArea(base uint64, code []byte) error {
	err := (*e.mem).WriteMem(base, code)
	if err == nil {
		return nil
	}
	var b [1]byte
	for at := base; at < base+uint64(len(code)); at += max(e.pageSize, 4096) {
		if rerr := (*e.mem).ReadMem(at, b[:]); rerr != nil {
			return fmt.Errorf("%w (and a read there: %v)", err, rerr)
		}
	}
	return (*e.mem).WriteMem(base, code)
}

// writeCode writes the spans into the program's code, those close
// together in one write filled with the code between them as read in text
// (a write to another process's memory costs a system call: 10,000
// patches one by one take longer than everything else PROFILE does at
// start-up).
func (e *planter) writeCode(text moduleText, spans []span) error {
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.addr, b.addr) })
	const gap = 4096
	end := text.start + uint64(len(text.b))
	for i := 0; i < len(spans); {
		lo, hi := spans[i].addr, spans[i].addr+uint64(len(spans[i].b))
		j := i + 1
		for j < len(spans) && spans[j].addr < hi+gap && lo >= text.start && spans[j].addr+uint64(len(spans[j].b)) <= end {
			hi = max(hi, spans[j].addr+uint64(len(spans[j].b)))
			j++
		}
		if j == i+1 {
			if err := (*e.mem).WriteMem(lo, spans[i].b); err != nil {
				return fmt.Errorf("write at %#x: %w", lo, err)
			}
			i = j
			continue
		}
		buf := slices.Clone(text.b[lo-text.start : hi-text.start])
		for _, sp := range spans[i:j] {
			copy(buf[sp.addr-lo:], sp.b)
		}
		if err := (*e.mem).WriteMem(lo, buf); err != nil {
			return fmt.Errorf("write %d bytes at %#x: %w", len(buf), lo, err)
		}
		i = j
	}
	return nil
}

// ownArea reports whether addr is in one of the areas PROFILE mapped in
// the program (trampolines, slots, hops, punned trampolines' pages).
func (p *planter) ownArea(addr uint64) bool {
	for _, a := range p.ownMaps {
		if addr >= a[0] && addr < a[0]+a[1] {
			return true
		}
	}
	return false
}

// indirectTargets returns where, in the module of planting p, jumps may
// land that the code's decoding does not follow, with the direct ones:
// the landings of direct jumps and calls, the functions' starts, the code
// pointers of the module's data (elfid.CodePointers), and the entries of
// the jump tables its code refers to (jumpTables), where instructions
// begin. Sorted.
func (pl *planter) indirectTargets(p *planting) landings {
	return pl.boundaries(append(slices.Clone(pl.scan.landings), pl.dataLandings(p)...))
}

// dataLandings returns the places of the module of planting p that its
// data and symbols lead to, whatever jumps there: the functions' starts,
// the code pointers of the module's data and the entries of its jump
// tables. Not sorted.
func (pl *planter) dataLandings(p *planting) []uint64 {
	path := pl.plan.Modules[p.mi].Path
	if mapped := p.in.First.Path; mapped != "" {
		path = mapped
	}
	var out []uint64
	for _, a := range elfid.ReadFuncStarts(path) {
		out = append(out, a+p.bias)
	}
	for _, a := range elfid.ReadCodePointers(path) {
		out = append(out, a+p.bias)
	}
	return append(out, pl.jumpTables(p)...)
}

// boundaries returns out sorted, without repeats and without the places
// inside an instruction of the code's decoding: no target (a number that
// looks like a pointer, a table read past its end).
func (pl *planter) boundaries(out []uint64) landings {
	slices.Sort(out)
	return slices.DeleteFunc(slices.Compact(out), func(a uint64) bool {
		cm := pl.scan.code.at(a)
		return cm != nil && cm.Boundary(a) != nil
	})
}

// maxTable bounds the entries read from one jump table.
const maxTable = 1 << 16

// jumpTables returns the entries of the jump tables that the code of the
// module of planting p refers to, as GCC and Clang lay out a switch's
// table in position-independent code: 32-bit offsets from the table's
// start, which a PC-relative lea or adr loads. Every address the code
// refers to outside its code is taken for a table, and its words read as
// offsets until one leads out of the code (e9patch's recovery of
// control flow does the same): a string read so leads nowhere at its
// first word.
func (pl *planter) jumpTables(p *planting) []uint64 {
	var refs []uint64
	for _, cm := range pl.scan.code {
		refs = append(refs, cm.Refs...)
	}
	inCode := func(a uint64) bool { return pl.scan.code.at(a) != nil }
	var out []uint64
	for _, m := range p.maps {
		if m.Inode != p.in.First.Inode || m.Path != p.in.First.Path || m.Start < p.in.Lo || m.End > p.in.Hi ||
			m.Perms[0] != 'r' || m.Perms[2] == 'x' || m.End-m.Start > 1<<28 {
			continue
		}
		lo := slices.IndexFunc(refs, func(r uint64) bool { return r >= m.Start })
		if lo < 0 || refs[lo] >= m.End {
			continue
		}
		data := make([]byte, m.End-m.Start)
		if err := (*pl.mem).ReadMem(m.Start, data); err != nil {
			continue
		}
		for _, r := range refs[lo:] {
			if r >= m.End {
				break
			}
			for off := r - m.Start; off+4 <= uint64(len(data)) && off < r-m.Start+4*maxTable; off += 4 {
				e := r + uint64(int64(int32(binary.LittleEndian.Uint32(data[off:]))))
				if !inCode(e) {
					break
				}
				out = append(out, e)
			}
		}
	}
	return out
}
