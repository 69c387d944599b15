package profile

// PROFILE's mechanisms: the ways it instruments the program. Each is a
// type of its own, holding what it planted and handling the stops that
// are its own, and a part of the run (hooks.go): the loop keeps the
// threads, the tasks, the signals and the stops, and calls the
// mechanisms, in one order, at four points:
//
//	a module mapped      plant(p)         each plants what it takes of the
//	                                      module and leaves the rest in p
//	                                      for the next (plantModule); an
//	                                      entry no jump fits goes to the
//	                                      breakpoints at once
//	a breakpoint stop    stop(th, addr)   offered to each in turn until one
//	                                      claims it (trap)
//	a module unmapped    forget(lo, hi)   each forgets what it planted
//	                                      there (unplant)
//	the program's end    collect(res)     each adds what it counted
//	                                      (finish, hooks.ended)
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
//	lineTrampolines   linetramps.go, linesweep.go: a jump at each line
//	                  site a jump fits to a trampoline that counts, or
//	                  covers, into the counters; coverage's jumps taken
//	                  out once covered
//	breakpoints       breakpoints.go, lines.go: whatever the others left
//	                  (entries, exits and line sites no jump fits), and
//	                  the dynamic linker's rendezvous (modules.go)
//
// A run has the breakpoints always; the others where the profile type
// and the CPU allow (chooseMechanism) and the counters could be mapped
// into the program (startCounters). A stop that no mechanism claims is
// the program's own SIGTRAP. What several of them share are parts of
// their own, given to them (choose): the memory shared with the program
// and the trampolines written (counters), and the planting engine
// (planter: the code scan's findings, codeScan; the areas next to each
// module, areaNear, codeArea).
//
// The four calls are not all the tracer needs of what a mechanism
// writes into the program. It finds that code in two registers: the
// breakpoints' sites, and the trampolines (counters.add, with their jumps'
// original bytes). Through them it forgets everything at an exec
// (tasks.go), writes the original bytes into a forked child's copy of the
// memory (parts.unpatch, children.go) and into the memory of tasks it
// lets go (parts.takeOut, tasks.go), moves a thread a signal stops inside
// a trampoline or a slot back to the program's own code (signals.rollBack,
// over counters.origPC, counters.rollBack and breakpoints.inSlot), and
// checks at the end that the code is as it wrote it (watch.go). A new
// mechanism that writes code registers it there.

// mechanism is one way of instrumenting the program.
type mechanism interface {
	// plant plants what the mechanism takes of planting p, a module,
	// and leaves the rest in p for the next (or, for an entry that must
	// be planted before the exits are, hands it to the breakpoints).
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
