package instr

import (
	"cmp"
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
	// sites are the sites to be planned, sorted (Sites), and prefer how
	// many prefixes the jump of the site being planned should start
	// with (preferPrefix).
	sites  []uint64
	prefer int
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
	defer func() { l.prefer = 0 }()
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
	return c
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
		lo, hi := l.a.Reach(p.Site + uint64(len(p.Prefix)))
		return l.placeIn(p, build, n, lo, hi, true)
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

// overFill returns p with its jump going on over the alignment fill
// after it, where p is a function's last instruction, a return or an
// unconditional jump, and the fill there makes room for a whole jump:
// nothing runs there, and the jump needs no window.
func (l *Layout) overFill(p Patch) (Patch, bool) {
	k := p.Insts[len(p.Insts)-1].Kind
	need := l.a.JumpLen() - p.Written()
	if p.Prefix != nil || p.Own != 0 || (k != Ret && k != Jump) || need <= 0 {
		return p, false
	}
	end := p.End()
	i, _ := slices.BinarySearchFunc(l.fill, end, func(f [2]uint64, a uint64) int { return cmp.Compare(f[0], a) })
	if i == len(l.fill) || l.fill[i][0] != end || l.fill[i][1]-end < uint64(need) ||
		l.any(l.written, end, need) || l.any(l.leaned, end, need) || l.any(l.unstable, end, need) {
		return p, false
	}
	q := p
	q.Own = len(p.Orig) + need
	q.Orig = slices.Clone(l.orig[p.Site-l.start : end-l.start+uint64(need)])
	return q, true
}

// Fill tells the layout where the code's alignment fill is: sorted
// ranges of the architecture's fill (int3, nops) between a function's end
// and the next function's start, which nothing runs and no data is in.
// A hop may go there (shortHop).
func (l *Layout) Fill(ranges [][2]uint64) { l.fill = ranges }

// shortHop places p with the architecture's short jump (amd64 jmp rel8)
// to a hop in the alignment fill within its reach, a jump of full reach
// on to its trampoline: where p's instruction is too short for a whole
// jump and no window its bytes leave has room, as that of a function of
// two instructions followed by its fill, in a program loaded low.
func (l *Layout) shortHop(p Patch, build Build, n int) (*Planned, error) {
	back, fwd := l.a.ShortReach()
	hn := l.a.JumpLen()
	if fwd == 0 || p.Prefix != nil || p.Written() < 2 {
		return nil, ErrNoWindow
	}
	for _, f := range l.fill {
		lo, hi := max(f[0], p.Site-uint64(back)), min(f[1], p.Site+uint64(fwd)+uint64(hn))
		for h := lo; h+uint64(hn) <= hi; h++ {
			if l.any(l.written, h, hn) || l.any(l.leaned, h, hn) || l.any(l.unstable, h, hn) {
				continue
			}
			q := p
			q.Short = true
			jump, err := l.a.PatchJump(&q, h)
			if err != nil {
				continue
			}
			rlo, rhi := l.a.Reach(h)
			var code []byte
			at, tr, err := l.placeTramp(q, build, n, rlo, rhi, true, func(at uint64) (err error) {
				code, err = l.a.Jump(h, at)
				return err
			})
			if err != nil {
				return nil, err
			}
			return &Planned{Patch: q, At: at, Tramp: tr, Jump: jump, Hop: h, HopCode: code, HopInCode: true}, nil
		}
	}
	return nil, ErrNoWindow
}

// pun places p (its trampoline n bytes) with a punned jump, over the code
// after it as it will be with overlay's bytes over it, in each prefix
// layout (or p's own prefixes, where it has some).
func (l *Layout) pun(p Patch, build Build, n int, grow bool, overlay func(uint64) (byte, bool)) (*Planned, error) {
	layouts := l.a.JumpPrefixes()
	if p.Prefix != nil {
		layouts = [][][]byte{nil}
	} else if l.prefer > 0 {
		// (Those the site before prefers first.)
		layouts = slices.Clone(layouts)
		slices.SortStableFunc(layouts, func(a, b [][]byte) int {
			return cmp.Compare(boolInt(len(b) >= l.prefer), boolInt(len(a) >= l.prefer))
		})
	}
	var last error = ErrNoWindow
	for _, layout := range layouts {
		q := p
		if p.Prefix == nil {
			var ok bool
			if q, ok = withPrefix(p, layout, nil); !ok {
				continue
			}
		}
		after, ok := l.after(&q, overlay)
		if !ok {
			continue
		}
		lo, hi, ok := l.a.PunWindow(&q, after)
		if !ok {
			continue
		}
		q.Punned = after
		if c, cn, ok := l.carryTail(q, build); ok {
			if pl, err := l.placeIn(c, build, cn, lo, hi, grow); err == nil {
				return pl, nil
			}
		}
		pl, err := l.placeIn(q, build, n, lo, hi, grow)
		if err == nil {
			return pl, nil
		}
		last = err
	}
	return nil, last
}

// carryTail returns p, whose jump is punned, carrying out the
// instructions its jump's last bytes lie over too, as they are (the
// program's own, p falling through to each), and its trampoline's size:
// the trampoline returns after them, to an instruction the jump left
// whole. Returning into the jump's last bytes, the CPU would decode them
// as an instruction of their own right after decoding them as part of the
// jump, which costs an x86-64 core some 25 cycles a pass
// (docs/performance.md, "Punned jumps"). Where they are the start of the
// next site's jump, the trampoline goes on to that one's trampoline
// instead. False where there is nothing to carry, or it cannot be
// carried: what is not relocatable, or a call, whose copy would push its
// return address behind the back of the CPU's return predictor, and
// every return from there up would be mispredicted.
func (l *Layout) carryTail(p Patch, build Build) (Patch, int, bool) {
	end := p.Site + uint64(len(p.Prefix)+l.a.JumpLen())
	run, prev := p, p.Insts[len(p.Insts)-1]
	for at := p.End(); at < end; {
		if !fallsThrough(prev) {
			return p, 0, false
		}
		if next, ok := l.dest[at]; ok {
			run.Back = next
			break
		}
		if at+1 > l.start+uint64(len(l.orig)) || l.any(l.written, at, 1) || l.any(l.unstable, at, 1) {
			return p, 0, false
		}
		in, err := l.a.bareDecoder()(l.orig[at-l.start:], at)
		n := uint64(in.Len)
		if err != nil || in.Len <= 0 || in.Kind == Trap || in.Kind == Call || l.any(l.written, at, in.Len) || l.any(l.unstable, at, in.Len) {
			return p, 0, false
		}
		run = carry(run, Patch{Orig: l.orig[at-l.start : at-l.start+n], Insts: []Inst{in}}, true)
		prev = in
		at += n
	}
	if run.Back == 0 && len(run.Insts) == len(p.Insts) {
		return p, 0, false
	}
	tr, err := build(&run, run.Site)
	if err != nil {
		return p, 0, false
	}
	return run, len(tr.Code), true
}

// placeIn takes room for p's trampoline of n bytes at an address in
// [lo, hi), builds it there and its jump; where no trampoline fits in a
// punned jump's window, a hop does (placeHop).
func (l *Layout) placeIn(p Patch, build Build, n int, lo, hi uint64, grow bool) (*Planned, error) {
	at, tr, err := l.placeTramp(p, build, n, lo, hi, grow, func(at uint64) error {
		_, err := l.a.PatchJump(&p, at)
		return err
	})
	if err == nil {
		jump, _ := l.a.PatchJump(&p, at)
		return &Planned{Patch: p, At: at, Tramp: tr, Jump: jump}, nil
	}
	if p.Punned != nil {
		if pl, herr := l.placeHop(p, build, n, lo, hi, grow); herr == nil {
			return pl, nil
		}
	}
	return nil, err
}

// placeTramp takes room for p's trampoline of n bytes at an address in
// [lo, hi) where ok accepts it, and builds it there: a few addresses are
// tried where the trampoline cannot go (a relocated operand out of
// reach).
func (l *Layout) placeTramp(p Patch, build Build, n int, lo, hi uint64, grow bool, ok func(uint64) error) (uint64, Trampoline, error) {
	step := uint64(1)
	if hi-lo >= 256 {
		step = 16 // (aligned, where the window leaves room)
	}
	var last error = ErrNoWindow
	for try := 0; try < 4 && lo < hi; try++ {
		at, found := l.room.Find(lo, hi, n, step, 0, grow)
		if !found {
			break
		}
		tr, err := build(&p, at)
		if err == nil && len(tr.Code) != n {
			err = fmt.Errorf("trampoline of %d bytes at %#x, %d elsewhere: %w", len(tr.Code), at, n, ErrNotRelocatable)
		}
		if err == nil {
			err = ok(at)
		}
		if err == nil {
			l.room.Take(at, n)
			return at, tr, nil
		}
		last, lo = err, at+1
	}
	return 0, Trampoline{}, last
}

// placeHop places p's trampoline of n bytes where the jump over p's
// window does not need it to be, with a hop in the window: a jump of
// full reach to it, a few bytes where its n do not fit (a window of
// one address, which a trampoline planned before covers).
func (l *Layout) placeHop(p Patch, build Build, n int, lo, hi uint64, grow bool) (*Planned, error) {
	hn := l.a.JumpLen()
	hop, ok := l.room.Find(lo, hi, hn, 1, 0, grow)
	if !ok {
		return nil, ErrNoWindow
	}
	jump, err := l.a.PatchJump(&p, hop)
	if err != nil {
		return nil, err
	}
	l.room.Take(hop, hn)
	rlo, rhi := l.a.Reach(hop)
	var code []byte
	at, tr, err := l.placeTramp(p, build, n, rlo, rhi, true, func(at uint64) (err error) {
		code, err = l.a.Jump(hop, at)
		return err
	})
	if err != nil {
		l.room.Release(hop, hn)
		return nil, err
	}
	return &Planned{Patch: p, At: at, Tramp: tr, Jump: jump, Hop: hop, HopCode: code}, nil
}

// evict plans p, built by build, with an instruction of its tail (the
// bytes its jump ends with) moved out to a trampoline of its own (placed
// first), p's jump ending with the first bytes of its jump: each
// instruction of the tail in turn, nearest first, each prefix layout of
// its jump, each value of the prefixes p's jump ends with, and where
// p's jump ends with its displacement too, a few places of its
// trampoline. Where p falls through to it over instructions left as
// they are, p's trampoline carries them and it out too, and returns
// after it (one trampoline a pass).
func (l *Layout) evict(p Patch, build Build, depth int) (*Planned, error) {
	var lastErr error = ErrNoWindow
	prev := p.Insts[len(p.Insts)-1]
	run, falls := p, fallsThrough(prev)
	end := p.Site + uint64(l.a.JumpLen()+maxPrefixes(l.a))
	for at := p.End(); at < end && at < l.start+uint64(len(l.orig)); {
		in, err := l.a.bareDecoder()(l.orig[at-l.start:], at)
		if err != nil || in.Len <= 0 {
			break
		}
		if !fallsThrough(prev) && !l.code(at) {
			return nil, fmt.Errorf("%w; the bytes at %#x, after a jump or a return, may be data", lastErr, at)
		}
		if e, err := l.own(at); err == nil && e.Site == at {
			pl, err := l.evictThis(carry(run, e, falls), build, e, depth)
			if err == nil {
				return pl, nil
			}
			lastErr = err
		}
		// (Carried on past it only where it is the program's own:
		// a site patched already counts on its own jump.)
		falls = falls && fallsThrough(in) && !l.any(l.written, at, in.Len)
		run = carry(run, Patch{Orig: l.orig[at-l.start : at-l.start+uint64(in.Len)], Insts: []Inst{in}}, falls)
		prev = in
		at += uint64(in.Len)
	}
	return nil, lastErr
}

// carry returns run carrying e's instructions out too where falls, p's
// jump still writing over its own instruction alone.
func carry(run, e Patch, falls bool) Patch {
	if !falls {
		return run
	}
	run.Own = run.Written()
	run.Orig = append(slices.Clone(run.Orig), e.Orig...)
	run.Insts = append(slices.Clone(run.Insts), e.Insts...)
	return run
}

// fallsThrough reports whether in goes on to the next instruction, as
// a trampoline carrying it does (a call returns there too).
func fallsThrough(in Inst) bool { return in.Kind != Jump && in.Kind != Ret && in.Kind != Trap }

// maxPrefixes is the most prefixes a jump of a may start with.
func maxPrefixes(a Arch) int {
	n := 0
	for _, l := range a.JumpPrefixes() {
		n = max(n, len(l))
	}
	return n
}

// evictThis is evict with e, the patch of the tail's instruction moved
// out; run is p's patch, carrying e where it falls through to it.
func (l *Layout) evictThis(run Patch, build Build, e Patch, depth int) (*Planned, error) {
	tr, err := build(&run, run.Site)
	if err != nil {
		return nil, err
	}
	n, eb := len(tr.Code), l.evictBuild(e.Site)
	var lastErr error = ErrNoWindow
	for _, layout := range l.a.JumpPrefixes() {
		q, ok := withPrefix(e, layout, nil)
		if !ok {
			continue
		}
		pl, err := l.evictAs(run, build, n, q, layout, eb, depth)
		if err == nil {
			return pl, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

// evictAs is evict with the tail's patch e, its prefix layout given,
// built by eb: e is placed, then p over the code with e's jump.
func (l *Layout) evictAs(p Patch, build Build, n int, e Patch, layout [][]byte, eb Build, depth int) (*Planned, error) {
	// (Of e's prefixes, those p's jump, unprefixed, ends with.)
	seen := min(int(p.Site+uint64(l.a.JumpLen())-e.Site), len(layout))
	var last error = ErrNoWindow
	for try := 0; try < 8; try++ {
		ep, err := l.placeNext(e, eb, depth-1, try)
		if err != nil {
			return nil, err
		}
		for _, values := range prefixValues(layout[:max(seen, 0)]) {
			pl, err := l.over(p, build, n, ep.withValues(values))
			if err == nil {
				return pl, nil
			}
			last = err
		}
		l.release(ep)
		if p.Site+uint64(l.a.JumpLen()) <= e.Site+uint64(len(e.Prefix))+1 {
			break // (p's jump ends before e's displacement: where e's trampoline goes changes nothing for p)
		}
	}
	return nil, last
}

// placeNext places e, built by eb, cold, for the try-th time: each try
// further into its window than the last.
func (l *Layout) placeNext(e Patch, eb Build, depth, try int) (*Planned, error) {
	if try == 0 {
		return l.place(e, eb, depth)
	}
	tr, err := eb(&e, e.Site)
	if err != nil {
		return nil, err
	}
	var lo, hi uint64
	if e.Written() >= len(e.Prefix)+l.a.JumpLen() {
		lo, hi = l.a.Reach(e.Site + uint64(len(e.Prefix)))
	} else {
		after, ok := l.after(&e, nil)
		if !ok {
			return nil, ErrNoWindow
		}
		if lo, hi, ok = l.a.PunWindow(&e, after); !ok {
			return nil, ErrNoWindow
		}
		e.Punned = after
	}
	span := (hi - lo) / 8
	return l.placeIn(e, eb, len(tr.Code), lo+uint64(try)*span, hi, true)
}

// withValues returns pl with the first prefixes of its jump set to
// values.
func (pl *Planned) withValues(values []byte) *Planned {
	if len(values) == 0 {
		return pl
	}
	q := *pl
	q.Patch.Prefix = slices.Clone(pl.Patch.Prefix)
	q.Jump = slices.Clone(pl.Jump)
	copy(q.Patch.Prefix, values)
	copy(q.Jump, values)
	return &q
}

// over places p, built by build, its jump ending with the bytes of ep's
// (the instruction after p, moved out).
func (l *Layout) over(p Patch, build Build, n int, ep *Planned) (*Planned, error) {
	for _, grow := range []bool{false, true} {
		pl, err := l.pun(p, build, n, grow, ep.byteAt)
		if err == nil {
			e := *ep
			e.Evicted = nil
			pl.Evicted = append([]*Planned{&e}, ep.Evicted...)
			return pl, nil
		}
		if grow {
			return nil, err
		}
	}
	return nil, ErrNoWindow
}

// byteAt returns the byte pl's jump (or one it evicted) writes at addr.
func (pl *Planned) byteAt(addr uint64) (byte, bool) {
	if addr >= pl.Patch.Site && addr < pl.Patch.Site+uint64(len(pl.Jump)) {
		return pl.Jump[addr-pl.Patch.Site], true
	}
	for _, e := range pl.Evicted {
		if b, ok := e.byteAt(addr); ok {
			return b, true
		}
	}
	return 0, false
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

// evictBuild is the builder of an instruction moved out at addr.
func (l *Layout) evictBuild(addr uint64) Build {
	if l.Evict != nil {
		if b := l.Evict(addr); b != nil {
			return b
		}
	}
	return func(p *Patch, at uint64) (Trampoline, error) { return l.a.Trampoline(p, at, nil) }
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

// withPrefix returns p with the prefix layout given, its positions
// holding values (the first value of each where values is nil), or
// false where the prefixes and the jump's opcode do not fit in the bytes
// p's jump writes.
func withPrefix(p Patch, layout [][]byte, values []byte) (Patch, bool) {
	if len(layout)+1 > p.Written() {
		return Patch{}, false
	}
	p.Prefix = nil
	for i, vs := range layout {
		v := vs[0]
		if i < len(values) {
			v = values[i]
		}
		p.Prefix = append(p.Prefix, v)
	}
	return p, true
}

// prefixValues returns the combinations of values a prefix layout's
// positions may hold, at most a few dozen.
func prefixValues(layout [][]byte) [][]byte {
	out := [][]byte{nil}
	for _, vs := range layout {
		var next [][]byte
		for _, o := range out {
			for _, v := range vs {
				next = append(next, append(slices.Clone(o), v))
			}
		}
		out = next
	}
	return out
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
