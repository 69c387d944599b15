package profile

import (
	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
)

// timer is function timing in-process as the trampolines see it: which
// functions it times, and the code a timed function's entry and exits
// run. Two parts are timers: the rings (ring.go), whose code appends a
// record for PROFILE to read, for the runs that need every event (a
// trace, Go's goroutines, a start function); and the books
// kept in the program (ledger.go), whose code keeps the thread's shadow
// stack and figures itself, for the rest. The entries' trampolines and
// the exits' patches write either without knowing which.
type timer interface {
	// timed returns nil when f's calls can be timed in-process, else why
	// not (f keeps breakpoints).
	timed(f *datafile.Func) error
	// eventCode returns the code of event ev of item.
	eventCode(item int, ev timedEvent) timedCode
}

// timedEvent is what a piece of timing code marks.
type timedEvent int

const (
	// entryEvent is a function's entry, exitEvent one of its exits (the
	// stack pointer its entry's), returnEvent the place where a call of
	// it returns (the stack pointer one word above its entry's: the
	// return address popped).
	entryEvent timedEvent = iota
	exitEvent
	returnEvent
)

// timedCode is the code of one timed event and its region, at the start
// of the code: how a thread a signal stops inside it is rolled out, and
// where it may stop for PROFILE. scratch marks code that uses registers
// free only at entries and returns (instr.RecordCode.Scratch).
type timedCode struct {
	code    []byte
	region  region
	scratch bool
}

// at is the code's region at offset off of a trampoline.
func (tc *timedCode) at(off int) region {
	r := tc.region
	r.at = off
	return r
}

// timer returns the run's timer, nil where it times with breakpoints
// alone, or counts.
func (p *parts) timer() timer {
	switch {
	case p.ledgers != nil:
		return p.ledgers
	case p.rings != nil:
		return p.rings
	}
	return nil
}

// timed is ringTimed (timer).
func (r *rings) timed(f *datafile.Func) error { return r.ringTimed(f) }

// eventCode returns the record code of event ev of item (timer).
func (r *rings) eventCode(item int, ev timedEvent) timedCode {
	var rc instr.RecordCode
	switch ev {
	case entryEvent, exitEvent:
		rc, _ = r.arch.RecordCode(r.recordRing(&r.plan.Funcs[item]), instr.RecordTag(item, ev == exitEvent))
	case returnEvent:
		rc, _ = r.arch.RecordCode(r.counters.layout.Ring(), instr.ReturnTag(item))
	}
	return timedCode{code: rc.Code, region: recordRegion(0, &rc), scratch: rc.Scratch}
}
