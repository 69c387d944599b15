package profile

// PROFILE's mechanisms: the ways it instruments the program. Each is a
// type of its own, holding what it planted and handling the stops that
// are its own; the tracer keeps the loop, the threads and the books, and
// calls each mechanism at the same few points:
//
//	start-up, each module      planted (plant.go: entries.go, lines.go,
//	                           exitpatch.go, timing.go's exitSites)
//	a breakpoint stop          stop(th, addr), in turn, until one claims it
//	a module unloaded          forget(lo, hi)
//	the program's end          collect(res)
//
// The mechanisms are
//
//	breakpoints   breakpoints.go  entries without a trampoline, exits left
//	                              to breakpoints, lines, the rendezvous
//	inproc        inprocess.go    trampolines that count (and keep the call
//	                              depth) in memory shared with PROFILE
//	rings         ring.go         timing in-process: the records of the
//	                              threads' rings, read into the books
//
// A stop no mechanism claims is the program's own SIGTRAP.

// mechanism is one way of instrumenting the program.
type mechanism interface {
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
	ms := []mechanism{t.bp}
	if t.rings != nil {
		ms = append(ms, t.rings)
	}
	if t.inproc != nil {
		ms = append(ms, t.inproc)
	}
	return ms
}
