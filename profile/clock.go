// The counter clock and the cost of a record: how a ring record's CPU
// counter reading becomes PROFILE's clock (counterClock), and what one
// record costs the program, measured at start-up (calibrateRing).

package profile

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// calibrationRecords is how many records the first calibration block
// makes between its pieces of work, at most: no more than half a ring.
const calibrationRecords = 128

// calibrating is how many it makes.
func calibrating() int { return min(calibrationRecords, ringRecords/2) }

// counterClock turns the CPU counter's readings into PROFILE's clock: a
// reading and the clock at the same moment, and the clock's nanoseconds
// per count, measured over the run so far.
type counterClock struct {
	ctr0    uint64
	ns0     int64
	scale   float64
	refined int64 // the clock when scale was last measured
}

// counterPair reads the counter and the clock together: of a few tries,
// the one with the two clock readings around the counter's closest.
func (t *tracer) counterPair() (uint64, int64) {
	best := int64(math.MaxInt64)
	var ctr uint64
	var ns int64
	for range 5 {
		a := t.clock()
		c := ptrace.Counter()
		b := t.clock()
		if b-a < best {
			best, ctr, ns = b-a, c, a+(b-a)/2
		}
	}
	return ctr, ns
}

// startCounter takes the clock's first pair.
func (t *tracer) startCounter() {
	t.ctr.ctr0, t.ctr.ns0 = t.counterPair()
}

// refineCounter measures the scale from the first pair to now; at most
// every 100 ms, each pair's error being some tens of nanoseconds.
func (t *tracer) refineCounter() {
	c := &t.ctr
	if c.scale != 0 && t.clock()-c.refined < 100e6 {
		return
	}
	ctr, ns := t.counterPair()
	if ctr <= c.ctr0 || ns <= c.ns0 {
		return
	}
	c.scale = float64(ns-c.ns0) / float64(ctr-c.ctr0)
	c.refined = ns
}

// ns converts a counter reading.
func (c *counterClock) ns(ctr uint64) int64 {
	return c.ns0 + int64(float64(int64(ctr-c.ctr0))*c.scale)
}

// calibrateRing measures what one record costs the program, in counter
// counts: the main thread, at the exec stop, runs the two calibration
// blocks (see calibrationBlocks) a few times, each timed by its first and
// last records; what the records between the pieces of work add to the
// first block's time, per record, is the cost (the least time of each
// block over the rounds: what the machine adds, an interrupt, a
// migration, only adds). Its registers come back, and its ring is emptied.
func (t *tracer) calibrateRing() (float64, error) {
	c := t.counters
	var saved ptrace.Regs
	if err := ptrace.GetRegs(t.pid, &saved); err != nil {
		return 0, err
	}
	defer ptrace.SetRegs(t.pid, &saved)
	b := c.blockOf[t.pid]
	area := c.ringArea(b)
	// run runs the block at addr and returns the time from its first
	// record to its last.
	run := func(addr uint64, records int) (int64, error) {
		// The records go into cache lines PROFILE has just read, as in
		// a run, where it reads each record a moment after the thread
		// wrote it.
		t.rings.reset(b)
		var sink uint64
		for i := range records {
			sink += atomic.LoadUint64((*uint64)(unsafe.Pointer(&instr.RingSlot(area, i)[0])))
		}
		t.rings.sink = sink
		defer t.rings.reset(b)
		regs := t.borrowed(saved)
		regs.SetPC(addr)
		if err := ptrace.SetRegs(t.pid, &regs); err != nil {
			return 0, err
		}
		if err := ptrace.Cont(t.pid, 0); err != nil {
			return 0, err
		}
		ws, err := ptrace.WaitFor(t.pid)
		if err != nil {
			return 0, err
		}
		if !ws.Stopped() || ws.StopSignal() != syscall.SIGTRAP {
			return 0, fmt.Errorf("program did not stop after the calibration records (%v)", ws.StopSignal())
		}
		if first, n := instr.RingUnread(t.arch, area, ringRecords); first != 0 || n != records {
			return 0, fmt.Errorf("calibration made %d records, want %d", n, records)
		}
		first := instr.ReadRecord(instr.RingSlot(area, 0))
		last := instr.ReadRecord(instr.RingSlot(area, records-1))
		return int64(last.Time - first.Time), nil
	}
	var with, without []int64
	const rounds = 31
	for round := range rounds {
		w, err := run(c.calibration[0], calibrating()+2)
		if err != nil {
			return 0, err
		}
		wo, err := run(c.calibration[1], 2)
		if err != nil {
			return 0, err
		}
		if round > 0 { // the first round warms the caches
			with, without = append(with, w), append(without, wo)
		}
	}
	return max(float64(slices.Min(with)-slices.Min(without)), 0) / float64(calibrating()), nil
}

// calibrationBlocks returns the code of the two calibration blocks: a
// record, calibrationRecords pieces of work (instr.CalibrationWork) each
// after a record, a record and a breakpoint; the same without the
// records between; their records go to ring r.
func (t *tracer) calibrationBlocks(r instr.Ring) (with, without []byte) {
	// The records between are entries and exits in turn, as a call's
	// (their readings of the counter differ: instr.RecordCode); those
	// that time the blocks are exits', which wait for the work before.
	entry, _ := t.arch.RecordCode(r, instr.RecordTag(0, false))
	exit, _ := t.arch.RecordCode(r, instr.RecordTag(0, true))
	work := instr.CalibrationWork(t.arch)
	with, without = slices.Clone(exit.Code), slices.Clone(exit.Code)
	for i := range calibrating() {
		rc := entry
		if i%2 == 1 {
			rc = exit
		}
		with = append(append(with, rc.Code...), work...)
		without = append(without, work...)
	}
	bp := t.arch.Breakpoint()
	return append(append(with, exit.Code...), bp...), append(append(without, exit.Code...), bp...)
}

// errGoClock is why Go functions keep breakpoints where the counter is
// not one clock across CPUs.
var errGoClock = errors.New("a Go function, and the counter not one clock across CPUs")

// clockSourceFile names the kernel's clock source (a variable for the
// tests of another source, or none). The kernel takes the
// TSC as its clock only when it has checked that the CPUs' counters agree
// and run at a constant rate (arch/x86/kernel/tsc_sync.c); arm64's
// system counter is one clock across CPUs by the architecture (Arm ARM,
// "The Generic Timer": the system counter is shared by every PE).
var clockSourceFile = "/sys/devices/system/clocksource/clocksource0/current_clocksource"

// oneClock reports whether the counter the records read is one clock
// across CPUs, warning once (PRF4680) where it is not known to be.
func (t *tracer) oneClock() bool {
	if t.clockChecked {
		return t.clockShared
	}
	t.clockChecked = true
	if t.arch.CounterOneClock() {
		t.clockShared = true
		return true
	}
	b, err := os.ReadFile(clockSourceFile)
	source := strings.TrimSpace(string(b))
	if err != nil {
		source = "unknown (" + clockSourceFile + " unreadable)"
	}
	t.clockShared = source == "tsc"
	if !t.clockShared && slices.ContainsFunc(t.plan.Funcs, func(f datafile.Func) bool { return goFrames(&f) }) {
		t.cfg.Warn(prf.CounterNotShared(source))
	}
	return t.clockShared
}
