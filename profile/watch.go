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

	"github.com/sourceprofiler/sprof/internal/prf"
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

// watch is what the checks keep.
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
func (t *tracer) wrote(mi int, bias uint64, code []span) {
	for _, c := range code {
		t.watch.written = append(t.watch.written, written{c, mi, bias})
	}
}

// funcAt names the function of module mi, loaded with bias, whose code
// holds addr, or "".
func (t *tracer) funcAt(mi int, bias, addr uint64) string {
	for _, f := range t.plan.Funcs {
		if f.Module == mi && addr >= f.Low+bias && addr < f.High+bias {
			return "function " + f.Name
		}
	}
	return ""
}

// warnOnce warns d unless a warning of its number was given already.
func (t *tracer) warnOnce(d *prf.Diagnostic) {
	if t.watch.said == nil {
		t.watch.said = map[int]bool{}
	}
	if t.watch.said[d.Code] {
		return
	}
	t.watch.said[d.Code] = true
	t.cfg.Warn(d)
}

// threadExit handles the exit stop of a thread (PTRACE_O_TRACEEXIT): its
// registers and the program's memory are still there. When every thread
// of the program is exiting, the program's end is checked.
func (t *tracer) threadExit(th *thread) error {
	th.exiting = true
	t.explain.threadExiting()
	if t.sampling != nil && !th.foreign && th.tgid == t.pid {
		t.sampling.noteTimes(t.pid)
	}
	if !th.foreign && th.tgid == t.pid {
		if err := t.proc.getRegs(th.tid, &t.regs); err == nil {
			t.checkThreadBase(th, &t.regs)
		}
		if !t.watch.ended && t.allExiting() {
			t.watch.ended = true
			start := time.Now()
			t.checkCode()
			t.watch.checked = time.Since(start)
		}
	}
	return t.resume(th.tid, 0)
}

// allExiting reports whether every thread of the program has reached its
// exit stop.
func (t *tracer) allExiting() bool {
	for _, th := range t.threads {
		if th.tgid == t.pid && !th.foreign && !th.exiting {
			return false
		}
	}
	return true
}

// checkThreadBase warns when thread th, whose registers are regs, has a
// GS base that is not the counter block PROFILE gave it (x86-64).
func (t *tracer) checkThreadBase(th *thread, regs *ptrace.Regs) {
	c := t.counters
	if c == nil || !c.layout.perThread() || th.foreign {
		return
	}
	base := regs.ThreadBase()
	if c.holds(base) {
		return
	}
	t.warnOnce(prf.ThreadBaseChanged(th.tid, base))
}

// itemName names item, a function or a line of the plan, or "" for -1.
func (t *tracer) itemName(item int) string {
	switch {
	case item < 0 || item >= t.plan.NumItems():
		return ""
	case t.plan.Method.IsFunction():
		return "function " + t.plan.Funcs[item].Name
	}
	l := &t.plan.Lines[item]
	m := &t.plan.Modules[l.Module]
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
// of the instruction that runs from a slot.
func (t *tracer) checkCode() {
	written := slices.SortedFunc(slices.Values(t.watch.written), func(a, b written) int { return cmp.Compare(a.addr, b.addr) })
	t.readPlaces(len(written), func(i int) (uint64, int) { return written[i].addr, len(written[i].b) },
		func(i int, got []byte) bool {
			w := &written[i]
			if bytes.Equal(got, w.b) {
				return true
			}
			t.warnOnce(prf.CodeChanged(w.addr, t.funcAt(w.mi, w.bias, w.addr)))
			return false
		})
	addrs := slices.Sorted(maps.Keys(t.bp.sites))
	bp := t.arch.Breakpoint()
	sites, sizes := make([]*site, len(addrs)), make([]int, len(addrs))
	for i, a := range addrs {
		sites[i] = t.bp.sites[a]
		end := a + uint64(max(len(sites[i].code), len(bp)))
		if i+1 < len(addrs) {
			end = min(end, addrs[i+1])
		}
		// (Nor past the jumps written after it: a line's next site may
		// have taken one.)
		if w := sort.Search(len(written), func(w int) bool { return written[w].addr > a }); w < len(written) {
			end = min(end, max(written[w].addr, a+uint64(len(bp))))
		}
		sizes[i] = int(end - a)
	}
	t.readPlaces(len(addrs), func(i int) (uint64, int) { return addrs[i], sizes[i] }, func(i int, got []byte) bool {
		s := sites[i]
		if bytes.Equal(got[:len(bp)], bp) && (len(got) == len(bp) || bytes.Equal(got[len(bp):], s.code[len(bp):len(got)])) {
			return true
		}
		t.warnOnce(prf.CodeChanged(s.addr, t.itemName(s.item)))
		return false
	})
	at := make([]uint64, 0, len(written)+len(addrs))
	for _, w := range written {
		at = append(at, w.addr)
	}
	at = append(at, addrs...)
	slices.Sort(at)
	t.checkWritable(at)
}

// readPlaces reads the program's code at n places, sorted by address
// (place gives each's address and size), in one read for the places
// within a page of each other (120,000 lines' sites: some tens of
// milliseconds), and calls check with each place's bytes until it
// returns false. Places that cannot be read are passed over.
func (t *tracer) readPlaces(n int, place func(int) (uint64, int), check func(int, []byte) bool) {
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
		if t.mem.ReadMem(lo, buf) == nil {
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

// checkWritable warns when a mapping of code PROFILE patched (at, sorted)
// is writable: the program made its own code writable (mprotect), to
// change it.
func (t *tracer) checkWritable(at []uint64) {
	maps, err := t.readMaps()
	if err != nil {
		return
	}
	for _, m := range maps {
		if !strings.Contains(m.Perms, "w") || m.Inode == 0 {
			continue
		}
		i, _ := slices.BinarySearch(at, m.Start)
		if i < len(at) && at[i] < m.End {
			t.warnOnce(prf.CodeWritable(m.Path, m.Start))
			return
		}
	}
}

// copyOfBreakpoint looks, at a trap PROFILE did not plant at addr, for a
// copy of a breakpoint's code: the program copied code PROFILE had
// planted a breakpoint in, and ran the copy.
func (t *tracer) copyOfBreakpoint(addr uint64) {
	if t.watch.looks >= copyLooks || len(t.bp.sites) == 0 {
		return
	}
	t.watch.looks++
	const window = 16
	here := make([]byte, window)
	if t.mem.ReadMem(addr, here) != nil {
		return
	}
	for _, s := range t.bp.sites {
		there := make([]byte, window)
		if s.addr != addr && t.mem.ReadMem(s.addr, there) == nil && bytes.Equal(here, there) {
			t.warnOnce(prf.CodeCopied(addr, s.addr, t.itemName(s.item)))
			return
		}
	}
}

// copyOfJump looks, at a fault at pc in no code PROFILE knows, for a
// copy of a jump it wrote: a copy at c of a jump from a to b lands at c +
// (b - a), where nothing is.
func (t *tracer) copyOfJump(pc uint64) {
	if t.watch.looks >= copyLooks || len(t.watch.written) == 0 {
		return
	}
	t.watch.looks++
	for _, w := range t.watch.written {
		in, err := t.arch.Decode(w.b, w.addr)
		if err != nil || in.Target == 0 {
			continue
		}
		c := pc - (in.Target - w.addr)
		if c == w.addr {
			continue
		}
		there := make([]byte, len(w.b))
		if t.mem.ReadMem(c, there) == nil && bytes.Equal(there, w.b) {
			t.warnOnce(prf.CodeCopied(c, w.addr, t.funcAt(w.mi, w.bias, w.addr)))
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
// names its sender.
func (t *tracer) childSignal(th *thread) {
	info, err := t.proc.sigInfo(th.tid)
	if err != nil || info.Signo != int32(syscall.SIGCHLD) || info.Code <= 0 || t.watch.children[int(info.Pid)] {
		return
	}
	const cldKilled, cldDumped = 2, 3 // si_code of a child killed by a signal
	how := ""
	if info.Code == cldKilled || info.Code == cldDumped {
		how = describeSignal(syscall.Signal(info.Status))
	}
	t.warnOnce(prf.UntracedChild(int(info.Pid), how))
}

// noteChild records a process PROFILE was told of.
func (t *tracer) noteChild(pid int) {
	if t.watch.children == nil {
		t.watch.children = map[int]bool{}
	}
	t.watch.children[pid] = true
}

// signalCost says, at the end of a run, what the program's signals cost
// it, when there were many and their stops took a good part of the run.
func (t *tracer) signalCost(elapsed time.Duration) {
	n, stop := t.watch.signals, time.Duration(t.watch.stop)
	if n < signalFloor || elapsed <= 0 || stop <= 0 {
		return
	}
	cost := stop + time.Duration(t.watch.held/int64(n))
	if share := float64(n) * float64(cost) / float64(elapsed); share >= signalShare {
		t.cfg.Warn(prf.SignalStops(n, float64(n)/elapsed.Seconds(), cost, min(share, 1)))
	}
}
