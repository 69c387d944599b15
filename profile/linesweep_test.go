package profile

import (
	"bytes"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// The sweeps of line coverage (linesweep.go, linesweep_hold.go), over
// the lines' environment alone (lineRig) and through the tracer's loop
// over a fake process.

// windowAt is where sweepRig puts a coverage jump of its own, over five
// nops of lineCode: a patch a thread may be stopped inside of, after its
// first byte.
const windowAt = pieAt + 0x40

// nops5 are the bytes at windowAt, as the program has them.
var nops5 = bytes.Repeat([]byte{0x90}, 5)

// sweepRig is newLineRig's coverage of leafCode with threads 100, 101...,
// and a second coverage jump at windowAt, over five bytes, that counts
// into the entry's counter.
func sweepRig(t *testing.T, threads int) *lineRig {
	t.Helper()
	r := newLineRig(t, datafile.LineCoverage, false, threads)
	copy(r.mem.b[windowAt-pieAt:], []byte{0xe9, 0x11, 0x22, 0x33, 0x44})
	k := r.lt.index.at(0, leafAt)
	r.lt.sweep.add(&tramp{patch: instr.Patch{Site: windowAt, Orig: slices.Clone(nops5)}}, []int{k}, nil)
	r.lt.sweep.clock = stoppedClock()
	if len(r.lt.sweep.live) != 2 || !r.jumped(pieAt) {
		t.Fatalf("%d coverage jumps, code % x; want the entry's and the window's", len(r.lt.sweep.live), r.mem.b[:5])
	}
	return r
}

// stoppedClock is a clock that does not move: a test as slow as a busy
// machine makes it gives no thread up, and asks none again.
func stoppedClock() func() time.Time {
	at := time.Now()
	return func() time.Time { return at }
}

// jumped reports whether the code at addr is a jump (e9), not the
// program's own.
func (r *lineRig) jumped(addr uint64) bool { return r.mem.b[addr-pieAt] == 0xe9 }

// out reports whether both of sweepRig's jumps are out, the program's
// bytes back.
func (r *lineRig) out() bool {
	return bytes.Equal(r.mem.b[:len(leafCode)], leafCode) && bytes.Equal(r.mem.b[windowAt-pieAt:windowAt-pieAt+5], nops5)
}

// idle is sweepIdle, its gap since the last look past.
func (r *lineRig) idle() bool {
	r.lt.sweep.looked = time.Time{}
	return r.lt.sweepIdle()
}

// stop is thread tid's interrupt's stop, as the loop takes it: the
// interrupt noted, the thread held, the stop handled. It reports whether
// the thread was held.
func (r *lineRig) stop(tid int) bool {
	th := r.lt.env.threads[tid]
	r.lt.interrupted(th)
	held := r.lt.holds(th)
	r.lt.stopHandled(tid)
	return held
}

// TestLineSweepNow: the writing back itself, every thread stopped. No
// line covered, nothing changes, nor where a vfork child alone covered
// it (its counts are not the run's); covered, the entry's jump goes, its
// bytes back and no longer checked at the end, and the window's stays
// while a thread is stopped inside it, after its first byte; a thread at
// its first byte keeps nothing.
func TestLineSweepNow(t *testing.T) {
	r := sweepRig(t, 1)
	lt := r.lt
	if n := lt.sweepNow(nil); n != 0 || !r.jumped(pieAt) || !r.jumped(windowAt) {
		t.Fatalf("nothing covered: %d taken out", n)
	}
	r.cover(leafAt)
	c, k := lt.env.counters, lt.index.at(0, leafAt)
	c.discount = make([]uint64, k+1)
	c.discount[k] = 1
	if n := lt.sweepNow(nil); n != 0 || !r.jumped(pieAt) {
		t.Fatalf("covered by a vfork child alone: %d taken out", n)
	}
	c.discount = nil
	if n := lt.sweepNow([]uint64{windowAt + 2, pieAt + 0x80}); n != 1 || r.jumped(pieAt) || !r.jumped(windowAt) {
		t.Errorf("a thread inside the window: %d taken out, code % x, window % x; want the entry's alone", n, r.mem.b[:5], r.mem.b[windowAt-pieAt:][:5])
	}
	if len(lt.env.watch.written) != 0 || lt.sweep.swept != 1 {
		t.Errorf("%d jumps checked at the end, %d swept; want none checked, 1 swept", len(lt.env.watch.written), lt.sweep.swept)
	}
	if n := lt.sweepNow([]uint64{windowAt}); n != 1 || !r.out() || len(lt.sweep.live) != 0 {
		t.Errorf("a thread at the window's first byte: %d taken out, %d live, window % x; want it out", n, len(lt.sweep.live), r.mem.b[windowAt-pieAt:][:5])
	}
}

// TestLineSweepThreads: a sweep of a program of three threads, over the
// lines' environment and a fake process. Nothing covered, or within
// sweepGap of the last look, nothing is asked; covered, every thread is
// interrupted, each held at its interrupt's stop, the jumps kept until
// the last has stopped, then written back and every thread let go, the
// main thread first. What may come on the way: a thread born, a thread
// at its exit (every thread there, no sweep begins), a group stop, an
// interrupt's stop taken by another wait, a thread slow to stop
// (interrupted again after sweepAsk), a vfork child, a thread that never
// stops (the sweep given up after sweepLimit), a thread inside a jump.
func TestLineSweepThreads(t *testing.T) {
	interrupts := []string{"interrupt 100", "interrupt 101", "interrupt 102"}
	conts := func(tids ...int) []string {
		var out []string
		for _, tid := range tids {
			out = append(out, fmt.Sprintf("cont %d 0", tid))
		}
		return out
	}
	begin := func(t *testing.T) *lineRig {
		t.Helper()
		r := sweepRig(t, 3)
		if r.idle() || len(r.fp.acts()) != 0 {
			t.Fatalf("nothing covered: a sweep begun (%q)", r.fp.acts())
		}
		r.cover(leafAt)
		r.lt.sweep.looked = r.lt.sweep.now()
		if r.lt.sweepIdle() || len(r.fp.acts()) != 0 {
			t.Fatalf("within sweepGap of the last look: a sweep begun (%q)", r.fp.acts())
		}
		if !r.idle() || r.lt.sweep.hold == nil || !slices.Equal(r.fp.acts(), interrupts) {
			t.Fatalf("covered: requests %q; want every thread interrupted", r.fp.acts())
		}
		return r
	}
	// check compares the jumps out, the sweep under way and the requests
	// made with what they should be.
	check := func(t *testing.T, r *lineRig, out, underway bool, acts ...string) {
		t.Helper()
		if r.out() != out || (r.lt.sweep.hold != nil) != underway || !slices.Equal(r.fp.acts(), acts) {
			t.Errorf("jumps out %v, sweep under way %v, requests %q; want %v, %v, %q", r.out(), r.lt.sweep.hold != nil, r.fp.acts(), out, underway, acts)
		}
	}
	t.Run("all stopped", func(t *testing.T) {
		r := begin(t)
		r.lt.env.threads[101].tgid = 101 // (the main thread: let go first)
		for _, tid := range []int{102, 100} {
			if !r.stop(tid) || !r.jumped(pieAt) {
				t.Fatalf("thread %d stopped: not held, or the jump out before every thread stopped", tid)
			}
		}
		check(t, r, false, true, interrupts...)
		if r.idle() || len(r.fp.acts()) != 3 {
			t.Errorf("a look while the sweep waits: requests %q", r.fp.acts())
		}
		r.stop(101)
		check(t, r, true, false, slices.Concat(interrupts, conts(101, 100, 102))...)
		if r.lt.sweep.sweeps != 1 || r.lt.sweep.swept != 2 || len(r.lt.sweep.live) != 0 {
			t.Errorf("%d sweeps, %d swept, %d live; want 1, 2, 0", r.lt.sweep.sweeps, r.lt.sweep.swept, len(r.lt.sweep.live))
		}
		if r.idle() || len(r.fp.acts()) != 6 {
			t.Errorf("nothing left: requests %q", r.fp.acts())
		}
	})
	t.Run("a thread born", func(t *testing.T) {
		r := begin(t)
		r.lt.env.threads[103] = &thread{tid: 103}
		r.stop(100)
		r.stop(101)
		r.stop(102)
		check(t, r, false, true, append(slices.Clone(interrupts), "interrupt 103")...)
		r.stop(103)
		check(t, r, true, false, slices.Concat(interrupts, []string{"interrupt 103"}, conts(100, 101, 102, 103))...)
	})
	t.Run("a thread at its exit", func(t *testing.T) {
		r := begin(t)
		r.lt.env.threads[102].exiting = true
		r.stop(100)
		r.stop(101)
		check(t, r, true, false, slices.Concat(interrupts, conts(100, 101))...)
	})
	t.Run("the program ending", func(t *testing.T) {
		r := sweepRig(t, 3)
		r.cover(leafAt)
		for _, th := range r.lt.env.threads {
			th.exiting = true
		}
		if r.idle() || r.lt.sweep.hold != nil || len(r.fp.acts()) != 0 {
			t.Errorf("every thread at its exit stop: a sweep begun (%q)", r.fp.acts())
		}
	})
	t.Run("a group stop", func(t *testing.T) {
		r := begin(t)
		r.lt.parked(102)
		r.lt.stopSeen(r.lt.env.threads[102]) // (its next stop: it goes on, and is asked again)
		r.stop(100)
		r.stop(101)
		again := append(slices.Clone(interrupts), "interrupt 102")
		check(t, r, false, true, again...)
		r.lt.parked(102) // (stopped again: left listening)
		r.lt.stopHandled(102)
		check(t, r, true, false, slices.Concat(again, conts(100, 101))...)
	})
	t.Run("an interrupt's stop taken elsewhere", func(t *testing.T) {
		r := begin(t)
		r.lt.interrupted(r.lt.env.threads[101]) // (deliverOutside, stepping it)
		r.stop(100)
		check(t, r, false, true, append(slices.Clone(interrupts), "interrupt 101")...)
	})
	t.Run("a thread slow to stop", func(t *testing.T) {
		r := begin(t)
		r.stop(100)
		r.stop(101)
		later := r.lt.sweep.now().Add(sweepAsk + time.Millisecond)
		r.lt.sweep.clock = func() time.Time { return later }
		r.lt.sweepIdle()
		check(t, r, false, true, append(slices.Clone(interrupts), "interrupt 102")...)
		r.stop(102)
		check(t, r, true, false, slices.Concat(interrupts, []string{"interrupt 102"}, conts(100, 101, 102))...)
	})
	t.Run("a vfork child", func(t *testing.T) {
		r := begin(t)
		r.stop(100)
		r.lt.env.threads[200] = &thread{tid: 200, foreign: true}
		r.stop(101)
		check(t, r, false, false, slices.Concat(interrupts, conts(100, 101))...)
		if r.idle() || len(r.fp.acts()) != 5 {
			t.Errorf("a vfork child: a sweep begun (%q)", r.fp.acts())
		}
	})
	t.Run("a thread that does not stop", func(t *testing.T) {
		r := begin(t)
		r.stop(100)
		r.stop(101)
		r.lt.sweep.hold.began = r.lt.sweep.now().Add(-2 * sweepLimit)
		r.lt.sweepIdle()
		check(t, r, false, false, slices.Concat(interrupts, conts(100, 101))...)
		if r.lt.sweep.gaveUp != 1 || r.lt.sweepIdle() {
			t.Errorf("given up %d times; a look right after began a sweep: %v", r.lt.sweep.gaveUp, r.lt.sweep.hold != nil)
		}
	})
	t.Run("a thread inside a jump", func(t *testing.T) {
		r := begin(t)
		r.fp.reg(101).SetPC(windowAt + 1)
		r.stop(100)
		r.stop(101)
		r.stop(102)
		if r.jumped(pieAt) || !r.jumped(windowAt) || len(r.lt.sweep.live) != 1 {
			t.Fatalf("a thread inside the window's jump: code % x, window % x; want the entry's jump alone out", r.mem.b[:5], r.mem.b[windowAt-pieAt:][:5])
		}
		r.fp.reg(101).SetPC(windowAt + 5) // (past it: its trampoline returned)
		if !r.idle() {
			t.Fatal("the window's jump covered: no sweep begun")
		}
		r.stop(100)
		r.stop(101)
		r.stop(102)
		if !r.out() {
			t.Errorf("the next sweep: window % x, want its bytes back", r.mem.b[windowAt-pieAt:][:5])
		}
	})
}

// TestSweepGap: a program of n threads is looked at n times less often
// than one of one thread, up to sweepGapMost, and each look that finds
// nothing covered doubles the gap to the next, up to sweepGapMost,
// until one finds something; with no jump live,
// PROFILE does not look, and with a sweep under way it polls, yielding.
func TestSweepGap(t *testing.T) {
	for n, want := range map[int]time.Duration{0: sweepEvery, 1: sweepEvery, 4: 4 * sweepEvery, 1000: sweepGapMost} {
		if got := sweepGap(n); got != want {
			t.Errorf("sweepGap(%d) = %v, want %v", n, got, want)
		}
	}
	r := sweepRig(t, 2)
	for range 3 {
		r.idle() // (nothing covered)
	}
	if got := r.lt.sweep.gap(2); r.lt.sweep.quiet != 3 || got != 8*sweepGap(2) {
		t.Errorf("after 3 looks that found nothing: %d quiet, gap %v; want 3, %v", r.lt.sweep.quiet, got, 8*sweepGap(2))
	}
	if now, every, yields := r.lt.waiting(); !now || every != 8*sweepGap(2)/5 || yields {
		t.Errorf("jumps live, 3 looks quiet: waiting %v every %v yielding %v; want every %v, not yielding", now, every, yields, 8*sweepGap(2)/5)
	}
	r.lt.sweep.quiet = 100
	if got := r.lt.sweep.gap(2); got != sweepGapMost {
		t.Errorf("after 100 looks that found nothing: gap %v, want %v", got, sweepGapMost)
	}
	r.cover(leafAt)
	if !r.idle() || r.lt.sweep.quiet != 0 {
		t.Fatalf("covered: a sweep begun %v, %d quiet; want one, none", r.lt.sweep.hold != nil, r.lt.sweep.quiet)
	}
	r.lt.sweep.hold = nil
	if now, every, yields := r.lt.waiting(); !now || every != sweepGap(2)/5 || yields {
		t.Errorf("jumps live: waiting %v every %v yielding %v; want every %v, not yielding", now, every, yields, sweepGap(2)/5)
	}
	r.lt.sweep.hold = &sweepHold{}
	if now, _, yields := r.lt.waiting(); !now || !yields {
		t.Errorf("a sweep under way: waiting %v yielding %v; want both", now, yields)
	}
	r.lt.execed()
	if now, _, _ := r.lt.waiting(); now || r.lt.sweep.hold != nil {
		t.Errorf("after an exec: waiting %v, sweep under way %v; want neither", now, r.lt.sweep.hold != nil)
	}
}

// TestFakeLineSweepThreads: a sweep of four threads through the loop,
// over a fake process. PROFILE, waiting, interrupts each; on the way, B
// takes a signal, delivered at once, and D is stopped with the program
// (SIGSTOP), left listening; A's and C's interrupts stop them, and they
// are held; B's last, and only then are the covered jump's bytes written
// back: A, the main thread, goes on first, then B; C, which was stepping
// through a breakpoint's slot, steps on; D stays stopped.
func TestFakeLineSweepThreads(t *testing.T) {
	tr, fp, mem, _ := fakeRun(leafLines(datafile.LineCoverage), lineCode(), pieAt, 0)
	shared := plantLines(t, tr)
	lt := tr.parts.lines
	const a, b, c, d = fakePID, fakePID + 1, fakePID + 2, fakePID + 3
	for _, tid := range []int{b, c, d} {
		tr.threads[tid] = &thread{tid: tid, tgid: fakePID}
		fp.tgids[tid] = fakePID
	}
	tr.threads[c].stepping = &site{}
	lt.sweep.clock = stoppedClock()
	fp.calls = nil
	shared.Bytes()[64+lt.index.at(0, leafAt)*8] = 1
	if !lt.sweepIdle() {
		t.Fatal("covered: no sweep begun")
	}
	jumpIn := func(when string) func() {
		return func() {
			if mem.b[0] != 0xe9 {
				t.Errorf("%s: the jump out before every thread stopped", when)
			}
		}
	}
	groupStop := ptrace.WaitStatus(0x7f | int(syscall.SIGSTOP)<<8 | ptrace.EventStop<<16)
	fp.infos[b] = ptrace.RawSigInfo{byte(syscall.SIGUSR1)}
	runScript(t, tr, fp,
		fakeEvent{tid: b, ws: stoppedBy(syscall.SIGUSR1), pc: pieAt + 7},
		fakeEvent{tid: d, ws: groupStop, do: jumpIn("B's signal")},
		fakeEvent{tid: a, ws: trapEvent(ptrace.EventStop), do: jumpIn("D's group stop")},
		fakeEvent{tid: c, ws: trapEvent(ptrace.EventStop), do: jumpIn("A's stop")},
		fakeEvent{tid: b, ws: trapEvent(ptrace.EventStop), pc: pieAt + 7, do: jumpIn("C's stop")})
	if !bytes.Equal(mem.b[:len(leafCode)], leafCode) || len(lt.sweep.live) != 0 || lt.sweep.sweeps != 1 {
		t.Errorf("after the sweep: code % x, %d jumps live, %d sweeps; want the jump out, once", mem.b[:8], len(lt.sweep.live), lt.sweep.sweeps)
	}
	checkActs(t, fp, fmt.Sprintf("interrupt %d", a), fmt.Sprintf("interrupt %d", b), fmt.Sprintf("interrupt %d", c), fmt.Sprintf("interrupt %d", d),
		fmt.Sprintf("cont %d SIGUSR1", b), fmt.Sprintf("listen %d", d),
		fmt.Sprintf("cont %d 0", a), fmt.Sprintf("cont %d 0", b), fmt.Sprintf("step %d", c))
}
