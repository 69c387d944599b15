package profile

import (
	"bytes"
	"cmp"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/profile/procmaps"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// What a program can do behind PROFILE's back, and what PROFILE sees of
// it (docs/linux.md, "What PROFILE cannot see"). Nothing here costs the
// program a stop of its own: each check is made where PROFILE already
// holds a thread, and each warning comes once a run.
//
//   - On x86-64 a thread's GS base points at its counter block. A program
//     that sets its own (arch_prctl(ARCH_SET_GS), wrgsbase) has the
//     trampolines count into its own memory: seen at the thread's stops
//     and at its exit.
//   - A program that writes its own code, where PROFILE patched it, or
//     makes its code writable to do so, runs the instructions PROFILE
//     moved into trampolines and slots as they were: the patches are
//     compared with what PROFILE wrote, and the memory map is read, when
//     the program ends. A copy of patched code that runs traps or jumps
//     where no copy should: seen at the first such traps and faults.
//   - A child made with clone(CLONE_UNTRACED) is never reported to a
//     tracer: it runs with the patches of the program's memory, which it
//     copied. Seen when its SIGCHLD reaches the program.
//   - Every signal is a stop: a program that takes thousands a second
//     runs much slower than natively. Said at the end, when the stops
//     took a good part of the run.

// copyLooks is how many unknown traps and faults of a run are examined
// for copies of patched code: each look reads memory at every patch.
const copyLooks = 8

// signalShare is the share of the run its signals' stops may take before
// PROFILE says what they cost; signalFloor the fewest signals it says it
// of.
const (
	signalShare = 0.05
	signalFloor = 1000
)

// watch is the tracer's part that checks what the program does behind
// PROFILE's back, and keeps what the checks find. It holds no tracer: a
// check is given what it reads of the run (watchEnv, or the one value it
// needs).
type watch struct {
	// said holds the PRF numbers warned about: each warning comes once.
	said map[int]bool
	// ended is set once the checks of the program's end have run, which
	// took checked.
	ended   bool
	checked time.Duration
	// written are the bytes PROFILE wrote into the program's code over
	// its instructions: entry and exit jumps, and hops.
	written []written
	// looks counts the looks for copies of patched code.
	looks int
	// children are the processes PROFILE was told of: a SIGCHLD from
	// another is from a child it never saw.
	children map[int]bool
	// signals counts the signals the program received; stop is the
	// least time from a thread's release to a signal's stop in it, at
	// most what the kernel's part of a signal's stop costs (the
	// program's work between two signals adds to it); held is the time
	// PROFILE held the threads at those stops, from each stop seen to
	// the thread let go. Both are the run's own: a machine busy with
	// other work makes the run, and the holds, longer alike.
	signals int
	stop    int64
	held    int64
}

// watchEnv is what the watch's checks of the program's code read of the
// run: where warnings go (warn), the plan, the program's architecture and
// memory, and the sites of PROFILE's breakpoints, by address.
type watchEnv struct {
	warn  func(*prf.Diagnostic)
	plan  *datafile.Plan
	arch  instr.Arch
	mem   instr.Memory
	sites map[uint64]*site
}

// watchEnv is what the watch's checks read of t's run.
func (t *tracer) watchEnv() watchEnv {
	e := watchEnv{warn: t.cfg.Warn, plan: t.plan, arch: t.arch, mem: t.mem}
	if t.parts.bp != nil {
		e.sites = t.parts.bp.sites
	}
	return e
}

// signalGap notes the time from a thread's release to its next stop, for
// a signal.
func (w *watch) signalGap(d int64) {
	if d > 0 && (w.stop == 0 || d < w.stop) {
		w.stop = d
	}
}

// written is code PROFILE wrote over the program's instructions in
// module mi, loaded with bias.
type written struct {
	span
	mi   int
	bias uint64
}

// wrote records code written over the instructions of module mi, loaded
// with bias.
func (w *watch) wrote(mi int, bias uint64, code []span) {
	for _, c := range code {
		w.written = append(w.written, written{c, mi, bias})
	}
}

// funcAt names the function of plan's module mi, loaded with bias, whose
// code holds addr, or "".
func funcAt(plan *datafile.Plan, mi int, bias, addr uint64) string {
	for _, f := range plan.Funcs {
		if f.Module == mi && addr >= f.Low+bias && addr < f.High+bias {
			return "function " + f.Name
		}
	}
	return ""
}

// warnOnce warns d with warn unless a warning of its number was given
// already.
func (w *watch) warnOnce(warn func(*prf.Diagnostic), d *prf.Diagnostic) {
	if w.said == nil {
		w.said = map[int]bool{}
	}
	if w.said[d.Code] {
		return
	}
	w.said[d.Code] = true
	warn(d)
}

// threadExit handles the exit stop of a thread (PTRACE_O_TRACEEXIT): its
// registers and the program's memory are still there. When every thread
// of the program is exiting, the program's end is checked (the loop's:
// the watch checks, endCheck).
func (t *tracer) threadExit(th *thread) error {
	th.exiting = true
	t.told.note(threadExitingEvent{})
	t.parts.threadExiting(th)
	if t.parts.sampling != nil && !th.foreign && th.tgid == t.pid {
		t.parts.sampling.noteTimes(t.pid)
	}
	if !th.foreign && th.tgid == t.pid {
		if err := t.proc.getRegs(th.tid, &t.regs); err == nil {
			t.parts.watch.checkThreadBase(t.parts.counters, th, &t.regs, t.cfg.Warn)
		}
		if !t.parts.watch.ended && allExiting(t.threads, t.pid) {
			t.parts.watch.endCheck(t.watchEnv(), t.readMaps)
			if t.parts.sampling != nil {
				t.parts.sampling.lastMap()
			}
		}
	}
	return t.resume(th.tid, 0)
}

// allExiting reports whether every thread of program pid (of threads)
// has reached its exit stop.
func allExiting(threads map[int]*thread, pid int) bool {
	for _, th := range threads {
		if th.tgid == pid && !th.foreign && !th.exiting {
			return false
		}
	}
	return true
}

// endCheck checks the program's code at its end (checkCode), once, and
// notes how long it took (checked); readMaps reads its memory map.
func (w *watch) endCheck(e watchEnv, readMaps func() ([]procmaps.Mapping, error)) {
	w.ended = true
	start := time.Now()
	w.checkCode(e, readMaps)
	w.checked = time.Since(start)
}

// checkThreadBase warns (warn) when thread th, whose registers are regs,
// has a GS base that is not the counter block PROFILE gave it in c
// (x86-64).
func (w *watch) checkThreadBase(c *counters, th *thread, regs *ptrace.Regs, warn func(*prf.Diagnostic)) {
	if c == nil || !c.layout.PerThread() || th.foreign {
		return
	}
	base := regs.ThreadBase()
	if c.holds(base) {
		return
	}
	w.warnOnce(warn, prf.ThreadBaseChanged(th.tid, base))
}

// itemName names item, a function or a line of plan, or "" for -1.
func itemName(plan *datafile.Plan, item int) string {
	switch {
	case item < 0 || item >= plan.NumItems():
		return ""
	case plan.Method.IsFunction():
		return "function " + plan.Funcs[item].Name
	}
	l := &plan.Lines[item]
	m := &plan.Modules[l.Module]
	file := "?"
	if l.File >= 0 && l.File < len(m.Files) {
		file = m.Files[l.File]
	}
	return "line " + strconv.Itoa(l.Line) + " of " + file
}

// checkCode compares the program's code with what PROFILE wrote there,
// and reads its memory map for code made writable: a program that wrote
// its own code where PROFILE had moved the instructions ran them as they
// were (docs/linux.md). What PROFILE wrote: the jumps and hops over
// instructions, the breakpoints, and after a line's breakpoint the rest of
// the code PROFILE read there (up to the next site), which holds the rest
// of the instruction that runs from a slot. readMaps reads the memory map.
func (w *watch) checkCode(e watchEnv, readMaps func() ([]procmaps.Mapping, error)) {
	written := slices.SortedFunc(slices.Values(w.written), func(a, b written) int { return cmp.Compare(a.addr, b.addr) })
	readPlaces(e.mem, len(written), func(i int) (uint64, int) { return written[i].addr, len(written[i].b) },
		func(i int, got []byte) bool {
			x := &written[i]
			if bytes.Equal(got, x.b) {
				return true
			}
			w.warnOnce(e.warn, prf.CodeChanged(x.addr, funcAt(e.plan, x.mi, x.bias, x.addr)))
			return false
		})
	addrs := slices.Sorted(maps.Keys(e.sites))
	bp := e.arch.Breakpoint()
	sites, sizes := make([]*site, len(addrs)), make([]int, len(addrs))
	for i, a := range addrs {
		sites[i] = e.sites[a]
		end := a + uint64(max(len(sites[i].code), len(bp)))
		if i+1 < len(addrs) {
			end = min(end, addrs[i+1])
		}
		// (Nor past the jumps written after it: a line's next site may
		// have taken one.)
		if k := sort.Search(len(written), func(k int) bool { return written[k].addr > a }); k < len(written) {
			end = min(end, max(written[k].addr, a+uint64(len(bp))))
		}
		sizes[i] = int(end - a)
	}
	readPlaces(e.mem, len(addrs), func(i int) (uint64, int) { return addrs[i], sizes[i] }, func(i int, got []byte) bool {
		s := sites[i]
		if bytes.Equal(got[:len(bp)], bp) && (len(got) == len(bp) || bytes.Equal(got[len(bp):], s.code[len(bp):len(got)])) {
			return true
		}
		w.warnOnce(e.warn, prf.CodeChanged(s.addr, itemName(e.plan, s.item)))
		return false
	})
	at := make([]uint64, 0, len(written)+len(addrs))
	for _, x := range written {
		at = append(at, x.addr)
	}
	at = append(at, addrs...)
	slices.Sort(at)
	w.checkWritable(at, readMaps, e.warn)
}

// readPlaces reads the program's code, in mem, at n places, sorted by address
// (place gives each's address and size), in one read for the places
// within a page of each other (120,000 lines' sites: some tens of
// milliseconds), and calls check with each place's bytes until it
// returns false. Places that cannot be read are passed over.
func readPlaces(mem instr.Memory, n int, place func(int) (uint64, int), check func(int, []byte) bool) {
	var buf []byte
	for k := 0; k < n; {
		lo, size := place(k)
		hi := lo + uint64(size)
		j := k + 1
		for ; j < n; j++ {
			a, size := place(j)
			if a >= hi+4096 {
				break
			}
			hi = max(hi, a+uint64(size))
		}
		buf = slices.Grow(buf[:0], int(hi-lo))[:hi-lo]
		if mem.ReadMem(lo, buf) == nil {
			for m := k; m < j; m++ {
				a, size := place(m)
				if !check(m, buf[a-lo:a-lo+uint64(size)]) {
					return
				}
			}
		}
		k = j
	}
}

// checkWritable warns (warn) when a mapping of code PROFILE patched (at,
// sorted) is writable in the memory map readMaps reads: the program made
// its own code writable (mprotect), to change it.
func (w *watch) checkWritable(at []uint64, readMaps func() ([]procmaps.Mapping, error), warn func(*prf.Diagnostic)) {
	maps, err := readMaps()
	if err != nil {
		return
	}
	for _, m := range maps {
		if !strings.Contains(m.Perms, "w") || m.Inode == 0 {
			continue
		}
		i, _ := slices.BinarySearch(at, m.Start)
		if i < len(at) && at[i] < m.End {
			w.warnOnce(warn, prf.CodeWritable(m.Path, m.Start))
			return
		}
	}
}

// copyOfBreakpoint looks, at a trap PROFILE did not plant at addr, for a
// copy of a breakpoint's code: the program copied code PROFILE had
// planted a breakpoint in, and ran the copy.
func (w *watch) copyOfBreakpoint(addr uint64, e watchEnv) {
	if w.looks >= copyLooks || len(e.sites) == 0 {
		return
	}
	w.looks++
	const window = 16
	here := make([]byte, window)
	if e.mem.ReadMem(addr, here) != nil {
		return
	}
	for _, s := range e.sites {
		there := make([]byte, window)
		if s.addr != addr && e.mem.ReadMem(s.addr, there) == nil && bytes.Equal(here, there) {
			w.warnOnce(e.warn, prf.CodeCopied(addr, s.addr, itemName(e.plan, s.item)))
			return
		}
	}
}

// copyOfJump looks, at a fault at pc in no code PROFILE knows, for a
// copy of a jump it wrote: a copy at c of a jump from a to b lands at c +
// (b - a), where nothing is.
func (w *watch) copyOfJump(pc uint64, e watchEnv) {
	if w.looks >= copyLooks || len(w.written) == 0 {
		return
	}
	w.looks++
	for _, x := range w.written {
		in, err := e.arch.Decode(x.b, x.addr)
		if err != nil || in.Target == 0 {
			continue
		}
		c := pc - (in.Target - x.addr)
		if c == x.addr {
			continue
		}
		there := make([]byte, len(x.b))
		if e.mem.ReadMem(c, there) == nil && bytes.Equal(there, x.b) {
			w.warnOnce(e.warn, prf.CodeCopied(c, x.addr, funcAt(e.plan, x.mi, x.bias, x.addr)))
			return
		}
	}
}

// childSignal checks a SIGCHLD the program receives: from a child
// PROFILE was never told of, made with clone(CLONE_UNTRACED), which ran
// with PROFILE's patches. Only a SIGCHLD the kernel sent for a child's
// change of state (si_code CLD_EXITED and the others, above 0) names a
// child: one sent by kill, tgkill or sigqueue (si_code 0 or below: the
// program's own, or PROFILE's own of a signal it held back, eintr.go)
// names its sender. th is stopped for it in proc; warn says it.
func (w *watch) childSignal(proc process, th *thread, warn func(*prf.Diagnostic)) {
	info, err := proc.sigInfo(th.tid)
	if err != nil || info.Signo != int32(syscall.SIGCHLD) || info.Code <= 0 || w.children[int(info.Pid)] {
		return
	}
	const cldKilled, cldDumped = 2, 3 // si_code of a child killed by a signal
	how := ""
	if info.Code == cldKilled || info.Code == cldDumped {
		how = describeSignal(syscall.Signal(info.Status))
	}
	w.warnOnce(warn, prf.UntracedChild(int(info.Pid), how))
}

// childMade notes the child the program made (childHook).
func (w *watch) childMade(pid int) { w.noteChild(pid) }

// execed forgets the jumps written: gone with the image (execHook).
func (w *watch) execed() { w.written = nil }

// noteChild records a process PROFILE was told of.
func (w *watch) noteChild(pid int) {
	if w.children == nil {
		w.children = map[int]bool{}
	}
	w.children[pid] = true
}

// signalCost says (warn), at the end of a run, what the program's
// signals cost it, when there were many and their stops took a good part
// of the run.
func (w *watch) signalCost(elapsed time.Duration, warn func(*prf.Diagnostic)) {
	n, stop := w.signals, time.Duration(w.stop)
	if n < signalFloor || elapsed <= 0 || stop <= 0 {
		return
	}
	cost := stop + time.Duration(w.held/int64(n))
	if share := float64(n) * float64(cost) / float64(elapsed); share >= signalShare {
		warn(prf.SignalStops(n, float64(n)/elapsed.Seconds(), cost, min(share, 1)))
	}
}
