package unwind

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-delve/delve/pkg/dwarf/frame"
)

// A row of the CFI table (DWARF 5, 6.4.1): the rules of one PC, as
// delve's interpreter finds them, in a compact form. A module keeps the
// rows of the PCs its unwinds looked up: a profile samples the same PCs
// again and again, and running an FDE's program allocates.

// maxRows bounds the rows a module keeps.
const maxRows = 1 << 16

// row holds the rules that give the caller's registers at one PC.
type row struct {
	stop   Stop         // stopNone, or why the PC has no rules (StopNoFDE, StopBadCFI)
	cfa    frame.DWRule // the CFA
	regs   []regRule    // the rules of the registers the unwinder follows
	ra     uint64       // the return address column
	raRule int          // index of the return address column's rule in regs, -1 for none
	spRule bool         // the stack pointer has a rule of its own
	signal bool         // the FDE is a signal frame's ('S' augmentation)
}

// regRule is the rule of one register.
type regRule struct {
	reg  uint64
	rule frame.DWRule
}

// rowCache is a module's rows by PC.
type rowCache struct {
	rows sync.Map // uint64 -> *row
	n    atomic.Int64
}

// row returns the rules at pc, from the cache or found and kept.
func (m *Module) row(pc uint64) *row {
	if r, ok := m.cache.rows.Load(pc); ok {
		return r.(*row)
	}
	r := m.findRow(pc)
	if m.cache.n.Load() < maxRows {
		if _, loaded := m.cache.rows.LoadOrStore(pc, r); !loaded {
			m.cache.n.Add(1)
		}
	}
	return r
}

// findRow runs the program of pc's FDE up to pc.
func (m *Module) findRow(pc uint64) *row {
	fde := m.find(pc)
	if fde == nil {
		return &row{stop: StopNoFDE}
	}
	fc, err := establish(fde, pc)
	if err != nil {
		return &row{stop: StopBadCFI}
	}
	ar, _ := m.Arch.regs()
	r := &row{stop: stopNone, cfa: fc.CFA, ra: fc.RetAddrReg, raRule: -1,
		signal: strings.ContainsRune(fde.CIE.Augmentation, 'S')}
	for reg, rule := range fc.Regs {
		if reg >= nregs || rule.Rule == frame.RuleSameVal {
			continue // same value; vector registers are not followed
		}
		if reg == fc.RetAddrReg {
			r.raRule = len(r.regs)
		}
		r.spRule = r.spRule || reg == ar.sp
		r.regs = append(r.regs, regRule{reg, rule})
	}
	return r
}
