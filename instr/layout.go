package instr

import (
	"errors"
	"fmt"
	"slices"
)

// Layout plans the patches of a module's code one instruction at a time,
// under the rule that keeps the patched code meaning what it did, whatever
// jumps where, seen or not (e9patch's tactics,
// docs/design/lines-inprocess.md):
//
//   - a patch writes over the one instruction it moves to its trampoline,
//     and over nothing else;
//   - a jump longer than that instruction (on amd64, one of fewer than 5
//     bytes) ends with the bytes after it as they will be: the program's
//     own, unchanged, or the first bytes of the next instruction's own
//     patch (a punned jump); its trampoline lies in the window those
//     bytes leave it;
//   - the next instruction may be moved out ("evicted") to a trampoline
//     of its own that runs it, so that a jump landing on it still runs
//     it; the first jump then ends with the first bytes of its jump, whose
//     prefixes choose the first one's window, and the first trampoline
//     carries the next instruction out too where the first falls through
//     to it (one trampoline a pass, as a patch of both would);
//   - nothing that may be data is evicted: the code after an
//     unconditional jump or a return, up to the next address known to be
//     code (a line's or a symbol's address, a direct branch's target).
//
// Every other instruction keeps its bytes, so a jump the decoding did not
// see (a jump table, a computed goto, hand-written assembly) lands on the
// program's own instruction or on a jump that runs it. Patches are
// planned from the highest address down, so that the bytes after each are
// known when it is planned.
type Layout struct {
	a     Arch
	start uint64
	orig  []byte
	final []byte
	// written marks the bytes a planned patch writes; unstable those a
	// jump may not end with because they change during the run (a
	// breakpoint's, taken out or moved at its hit); leaned those a
	// planned jump ends with, which no later patch may change.
	written, unstable, leaned []uint64
	// code reports the addresses known to be code, for the rule on data.
	code func(uint64) bool
	room Room
	// Evict returns the trampoline builder of an instruction moved out
	// for another's patch: nil for the instruction alone, relocated.
	Evict func(addr uint64) Build
	// Leaves lets a whole jump at a function's entry carry out the
	// function to its return where it runs straight there (carryLeaf):
	// only where nothing is to run at its other instructions or its
	// returns (an entry's count; no exit's instrumentation).
	Leaves bool
	// sites are the sites to be planned, sorted (Sites), and prefer how
	// many prefixes the jump of the site being planned should start
	// with (preferPrefix).
	sites  []uint64
	prefer int
	// before is the site before the one being planned, whose jump will
	// end with the first bytes of its own, where prefer is set.
	before Patch
	// fill is the code's alignment fill where hops may go (Fill).
	fill [][2]uint64
	// dest is where the jump of each site planned goes on to: its
	// trampoline (carryTail).
	dest map[uint64]uint64
}

// Build builds the trampoline of patch p at address at: its
// instrumentation, the instructions relocated, the jump back.
type Build func(p *Patch, at uint64) (Trampoline, error)

// Room is where trampolines go: the memory PROFILE maps in the program.
type Room interface {
	// Find returns the lowest address in [lo, hi) congruent to phase
	// modulo step where n bytes are free, or false; with grow, it may
	// make room there (a page mapped), else only room made already is
	// looked at.
	Find(lo, hi uint64, n int, step, phase uint64, grow bool) (uint64, bool)
	// Take takes the n bytes at addr, found free; Release gives them
	// back.
	Take(addr uint64, n int)
	Release(addr uint64, n int)
}

// Planned is a patch planned: the patch, its trampoline's address and
// code, and the bytes written over its instruction.
type Planned struct {
	Patch Patch
	At    uint64
	Tramp Trampoline
	Jump  []byte
	// Hop is where the jump lands, where it is not At: a jump of full
	// reach to the trampoline (HopCode), in a window too small for the
	// trampoline itself.
	Hop     uint64
	HopCode []byte
	// HopInCode marks a hop in the code's alignment fill, reached by a
	// short jump (shortHop); the others are in the room.
	HopInCode bool
	// Evicted are the instructions moved out for this patch, each with a
	// patch of its own, the next instruction first.
	Evicted []*Planned
	// Leans are the sites of the patches whose bytes this one's jump
	// ends with: they must stay while it does.
	Leans []uint64
}

// ErrNoWindow: no window a jump at the site may land in has room for its
// trampoline, even with the instructions after it moved out.
var ErrNoWindow = errors.New("no window a jump may land in has room for its trampoline")

// errPatched: the instruction is patched already, its bytes change, or
// a jump planned before ends with them.
var errPatched = errors.New("the instruction is patched already, holds a breakpoint, or a jump planned before ends with its bytes")

// evictDepth is how many instructions after a site may be moved out for
// its patch, one after the other.
const evictDepth = 2

// NewLayout returns the layout of code at start (as read from the
// program), whose trampolines go in room; code reports the addresses
// known to be code.
func NewLayout(a Arch, start uint64, orig []byte, code func(uint64) bool, room Room) *Layout {
	words := (len(orig) + 63) / 64
	return &Layout{a: a, start: start, orig: orig, final: slices.Clone(orig),
		written: make([]uint64, words), unstable: make([]uint64, words), leaned: make([]uint64, words), code: code, room: room,
		dest: map[uint64]uint64{}}
}

// Final returns the code as it will be once every patch planned is
// written.
func (l *Layout) Final() []byte { return l.final }

// Unstable marks the n bytes at addr as changing during the run (a
// breakpoint): no jump ends with them.
func (l *Layout) Unstable(addr uint64, n int) { l.mark(l.unstable, addr, n) }

// Plan plans the patch of the instruction at site (after a landing pad
// there), with its trampoline built by build, and takes it: the code is
// as it will be once written. It must be planned after every site above
// it.
func (l *Layout) Plan(site uint64, build Build) (*Planned, error) {
	p, err := l.own(site)
	if err != nil {
		return nil, err
	}
	l.prefer = l.preferPrefix(&p)
	defer func() { l.prefer, l.before = 0, Patch{} }()
	pl, err := l.place(p, build, evictDepth)
	if err != nil {
		return nil, err
	}
	l.commit(pl)
	return pl, nil
}

// Sites tells the layout where every site to be planned is (sorted): a
// site whose jump the one before will end with may choose its prefixes
// for that one's window (preferPrefix).
func (l *Layout) Sites(sites []uint64) { l.sites = sites }

// preferPrefix returns how many prefixes p's jump should start with for
// the site before it, whose jump (planned next) ends with the first
// bytes of p's: as many as its jump's bytes on p's, where its window
// with p's opcode as its top byte leaves user space (a program loaded
// low, whose negative windows go below address 0); else 0.
func (l *Layout) preferPrefix(p *Patch) int {
	i, _ := slices.BinarySearch(l.sites, p.Site)
	if i == 0 || len(l.a.JumpPrefixes()) < 2 {
		return 0
	}
	q, err := l.a.PlanOwn(l.orig, l.start, l.sites[i-1])
	if err != nil || q.End() > p.Site {
		return 0
	}
	c := int(q.Site + uint64(l.a.JumpLen()) - p.Site) // (its bytes on p's)
	if c <= 0 {
		return 0
	}
	if c == 1 && p.Written() < 1+l.a.JumpLen() {
		// The site before would end with p's opcode, and no prefix
		// fits p's jump: the instruction just before p may keep that
		// site's count instead (a host), its jump ending with more of
		// p's bytes.
		if b, ok := l.lastBefore(q.Site, p.Site); ok {
			q, c = b, int(b.Site+uint64(l.a.JumpLen())-p.Site)
		}
	}
	after, ok := l.after(&q, func(a uint64) (byte, bool) {
		if a >= p.Site {
			return 0xe9, true // (the worst: the opcode, a byte of 0x80 or more)
		}
		return 0, false
	})
	if !ok {
		return 0
	}
	if _, _, ok := l.a.PunWindow(&q, after); ok {
		return 0
	}
	l.before = q
	return c
}

// lastBefore returns the patch of the instruction that ends at to,
// decoding from the one at from, where it is not the one at from.
func (l *Layout) lastBefore(from, to uint64) (Patch, bool) {
	decode := l.a.bareDecoder()
	at := from
	for at < to && at >= l.start && at < l.start+uint64(len(l.orig)) {
		in, err := decode(l.orig[at-l.start:], at)
		if err != nil || in.Len <= 0 {
			return Patch{}, false
		}
		if at+uint64(in.Len) == to && at != from {
			b, err := l.a.PlanOwn(l.orig, l.start, at)
			return b, err == nil
		}
		at += uint64(in.Len)
	}
	return Patch{}, false
}

// placeForBefore places p's whole jump, which has no room for prefixes,
// so that the site before (l.before), whose jump will end with p's first
// bytes, still has a window with room: the top byte of its displacement,
// the last of p's bytes it ends with, is the k-th byte of p's
// displacement, set by where p's trampoline is (an address whose distance
// from p's jump has that byte t and the ones below it 0). A t below 0x80
// puts that window above the site before, t times 16 MiB or 64 KiB away;
// a few are tried, each where the window has room at least for a hop. (A
// Go program's "test %rbx,%rbx; je" has two such sites, and the test
// kept a breakpoint, hit a million times in gofmt.)
func (l *Layout) placeForBefore(p Patch, build Build, n int) (*Planned, error) {
	q := l.before
	k := int(q.Site+uint64(l.a.JumpLen())-p.Site) - 1
	if k < 1 || k > 2 || p.Prefix != nil {
		return nil, ErrNoWindow
	}
	step := uint64(1) << (8 * k)
	lo, hi := l.a.Reach(p.Site)
	for _, t := range []uint64{0x10, 0x08, 0x20, 0x40, 0x04, 0x01} {
		phase := (p.Site + uint64(l.a.JumpLen()) + t<<(8*(k-1))) % step
		at, found := l.room.Find(lo, hi, n, step, phase, true)
		if !found {
			continue
		}
		tr, err := build(&p, at)
		if err != nil || len(tr.Code) != n {
			continue
		}
		jump, err := l.a.PatchJump(&p, at)
		if err != nil {
			continue
		}
		after, ok := l.after(&q, func(a uint64) (byte, bool) {
			if a >= p.Site && a < p.Site+uint64(len(jump)) {
				return jump[a-p.Site], true
			}
			return 0, false
		})
		wlo, whi, win := l.a.PunWindow(&q, after)
		if !ok || !win {
			continue
		}
		if _, room := l.room.Find(wlo, whi, l.a.JumpLen(), 1, 0, true); !room {
			continue
		}
		l.room.Take(at, n)
		return &Planned{Patch: p, At: at, Tramp: tr, Jump: jump}, nil
	}
	return nil, ErrNoWindow
}

// PlanThrough is Plan for a patch at site whose trampoline carries out
// the instructions after it too, through the one at through, which it
// must reach falling through (branches that may not be taken, no call):
// a count for through may go before its copy (Patch.Before), though the
// jump writes over site's instruction alone. A Go function's entry is
// planned that way at its start, carrying its stack check, where no jump
// fits after it.
func (l *Layout) PlanThrough(site, through uint64, build Build) (*Planned, error) {
	p, err := l.own(site)
	if err != nil {
		return nil, err
	}
	run := p
	for at := p.End(); at <= through; {
		in, err := l.a.bareDecoder()(l.orig[at-l.start:], at)
		if err != nil || in.Len <= 0 || !fallsThrough(in) || in.Kind == Call || at > through {
			return nil, fmt.Errorf("the code from %#x to %#x does not fall through: %w", site, through, ErrNotRelocatable)
		}
		n := uint64(in.Len)
		if l.any(l.written, at, int(n)) || l.any(l.unstable, at, int(n)) {
			return nil, fmt.Errorf("at %#x: %w", at, errPatched)
		}
		run = carry(run, Patch{Orig: l.orig[at-l.start : at-l.start+n], Insts: []Inst{in}}, true)
		at += n
		if at > through && at-n != through {
			return nil, fmt.Errorf("%#x is inside an instruction: %w", through, ErrNotRelocatable)
		}
	}
	pl, err := l.place(run, build, 0)
	if err != nil {
		return nil, err
	}
	l.commit(pl)
	return pl, nil
}

// own plans the patch of the instruction at addr alone, not patched yet.
func (l *Layout) own(addr uint64) (Patch, error) {
	p, err := l.a.PlanOwn(l.orig, l.start, addr)
	if err != nil {
		return Patch{}, err
	}
	if l.any(l.written, p.Site, len(p.Orig)) || l.any(l.unstable, p.Site, len(p.Orig)) || l.any(l.leaned, p.Site, len(p.Orig)) {
		return Patch{}, fmt.Errorf("at %#x: %w", p.Site, errPatched)
	}
	return p, nil
}

// place plans p, built by build: a jump of its own where a whole one
// fits; else a punned jump into room made already, a punned jump into
// room made for it, with depth left an instruction after it moved out,
// or a short jump to a hop in the alignment fill, in that order. p's
// prefixes, where it has some, were chosen by the caller and stay. What
// it finds is taken from the room; the code is left as it is (commit
// writes it).
func (l *Layout) place(p Patch, build Build, depth int) (*Planned, error) {
	tr, err := build(&p, p.Site)
	if err != nil {
		return nil, err
	}
	n := len(tr.Code)
	if p.Prefix == nil && l.prefer > 0 && p.Written() >= l.prefer+l.a.JumpLen() {
		// A whole jump, prefixed for the site before.
		for _, layout := range l.a.JumpPrefixes() {
			if q, ok := withPrefix(p, layout, nil); ok && len(layout) >= l.prefer {
				lo, hi := l.a.Reach(q.Site + uint64(len(q.Prefix)))
				if pl, err := l.placeIn(q, build, n, lo, hi, true); err == nil {
					return pl, nil
				}
			}
		}
	}
	if p.Written() >= len(p.Prefix)+l.a.JumpLen() {
		if q, m, ok := l.carryLeaf(p, build); ok {
			// (Placed, the leaf's copies may be out of reach: then
			// the patch as it was.)
			if pl, err := l.placeWhole(q, build, m); err == nil {
				return pl, nil
			}
		}
		return l.placeWhole(p, build, n)
	}
	if q, ok := l.overFill(p); ok {
		lo, hi := l.a.Reach(q.Site)
		if pl, err := l.placeIn(q, build, n, lo, hi, true); err == nil {
			return pl, nil
		}
	}
	for _, grow := range []bool{false, true} {
		if pl, err := l.pun(p, build, n, grow, nil); err == nil {
			return pl, nil
		}
	}
	err = ErrNoWindow
	if depth > 0 {
		pl, eerr := l.evict(p, build, depth)
		if eerr == nil {
			return pl, nil
		}
		err = fmt.Errorf("%w; moving out the next instruction: %w", err, eerr)
	}
	if pl, herr := l.shortHop(p, build, n); herr == nil {
		return pl, nil
	}
	return nil, err
}

// placeWhole places p, a whole jump, its trampoline n bytes: in the
// window the site before prefers, or anywhere in the jump's reach.
func (l *Layout) placeWhole(p Patch, build Build, n int) (*Planned, error) {
	if l.prefer > 0 {
		if pl, err := l.placeForBefore(p, build, n); err == nil {
			return pl, nil
		}
	}
	lo, hi := l.a.Reach(p.Site + uint64(len(p.Prefix)))
	return l.placeIn(p, build, n, lo, hi, true)
}

// release gives back the room pl and what it evicted took.
func (l *Layout) release(pl *Planned) {
	l.room.Release(pl.At, len(pl.Tramp.Code))
	if pl.HopCode != nil && !pl.HopInCode {
		l.room.Release(pl.Hop, len(pl.HopCode))
	}
	for _, e := range pl.Evicted {
		l.release(e)
	}
}

// after returns the bytes a jump over p (with its prefixes) ends with,
// past the bytes it writes: the code as it will be, with overlay's bytes
// over it; false where they run past the code or may change.
func (l *Layout) after(p *Patch, overlay func(uint64) (byte, bool)) ([]byte, bool) {
	from, to := p.Site+uint64(p.Written()), p.Site+uint64(len(p.Prefix)+l.a.JumpLen())
	if to <= from {
		return nil, true
	}
	if from < l.start || to > l.start+uint64(len(l.final)) {
		return nil, false
	}
	b := slices.Clone(l.final[from-l.start : to-l.start])
	for i := range b {
		addr := from + uint64(i)
		if overlay != nil {
			if v, ok := overlay(addr); ok {
				b[i] = v
				continue
			}
		}
		if l.any(l.unstable, addr, 1) {
			return nil, false
		}
	}
	return b, true
}

// commit writes pl and what it evicted into the code as it will be, and
// notes which patches each jump leans on.
func (l *Layout) commit(pl *Planned) {
	all := append([]*Planned{pl}, pl.Evicted...)
	for _, x := range all {
		copy(l.final[x.Patch.Site-l.start:], x.Jump)
		l.mark(l.written, x.Patch.Site, len(x.Jump))
		l.dest[x.Patch.Site] = x.At
		if x.HopInCode {
			copy(l.final[x.Hop-l.start:], x.HopCode)
			l.mark(l.written, x.Hop, len(x.HopCode))
		}
	}
	decode := l.a.bareDecoder()
	for _, x := range all {
		end := x.Patch.Site + uint64(len(x.Patch.Prefix)+l.a.JumpLen())
		if from := x.Patch.Site + uint64(x.Patch.Written()); from < end {
			l.mark(l.leaned, from, int(end-from))
		}
		for at := x.Patch.Site + uint64(x.Patch.Written()); at < end; {
			if l.any(l.written, at, 1) {
				x.Leans = append(x.Leans, at)
			}
			in, err := decode(l.orig[at-l.start:], at)
			if err != nil || in.Len <= 0 {
				break
			}
			at += uint64(in.Len)
		}
	}
}

func (l *Layout) mark(bits []uint64, addr uint64, n int) {
	for i := range uint64(n) {
		if off := addr + i - l.start; addr+i >= l.start && off < uint64(len(l.orig)) {
			bits[off/64] |= 1 << (off % 64)
		}
	}
}

// any reports whether one of the n bytes at addr is marked in bits, or
// lies outside the code.
func (l *Layout) any(bits []uint64, addr uint64, n int) bool {
	for i := range uint64(n) {
		off := addr + i - l.start
		if addr+i < l.start || off >= uint64(len(l.orig)) {
			return true
		}
		if bits[off/64]&(1<<(off%64)) != 0 {
			return true
		}
	}
	return false
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
