package instr

// PlanOwn plans the patch of the one instruction at site, or at site+4
// after a landing pad: PlanPatch's patch, which is always one
// instruction, replaced by one B (the references into it, which only a
// misaligned one could make, are not looked for: code may be a whole
// module's).
func (a arm64) PlanOwn(code []byte, start, site uint64) (Patch, error) {
	p, _, err := a.planOne(code, start, site)
	return p, err
}

// PadGuards reports whether code starts with BTI c, j or jc (PACIASP,
// a landing pad too, is also pointer authentication's alone).
func (arm64) PadGuards(code []byte) bool {
	x, err := classifyARM64(code, 0)
	return err == nil && x.isBTI()
}

// JumpLen is the length of B.
func (arm64) JumpLen() int { return a64InstLen }

// Reach returns where B at site lands: 128 MiB either way.
func (arm64) Reach(site uint64) (lo, hi uint64) { return reach(site, 1<<27, arm64UserTop) }

// JumpPrefixes returns the one layout of B, which has no prefixes.
func (arm64) JumpPrefixes() [][][]byte { return [][][]byte{nil} }

// PunWindow returns false: a B is one instruction, and never shares its
// bytes with the code after it.
func (arm64) PunWindow(*Patch, []byte) (lo, hi uint64, ok bool) { return 0, 0, false }
