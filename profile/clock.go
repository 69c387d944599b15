// The counter clock and the calibration: how a ring record's CPU counter
// reading becomes PROFILE's clock (counterClock), and what a stop and a
// record cost the program beyond what PROFILE's clock sees, measured at
// start-up (calibrateAll: calibrate, calibrateRing).

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
	"time"
	"unsafe"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// calibration is what the calibration works with (calibrateAll): the
// process proc, whose main thread pid is stopped at its exec, borrowed
// for PROFILE's code (borrow: inject.go; borrowed: attach.go), the
// counters and rings when timing in-process, and /CALIBRATION's figure,
// negative when there is none.
type calibration struct {
	proc     process
	pid      int
	arch     instr.Arch
	borrow   func(tid int, code []byte) (ptrace.Regs, func() error, error)
	borrowed func(saved ptrace.Regs) ptrace.Regs
	counters *counters
	rings    *rings
	ledgers  *ledgers
	imposed  int64
}

// calibrationRecords is how many records the first calibration block
// makes between its pieces of work, at most: no more than half a ring.
const calibrationRecords = 128

// calibrating is how many it makes.
func calibrating() int { return min(calibrationRecords, ringRecords/2) }

// counterClock turns the CPU counter's readings into PROFILE's clock: a
// reading and the clock at the same moment, and the clock's nanoseconds
// per count, measured over the run so far. checked and shared: whether
// the counter was found to be one clock across CPUs (oneClock).
type counterClock struct {
	ctr0            uint64
	ns0             int64
	scale           float64
	refined         int64 // the clock when scale was last measured
	checked, shared bool
	agreed          string // how PROFILE found the counters agree, where it checked them (explain)
}

// counterPair reads the counter and the clock together: of a few tries,
// the one with the two clock readings around the counter's closest.
func (c *clocks) counterPair() (uint64, int64) {
	best := int64(math.MaxInt64)
	var ctr uint64
	var ns int64
	for range 5 {
		a := c.clock()
		read := ptrace.Counter()
		b := c.clock()
		if b-a < best {
			best, ctr, ns = b-a, read, a+(b-a)/2
		}
	}
	return ctr, ns
}

// startCounter takes the clock's first pair.
func (c *clocks) startCounter() {
	c.ctr.ctr0, c.ctr.ns0 = c.counterPair()
}

// refineCounter measures the scale from the first pair to now; at most
// every 100 ms, each pair's error being some tens of nanoseconds.
func (c *clocks) refineCounter() {
	cc := &c.ctr
	if cc.scale != 0 && c.clock()-cc.refined < 100e6 {
		return
	}
	ctr, ns := c.counterPair()
	if ctr <= cc.ctr0 || ns <= cc.ns0 {
		return
	}
	cc.scale = float64(ns-cc.ns0) / float64(ctr-cc.ctr0)
	cc.refined = ns
}

// bookScale returns the books' scale (instr.BookScale): the counter
// clock's, measured over 2 ms at least from its first pair
// (startCounter).
func (c *clocks) bookScale() uint64 {
	cc := &c.ctr
	for cc.scale == 0 || c.clock()-cc.ns0 < 2e6 {
		time.Sleep(time.Millisecond)
		cc.refined = 0
		c.refineCounter()
	}
	return uint64(math.Round(cc.scale * (1 << instr.BookScaleShift)))
}

// ns converts a counter reading.
func (c *counterClock) ns(ctr uint64) int64 {
	return c.ns0 + int64(float64(int64(ctr-c.ctr0))*c.scale)
}

// calibrate measures the overhead of one event at the exec stop, before
// the program runs: the thread hits a breakpoint at its first instruction
// calibrationRounds times, and the lower quartile of the round trips is
// the stop's cost. Where other work shares the CPUs, a round trip often
// waits for one, and the median was seen at 4 ms for stops of some 30 µs:
// taken out of every later stop, it took most of the program's own time.
// Its registers and code are restored.
func (c *clocks) calibrate(cal *calibration) (int64, error) {
	saved, restore, err := cal.borrow(cal.pid, cal.arch.Breakpoint())
	if err != nil {
		return 0, err
	}
	defer restore()
	samples := make([]int64, 0, calibrationRounds)
	regs := cal.borrowed(saved)
	for range calibrationRounds {
		if err := cal.proc.setRegs(cal.pid, &regs); err != nil {
			return 0, err
		}
		let := c.clock()
		if err := cal.proc.cont(cal.pid, 0); err != nil {
			return 0, err
		}
		tid, ws, err := cal.proc.wait(yieldWait(yieldWindow))
		if err != nil {
			return 0, err
		}
		if tid != cal.pid || !ws.Stopped() || ws.StopSignal() != syscall.SIGTRAP {
			return 0, errors.New("program did not stop at the calibration breakpoint")
		}
		samples = append(samples, c.clock()-let)
	}
	slices.Sort(samples)
	return samples[len(samples)/4], nil
}

// calibrateAll measures, for a timed run, what a breakpoint's stop and a
// ring's record cost the program (calibrate, calibrateRing), on the main
// thread where PROFILE stopped it, or takes /CALIBRATION's figure.
func (c *clocks) calibrateAll(timed bool, cal calibration) error {
	if !timed {
		return nil
	}
	var err error
	if c.calculated, err = c.calibrate(&cal); err != nil {
		return fmt.Errorf("calibrate the overhead: %w", err)
	}
	c.overhead = c.calculated
	c.yielding = true
	if r := cal.rings; r != nil {
		counts, err := cal.calibrateRing()
		if err != nil {
			return fmt.Errorf("calibrate the cost of a record: %w", err)
		}
		c.refineCounter()
		r.cost = counts * c.ctr.scale
		c.calculated = int64(math.Round(r.cost))
	}
	if l := cal.ledgers; l != nil {
		if err := l.calibrate(&cal); err != nil {
			return fmt.Errorf("calibrate the cost of the book code: %w", err)
		}
		c.refineCounter()
		// (An event's cost, as the report gives it: half a call's. The
		// run's own measure replaces it at the end: ledgers.ended.)
		c.calculated = int64(math.Round(l.calibrated.Call() / 2))
	}
	if imposed := cal.imposed; imposed >= 0 {
		c.overhead, c.forced = imposed, true
		if cal.rings != nil {
			cal.rings.cost = float64(imposed)
		}
	}
	return nil
}

// calibrateRing measures what one record costs the program, in counter
// counts: the main thread, at the exec stop, runs the two calibration
// blocks (see calibrationBlocks) a few times, each timed by its first and
// last records; what the records between the pieces of work add to the
// first block's time, per record, is the cost (the least time of each
// block over the rounds: what the machine adds, an interrupt, a
// migration, only adds). Its registers come back, and its ring is emptied.
func (cal *calibration) calibrateRing() (float64, error) {
	cs, proc, pid := cal.counters, cal.proc, cal.pid
	var saved ptrace.Regs
	if err := proc.getRegs(pid, &saved); err != nil {
		return 0, err
	}
	defer proc.setRegs(pid, &saved)
	b := cs.blockOf[pid]
	area := cs.ringArea(b)
	// run runs the block at addr and returns the time from its first
	// record to its last.
	run := func(addr uint64, records int) (int64, error) {
		// The records go into cache lines PROFILE has just read, as in
		// a run, where it reads each record a moment after the thread
		// wrote it.
		cal.rings.reset(b)
		var sink uint64
		for i := range records {
			sink += atomic.LoadUint64((*uint64)(unsafe.Pointer(&instr.RingSlot(area, i)[0])))
		}
		cal.rings.sink = sink
		defer cal.rings.reset(b)
		regs := cal.borrowed(saved)
		regs.SetPC(addr)
		if err := proc.setRegs(pid, &regs); err != nil {
			return 0, err
		}
		if err := proc.cont(pid, 0); err != nil {
			return 0, err
		}
		ws, err := proc.waitFor(pid, 0)
		if err != nil {
			return 0, err
		}
		if !ws.Stopped() || ws.StopSignal() != syscall.SIGTRAP {
			return 0, fmt.Errorf("program did not stop after the calibration records (%v)", ws.StopSignal())
		}
		if first, n := instr.RingUnread(cal.arch, area, ringRecords); first != 0 || n != records {
			return 0, fmt.Errorf("calibration made %d records, want %d", n, records)
		}
		first := instr.ReadRecord(instr.RingSlot(area, 0))
		last := instr.ReadRecord(instr.RingSlot(area, records-1))
		return int64(last.Time - first.Time), nil
	}
	var with, without []int64
	const rounds = 31
	for round := range rounds {
		w, err := run(cs.calibration[0], calibrating()+2)
		if err != nil {
			return 0, err
		}
		wo, err := run(cs.calibration[1], 2)
		if err != nil {
			return 0, err
		}
		if round > 0 { // the first round warms the caches
			with, without = append(with, w), append(without, wo)
		}
	}
	return max(float64(slices.Min(with)-slices.Min(without)), 0) / float64(calibrating()), nil
}

// calibrationBlocks returns the code of arch's two calibration blocks: a
// record, calibrationRecords pieces of work (instr.CalibrationWork) each
// after a record, a record and a breakpoint; the same without the
// records between; their records go to ring r.
func calibrationBlocks(arch instr.Arch, r instr.Ring) (with, without []byte) {
	// The records between are entries and exits in turn, as a call's
	// (their readings of the counter differ: instr.RecordCode); those
	// that time the blocks are exits', which wait for the work before.
	entry, _ := arch.RecordCode(r, instr.RecordTag(0, false))
	exit, _ := arch.RecordCode(r, instr.RecordTag(0, true))
	work := instr.CalibrationWork(arch)
	with, without = slices.Clone(exit.Code), slices.Clone(exit.Code)
	for i := range calibrating() {
		rc := entry
		if i%2 == 1 {
			rc = exit
		}
		with = append(append(with, rc.Code...), work...)
		without = append(without, work...)
	}
	bp := arch.Breakpoint()
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

// cpuInfoFile holds the CPUs' features (a variable for the tests).
var cpuInfoFile = "/proc/cpuinfo"

// counterWarp is PROFILE's own check of the CPUs' counters against each
// other (a variable for the tests), and warpTurns the turns it takes
// between two CPUs, in warpLimit at the most; under warpTurnsFewest it
// cannot tell.
var counterWarp = ptrace.CounterWarp

const (
	warpTurns       = 20000
	warpTurnsFewest = 1000
	warpLimit       = 200 * time.Millisecond
)

// oneClock reports whether the counter the records read is one clock
// across CPUs, on arch, for a plan with Go functions, whose goroutines
// move from CPU to CPU. Where the kernel did not take the TSC as its
// clock (a virtual machine's kernel is often told to take the
// hypervisor's, kvm-clock), PROFILE checks the counters itself, as the
// kernel would have (countersAgree), and warns once (PRF4680, through
// warn) where they are not known to agree.
func (c *counterClock) oneClock(arch instr.Arch, plan *datafile.Plan, warn func(*prf.Diagnostic)) bool {
	if c.checked {
		return c.shared
	}
	c.checked = true
	if arch.CounterOneClock() {
		c.shared = true
		return true
	}
	b, err := os.ReadFile(clockSourceFile)
	source := strings.TrimSpace(string(b))
	if err != nil {
		source = "unknown (" + clockSourceFile + " unreadable)"
	}
	c.shared = source == "tsc"
	if c.shared || !slices.ContainsFunc(plan.Funcs, func(f datafile.Func) bool { return goFrames(&f) }) {
		return c.shared
	}
	why := countersAgree()
	c.shared = why == nil
	if why != nil {
		warn(prf.CounterNotShared(source, why.Error()))
		return false
	}
	c.agreed = fmt.Sprintf("The kernel's clock source is %s, not the time stamp counter: PROFILE checked the CPUs' counters against each other itself, as the kernel checks them before it takes the TSC as its clock (%d turns between two CPUs, none behind the other's), and takes them as one clock.", source, warpTurns)
	return true
}

// countersAgree returns nil where the time-stamp counters run at a
// constant rate, in every power state (constant_tsc and nonstop_tsc: an
// invariant TSC), and CounterWarp finds no CPU's counter behind
// another's; else why they are not known to agree.
func countersAgree() error {
	info, err := os.ReadFile(cpuInfoFile)
	if err != nil {
		return fmt.Errorf("PROFILE could not read the CPUs' features: %w", err)
	}
	for _, flag := range []string{"constant_tsc", "nonstop_tsc"} {
		if !cpuFlag(info, flag) {
			return fmt.Errorf("the CPUs' counters are not known to run at one rate (%s lacks %s)", cpuInfoFile, flag)
		}
	}
	w, err := counterWarp(warpTurns, warpLimit)
	switch {
	case err != nil:
		return fmt.Errorf("PROFILE could not check the CPUs' counters: %w", err)
	case w.Back > 0:
		return fmt.Errorf("PROFILE found a CPU's counter %d counts behind another's", w.Back)
	case w.CPUs > 1 && w.Turns < warpTurnsFewest:
		return fmt.Errorf("PROFILE's check of the CPUs' counters took %d turns between two CPUs in %v, too few to tell", w.Turns, warpLimit)
	}
	return nil
}

// cpuFlag reports whether every processor of /proc/cpuinfo's text info
// has flag among its flags.
func cpuFlag(info []byte, flag string) bool {
	seen := false
	for line := range strings.Lines(string(info)) {
		name, flags, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(name) != "flags" {
			continue
		}
		if !slices.Contains(strings.Fields(flags), flag) {
			return false
		}
		seen = true
	}
	return seen
}
