package profile

import (
	"encoding/binary"
	"fmt"
	"slices"
	"syscall"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/profile/books"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// fakeBpLoop is the loop's part of the breakpoints' environment: it
// writes the stopped thread's registers into the process and lets the
// thread go, as the tracer's setAndResume does.
type fakeBpLoop struct {
	proc process
	regs *ptrace.Regs
}

func (l *fakeBpLoop) setAndResume(th *thread, sig syscall.Signal) error {
	if err := l.proc.setRegs(th.tid, l.regs); err != nil {
		return err
	}
	return l.proc.cont(th.tid, sig)
}

// bpRun is a run of the breakpoints over an environment of their own,
// not a tracer's: leafCode at leafAt on amd64, in a fake process whose
// thread fakePID has a stack whose top word is the return address
// leafAt+0x40.
type bpRun struct {
	bp       *breakpoints
	fp       *fakeProcess
	mem      *fakeMem
	clocks   *clocks
	warnings []string
}

// slotAt is where the fake runs of the breakpoints have their slots.
const slotAt = 0x7e00_0000_0000

func newBpRun(plan *datafile.Plan) *bpRun {
	mem := &fakeMem{base: leafAt, b: slices.Clone(leafCode), areas: map[uint64][]byte{stackAt: make([]byte, 0x1000)}}
	binary.LittleEndian.PutUint64(mem.areas[stackAt][0x800:], leafAt+0x40)
	fp := newFakeProcess(instr.AMD64, mem)
	instr.AMD64.SetSP(fp.reg(fakePID), stackAt+0x800)
	r := &bpRun{fp: fp, mem: mem, clocks: &clocks{stolen: map[books.Key]int64{}, carried: map[int]uint64{}}}
	var m instr.Memory = mem
	var proc process = fp
	regs := &ptrace.Regs{}
	r.bp = newBreakpointsOver(bpEnv{loop: &fakeBpLoop{proc: fp, regs: regs}, plan: plan, arch: instr.AMD64, mem: &m, proc: &proc, regs: regs,
		hits: make([]uint64, plan.NumItems()), warn: func(d *prf.Diagnostic) { r.warnings = append(r.warnings, fmt.Sprintf("PRF%d %v", d.Code, d)) },
		clocks: r.clocks, watch: &watch{}})
	return r
}

// site adds and writes the breakpoint of a site at addr meaning m, its
// instruction displaced (into a slot at slotAt when it needs one) unless
// coverage removes it at its first hit.
func (r *bpRun) site(t *testing.T, addr uint64, m meaning) *site {
	t.Helper()
	code := leafCode[addr-leafAt:]
	s := &site{addr: addr, orig: slices.Clone(code[:1]), meaning: m}
	if !r.bp.removeAtHit {
		d, err := instr.AMD64.Displace(code, addr, slotAt)
		if err != nil {
			t.Fatal(err)
		}
		s.disp, s.displaced, s.slot = d, true, slotAt
	}
	r.bp.add(s)
	if err := r.bp.write(); err != nil {
		t.Fatal(err)
	}
	return s
}

// stop stops thread th at the breakpoint at addr, and hands the stop to
// the breakpoints as the loop does (trap): its registers read into the
// environment's, the breakpoint's address from the PC.
func (r *bpRun) stop(t *testing.T, th *thread, addr uint64) {
	t.Helper()
	r.fp.calls = nil
	regs := r.fp.reg(th.tid)
	regs.SetPC(addr + 1) // (past the int3)
	if err := r.fp.getRegs(th.tid, r.bp.env.regs); err != nil {
		t.Fatal(err)
	}
	ours, err := r.bp.stop(th, instr.AMD64.BreakpointAddr(r.bp.env.regs.PC()))
	if !ours || err != nil {
		t.Fatalf("stop at %#x: ours %v, error %v; want the breakpoints'", addr, ours, err)
	}
}

// went checks that the stop let thread fakePID go at pc, with its stack
// pointer at sp, and asked nothing else of the process.
func (r *bpRun) went(t *testing.T, pc, sp uint64) {
	t.Helper()
	want := []string{fmt.Sprintf("setRegs %d pc=%#x", fakePID, pc), fmt.Sprintf("cont %d 0", fakePID)}
	if got := r.fp.acts(); !slices.Equal(got, want) {
		t.Errorf("requests %q, want %q", got, want)
	}
	if got := instr.AMD64.SP(r.fp.reg(fakePID)); got != sp {
		t.Errorf("stack pointer %#x, want %#x", got, sp)
	}
}

// TestBreakpointHitOverEnv: the breakpoints handle a hit over their
// environment alone, no tracer. Counting, the hit is counted and the
// instruction runs from the slot, the breakpoint staying. Timing, the
// entry and the exit are booked through timing's clocks, at the times the
// clocks give, on the thread's ledger, the function's time the time
// between; nothing is counted in the hits.
func TestBreakpointHitOverEnv(t *testing.T) {
	const entry, exit, sp = leafAt + 4, leafAt + 11, stackAt + 0x800 // (a mov, the ret)
	th := &thread{tid: fakePID, tgid: fakePID}
	t.Run("counted", func(t *testing.T) {
		r := newBpRun(leafFuncs(datafile.FuncCounting))
		r.site(t, entry, meaning{item: 0, exit: -1})
		r.stop(t, th, entry)
		if r.bp.env.hits[0] != 1 || r.bp.hits != 1 {
			t.Errorf("hits %v (breakpoints %d), want f's 1", r.bp.env.hits, r.bp.hits)
		}
		r.went(t, slotAt, sp)
		if r.mem.b[entry-leafAt] != 0xcc || r.bp.sites[entry] == nil {
			t.Errorf("the breakpoint at %#x is gone", entry)
		}
	})
	t.Run("timed", func(t *testing.T) {
		plan := leafFuncs(datafile.FuncTiming)
		plan.StartIndex = -1
		r := newBpRun(plan)
		r.bp.env.books = books.New(plan)
		r.site(t, entry, meaning{item: 0, exit: -1})
		r.site(t, exit, meaning{item: -1, exit: 0})
		r.clocks.waited = 50_000
		r.stop(t, th, entry)
		l := r.bp.env.books.OpenCalls(threadLedger(fakePID))
		if len(l) != 1 || l[0].Fn != 0 || l[0].SP != sp || l[0].Begun != 50_000 {
			t.Fatalf("f's entry: thread ledger %+v, want f's frame at sp %#x, begun at 50000", l, uint64(sp))
		}
		if r.clocks.charged != threadLedger(fakePID) {
			t.Errorf("the stop charged to %+v, want the thread", r.clocks.charged)
		}
		r.went(t, slotAt, sp)
		r.clocks.waited = 80_000
		instr.AMD64.SetSP(r.fp.reg(fakePID), sp) // (the mov run, the frame popped)
		r.stop(t, th, exit)
		if l = r.bp.env.books.OpenCalls(threadLedger(fakePID)); len(l) != 0 || r.bp.env.books.Figures().Self[0] != 30_000 {
			t.Errorf("f's exit: frames %+v, f's time %d; want none open, 30000", l, r.bp.env.books.Figures().Self[0])
		}
		r.went(t, leafAt+0x40, sp+8) // (the ret emulated)
		if r.bp.env.hits[0] != 0 || r.bp.hits != 2 || len(r.warnings) != 0 {
			t.Errorf("hits %v (breakpoints %d), warnings %q: want none counted, 2 stops, no warning", r.bp.env.hits, r.bp.hits, r.warnings)
		}
	})
}

// TestBreakpointStepOverEnv: an instruction stepped in its slot, over
// the breakpoints' environment alone, ends its step at the thread's next
// SIGTRAP (stepped): the effects the slot could not have are made, and
// the thread goes on with the signal that came meanwhile.
func TestBreakpointStepOverEnv(t *testing.T) {
	const sp = stackAt + 0x800
	th := &thread{tid: fakePID, tgid: fakePID}
	// call *%fs:0x10, whose target is not known: stepped in its slot,
	// where it pushes the slot's address as its return address, which
	// the end of the step makes the original's.
	call := []byte{0x64, 0xff, 0x14, 0x25, 0x10, 0x00, 0x00, 0x00}
	r := newBpRun(leafFuncs(datafile.FuncCounting))
	d, err := instr.AMD64.Displace(call, leafAt, slotAt)
	if err != nil || !d.SingleStep {
		t.Fatalf("call displaced as %+v, error %v; want stepped", d, err)
	}
	s := &site{addr: leafAt, orig: leafCode[:1], meaning: meaning{item: 0, exit: -1}, carrying: carrying{disp: d, displaced: true, slot: slotAt}}
	r.bp.add(s)
	r.stop(t, th, leafAt)
	want := []string{fmt.Sprintf("setRegs %d pc=%#x", fakePID, uint64(slotAt)), fmt.Sprintf("step %d", fakePID)}
	if got := r.fp.acts(); !slices.Equal(got, want) || th.stepping != s || r.bp.env.hits[0] != 1 {
		t.Fatalf("requests %q, stepping %v, hits %v; want %q, the site's step, f's hit", got, th.stepping != nil, r.bp.env.hits, want)
	}
	// The step ends in the call's target, the slot's return address
	// pushed; a signal came meanwhile.
	const target = 0x407000
	regs := r.fp.reg(fakePID)
	regs.SetPC(target)
	instr.AMD64.SetSP(regs, sp-8)
	binary.LittleEndian.PutUint64(r.mem.areas[stackAt][0x7f8:], slotAt+uint64(len(call)))
	th.pendingSig = syscall.SIGUSR1
	r.fp.calls = nil
	if err := r.fp.getRegs(fakePID, r.bp.env.regs); err != nil {
		t.Fatal(err)
	}
	if err := r.bp.stepped(th); err != nil {
		t.Fatal(err)
	}
	want = []string{fmt.Sprintf("setRegs %d pc=%#x", fakePID, target), fmt.Sprintf("cont %d %s", fakePID, fakeSig(syscall.SIGUSR1))}
	if got := r.fp.acts(); !slices.Equal(got, want) || th.stepping != nil || th.pendingSig != 0 {
		t.Errorf("requests %q, stepping %v, pending %v; want %q", got, th.stepping != nil, th.pendingSig, want)
	}
	if ret := binary.LittleEndian.Uint64(r.mem.areas[stackAt][0x7f8:]); ret != leafAt+uint64(len(call)) {
		t.Errorf("return address %#x, want %#x", ret, leafAt+uint64(len(call)))
	}
}

// TestBreakpointCoverageOverEnv: coverage, over the breakpoints'
// environment alone, takes a breakpoint out at its first hit, and a
// thread that trapped there meanwhile is sent back to run the instruction
// restored; line coverage takes out the line's other sites with it.
func TestBreakpointCoverageOverEnv(t *testing.T) {
	const entry, sp = leafAt + 4, stackAt + 0x800
	th := &thread{tid: fakePID, tgid: fakePID}
	t.Run("coverage", func(t *testing.T) {
		r := newBpRun(leafFuncs(datafile.FuncCoverage))
		r.bp.removeAtHit = true
		s := r.site(t, entry, meaning{item: 0, exit: -1})
		r.stop(t, th, entry)
		if r.bp.env.hits[0] != 1 || r.mem.b[entry-leafAt] != leafCode[entry-leafAt] || r.bp.sites[entry] != nil || r.bp.retired[entry] != s {
			t.Errorf("hits %v, code % x, site in place %v: want f covered and its breakpoint taken out", r.bp.env.hits, r.mem.b[entry-leafAt], r.bp.sites[entry] != nil)
		}
		r.went(t, entry, sp)
		// Another thread trapped there before the breakpoint was taken
		// out: no hit.
		other := &thread{tid: fakePID, tgid: fakePID}
		r.stop(t, other, entry)
		if other.retrap != entry || r.bp.env.hits[0] != 1 || r.bp.hits != 1 {
			t.Errorf("retrapped: retrap %#x, hits %v (stops at sites %d); want sent back to %#x, one hit", other.retrap, r.bp.env.hits, r.bp.hits, entry)
		}
		r.went(t, entry, sp)
	})
	t.Run("line coverage", func(t *testing.T) {
		plan := &datafile.Plan{Method: datafile.LineCoverage, Lines: []datafile.Line{{Line: 1}, {Line: 2}}}
		r := newBpRun(plan)
		r.bp.removeAtHit = true
		a := r.site(t, leafAt+4, meaning{item: 0, exit: -1})
		b := r.site(t, leafAt+7, meaning{item: 0, more: []int{1}, exit: -1}) // (lines 1 and 2)
		c := r.site(t, leafAt+10, meaning{item: 0, exit: -1})
		r.bp.lineSites = [][]*site{{a, b, c}, {b}}
		r.stop(t, th, c.addr)
		// Line 1 is covered: a, all of whose lines are, is taken out with
		// c; b, which carries line 2 too, stays.
		if !slices.Equal(r.bp.env.hits, []uint64{1, 0}) {
			t.Errorf("hits %v, want line 1 covered", r.bp.env.hits)
		}
		for _, s := range []*site{a, c} {
			if r.bp.sites[s.addr] != nil || r.bp.retired[s.addr] != s || r.mem.b[s.addr-leafAt] != leafCode[s.addr-leafAt] {
				t.Errorf("site at %#x: still in place, or its code % x; want taken out", s.addr, r.mem.b[s.addr-leafAt])
			}
		}
		if r.bp.sites[b.addr] != b || r.mem.b[b.addr-leafAt] != 0xcc {
			t.Errorf("site at %#x, of line 2 too, taken out", b.addr)
		}
		r.went(t, c.addr, sp)
	})
}
