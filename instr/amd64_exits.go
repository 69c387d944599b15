package instr

import (
	"fmt"
	"slices"
)

// The patches of a function's exits on amd64, for function timing (see
// exits.go).

// PlanExits plans the patch of each exit: the smallest window of whole
// instructions ending with it, starting at most four instructions before
// it (pop, leave, add to rsp...: an epilogue), extended where still too
// short over the padding after it, nops and traps up to the next
// function, which nothing runs. A ret is one byte: pop %rbp; ret and
// three bytes of padding, or add $8,%rsp; pop %rbx; pop %rbp; ret, make
// room for jmp rel32 (with short, 2 bytes for jmp rel8: repz ret, or pop
// %rbx; ret). In a function with an indirect jump, which may be a jump
// table's, the window starts at the exit: a table's target cannot be seen,
// and one on the exit lands on the jump. The function is scanned once
// (the scans' fast decoding: lengths, branches and their targets, which
// agree with the full decoder's, TestScanDecoderAgrees), and only the
// windows of its exits are decoded in full: a whole function's full
// decoding took a third of PROFILE's start-up on gofmt.
func (a amd64) PlanExits(fn []byte, start, end uint64, short bool) ([]ExitPlan, error) {
	jumpLen := amd64JumpLen
	if short {
		jumpLen = amd64ShortLen
	}
	if end < start || end-start > uint64(len(fn)) {
		return nil, fmt.Errorf("function [%#x, %#x) longer than its %d bytes of code", start, end, len(fn))
	}
	var scans []scanned
	var pcs []uint64
	for pc := start; pc < end; {
		in, err := scanAMD64(fn[pc-start:end-start], pc)
		if err != nil {
			return nil, err
		}
		if in.n <= 0 {
			return nil, decodeError(a, fn[pc-start:], pc, ErrTruncated) // never: a guard against a loop
		}
		scans, pcs = append(scans, in), append(pcs, pc)
		pc += uint64(in.n)
	}
	targets := scannedTargets(scans, start, end)
	// A jump through a register or memory may be a jump table's, whose
	// targets decoding does not see: in a function that has one, an
	// exit's window starts at the exit (a target there lands on the
	// jump), not on the epilogue before it.
	indirect := slices.ContainsFunc(scans, func(in scanned) bool { return in.kind == Jump && in.target == 0 })
	insts := make([]x86Inst, len(scans)) // (decoded where a window needs them)
	var plans []ExitPlan
	for e, in := range scans {
		exit, ok := exitAt(pcs[e], in.n, in.kind, in.target, start, end)
		if !ok {
			continue
		}
		if exit.Indirect {
			err := errIndirect
			if x, derr := decodeAMD64Bare(fn[pcs[e]-start:end-start], pcs[e]); derr == nil {
				err = fmt.Errorf("%s at %#x: %w", x.text(pcs[e]), pcs[e], errIndirect)
			}
			plans = append(plans, ExitPlan{Exit: exit, Err: fmt.Errorf("%w: %w", err, ErrNotRelocatable)})
			continue
		}
		p, err := a.planExit(fn, start, insts, pcs, targets, e, jumpLen, indirect)
		p.Short = short && err == nil
		plans = append(plans, ExitPlan{Exit: exit, Patch: p, Err: err})
	}
	return plans, nil
}

// scannedTargets returns the set of the targets of the direct branches
// and PC-relative references of scanned instructions scans that fall
// inside [lo, hi): the addresses a patch there must not cover but at its
// start.
func scannedTargets(scans []scanned, lo, hi uint64) map[uint64]bool {
	into := map[uint64]bool{}
	for _, in := range scans {
		if (in.kind == Jump || in.kind == CondJump || in.kind == Call || in.pcrel) && in.target >= lo && in.target < hi {
			into[in.target] = true
		}
	}
	return into
}

// decodeWindow decodes in full, into insts, the instructions from first
// to last of the function fn at start (at pcs) not decoded yet.
func decodeWindow(fn []byte, start uint64, insts []x86Inst, pcs []uint64, first, last int) error {
	for i := first; i <= last; i++ {
		if insts[i].Len > 0 {
			continue
		}
		x, err := decodeAMD64Bare(fn[pcs[i]-start:], pcs[i])
		if err != nil {
			return err
		}
		insts[i] = x
	}
	return nil
}

// planExit plans the window of exit insts[e] (see PlanExits).
func (a amd64) planExit(fn []byte, start uint64, insts []x86Inst, pcs []uint64, targets map[uint64]bool, e, jumpLen int, exitOnly bool) (Patch, error) {
	exit := pcs[e]
	if err := decodeWindow(fn, start, insts, pcs, max(e-4, 0), e); err != nil {
		return Patch{}, fmt.Errorf("the exit at %#x and what precedes it: %w", exit, err)
	}
	if err := insts[e].relocatable(); err != nil {
		return Patch{}, fmt.Errorf("%s at %#x: %w", insts[e].text(exit), exit, err)
	}
	exitEnd := exit + uint64(insts[e].Len)
	// The ends of the padding's instructions after the exit, as far as a
	// jump could need them.
	var padEnds []uint64
	for at := exitEnd; at-exitEnd < uint64(jumpLen) && at < start+uint64(len(fn)) && !targets[at]; {
		x, err := decodeAMD64Bare(fn[at-start:], at)
		if err != nil || x.Len <= 0 || (x.Kind != Nop && x.Kind != Trap) {
			break
		}
		at += uint64(x.Len)
		padEnds = append(padEnds, at)
	}
	last := fmt.Errorf("the exit at %#x and what precedes it: %w", exit, ErrTooShort)
	for first := e; first >= 0 && first >= e-4; first-- {
		if first < e {
			x := insts[first]
			if exitOnly {
				last = fmt.Errorf("%s at %#x, in a function with an indirect jump, might be a jump table's target: %w", insts[e].text(exit), exit, ErrBranchInto)
				break
			}
			if x.Kind != Other && x.Kind != Nop {
				break // the epilogue starts after a branch, a call or a return
			}
			if err := x.relocatable(); err != nil {
				last = fmt.Errorf("%s at %#x: %w", x.text(pcs[first]), pcs[first], err)
				break
			}
			if targets[pcs[first+1]] {
				// A branch lands inside any window starting here or before.
				last = fmt.Errorf("a branch to %#x, inside the exit's window from %#x: %w", pcs[first+1], pcs[first], ErrBranchInto)
				break
			}
		}
		// The window: from site to the exit's end, and on over whole
		// instructions of padding until a jump fits.
		site, hi := pcs[first], exitEnd
		for _, end := range padEnds {
			if hi-site >= uint64(jumpLen) {
				break
			}
			hi = end
		}
		if hi-site < uint64(jumpLen) {
			last = fmt.Errorf("%d bytes from %#x to the exit's end and its padding: %w", hi-site, site, ErrTooShort)
			continue
		}
		p := Patch{Site: site, Orig: append([]byte(nil), fn[site-start:hi-start]...)}
		for _, x := range insts[first : e+1] {
			p.Insts = append(p.Insts, x.Inst)
		}
		return p, nil
	}
	return Patch{}, last
}
