// A thread's wait for another thread, timed (docs/linux.md, "Timing":
// "A wait for another thread").
//
// PROFILE takes the time it holds a thread out of that thread's clock,
// and of nobody else's: a thread that waits meanwhile for the one held (a
// join, a lock, a condition variable) waits that much longer than it
// would natively, and its clock runs on. A fork-join program whose worker
// ran 26 ms was reported waiting 950 ms for it: the worker's stops for its
// full ring, which PROFILE had taken out of the worker's time.
//
// So PROFILE watches the threads that have a profiled call open and make
// no event: every so often it reads how long each has run and waited
// for a CPU (/proc/PID/task/TID/schedstat), and, when it was neither, in
// which system call it sleeps (/proc/PID/task/TID/syscall). The time a
// thread slept in a futex between two of its events is a wait for
// another thread of the program, which one PROFILE cannot tell: it takes
// the thread it held the longest meanwhile, and takes out of the
// waiter's clock as much of that thread's holds as the waiter slept of
// the time watched. A sleep for anything else (a timer, a file, a
// socket) is the program's own, charged whole.

package profile

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/profile/books"
)

// waitEvery is how often, at least, a quiet thread's wait is read, in
// nanoseconds; with many threads, less often (clocks.waitTick). waitTick is
// how often the threads are looked at.
const (
	waitEvery = int64(100e3)
	waitTick  = int64(50e3)
)

// waits is what PROFILE keeps of the threads' waits: whether it watches
// them (a timed run, on a kernel with schedstat), the futex's system
// call numbers, when the threads were last looked at, and how often each
// is read.
type waits struct {
	on       bool
	futex    [2]int64
	lastTick int64
	every    int64
}

// waiting is what PROFILE keeps of one thread's wait: its schedstat and
// syscall files, kept open, and what it read of them since the thread's
// last event.
type waiting struct {
	stat, sys *os.File
	// sampled is set once a reading was taken since the thread's last
	// event; at is its time, run and queued the thread's time on a CPU
	// and waiting for one then, own what PROFILE had held it (heldOf).
	sampled         bool
	at, run, queued int64
	own             int64
	span, blocked   int64         // the time watched, and slept in a futex
	first, last     map[int]int64 // the others' costs at the first and the last reading (an ended thread's: at its end)
	futexCalls      [2]int64      // (a copy of waits.futex)
	scratch         []byte
}

// startWaits watches the threads' waits in a timed run (books b kept),
// where the kernel tells how long a thread ran (schedstat: the main
// thread pid's), on arch.
func (c *clocks) startWaits(timed bool, b *books.Books, pid int, arch instr.Arch) {
	if !timed || b == nil {
		return
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d/task/%d/schedstat", pid, pid)); err != nil {
		return
	}
	c.waits = waits{on: true, every: waitEvery, futex: [2]int64{
		int64(arch.SyscallNumber(instr.SysFutex)), int64(arch.SyscallNumber(instr.SysFutexWaitv))}}
}

// costOf is what PROFILE has cost thread th until now, on the clock of
// the threads that wait for it: the time it held it, the stop for a full
// ring it is in, if any, and the cost of its records booked so far, all
// of them taken out of th's own clock.
func costOf(th *thread, now int64) int64 { return heldOf(th, now) + int64(th.debt) }

// heldOf is the time PROFILE has held thread th until now, the stop for a
// full ring it is in included.
func heldOf(th *thread, now int64) int64 {
	h := th.heldTotal
	if th.fullAt != 0 && now > th.fullAt {
		h += now - th.fullAt
	}
	return h
}

// waitTick reads the waits of the threads due for it, no more often
// than waitTick: those with a call open in the books b that made no
// event since the last look (settleWait marks those that did). Each
// thread is read every waits.every at most, which grows with the number
// of threads read, so that the readings cost PROFILE a few per cent of
// its time.
func (c *clocks) waitTick(threads map[int]*thread, b *books.Books) {
	w := &c.waits
	if !w.on {
		return
	}
	now := c.clock()
	if now-w.lastTick < waitTick {
		return
	}
	w.lastTick = now
	read := 0
	for _, th := range threads {
		if th.evented {
			// (Not quiet since the last look.)
			th.evented = false
			continue
		}
		if th.foreign || (th.wait != nil && th.wait.sampled && now-th.wait.at < w.every) || !callOpen(b, th) {
			continue
		}
		if c.sampleWait(th, now, threads) {
			read++
		}
	}
	w.every = max(waitEvery, int64(read)*20e3)
}

// callOpen reports whether thread th has a profiled call open in the
// books b, whose time its waits change.
func callOpen(b *books.Books, th *thread) bool {
	return b.Open(threadLedger(th.tid))
}

// sampleWait reads thread th's wait at now, and what PROFILE cost the
// other threads; it reports whether it could.
func (c *clocks) sampleWait(th *thread, now int64, threads map[int]*thread) bool {
	w := th.wait
	if w == nil {
		w = &waiting{futexCalls: c.waits.futex, first: map[int]int64{}, last: map[int]int64{}, scratch: make([]byte, 256)}
		th.wait = w
	}
	if w.stat == nil {
		f, err := os.Open(fmt.Sprintf("/proc/%d/task/%d/schedstat", th.tgid, th.tid))
		if err != nil {
			return false
		}
		w.stat = f
	}
	run, queued, ok := w.schedstat()
	if !ok {
		return false
	}
	own := heldOf(th, now)
	if !w.sampled {
		clear(w.first)
		clear(w.last)
	} else {
		dt := now - w.at
		ran := (run - w.run) + (queued - w.queued) + (own - w.own)
		if slept := dt - ran; slept > 0 && w.inFutex(th) {
			w.blocked += slept
		}
		w.span += dt
	}
	for tid, o := range threads {
		if tid != th.tid && !o.foreign {
			c := costOf(o, now)
			if !w.sampled {
				w.first[tid] = c
			}
			w.last[tid] = c
		}
	}
	w.sampled, w.at, w.run, w.queued, w.own = true, now, run, queued, own
	return true
}

// schedstat reads the thread's time on a CPU and waiting for one, in
// nanoseconds (the first two fields of schedstat).
func (w *waiting) schedstat() (run, queued int64, ok bool) {
	n, err := w.stat.ReadAt(w.scratch, 0)
	if n == 0 && err != nil {
		return 0, 0, false
	}
	f := strings.Fields(string(w.scratch[:n]))
	if len(f) < 2 {
		return 0, 0, false
	}
	run, err1 := strconv.ParseInt(f[0], 10, 64)
	queued, err2 := strconv.ParseInt(f[1], 10, 64)
	return run, queued, err1 == nil && err2 == nil
}

// inFutex reports whether thread th sleeps in a futex: its syscall file
// names the system call it is blocked in ("running", or -1 outside of
// one, otherwise).
func (w *waiting) inFutex(th *thread) bool {
	if w.sys == nil {
		f, err := os.Open(fmt.Sprintf("/proc/%d/task/%d/syscall", th.tgid, th.tid))
		if err != nil {
			return false
		}
		w.sys = f
	}
	n, err := w.sys.ReadAt(w.scratch, 0)
	if n == 0 && err != nil {
		return false
	}
	f := strings.Fields(string(w.scratch[:n]))
	if len(f) == 0 {
		return false
	}
	nr, err := strconv.ParseInt(f[0], 10, 64)
	return err == nil && (nr == w.futexCalls[0] || nr == w.futexCalls[1])
}

// settleWait takes out of thread th's clock, before its next event is
// booked, what it waited for another thread since its last event because
// PROFILE held that one: the holds of the thread held the longest between
// its first and last readings, in the share of that time th slept in a
// futex. The readings start again.
func (c *clocks) settleWait(th *thread) {
	th.evented = true
	w := th.wait
	if w == nil || !w.sampled {
		return
	}
	if w.blocked > 0 && w.span > 0 {
		var most int64
		for tid, h := range w.last {
			most = max(most, h-w.first[tid])
		}
		charge := min(int64(float64(most)*float64(w.blocked)/float64(w.span)), w.blocked)
		if charge > 0 {
			c.stolen[threadLedger(th.tid)] += charge
		}
	}
	w.sampled, w.span, w.blocked = false, 0, 0
	clear(w.first)
	clear(w.last)
}

// waitEnded notes, for the threads whose waits are being read, what
// PROFILE cost thread th until its end: it may be the one they wait for
// (a join), and is no longer among the threads when they are read next.
func (c *clocks) waitEnded(th *thread, threads map[int]*thread) {
	if !c.waits.on || th.foreign {
		return
	}
	now := c.clock()
	for _, o := range threads {
		if w := o.wait; o != th && w != nil && w.sampled {
			w.last[th.tid] = costOf(th, now)
		}
	}
}

// closeWait closes thread th's files: it has ended.
func (th *thread) closeWait() {
	if w := th.wait; w != nil {
		for _, f := range []*os.File{w.stat, w.sys} {
			if f != nil {
				f.Close()
			}
		}
		th.wait = nil
	}
}
