package profile

import (
	"slices"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/elfid"
)

// caps are what the run can do, found once when it starts from the
// architecture, the plan and the program's file (probeCaps), and read by
// the parts that choose by them.
type caps struct {
	// threadPointer: Go's record code finds its ring through the thread
	// pointer, which PROFILE sets for each thread (arm64, a Go program
	// that has no other use for it: see probeCaps).
	threadPointer bool
	// goRing: the architecture writes goroutines' records (ringTimed).
	goRing bool
	// goDepth: the plan has functions whose frames the depth code keys as
	// Go's (settleDepth).
	goDepth bool
}

// probeCaps finds the capabilities of a run of plan's program, at path,
// on arch.
//
// The thread pointer: on arm64 the ring is otherwise found from the stack
// pointer, and goroutine stacks are in no table, so Go's record code
// finds its ring through TPIDR_EL0, and without LSE a Go line's count its
// thread's area (instr's goLineCode), only where the plan has Go
// functions or is a Go program's line profile, in a program that has no
// other use for it, linked statically and without thread-local storage
// (a Go program built without cgo). A program with a dynamic linker has
// its thread pointer set by it (Go's PIE programs too), a C library's
// threads by their clone: there Go functions keep breakpoints.
func probeCaps(arch instr.Arch, plan *datafile.Plan, path string) caps {
	var c caps
	if arch.GoRecordsNeedThreadPointer() && (slices.ContainsFunc(plan.Funcs, func(f datafile.Func) bool { return goFrames(&f) }) ||
		(!plan.Method.IsFunction() && elfid.ReadIsGo(path))) {
		ok, err := elfid.OwnThreadPointer(path)
		c.threadPointer = err == nil && ok
	}
	_, c.goRing = arch.RecordCode(instr.Ring{Records: ringRecords, Table: 1, Goroutine: true, ThreadPointer: c.threadPointer}, 0)
	c.goDepth = slices.ContainsFunc(plan.Funcs, func(f datafile.Func) bool { return f.Frame == datafile.FrameGoroutine })
	return c
}

// recordRing is ring, the ring of the counters' record code, made the
// ring of f's: a goroutine's for a Go function.
func (c caps) recordRing(ring instr.Ring, f *datafile.Func) instr.Ring {
	ring.Goroutine = goFrames(f)
	ring.ThreadPointer = ring.Goroutine && c.threadPointer
	return ring
}
