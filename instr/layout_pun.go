// The tactics of a Layout for a jump longer than its instruction: a
// punned jump and its window, its trampoline carrying what the jump lies
// over, a hop, a jump over the alignment fill.

package instr

import (
	"cmp"
	"fmt"
	"slices"
)

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
		for _, leaf := range []bool{true, false} {
			if leaf && !l.Leaves {
				continue
			}
			if c, cn, ok := l.carryTail(q, build, leaf); ok {
				if pl, err := l.placeIn(c, build, cn, lo, hi, grow); err == nil {
					return pl, nil
				}
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
// every return from there up would be mispredicted. With leaf, it goes
// on to the function's return instead, where it may (leafRun).
func (l *Layout) carryTail(p Patch, build Build, leaf bool) (Patch, int, bool) {
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
	if leaf {
		var ok bool
		if run, ok = l.leafRun(run); !ok {
			return p, 0, false
		}
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

// maxPrefixes is the most prefixes a jump of a may start with.
func maxPrefixes(a Arch) int {
	n := 0
	for _, l := range a.JumpPrefixes() {
		n = max(n, len(l))
	}
	return n
}
