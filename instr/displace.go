package instr

// The pieces of emulation every architecture's Displace builds from:
// an emulated instruction is a function of the stopped thread's
// registers and memory ([Displaced.Emulate]).

// emulation carries out one instruction on a stopped thread. It changes
// no register when it fails.
type emulation = func(r Regs, m Memory) error

// jumpTo sets the PC.
func jumpTo(target uint64) emulation {
	return func(r Regs, _ Memory) error {
		r.SetPC(target)
		return nil
	}
}

// branchIf sets the PC to target or next as taken says.
func branchIf(taken func(r Regs) bool, target, next uint64) emulation {
	return func(r Regs, _ Memory) error {
		if taken(r) {
			r.SetPC(target)
		} else {
			r.SetPC(next)
		}
		return nil
	}
}
