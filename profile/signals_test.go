package profile

import (
	"fmt"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// The signals part's stop path over its own environment (signalEnv),
// without a tracer: a fake process (fakeprocess_test.go), and a loop
// (sigLoop) that records what the part asks of it.

// sigLoop is the loop of the signals part's tests: it lets threads go in
// the fake process, and records what it was asked; own is the area
// PROFILE mapped in the program, and now the clock, which advances at
// each release.
type sigLoop struct {
	proc   *fakeProcess
	own    [2]uint64
	now    int64
	asked  []string
	clocks *clocks
}

func (l *sigLoop) resume(tid int, sig syscall.Signal) error {
	l.noteRelease()
	l.asked = append(l.asked, fmt.Sprintf("resume %d %s", tid, fakeSig(sig)))
	return l.proc.cont(tid, sig)
}

func (l *sigLoop) noteRelease() { l.now += 5; l.clocks.resumed = l.now }

func (l *sigLoop) stopped(tid int, ws ptrace.WaitStatus) error {
	l.asked = append(l.asked, fmt.Sprintf("stopped %d %#x", tid, int(ws)))
	return nil
}

func (l *sigLoop) interruptStop(th *thread) {
	l.asked = append(l.asked, fmt.Sprintf("interruptStop %d", th.tid))
}

func (l *sigLoop) ownArea(addr uint64) bool { return addr >= l.own[0] && addr < l.own[0]+l.own[1] }

// sigRun is a fake process whose main thread fakePID is stopped at pc, a
// loop over it with ownAt's area PROFILE's, and the environment of a
// signal's stop seen at 10 on the loop's clock.
func sigRun(pc uint64) (*fakeProcess, *sigLoop, signalEnv) {
	fp := newFakeProcess(instr.AMD64, &fakeMem{})
	fp.reg(fakePID).SetPC(pc)
	clk := &clocks{epoch: time.Now(), waited: 10}
	l := &sigLoop{proc: fp, own: [2]uint64{ownAt, 0x100}, now: 10, clocks: clk}
	e := signalEnv{
		loop: l, proc: fp, pid: fakePID, threads: map[int]*thread{fakePID: {tid: fakePID, tgid: fakePID}},
		regs: &ptrace.Regs{}, watch: &watch{}, clocks: clk, ownArea: l.ownArea,
	}
	return fp, l, e
}

// TestSignalsStepOut: a signal that stops a thread in PROFILE's code is
// held while the thread is single-stepped back to the program's code,
// then delivered there through the loop with its own siginfo; a signal
// that stops the thread on the way is sent again after it. The watch
// counts the signal and the time PROFILE held the thread for it.
func TestSignalsStepOut(t *testing.T) {
	fp, l, e := sigRun(ownAt + 0x10)
	var info ptrace.RawSigInfo
	info[0], info[8] = byte(syscall.SIGUSR1), 0xfa
	fp.infos[fakePID] = info
	fp.script = []fakeEvent{
		{tid: fakePID, ws: stoppedBy(syscall.SIGTRAP), pc: ownAt + 0x14},
		{tid: fakePID, ws: stoppedBy(syscall.SIGUSR2)},
		{tid: fakePID, ws: stoppedBy(syscall.SIGTRAP), pc: leafAt + 7},
	}
	var s signals
	if err := s.signal(e.threads[fakePID], syscall.SIGUSR1, e); err != nil {
		t.Fatal(err)
	}
	want := []string{"step 8388608", "step 8388608", "step 8388608", "setSigInfo 8388608 signo=10",
		"kill 8388608 8388608 SIGUSR2", "cont 8388608 SIGUSR1"}
	if got := fp.acts(); !slices.Equal(got, want) {
		t.Errorf("requests %q, want %q", got, want)
	}
	if !slices.Equal(l.asked, []string{"resume 8388608 SIGUSR1"}) || fp.infos[fakePID] != info {
		t.Errorf("the loop was asked %q, siginfo changed: %v; want the signal delivered with its own", l.asked, fp.infos[fakePID] != info)
	}
	if e.watch.signals != 1 || e.watch.held != 5 || s.lastSignal[syscall.SIGUSR1].Load() == 0 {
		t.Errorf("%d signals held %d, last SIGUSR1 at %d; want one held 5", e.watch.signals, e.watch.held, s.lastSignal[syscall.SIGUSR1].Load())
	}
}

// TestSignalsLaterStop: a thread stepped out of PROFILE's code that ends
// meanwhile (killed by another's exit_group) is not let go: its end is
// kept for the loop, which takes it before it waits again.
func TestSignalsLaterStop(t *testing.T) {
	fp, l, e := sigRun(ownAt + 0x10)
	fp.script = []fakeEvent{{tid: fakePID, ws: exitedWith(9)}}
	var s signals
	if err := s.signal(e.threads[fakePID], syscall.SIGUSR1, e); err != nil {
		t.Fatal(err)
	}
	if len(l.asked) != 0 || !slices.Equal(fp.acts(), []string{"step 8388608"}) {
		t.Errorf("the loop was asked %q, the process %q; want one step, nothing let go", l.asked, fp.acts())
	}
	got, ok := s.takeLater()
	if !ok || got.tid != fakePID || !got.ws.Exited() {
		t.Errorf("later stop %+v (%v), want the thread's end", got, ok)
	}
	if _, ok := s.takeLater(); ok {
		t.Errorf("a second later stop")
	}
}

// TestSignalsRequeued: in a process PROFILE attached to, a signal to the
// process that another thread took, interrupting its system call, while
// PROFILE held the main thread is given back to the kernel: the thread
// blocks it and goes on with it (the kernel queues it again, for the main
// thread), its call restarts, and PROFILE interrupts it. At that
// interrupt's stop the thread has its mask back and its call restarts
// again.
func TestSignalsRequeued(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("an interrupted system call is seen in x86-64's registers only (ptrace.Regs.InterruptedCall)")
	}
	const other = fakePID + 1
	const eintr = ^uint64(4 - 1) // -EINTR
	fp, l, e := sigRun(leafAt)
	e.attached = true
	e.threads[other] = &thread{tid: other, tgid: fakePID}
	fp.reg(other).SetReg(0, eintr)
	fp.masks[other] = 1 << (syscall.SIGHUP - 1)
	var s signals
	if err := s.signal(e.threads[other], syscall.SIGUSR1, e); err != nil {
		t.Fatal(err)
	}
	bit := uint64(1) << (syscall.SIGUSR1 - 1)
	want := []string{fmt.Sprintf("setSigMask %d %#x", other, fp.masks[other]), fmt.Sprintf("setRegs %d pc=0x0", other),
		fmt.Sprintf("cont %d SIGUSR1", other), fmt.Sprintf("interrupt %d", other)}
	if got := fp.acts(); !slices.Equal(got, want) || fp.masks[other] != 1<<(syscall.SIGHUP-1)|bit {
		t.Errorf("requests %q (mask %#x), want %q", got, fp.masks[other], want)
	}
	if r := s.requeued[other]; r == nil || r.mask != 1<<(syscall.SIGHUP-1) || !r.interrupted {
		t.Fatalf("requeued %+v, want the thread's mask kept until its interrupt", r)
	}
	fp.calls = nil
	fp.reg(other).SetReg(0, eintr) // (the interrupt made the restarted call fail)
	s.maskBack(fp, fakePID, other, trapEvent(ptrace.EventStop))
	want = []string{fmt.Sprintf("setRegs %d pc=0x0", other), fmt.Sprintf("setSigMask %d %#x", other, 1<<(syscall.SIGHUP-1))}
	if got := fp.acts(); !slices.Equal(got, want) || len(s.requeued) != 0 {
		t.Errorf("at the interrupt: requests %q, %d requeued; want %q, none", got, len(s.requeued), want)
	}
	if fp.reg(other).Reg(0) == eintr {
		t.Errorf("the call fails with EINTR, want it restarted")
	}
	if !slices.Equal(l.asked, []string{fmt.Sprintf("resume %d SIGUSR1", other)}) {
		t.Errorf("the loop was asked %q", l.asked)
	}
}

// TestMainFirst: the threads' IDs in the order they are let go (the main
// thread first: it takes the signals to the process that came meanwhile)
// and stopped (the main thread last).
func TestMainFirst(t *testing.T) {
	for _, c := range []struct {
		ids, first, last []int
	}{
		{[]int{3, 5, 7}, []int{5, 3, 7}, []int{3, 7, 5}},
		{[]int{3, 7}, []int{3, 7}, []int{3, 7}}, // (the main thread gone)
		{[]int{5}, []int{5}, []int{5}},
		{nil, nil, nil},
	} {
		if got := mainFirst(slices.Clone(c.ids), 5); !slices.Equal(got, c.first) {
			t.Errorf("mainFirst(%v) = %v, want %v", c.ids, got, c.first)
		}
		if got := mainLast(slices.Clone(c.ids), 5); !slices.Equal(got, c.last) {
			t.Errorf("mainLast(%v) = %v, want %v", c.ids, got, c.last)
		}
	}
}
