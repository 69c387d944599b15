package instr

import (
	"cmp"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"sync"
)

// CodeMap is a module's code decoded once, for the tracer to check what
// it plants against the code the program has, whatever its plan says:
// where the direct jumps of the code land and its calls return
// ([CodeScan]: a patch must cover no place a jump lands, from the
// function or from anywhere else), and where instructions begin.
//
// Each function of the plan is decoded from its start to its end, and
// the code between functions linearly from the end of one to the start
// of the next (the alignment padding, and code the plan does not name:
// other functions, a function's cold part, PLT entries). A site may be
// planted only where an instruction of that decoding begins, and not
// inside an instruction of any function's decoding (a function's extent
// that overlaps another's and begins inside one of its instructions
// fails there). Where instructions have one length and are aligned to it
// (arm64's words), a site is an instruction boundary when it is aligned
// and its instruction decodes.
type CodeMap struct {
	CodeScan
	arch Decoder
	// scan is arch's decoder for the scans (see [Decoder]).
	scan  scanFunc
	start uint64
	code  []byte
	// fixed marks an architecture whose instructions have one length
	// ([fixedLength]): its boundaries are not mapped.
	fixed bool
	// begins and inside are bitmaps over code (not fixed): an
	// instruction begins at the byte, or the byte is inside an
	// instruction of a function's decoding, past its first byte.
	begins, inside []uint64
	// failed holds the functions whose decoding did not reach their end
	// cleanly, and why.
	failed map[[2]uint64]error
	// Indirect are the extents of the functions with an indirect jump (a
	// jump table's, a computed goto's, or a tail call through a
	// pointer), sorted: where they land, no decoding sees.
	Indirect [][2]uint64
}

// Errors of [CodeMap.Boundary] and [CodeMap.Decoded].
var (
	// ErrNotBoundary: no instruction of the code's decoding begins at
	// the address.
	ErrNotBoundary = errors.New("not on an instruction boundary")
	// ErrNotDecoded: a function's code does not decode from its start
	// to its end.
	ErrNotDecoded = errors.New("its code does not decode from its start to its end")
)

// mapShare is the least code a CPU is given to decode (a variable for
// the tests).
var mapShare = 128 << 10

// MapCode decodes code, at start, and funcs, the extents [lo, hi) of
// the functions of the plan in it (in any order; those not inside code
// are ignored): see [CodeMap].
func MapCode(a Decoder, code []byte, start uint64, funcs [][2]uint64) *CodeMap {
	m := newCodeMap(a, code, start)
	end := start + uint64(len(code))
	var fns [][2]uint64
	for _, f := range funcs {
		if f[0] < f[1] && f[0] >= start && f[1] <= end {
			fns = append(fns, f)
		}
	}
	slices.SortFunc(fns, func(x, y [2]uint64) int { return cmp.Or(cmp.Compare(x[0], y[0]), cmp.Compare(x[1], y[1])) })
	fns = slices.Compact(fns)
	// The work is shared among the CPUs, each a run of functions and the
	// code up to the next run's, with bitmaps and findings of its own,
	// merged after: 10,000 functions in some 3 ms.
	workers := min(runtime.GOMAXPROCS(0), len(fns), max(1, len(code)/mapShare))
	parts := make([]*CodeMap, max(1, workers))
	var wg sync.WaitGroup
	for w := range parts {
		fs := fns[len(fns)*w/len(parts) : len(fns)*(w+1)/len(parts)]
		lo, hi := start, end
		if w > 0 {
			lo = fs[0][0]
		}
		if w < len(parts)-1 {
			hi = fns[len(fns)*(w+1)/len(parts)][0]
		}
		p := m
		if w > 0 {
			p = newCodeMap(a, code, start)
		}
		parts[w] = p
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.mapRange(lo, hi, fs)
		}()
	}
	wg.Wait()
	for _, p := range parts[1:] {
		for i, w := range p.begins {
			m.begins[i] |= w
		}
		for i, w := range p.inside {
			m.inside[i] |= w
		}
		m.Jumps = append(m.Jumps, p.Jumps...)
		m.Refs = append(m.Refs, p.Refs...)
		m.AfterCalls = append(m.AfterCalls, p.AfterCalls...)
		for target, rs := range p.Returns {
			m.Returns[target] = append(m.Returns[target], rs...)
		}
		for f, err := range p.failed {
			m.failed[f] = err
		}
		m.Indirect = append(m.Indirect, p.Indirect...)
	}
	slices.SortFunc(m.Indirect, func(x, y [2]uint64) int { return cmp.Compare(x[0], y[0]) })
	slices.Sort(m.Jumps)
	m.Jumps = slices.Compact(m.Jumps)
	slices.Sort(m.Refs)
	m.Refs = slices.Compact(m.Refs)
	slices.Sort(m.AfterCalls)
	m.AfterCalls = slices.Compact(m.AfterCalls)
	for target, rs := range m.Returns {
		slices.Sort(rs)
		m.Returns[target] = slices.Compact(rs)
	}
	return m
}

// newCodeMap returns a map of code, at start, with nothing found yet.
func newCodeMap(a Decoder, code []byte, start uint64) *CodeMap {
	m := &CodeMap{arch: a, scan: a.scanDecoder(), start: start, code: code, fixed: fixedLength(a), failed: map[[2]uint64]error{}}
	m.Returns = map[uint64][]uint64{}
	if !m.fixed {
		words := (len(code) + 63) / 64
		m.begins, m.inside = make([]uint64, words), make([]uint64, words)
	}
	return m
}

// mapRange decodes [lo, hi): each of fns (sorted, starting at lo but
// for the first run) from its start to its end, and the code between
// linearly, stepping over what does not decode: the instructions found
// there begin where they are, but bound nothing.
func (m *CodeMap) mapRange(lo, hi uint64, fns [][2]uint64) {
	step := uint64(m.arch.instAlign())
	sweep := func(lo, hi uint64) {
		for pc := lo; pc < hi; {
			in, err := m.scan(m.code[pc-m.start:hi-m.start], pc)
			if err != nil || in.n <= 0 {
				pc += step
				continue
			}
			m.note(in, pc)
			m.mark(pc, 1, false)
			pc += uint64(in.n)
		}
	}
	pos := lo
	for _, f := range fns {
		if f[0] > pos {
			sweep(pos, f[0])
		}
		pos = max(pos, f[1])
		if err := m.decodeFunc(f); err != nil {
			m.failed[f] = err
		}
	}
	if hi > pos {
		sweep(pos, hi)
	}
}

// note books the branch or call in at pc.
func (m *CodeMap) note(in scanned, pc uint64) {
	if in.kind == Call {
		m.AfterCalls = append(m.AfterCalls, pc+uint64(in.n))
	}
	switch {
	case (in.kind == Jump || in.kind == CondJump) && in.target != 0:
		m.Jumps = append(m.Jumps, in.target)
	case in.kind == Call && in.target != 0:
		m.Returns[in.target] = append(m.Returns[in.target], pc+uint64(in.n))
	case in.pcrel && in.target != 0 && in.kind != Jump && in.kind != CondJump:
		m.Refs = append(m.Refs, in.target)
	}
}

// decodeFunc decodes the function f from its start to its end, noting
// its branches and marking its instructions.
func (m *CodeMap) decodeFunc(f [2]uint64) error {
	end := f[1] - m.start
	if m.fixed {
		// Aligned, and each instruction checked where it is planted
		// (Boundary). Its branches are noted.
		align := uint64(m.arch.instAlign())
		if f[0]%align != 0 || f[1]%align != 0 {
			return fmt.Errorf("[%#x, %#x) is not %d-byte aligned: %w", f[0], f[1], align, ErrNotDecoded)
		}
		indirect := false
		for pc := f[0]; pc+align <= f[1]; pc += align {
			if in, err := m.scan(m.code[pc-m.start:end], pc); err == nil {
				m.note(in, pc)
				indirect = indirect || in.kind == Jump && in.target == 0
			}
		}
		if indirect {
			m.Indirect = append(m.Indirect, f)
		}
		return nil
	}
	indirect := false
	defer func() {
		if indirect {
			m.Indirect = append(m.Indirect, f)
		}
	}()
	for pc := f[0]; pc < f[1]; {
		in, err := m.scan(m.code[pc-m.start:end], pc)
		if err != nil {
			return fmt.Errorf("at %#x: %w: %w", pc, ErrNotDecoded, err)
		}
		if in.n <= 0 {
			return fmt.Errorf("at %#x: %w", pc, ErrNotDecoded) // never: a guard against a loop
		}
		if in.kind != Other || in.pcrel {
			m.note(in, pc)
			indirect = indirect || in.kind == Jump && in.target == 0
		}
		m.mark(pc, in.n, true)
		pc += uint64(in.n)
	}
	return nil
}

// mark books an instruction of n bytes at pc: it begins there, and with
// inner its other bytes are inside it.
func (m *CodeMap) mark(pc uint64, n int, inner bool) {
	if m.begins == nil {
		return
	}
	off := pc - m.start
	m.begins[off/64] |= 1 << (off % 64)
	if !inner {
		return
	}
	for i := off + 1; i < off+uint64(n) && i < uint64(len(m.code)); i++ {
		m.inside[i/64] |= 1 << (i % 64)
	}
}

// InIndirect reports whether addr is in a function with an indirect
// jump ([CodeMap.Indirect]).
func (m *CodeMap) InIndirect(addr uint64) bool {
	i := sort.Search(len(m.Indirect), func(i int) bool { return m.Indirect[i][1] > addr })
	return i < len(m.Indirect) && m.Indirect[i][0] <= addr
}

// Contains reports whether addr is in the code.
func (m *CodeMap) Contains(addr uint64) bool {
	return addr >= m.start && addr-m.start < uint64(len(m.code))
}

// Decoded returns nil when the function [lo, hi), one of MapCode's
// funcs, decoded from its start to exactly its end, else why it did not
// (wrapping [ErrNotDecoded]).
func (m *CodeMap) Decoded(lo, hi uint64) error {
	if lo >= hi || !m.Contains(lo) || hi > m.start+uint64(len(m.code)) {
		return fmt.Errorf("[%#x, %#x) is not in the module's code: %w", lo, hi, ErrNotDecoded)
	}
	return m.failed[[2]uint64{lo, hi}]
}

// Boundary returns nil when a site may be planted at addr: an
// instruction of the decoding begins there, inside no instruction of a
// function's decoding (amd64); aligned, and its instruction decodes
// (instructions of one length: arm64). Else why not, wrapping
// [ErrNotBoundary] (the caller names the address).
func (m *CodeMap) Boundary(addr uint64) error {
	if !m.Contains(addr) {
		return fmt.Errorf("not in the module's code: %w", ErrNotBoundary)
	}
	off := addr - m.start
	if m.fixed {
		if align := uint64(m.arch.instAlign()); addr%align != 0 {
			return fmt.Errorf("not %d-byte aligned: %w", align, ErrNotBoundary)
		}
		if _, err := m.arch.Decode(m.code[off:], addr); err != nil {
			return fmt.Errorf("%w: %w", ErrNotBoundary, err)
		}
		return nil
	}
	bit := uint64(1) << (off % 64)
	switch {
	case m.inside[off/64]&bit != 0:
		return fmt.Errorf("inside an instruction: %w", ErrNotBoundary)
	case m.begins[off/64]&bit == 0:
		return fmt.Errorf("no instruction begins there: %w", ErrNotBoundary)
	}
	return nil
}
