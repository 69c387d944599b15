// The tactic of a Layout where no window has room: the next instruction
// moved out ("evicted") to a trampoline of its own.

package instr

import (
	"fmt"
	"slices"
)

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

// evictBuild is the builder of an instruction moved out at addr.
func (l *Layout) evictBuild(addr uint64) Build {
	if l.Evict != nil {
		if b := l.Evict(addr); b != nil {
			return b
		}
	}
	return func(p *Patch, at uint64) (Trampoline, error) { return l.a.Trampoline(p, at, nil) }
}
