package profile

import (
	"encoding/binary"
	"fmt"
	"slices"
	"syscall"
	"testing"

	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// TestSignalStepsIntoBookCode: a thread a signal stopped in a trampoline,
// in instructions it runs before an entry's book code (as an exit's
// epilogue runs before the exit's), is single-stepped out of PROFILE's
// code; the step that lands in the book code, before its commit, has the
// code's event booked at the time the thread stopped, its registers come
// back from the code's save slots, and the steps go on from the code's
// end: no step runs the code's readings of the counter and of the held
// time, which would have PROFILE's steps in one and not the other.
func TestSignalStepsIntoBookCode(t *testing.T) {
	r := newLedgerRig(t)
	p := r.l.open[1]
	r.l.clocks.startCounter()
	r.l.start(r.l.counters)
	r.l.clocks.overhead, r.l.clocks.forced = 0, true
	const before = 6 // (the bytes of the instructions moved before the code)
	tc := r.l.eventCode(1, entryEvent)
	r.l.counters.tramps = []*tramp{{addr: tramAt, code: instr.Trampoline{Code: append(make([]byte, before), tc.code...)}, regions: []region{tc.at(before)}}}
	at := r.l.counters.layout.BookAt
	for i := range 4 {
		binary.LittleEndian.PutUint64(r.block[at+instr.BookSave+uint64(8*i):], uint64(111*(i+1)))
	}
	fp := newFakeProcess(instr.AMD64, &fakeMem{})
	r.l.proc = fp
	regs := fp.reg(100)
	regs.SetPC(tramAt + 2)
	regs.SetThreadBase(r.l.counters.layout.BlockAddr(1))
	r.l.arch.SetSP(regs, 0x800)
	p.Enter(0, 0x1000, 1000) // main, open
	clk := r.l.clocks
	clk.waited = clk.clock()
	r.l.stopSeen(r.th)
	when := r.l.now(clk.waited)
	inCode := tramAt + before + uint64(r.code.Rollback[1].From) + 1
	fp.script = []fakeEvent{
		{tid: 100, ws: stoppedBy(syscall.SIGTRAP), pc: inCode},
		{tid: 100, ws: stoppedBy(syscall.SIGTRAP), pc: leafAt + 7},
	}
	l := &sigLoop{proc: fp, own: [2]uint64{tramAt, 0x1000}, now: 10, clocks: clk}
	e := signalEnv{loop: l, proc: fp, pid: 100, threads: map[int]*thread{100: r.th}, regs: &r.regs,
		watch: &watch{}, clocks: clk, ownArea: l.ownArea, ledgers: r.l}
	var s signals
	if err := s.signal(r.th, syscall.SIGUSR1, e); err != nil {
		t.Fatal(err)
	}
	end := tramAt + before + uint64(len(r.code.Code))
	want := []string{"step 100", fmt.Sprintf("setRegs 100 pc=%#x", end), "step 100"}
	if got := fp.acts(); len(got) < 3 || !slices.Equal(got[:3], want) {
		t.Errorf("requests %q, want %q first: a step, the code's end, a step", got, want)
	}
	if last := p.LastTime(); p.Open() != 2 || last+100e3 < when || last > when+100e3 {
		t.Errorf("%d calls open, the last event at %d ns: want f's entry too, at the stop's time %d", p.Open(), last, when)
	}
	for _, sv := range r.code.Saved {
		if got, want := regsAfterStep(fp, sv.Reg), binary.LittleEndian.Uint64(r.block[sv.Offset:]); got != want {
			t.Errorf("register %d is %d, want %d from its save slot", sv.Reg, got, want)
		}
	}
}

// regsAfterStep returns register n of thread 100 as PROFILE last wrote it
// in the fake process.
func regsAfterStep(fp *fakeProcess, n int) uint64 {
	var r ptrace.Regs
	fp.getRegs(100, &r)
	return r.Reg(n)
}
