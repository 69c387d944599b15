package instr

import (
	"bytes"
	"fmt"
)

// Patched is a module's code as patched, for [VerifyPatched]: the code
// as it was and as it is, the extents of its functions, what is known to
// be code, and a reader of the memory its jumps lead to.
type Patched struct {
	Start       uint64
	Orig, Final []byte
	// Funcs are the extents [lo, hi) of the functions to check, each
	// decoded from its start to its end.
	Funcs [][2]uint64
	// Code reports the addresses known to be code (a line's or a
	// symbol's address, a direct branch's target).
	Code func(uint64) bool
	// Read returns n bytes of memory at addr (a trampoline's), or false.
	Read func(addr uint64, n int) ([]byte, bool)
}

// VerifyPatched checks patched code against the rule of [Layout], and
// returns what breaks it: every instruction of the functions decoded is
// either as it was, or begins with a breakpoint (its other bytes as they
// were), or with a jump to code that carries it out (its relocated copy)
// and goes on after it; and no byte that may be data, after an
// unconditional jump or a return and up to the next address known to be
// code, has changed, but the alignment fill there (int3, nops), which a
// hop may take.
func VerifyPatched(a Arch, p Patched) []error {
	var errs []error
	decode := a.bareDecoder()
	end := p.Start + uint64(len(p.Orig))
	for _, f := range p.Funcs {
		if f[0] < p.Start || f[1] > end || f[0] >= f[1] {
			continue
		}
		maybeData := false
		for pc := f[0]; pc < f[1]; {
			in, err := decode(p.Orig[pc-p.Start:f[1]-p.Start], pc)
			if err != nil || in.Len <= 0 {
				break
			}
			n := uint64(in.Len)
			if p.Code(pc) {
				maybeData = false
			}
			was, is := p.Orig[pc-p.Start:pc-p.Start+n], p.Final[pc-p.Start:pc-p.Start+n]
			brk := a.Breakpoint()
			switch {
			case bytes.Equal(was, is):
			case len(is) >= len(brk) && bytes.Equal(is[:len(brk)], brk) && bytes.Equal(was[len(brk):], is[len(brk):]):
				// A breakpoint: a jump landing on it traps, and PROFILE
				// carries the instruction out.
			case maybeData && (in.Kind == Nop || in.Kind == Trap):
				// Alignment fill after a function's last instruction:
				// nothing runs there, and a hop may go there.
			case maybeData:
				errs = append(errs, fmt.Errorf("%#x: bytes that may be data (after an unconditional jump or a return) changed: % x to % x", pc, was, is))
			default:
				if err := verifyMoved(a, p, pc, in); err != nil {
					errs = append(errs, err)
				}
			}
			if in.Kind == Jump || in.Kind == Ret {
				maybeData = true
			}
			pc += n
		}
	}
	return errs
}

// jumpsOnTo reports whether the code as it will be holds, a few
// instructions from after, a jump to target, directly or through a hop:
// a trampoline that goes on to target goes on after the code it carries
// out (Patch.Back).
func jumpsOnTo(a Arch, p Patched, after, target uint64) bool {
	for at := after; at < after+2*uint64(a.MaxInstLen()) && at < p.Start+uint64(len(p.Final)); at++ {
		j, err := a.Decode(p.Final[at-p.Start:], at)
		if err != nil || j.Kind != Jump || j.Target == 0 {
			continue
		}
		if j.Target == target {
			return true
		}
		if code, ok := p.Read(j.Target, a.MaxInstLen()); ok {
			if hop, err := a.Decode(code, j.Target); err == nil && hop.Kind == Jump && hop.Target == target {
				return true
			}
		}
	}
	return false
}

// verifyMoved checks the instruction in at pc, whose bytes changed: they
// must begin with a direct jump to code that carries it out and then
// goes on after it, or on to where the jump after it goes.
func verifyMoved(a Arch, p Patched, pc uint64, in Inst) error {
	j, err := a.Decode(p.Final[pc-p.Start:], pc)
	if err != nil || j.Kind != Jump || j.Target == 0 {
		return fmt.Errorf("%#x: %s changed into % x, which is no jump", pc, in.Text, p.Final[pc-p.Start:pc-p.Start+uint64(in.Len)])
	}
	code, ok := p.Read(j.Target, 256)
	if !ok {
		return fmt.Errorf("%#x: %s jumps to %#x, which cannot be read", pc, in.Text, j.Target)
	}
	inCode := func(a uint64) bool { return a >= p.Start && a < p.Start+uint64(len(p.Orig)) }
	if hop, err := a.Decode(code, j.Target); err == nil && hop.Kind == Jump && hop.Target != 0 && !inCode(hop.Target) {
		// A hop: a jump of full reach to the trampoline.
		if code, ok = p.Read(hop.Target, 256); !ok {
			return fmt.Errorf("%#x: %s hops through %#x to %#x, which cannot be read", pc, in.Text, j.Target, hop.Target)
		}
		j = hop
	}
	orig := p.Orig[pc-p.Start : pc-p.Start+uint64(in.Len)]
	found := false
	// next is the instruction after in: a trampoline may carry out the
	// function's next ones too, to its return (Layout.Leaves).
	next := pc + uint64(in.Len)
	ended := false
	for off := 0; off < len(code); {
		at := j.Target + uint64(off)
		c, err := a.Decode(code[off:], at)
		if err != nil || c.Len <= 0 {
			break
		}
		if !found && sameEffect(in, orig, c, code[off:off+c.Len]) {
			found = true
			if in.Kind == Jump || in.Kind == Ret || in.Kind == Call {
				return nil // (it does not go on after it)
			}
			off += c.Len
			continue
		}
		if found && carriedToReturn(a, p, next, code[off:], at) {
			return nil // (carried out to the function's return)
		}
		if found && !ended && c.Kind == Jump && c.Target > pc && c.Target <= pc+uint64(in.Len)+2*uint64(a.MaxInstLen()) {
			return nil
		}
		if found && !ended && c.Kind == Jump && c.Target != 0 && jumpsOnTo(a, p, pc+uint64(in.Len), c.Target) {
			return nil // (on to the trampoline of the jump after it)
		}
		// (After a return, a jump back is never reached.)
		ended = ended || found && c.Kind == Ret
		off += c.Len
	}
	if full, err := a.Decode(orig, pc); err == nil {
		in = full // (the instruction's text, for the message)
	}
	if !found {
		return fmt.Errorf("%#x: %s (% x) is moved to %#x, which does not carry it out: % x", pc, in.Text, orig, j.Target, code[:min(len(code), 48)])
	}
	return fmt.Errorf("%#x: %s (% x) is moved to %#x, which does not go on after it: % x", pc, in.Text, orig, j.Target, code[:min(len(code), 48)])
}

// carriedToReturn reports whether code, at addr, carries out the
// original instructions from next on, in order, to a return or a jump
// out, which it carries out too: each as it is (its bytes, or a branch
// of its kind to its target), but one with a PC-relative operand, whose
// relocated copy may be several instructions, none a branch; and none
// of them a breakpoint's now, whose stop the copy would skip. (One moved
// for a patch of its own is checked as such.)
func carriedToReturn(a Arch, p Patched, next uint64, code []byte, addr uint64) bool {
	end := p.Start + uint64(len(p.Orig))
	strict := func(o Inst, ob []byte, c Inst, cb []byte) bool {
		if o.PCRel && o.Kind == Other {
			return c.Kind == Other
		}
		if o.PCRel || o.Kind == Jump && o.Target != 0 {
			return c.Kind == o.Kind && c.Target == o.Target
		}
		return bytes.Equal(ob, cb)
	}
	decode := func(at uint64) (Inst, []byte, bool) {
		if at >= end {
			return Inst{}, nil, false
		}
		o, err := a.Decode(p.Orig[at-p.Start:], at)
		if err != nil || o.Len <= 0 || at+uint64(o.Len) > end {
			return Inst{}, nil, false
		}
		return o, p.Orig[at-p.Start : at-p.Start+uint64(o.Len)], true
	}
	off := 0
	for {
		o, ob, ok := decode(next)
		if !ok || off >= len(code) {
			return false
		}
		c, err := a.Decode(code[off:], addr+uint64(off))
		if err != nil || c.Len <= 0 || !strict(o, ob, c, code[off:off+c.Len]) {
			return false
		}
		if brk := a.Breakpoint(); bytes.HasPrefix(p.Final[next-p.Start:], brk) && !bytes.HasPrefix(ob, brk) {
			return false // (a breakpoint's instruction: the copy would skip its stop)
		}
		off += c.Len
		if o.Kind == Ret || o.Kind == Jump {
			return true
		}
		if o.Kind != Other && o.Kind != Nop && o.Kind != CondJump {
			return false // (a conditional branch's copy goes where it goes, or on)
		}
		next += uint64(o.Len)
		if o.PCRel {
			// (The rest of its relocated copy, up to the next one's.)
			o2, ob2, ok := decode(next)
			for ok && off < len(code) {
				c, err := a.Decode(code[off:], addr+uint64(off))
				if err != nil || c.Len <= 0 || c.Kind != Other || strict(o2, ob2, c, code[off:off+c.Len]) {
					break
				}
				off += c.Len
			}
		}
	}
}

// sameEffect reports whether instruction c (its bytes cb) carries out
// instruction in (its bytes ib), relocated: the same bytes, or a branch
// of the same kind to the same target, or, for a call, the jump to the
// call's target that follows its return address pushed. Another
// instruction with a PC-relative operand may be relocated as several
// (arm64's ADRP): it is taken as carried out by the code there.
func sameEffect(in Inst, ib []byte, c Inst, cb []byte) bool {
	switch {
	case in.Kind == Call:
		return c.Kind == Jump && c.Target == in.Target
	case in.PCRel && in.Kind == Other:
		return true
	case in.Kind == CondJump:
		// (Relocated as a branch of the same condition to the same
		// target, or, on arm64, the inverted test over a B there.)
		return (c.Kind == CondJump || c.Kind == Jump) && c.Target == in.Target
	case in.PCRel && in.Target != 0:
		return c.Kind == in.Kind && c.Target == in.Target
	}
	return bytes.Equal(ib, cb)
}
