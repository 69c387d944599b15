package prep

import (
	"fmt"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/dwarf"
	"github.com/sourceprofiler/sprof/instr"
)

// Where a function's breakpoint goes (docs/architecture.md): its first
// instruction, or in a Go function after its stack check; and how PROFILE
// keys its frames.

// frameKey says how PROFILE keys fn's frames for the call depth: by stack
// pointer, or for Go by the distance from the goroutine's stack top when
// the goroutine register is at hand at the entry site (a stack check
// before the site read it), else not at all.
func frameKey(m *openModule, fn *dwarf.Func, site uint64) datafile.Frame {
	if !isGo(m, fn) {
		return datafile.FrameSP
	}
	if site <= fn.Entry {
		return datafile.FrameNone
	}
	check, err := m.file.Code(fn.Entry, int(site-fn.Entry))
	if err != nil || !instr.GoEntryUsesG(m.arch, check) {
		return datafile.FrameNone
	}
	return datafile.FrameGoroutine
}

// isGo reports whether fn was compiled from Go (its unit's language).
func isGo(m *openModule, fn *dwarf.Func) bool {
	return fn.Unit >= 0 && fn.Unit < len(m.file.Units) && m.file.Units[fn.Unit].Language == "go"
}

// entryRange returns the bounds of fn's code range that holds its entry,
// or zeros when no range does.
func entryRange(fn *dwarf.Func) (low, high uint64) {
	for _, r := range fn.Ranges {
		if r.Low <= fn.Entry && fn.Entry < r.High {
			return r.Low, r.High
		}
	}
	return 0, 0
}

// checkSite checks the address where fn's breakpoint goes, its entry or
// the site entrySite chose after a Go stack check, as docs/design/linux.md
// asks of every breakpoint: fn is decoded from its entry through the site's
// instruction ([instr.Boundaries]), the site must be on an instruction
// boundary, and its instruction must not be a trap (a breakpoint there
// would be taken for the program's own).
func checkSite(m *openModule, fn *dwarf.Func, site uint64) error {
	end := site + uint64(m.arch.MaxInstLen())
	if len(fn.Ranges) > 0 && fn.Ranges[0].Low <= fn.Entry && fn.Entry < fn.Ranges[0].High {
		end = min(end, fn.Ranges[0].High)
	}
	if site < fn.Entry || site >= end {
		return fmt.Errorf("site %#x outside the function's code", site)
	}
	code, err := m.file.Code(fn.Entry, int(end-fn.Entry))
	if err != nil {
		return fmt.Errorf("entry %#x: %w", fn.Entry, err)
	}
	// Decoding may stop after the site, where the code was cut: only the
	// instructions up to the site matter.
	bounds, err := instr.Boundaries(m.arch, code, fn.Entry)
	if !instr.OnBoundary(bounds, site) {
		if err != nil {
			return err
		}
		return fmt.Errorf("site %#x is not on an instruction boundary", site)
	}
	inst, err := instr.BareDecoder(m.arch)(code[site-fn.Entry:], site)
	if err != nil {
		return err
	}
	if inst.Kind == instr.Trap {
		inst, _ = m.arch.Decode(code[site-fn.Entry:], site) // (its text)
		return fmt.Errorf("site %#x is a trap instruction (%s)", site, inst.Text)
	}
	return nil
}

// afterCheck returns the end of a Go stack check whose first branch to
// morestack (restart) ends at pc: a frame larger than StackBig is checked
// twice, for the subtraction's wrap-around and against the stack guard,
// each with a branch to the same place (amd64: SUB, JB; CMP, JBE. arm64:
// SUBS, B.LO; CMP, B.LS). The site goes after the last, so that a call
// that grows the stack, and starts again, passes it once.
func afterCheck(m *openModule, pc, end, restart uint64) uint64 {
	site := pc
	for i := 0; i < 3 && pc < end; i++ {
		inst, err := decodeAt(m, pc, end)
		if err != nil {
			break
		}
		pc += uint64(inst.Len)
		if inst.Kind == instr.CondJump && inst.Target == restart {
			site = pc
			continue
		}
		if inst.Kind != instr.Other {
			break
		}
	}
	return site
}

// entrySite returns the address of fn's entry breakpoint: its first
// instruction, except in a Go function that opens with a stack-growth
// check. Such a function, when its goroutine's stack must grow, calls
// runtime.morestack and starts again from its first instruction: a
// breakpoint there would count that call twice. The site is then the
// instruction after the check's conditional branch, which every call passes
// exactly once (and where the return address is still in place: the frame
// is not built yet). A line's site there goes after the check too
// (countingSites).
func entrySite(m *openModule, fn *dwarf.Func) uint64 {
	site, _ := goStackCheck(m, fn)
	return site
}

// goStackCheck returns fn's entry site (see entrySite) and, where that is
// after a Go stack check, the code the check branches to, which calls
// morestack and jumps back to the entry.
func goStackCheck(m *openModule, fn *dwarf.Func) (site uint64, restart dwarf.Range) {
	if !isGo(m, fn) {
		return fn.Entry, restart
	}
	m.checksMu.Lock()
	c, ok := m.checks[fn.Entry]
	m.checksMu.Unlock()
	if ok {
		return c.site, c.restart
	}
	site, restart = findStackCheck(m, fn)
	m.checksMu.Lock()
	if m.checks == nil {
		m.checks = map[uint64]stackCheck{}
	}
	m.checks[fn.Entry] = stackCheck{site, restart}
	m.checksMu.Unlock()
	return site, restart
}

// stackCheck is what goStackCheck found of a function.
type stackCheck struct {
	site    uint64
	restart dwarf.Range
}

// findStackCheck is goStackCheck of a Go function, found.
func findStackCheck(m *openModule, fn *dwarf.Func) (site uint64, restart dwarf.Range) {
	end := fn.Entry + 64
	if len(fn.Ranges) > 0 && fn.Ranges[0].Low <= fn.Entry && fn.Entry < fn.Ranges[0].High {
		end = fn.Ranges[0].High
	}
	// The check is a compare of the stack pointer with the goroutine's
	// stack guard and a conditional branch forward, within the first few
	// instructions (amd64: CMP and JBE, with an LEA for large frames; arm64:
	// LDR, CMP or SUB and CMP, B.LS).
	pc := fn.Entry
	for i := 0; i < 6 && pc < end; i++ {
		inst, err := decodeAt(m, pc, end)
		if err != nil {
			return fn.Entry, restart
		}
		switch inst.Kind {
		case instr.CondJump:
			if inst.Target > pc && inst.Target < end {
				if back, ok := restartsAt(m, inst.Target, end, fn.Entry); ok {
					return afterCheck(m, pc+uint64(inst.Len), end, inst.Target), dwarf.Range{Low: inst.Target, High: back}
				}
			}
			return fn.Entry, restart
		case instr.Call, instr.Ret, instr.Jump, instr.Trap:
			return fn.Entry, restart
		}
		pc += uint64(inst.Len)
	}
	return fn.Entry, restart
}

// restartsAt reports whether the code at from, the target of a stack check,
// jumps back to entry after calling morestack, and where that jump ends.
func restartsAt(m *openModule, from, end, entry uint64) (uint64, bool) {
	pc, called := from, false
	for i := 0; i < 32 && pc < end; i++ {
		inst, err := decodeAt(m, pc, end)
		if err != nil {
			return 0, false
		}
		switch inst.Kind {
		case instr.Call:
			called = true
		case instr.Jump:
			return pc + uint64(inst.Len), called && inst.Target == entry
		case instr.Ret, instr.Trap, instr.CondJump:
			return 0, false
		}
		pc += uint64(inst.Len)
	}
	return 0, false
}

// decodeAt decodes the instruction at pc of a function ending at end.
func decodeAt(m *openModule, pc, end uint64) (instr.Inst, error) {
	code, err := m.file.Code(pc, int(min(uint64(m.arch.MaxInstLen()), end-pc)))
	if err != nil {
		return instr.Inst{}, err
	}
	return instr.BareDecoder(m.arch)(code, pc) // (its text shown by nothing)
}
