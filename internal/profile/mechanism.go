package profile

// PROFILE's mechanisms: the ways it instruments the program. Each is a
// type of its own, holding what it planted and handling the stops that
// are its own; the tracer keeps the loop, the threads and the books, and
// calls the mechanisms, in one order, at four points:
//
//	a module mapped      plant(p)         each plants what it takes of the
//	                                      module; what it cannot, it leaves
//	                                      in p for the next (plantModule)
//	a breakpoint stop    stop(th, addr)   offered to each in turn until one
//	                                      claims it (trap)
//	a module unmapped    forget(lo, hi)   (forget)
//	the program's end    collect(res)     (trace)
//
// The mechanisms, in that order:
//
//	entryTrampolines  entries.go, trampolines.go: a jump at each entry
//	                  to a trampoline that counts (and keeps the call
//	                  depth) in memory shared with PROFILE (counters,
//	                  inprocess.go), or records the entry into the
//	                  thread's ring; full, short (with a hop) or punned
//	                  jumps
//	exitPatches       exitpatch.go: timed functions' exits, and the return
//	                  sites of their calls, patched to record the leave
//	rings             ring.go: the threads' rings read into the books
//	breakpoints       breakpoints.go, lines.go: whatever the others left
//	                  (entries and exits no jump fits), lines, and the
//	                  dynamic linker's rendezvous (modules.go)
//
// A run has the breakpoints always; the others where the profile type,
// the CPU and room near the code allow (chooseMechanism). A stop that no
// mechanism claims is the program's own SIGTRAP. What several of them
// share is the tracer's: the memory shared with the program and the
// trampolines written (counters), the code scan's findings (codeScan),
// the areas next to each module (areaNear, codeArea), the books.

// mechanism is one way of instrumenting the program.
type mechanism interface {
	// plant plants what the mechanism takes of planting p, a module:
	// what it cannot plant it leaves in p for the next.
	plant(p *planting) error
	// stop handles thread th, stopped by a breakpoint at addr (the
	// registers read into the tracer's), and reports whether the
	// breakpoint was the mechanism's.
	stop(th *thread, addr uint64) (bool, error)
	// forget drops what the mechanism planted in [lo, hi), a module's
	// code, unmapped.
	forget(lo, hi uint64)
	// collect adds what the mechanism counted to the run's result, at
	// the program's end.
	collect(res *Result)
}

// mechanisms returns the mechanisms of the run, in the order a stop is
// offered to them.
func (t *tracer) mechanisms() []mechanism {
	ms := make([]mechanism, 0, 4)
	if t.entries != nil {
		ms = append(ms, t.entries)
	}
	if t.exits != nil {
		ms = append(ms, t.exits)
	}
	if t.rings != nil {
		ms = append(ms, t.rings)
	}
	return append(ms, t.bp)
}
