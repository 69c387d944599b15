package profile

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/testutil"
	"github.com/sourceprofiler/sprof/profile/books"
	"github.com/sourceprofiler/sprof/profile/procmaps"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// A stop's path through the tracer, over a fake process
// (fakeprocess_test.go): the tracer's own loop and stop handling, the
// process a script. Each test says what the program does, and checks
// what the tracer did of it: the counts, the registers, the requests it
// made, in order.

var _ process = (*fakeProcess)(nil)

// fakePID is the main thread of the fake runs: above any thread ID the
// kernel gives (pid_max is at most 2^22).
const fakePID = 1 << 23

// stackAt is where the fake runs' main thread has its stack.
const stackAt = 0x7ffd_0000_0000

// fakeRun returns a tracer of plan, loaded as fakeTracerAt loads it, its
// areas mapped where asked (mapAreas), over a fake process (traceFake).
func fakeRun(plan *datafile.Plan, code []byte, base, ret uint64) (*tracer, *fakeProcess, *fakeMem, *[]string) {
	tr, mem, warnings := fakeTracerAt(plan, code, base)
	mapAreas(tr, mem)
	return tr, traceFake(tr, mem, ret), mem, warnings
}

// traceFake makes tr the tracer of a fake process over mem, whose main
// thread fakePID is stopped, with a stack whose top word is ret (the
// address a return there goes to).
func traceFake(tr *tracer, mem *fakeMem, ret uint64) *fakeProcess {
	if mem.areas == nil {
		mem.areas = map[uint64][]byte{}
	}
	mem.areas[stackAt] = make([]byte, 0x1000)
	binary.LittleEndian.PutUint64(mem.areas[stackAt][0x800:], ret)
	fp := newFakeProcess(tr.arch, mem)
	tr.arch.SetSP(fp.reg(fakePID), stackAt+0x800)
	tr.proc, tr.pid = fp, fakePID
	tr.maps, _ = fp.openMaps(fakePID)
	tr.threads = map[int]*thread{fakePID: {tid: fakePID, tgid: fakePID}}
	tr.tasks.early, tr.tasks.expected = map[int]ptrace.WaitStatus{}, map[int]childKind{}
	tr.clocks.stolen, tr.clocks.carried, tr.parts.modules.identity = map[books.Key]int64{}, map[int]uint64{}, map[string]bool{}
	tr.clocks.epoch = time.Now()
	return fp
}

// leafMaps is the memory map of leafCode's module.
var leafMaps = []procmaps.Mapping{{Start: leafAt, End: leafAt + 0x1000, Perms: "r-xp"}}

// endOfRun is the end of a fake run: the main thread's exit stop, then
// its exit.
func endOfRun() []fakeEvent {
	return []fakeEvent{{tid: fakePID, ws: trapEvent(ptrace.EventExit)}, {tid: fakePID, ws: exitedWith(0)}}
}

// runScript runs the tracer's loop over script and the end of the run.
func runScript(t *testing.T, tr *tracer, fp *fakeProcess, script ...fakeEvent) *Result {
	t.Helper()
	fp.script = append(script, endOfRun()...)
	res := &Result{}
	if err := tr.loop(res); err != nil {
		t.Fatalf("loop: %v", err)
	}
	if !res.Exited || len(fp.script) != 0 {
		t.Fatalf("the run ended with %+v, %d events left", res, len(fp.script))
	}
	return res
}

// endActs are the requests of endOfRun: the main thread goes on from its
// exit stop.
var endActs = []string{fmt.Sprintf("cont %d 0", fakePID)}

// checkActs compares what the tracer asked of fp that changes it with
// want, and the end of the run.
func checkActs(t *testing.T, fp *fakeProcess, want ...string) {
	t.Helper()
	want = slices.Concat(want, endActs)
	if got := fp.acts(); !slices.Equal(got, want) {
		t.Errorf("requests:\n\t%s\nwant:\n\t%s\n(all: %q)", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"), fp.calls)
	}
}

// TestFakeBreakpointHit: a thread stops at a function's breakpoint; the
// tracer reads its registers, counts the hit once, carries out the
// instruction under the breakpoint and lets the thread go: a ret is
// emulated (the PC is the return address, the stack popped), a mov runs
// in the site's slot (the PC is the slot, which holds the instruction
// relocated). Nothing else is asked of the process, and the end of the
// run finds the code as PROFILE left it.
func TestFakeBreakpointHit(t *testing.T) {
	const ret = leafAt + 0x40
	for _, c := range []struct {
		name  string
		entry uint64
		slot  bool
	}{{"emulated", leafAt + 11, false}, {"slot", leafAt + 4, true}} {
		t.Run(c.name, func(t *testing.T) {
			plan := leafFuncs(datafile.FuncCounting)
			plan.Funcs[0].Entry = c.entry
			tr, fp, mem, warnings := fakeRun(plan, leafCode, leafAt, ret)
			if err := tr.plantModule(0, 0, leafInstance(), leafMaps); err != nil {
				t.Fatal(err)
			}
			fp.calls = nil
			s := tr.parts.bp.sites[c.entry]
			if s == nil || mem.b[c.entry-leafAt] != 0xcc {
				t.Fatalf("no breakpoint at %#x", c.entry)
			}
			runScript(t, tr, fp, fakeEvent{tid: fakePID, ws: stoppedBy(syscall.SIGTRAP), pc: c.entry + 1})
			if tr.counted.hits[0] != 1 || tr.parts.bp.hits != 1 {
				t.Errorf("hits %v (breakpoints %d), want f's 1", tr.counted.hits, tr.parts.bp.hits)
			}
			wantPC, wantSP := uint64(ret), uint64(stackAt+0x808)
			if c.slot {
				wantPC, wantSP = s.slot, stackAt+0x800
				moved, _ := mem.span(s.slot, 3)
				if s.slot == 0 || !bytes.Equal(moved, leafCode[4:7]) {
					t.Errorf("slot at %#x holds % x, want the mov % x", s.slot, moved, leafCode[4:7])
				}
			}
			if r := fp.reg(fakePID); r.PC() != wantPC || tr.arch.SP(r) != wantSP {
				t.Errorf("after the hit: pc %#x, sp %#x; want %#x, %#x", r.PC(), tr.arch.SP(r), wantPC, wantSP)
			}
			checkActs(t, fp, fmt.Sprintf("setRegs %d pc=%#x", fakePID, wantPC), fmt.Sprintf("cont %d 0", fakePID))
			wantCalls := []string{"wait sleeping", "getRegs 8388608", fmt.Sprintf("setRegs 8388608 pc=%#x", wantPC), "cont 8388608 0",
				"wait sleeping", "getRegs 8388608", "cont 8388608 0", "wait sleeping"}
			if !slices.Equal(fp.calls, wantCalls) {
				t.Errorf("calls %q, want %q", fp.calls, wantCalls)
			}
			if len(*warnings) != 0 {
				t.Errorf("warnings %q", *warnings)
			}
		})
	}
}

// plantedLeaf is a fake run of f counted with a breakpoint at its ret
// (leafAt+11, emulated), planted.
func plantedLeaf(t *testing.T) (*tracer, *fakeProcess, *fakeMem, *[]string) {
	t.Helper()
	plan := leafFuncs(datafile.FuncCounting)
	plan.Funcs[0].Entry = leafAt + 11
	tr, fp, mem, warnings := fakeRun(plan, leafCode, leafAt, leafAt+0x40)
	if err := tr.plantModule(0, 0, leafInstance(), leafMaps); err != nil {
		t.Fatal(err)
	}
	if tr.parts.bp.sites[leafAt+11] == nil {
		t.Fatal("f's breakpoint not planted")
	}
	fp.calls = nil
	return tr, fp, mem, warnings
}

// TestFakeThreadBornAndEnded: the main thread makes a thread (a clone
// event, its new thread's ID the event's message) that the kernel says
// shares the program's memory; the new thread's first stop comes after
// the event, or before it (then kept until the event names it). Either
// way it is taken as a thread of the program and let go, its hit
// counted; at its exit stop it goes on, and at its end it is forgotten.
func TestFakeThreadBornAndEnded(t *testing.T) {
	const child = fakePID + 1
	for _, early := range []bool{false, true} {
		t.Run(fmt.Sprintf("first stop early %v", early), func(t *testing.T) {
			tr, fp, _, warnings := plantedLeaf(t)
			fp.msgs[fakePID] = child
			fp.tgids[child] = fakePID
			clone := fakeEvent{tid: fakePID, ws: trapEvent(ptrace.EventClone)}
			first := fakeEvent{tid: child, ws: trapEvent(ptrace.EventStop)}
			born := []fakeEvent{clone, first}
			if early {
				born = []fakeEvent{first, clone}
			}
			var adopted *thread
			script := append(born,
				fakeEvent{tid: child, ws: stoppedBy(syscall.SIGTRAP), pc: leafAt + 12, sp: stackAt + 0x800, do: func() { adopted = tr.threads[child] }},
				fakeEvent{tid: child, ws: trapEvent(ptrace.EventExit)},
				fakeEvent{tid: child, ws: exitedWith(0)})
			runScript(t, tr, fp, script...)
			if adopted == nil || adopted.tgid != fakePID || adopted.foreign {
				t.Errorf("the new thread after its first stop: %+v, want a thread of process %d", adopted, fakePID)
			}
			if tr.threads[child] != nil || len(tr.tasks.early) != 0 || len(tr.tasks.expected) != 0 {
				t.Errorf("after its end: thread %v, early %v, expected %v; want it forgotten", tr.threads[child], tr.tasks.early, tr.tasks.expected)
			}
			if tr.counted.hits[0] != 1 {
				t.Errorf("hits %v, want the new thread's 1", tr.counted.hits)
			}
			goes := []string{"cont 8388608 0", "cont 8388609 0"}
			if early {
				goes = []string{"cont 8388609 0", "cont 8388608 0"} // (the parent after the child, adopted at the event)
			}
			checkActs(t, fp, append(goes, "setRegs 8388609 pc=0x401040", "cont 8388609 0", "cont 8388609 0")...)
			if !slices.Contains(fp.calls, "sameMemory 8388608 8388609") {
				t.Errorf("calls %q: the new task's memory not compared with its parent's", fp.calls)
			}
			if len(*warnings) != 0 {
				t.Errorf("warnings %q", *warnings)
			}
		})
	}
}

// TestFakeThreadKilledUnborn: the program exits while one of its threads
// is in clone. The new thread, killed before it ever ran, stops first at
// its exit, and its parent, killed too, never reports the clone, or
// reports it and is gone before PROFILE reads the event's message (ESRCH:
// gosampling as a PIE, 1 run in 40 under load). The new thread must be
// let go to its end (kept stopped, the group's leader would never be
// reaped and the run would not end) and forgotten, and the run goes on.
func TestFakeThreadKilledUnborn(t *testing.T) {
	const child = fakePID + 1
	for _, c := range []struct{ announced, gone bool }{{false, false}, {true, false}, {true, true}} {
		t.Run(fmt.Sprintf("clone reported %v, parent gone %v", c.announced, c.gone), func(t *testing.T) {
			tr, fp, _, warnings := plantedLeaf(t)
			fp.msgs[fakePID] = child
			fp.tgids[child] = fakePID
			fp.gone[fakePID] = c.gone
			script := []fakeEvent{{tid: child, ws: trapEvent(ptrace.EventExit)}}
			goes := []string{"cont 8388609 0"}
			if c.announced {
				script = append(script, fakeEvent{tid: fakePID, ws: trapEvent(ptrace.EventClone)})
				if !c.gone {
					goes = append(goes, "cont 8388608 0")
				}
			}
			runScript(t, tr, fp, append(script, fakeEvent{tid: child, ws: exitedWith(0)})...)
			checkActs(t, fp, goes...)
			if tr.threads[child] != nil || len(tr.tasks.early) != 0 || len(tr.tasks.expected) != 0 {
				t.Errorf("after its end: thread %v, early %v, expected %v; want it forgotten", tr.threads[child], tr.tasks.early, tr.tasks.expected)
			}
			if len(*warnings) != 0 {
				t.Errorf("warnings %q", *warnings)
			}
		})
	}
}

// TestFakeFork: the main thread forks; the child has a copy of the
// program's memory, breakpoint included (the kernel says they do not
// share it). At the child's first stop, the original bytes are written
// into its memory, not the program's, and it is detached, never traced
// as a thread.
func TestFakeFork(t *testing.T) {
	const child = fakePID + 100
	tr, fp, mem, warnings := plantedLeaf(t)
	copyOf := &fakeMem{base: mem.base, b: slices.Clone(mem.b)}
	fp.separate[child] = copyOf
	fp.msgs[fakePID] = child
	runScript(t, tr, fp,
		fakeEvent{tid: fakePID, ws: trapEvent(ptrace.EventFork)},
		fakeEvent{tid: child, ws: stoppedBy(syscall.SIGSTOP)})
	if !bytes.Equal(copyOf.b[:len(leafCode)], leafCode) {
		t.Errorf("the child's code % x, want the original % x", copyOf.b[:len(leafCode)], leafCode)
	}
	if mem.b[11] != 0xcc {
		t.Errorf("the program's code at f's ret %#x, want its breakpoint still", mem.b[11])
	}
	checkActs(t, fp, "cont 8388608 0", "detach 8388708 0")
	if tr.threads[child] != nil || !slices.Contains(fp.calls, "openMem 8388708") {
		t.Errorf("the child traced as a thread, or its memory not opened: %q", fp.calls)
	}
	if len(*warnings) != 0 {
		t.Errorf("warnings %q", *warnings)
	}
}

// TestFakeExec: the program calls exec; its image is gone, and with it
// the breakpoints: PROFILE says the profile ends there (PRF4643), forgets
// every site, and lets the thread go on.
func TestFakeExec(t *testing.T) {
	tr, fp, _, warnings := plantedLeaf(t)
	runScript(t, tr, fp, fakeEvent{tid: fakePID, ws: trapEvent(ptrace.EventExec)})
	if len(tr.parts.bp.sites) != 0 || !tr.tasks.execed {
		t.Errorf("after the exec: %d sites, execed %v; want none, and the exec noted", len(tr.parts.bp.sites), tr.tasks.execed)
	}
	if len(*warnings) != 1 || !strings.HasPrefix((*warnings)[0], "PRF4643 ") {
		t.Errorf("warnings %q, want PRF4643 alone", *warnings)
	}
	checkActs(t, fp, "cont 8388608 0")
}

// ownAt is an area PROFILE mapped in the fake runs' program (a
// trampoline's, say).
const ownAt = 0x7e10_0000_0000

// TestFakeSignalInTrampoline: a signal comes to a thread running code
// PROFILE wrote. The thread is not sent to the handler from there: the
// signal is held, the thread single-stepped until it is back in the
// program's code, and the signal delivered there, with its own siginfo.
// Another signal that stops the thread on the way is held and sent again
// after it, to the thread (tgkill).
func TestFakeSignalInTrampoline(t *testing.T) {
	tr, fp, mem, _ := plantedLeaf(t)
	mem.areas[ownAt] = make([]byte, 0x100)
	tr.parts.plant.ownMaps = [][2]uint64{{ownAt, 0x100}}
	var info ptrace.RawSigInfo
	info[0], info[8] = byte(syscall.SIGUSR1), 0xfa // si_code SI_TKILL
	fp.infos[fakePID] = info
	runScript(t, tr, fp,
		fakeEvent{tid: fakePID, ws: stoppedBy(syscall.SIGUSR1), pc: ownAt + 0x10},
		fakeEvent{tid: fakePID, ws: stoppedBy(syscall.SIGTRAP), pc: ownAt + 0x14},
		fakeEvent{tid: fakePID, ws: stoppedBy(syscall.SIGUSR2)},
		fakeEvent{tid: fakePID, ws: stoppedBy(syscall.SIGTRAP), pc: leafAt + 7})
	checkActs(t, fp, "step 8388608", "step 8388608", "step 8388608", "setSigInfo 8388608 signo=10",
		"kill 8388608 8388608 SIGUSR2", "cont 8388608 SIGUSR1")
	if pc := fp.reg(fakePID).PC(); pc != leafAt+7 {
		t.Errorf("signal delivered at %#x, want %#x, back in the program's code", pc, leafAt+7)
	}
	if fp.infos[fakePID] != info {
		t.Errorf("the signal delivered with another siginfo")
	}
	if !slices.Contains(fp.calls, "waitFor 8388608") {
		t.Errorf("calls %q: the steps not waited for one by one", fp.calls)
	}
}

// TestFakeFaultInSlot: a fault (SIGSEGV) in the out-of-line slot of a
// breakpoint's instruction, the relocated instruction faulting, is
// delivered at the instruction's own address: a handler or a core dump
// sees the program's code.
func TestFakeFaultInSlot(t *testing.T) {
	plan := leafFuncs(datafile.FuncCounting)
	plan.Funcs[0].Entry = leafAt + 4
	tr, fp, _, _ := fakeRun(plan, leafCode, leafAt, 0)
	if err := tr.plantModule(0, 0, leafInstance(), leafMaps); err != nil {
		t.Fatal(err)
	}
	s := tr.parts.bp.sites[leafAt+4]
	if s == nil || s.slot == 0 {
		t.Fatalf("site %+v, want one with a slot", s)
	}
	fp.calls = nil
	runScript(t, tr, fp, fakeEvent{tid: fakePID, ws: stoppedBy(syscall.SIGSEGV), pc: s.slot})
	checkActs(t, fp, "setRegs 8388608 pc=0x401004", "cont 8388608 SIGSEGV")
}

// TestFakeSignalRolledBack: a signal comes to a thread inside the count
// of a line's trampoline (x86-64's count that keeps the flags, rax saved
// in the thread's block): the thread is rolled back to the count's start,
// rax taken back from the block (a handler may count lines through the
// same slot), then stepped out of the trampoline, and the signal
// delivered where the trampoline returns to the program.
func TestFakeSignalRolledBack(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the thread's block is found through the GS base, a register of x86-64's ptrace.Regs")
	}
	tr, mem, _, _, shared := lineTracer(t, datafile.LineCounting, false, 1)
	fp := traceFake(tr, mem, 0)
	c := tr.parts.counters
	c.saves = true // (as startCounters finds the count saves rax)
	tp := c.tramps[slices.IndexFunc(c.tramps, func(x *tramp) bool { return x.patch.Site == pieAt })]
	if len(tp.regions) != 1 || len(tp.regions[0].rollback) != 2 {
		t.Fatalf("the entry's trampoline: regions %+v, want its count's rollback", tp.regions)
	}
	rb := tp.regions[0].rollback[0] // (between the save of rax and the count's store)
	for at, b := range mem.areas {
		if at != stackAt {
			tr.parts.plant.ownMaps = append(tr.parts.plant.ownMaps, [2]uint64{at, uint64(len(b))})
		}
	}
	tr.threads[fakePID].tgid = fakePID
	c.blockOf[fakePID] = 1
	r := fp.reg(fakePID)
	r.SetThreadBase(c.layout.BlockAddr(1))
	r.SetReg(0, 0x1111) // rax, changed by the count
	binary.LittleEndian.PutUint64(shared.Bytes()[c.layout.BlockSize+rb.Restore[0].Offset:], 0x2222)
	var rolled ptrace.Regs
	fp.infos[fakePID] = ptrace.RawSigInfo{byte(syscall.SIGUSR1)}
	runScript(t, tr, fp,
		fakeEvent{tid: fakePID, ws: stoppedBy(syscall.SIGUSR1), pc: tp.addr + uint64(tp.regions[0].at+rb.From+1)},
		fakeEvent{tid: fakePID, ws: stoppedBy(syscall.SIGTRAP), pc: tp.addr + 9, do: func() { rolled = *fp.reg(fakePID) }},
		fakeEvent{tid: fakePID, ws: stoppedBy(syscall.SIGTRAP), pc: pieAt + 7})
	if tr.signals.rolledBack != 1 || rolled.PC() != tp.addr+uint64(rb.Resume) || rolled.Reg(0) != 0x2222 {
		t.Errorf("rolled back %d times, to pc %#x with rax %#x; want once, to %#x with the saved 0x2222", tr.signals.rolledBack, rolled.PC(), rolled.Reg(0), tp.addr+uint64(rb.Resume))
	}
	checkActs(t, fp, fmt.Sprintf("setRegs 8388608 pc=%#x", tp.addr+uint64(rb.Resume)), "step 8388608", "step 8388608",
		"setSigInfo 8388608 signo=10", "cont 8388608 SIGUSR1")
	if pc := fp.reg(fakePID).PC(); pc != pieAt+7 {
		t.Errorf("signal delivered at %#x, want %#x, where the trampoline returns", pc, uint64(pieAt+7))
	}
}

// TestFakeLineSweep: line coverage in-process, the entry's line
// covered. PROFILE, waiting, interrupts the program's one thread for a
// sweep (sweepIdle); at the interrupt's stop the covered jump is written
// back, no longer checked at the end, and the thread goes on.
func TestFakeLineSweep(t *testing.T) {
	tr, fp, mem, _ := fakeRun(leafLines(datafile.LineCoverage), lineCode(), pieAt, 0)
	shared := plantLines(t, tr)
	lt := tr.parts.lines
	if len(lt.sweep.live) != 1 || mem.b[0] != 0xe9 {
		t.Fatalf("%d coverage jumps, code % x; want one jump", len(lt.sweep.live), mem.b[:5])
	}
	fp.calls = nil
	binary.LittleEndian.PutUint64(shared.Bytes()[64+lt.index.at(0, leafAt)*8:], 1)
	if !lt.sweepIdle() {
		t.Fatal("covered: no sweep asked for")
	}
	runScript(t, tr, fp, fakeEvent{tid: fakePID, ws: trapEvent(ptrace.EventStop)})
	if !bytes.Equal(mem.b[:len(leafCode)], leafCode) || len(lt.sweep.live) != 0 || len(tr.parts.watch.written) != 0 {
		t.Errorf("after the sweep: code % x, %d jumps live, %d written; want the jump out", mem.b[:8], len(lt.sweep.live), len(tr.parts.watch.written))
	}
	checkActs(t, fp, fmt.Sprintf("interrupt %d", fakePID), fmt.Sprintf("cont %d 0", fakePID))
}

// TestFakeModuleLoadedAndUnloaded: a library of the plan is loaded, and
// unloaded, while the program runs. At the dynamic linker's rendezvous
// (its breakpoint at _dl_debug_state, a ret), the memory map shows the
// library, the very file PREP read: its function is planted, the area
// beside it mapped with a system call the stopped thread runs, and the
// thread returns from the rendezvous. The function's hit is counted. At
// the next rendezvous the map no longer shows it: its breakpoint is
// forgotten and its area unmapped, with the same thread.
func TestFakeModuleLoadedAndUnloaded(t *testing.T) {
	const (
		libAt = 0x7f55_0000_0000
		ldAt  = 0x7f66_0000_0000
		ret   = 0x5555_0000_1234
	)
	code := append(slices.Clone(leafCode), make([]byte, 0x1000-64-len(leafCode))...)
	lib := filepath.Join(t.TempDir(), "libleaf.so")
	if err := os.WriteFile(lib, code, 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(lib)
	if err != nil {
		t.Fatal(err)
	}
	plan := &datafile.Plan{
		Method: datafile.FuncCounting,
		Modules: []datafile.Module{{Name: "prog", Arch: "amd64"},
			{Name: "libleaf.so", Path: lib, Arch: "amd64", PIE: true, Size: st.Size(), ModTime: st.ModTime().UnixNano()}},
		Funcs: []datafile.Func{{Name: "f", Module: 1, Entry: 11, Low: 0, High: uint64(len(leafCode))}},
	}
	tr, mem, warnings := fakeTracerAt(plan, code, libAt)
	fp := traceFake(tr, mem, ret)
	tr.parts.plant.mapArea = tr.parts.plant.mmap
	// The rendezvous, as watchLibraries plants it.
	mem.areas[ldAt] = append([]byte{0xc3}, make([]byte, 0xfff)...)
	orig := make([]byte, tr.arch.MaxInstLen())
	mem.ReadMem(ldAt, orig)
	d, err := tr.arch.Displace(orig, ldAt, 0)
	if err != nil || d.Emulate == nil {
		t.Fatalf("the rendezvous's ret: %+v, %v; want it emulated", d, err)
	}
	brk := tr.arch.Breakpoint()
	tr.parts.bp.sites[ldAt] = &site{addr: ldAt, orig: orig[:len(brk)], meaning: meaning{item: -1, exit: -1, rendezvous: true}, carrying: carrying{disp: d, displaced: true}}
	mem.WriteMem(ldAt, brk)
	tr.parts.modules.rdv, tr.parts.modules.loaded, tr.parts.modules.libs = rendezvous{brk: ldAt}, map[uint64]*loaded{}, []int{1}

	without := fmt.Sprintf("%x-%x r-xp 00000000 00:00 0\n%x-%x rw-p 00000000 00:00 0 [stack]\n", ldAt, ldAt+0x1000, stackAt, stackAt+0x1000)
	with := fmt.Sprintf("%x-%x r-xp 00000000 08:01 %d %s\n", libAt, libAt+0x1000, st.Sys().(*syscall.Stat_t).Ino, lib) + without
	fp.maps = without
	var planted bool
	var areas [][2]uint64
	rendezvousHit := func(do func()) fakeEvent {
		return fakeEvent{tid: fakePID, ws: stoppedBy(syscall.SIGTRAP), pc: ldAt + 1, sp: stackAt + 0x800, do: do}
	}
	runScript(t, tr, fp,
		rendezvousHit(func() { fp.maps = with }),
		fakeEvent{tid: fakePID, ws: stoppedBy(syscall.SIGTRAP), pc: libAt + 12, sp: stackAt + 0x800, do: func() {
			planted = tr.parts.bp.sites[libAt+11] != nil && mem.b[11] == 0xcc && len(tr.parts.modules.loaded) == 1
			areas = tr.parts.plant.areas[libAt]
		}},
		rendezvousHit(func() { fp.maps = without }))
	if !planted || len(areas) != 1 {
		t.Fatalf("after the load: planted %v, areas %#x; want f's breakpoint in the library, and its area", planted, areas)
	}
	if tr.counted.hits[0] != 1 {
		t.Errorf("hits %v, want f's 1", tr.counted.hits)
	}
	if len(tr.parts.modules.loaded) != 0 || tr.parts.bp.sites[libAt+11] != nil || len(tr.parts.plant.areas) != 0 || len(mem.areas) != 2 {
		t.Errorf("after the unload: loaded %v, sites %v, areas %v, %d mappings; want only the rendezvous, the stack and the dynamic linker", tr.parts.modules.loaded, slices.Sorted(maps.Keys(tr.parts.bp.sites)), tr.parts.plant.areas, len(mem.areas))
	}
	// The thread at the rendezvous is borrowed (its PC back at the
	// breakpoint), runs the system call, is given its registers back, and
	// returns from _dl_debug_state.
	borrowed := func(call string) []string {
		return []string{"setRegs 8388608 pc=0x7f6600000000", "setRegs 8388608 pc=0x7f6600000000", "step 8388608",
			"syscall 8388608 " + call, "setRegs 8388608 pc=0x7f6600000000", "setRegs 8388608 pc=0x555500001234", "cont 8388608 0"}
	}
	a := areas[0]
	want := borrowed(fmt.Sprintf("mmap(%#x, %#x) = %#x", a[0], a[1], a[0]))
	want = append(want, "setRegs 8388608 pc=0x555500001234", "cont 8388608 0") // f's ret, emulated
	want = append(want, borrowed(fmt.Sprintf("munmap(%#x, %#x)", a[0], a[1]))...)
	checkActs(t, fp, want...)
	if pc := fp.reg(fakePID).PC(); pc != ret {
		t.Errorf("the thread goes on at %#x, want %#x, returned from the rendezvous", pc, uint64(ret))
	}
	if len(*warnings) != 0 {
		t.Errorf("warnings %q", *warnings)
	}
}

// TestFakeInjectedSyscall: PROFILE maps memory in the program by
// borrowing its stopped thread for one system call: the system call
// instruction written over the thread's, its registers loaded with the
// call, one single step, the result read, then the instruction and the
// registers put back as they were.
func TestFakeInjectedSyscall(t *testing.T) {
	tr, fp, mem, _ := fakeRun(leafFuncs(datafile.FuncCounting), leafCode, leafAt, 0)
	r := fp.reg(fakePID)
	r.SetPC(leafAt + 4)
	r.SetReg(0, 0x1234)
	saved := *r
	addr, err := tr.parts.plant.mmap(0, 0x1000)
	if err != nil || addr != 0x7e00_0000_0000 {
		t.Fatalf("mmap: %#x, %v; want the fake kernel's first area", addr, err)
	}
	if b, err := mem.span(addr, 0x1000); err != nil || len(b) != 0x1000 {
		t.Errorf("no area mapped at %#x: %v", addr, err)
	}
	if !bytes.Equal(mem.b[:len(leafCode)], leafCode) || *fp.reg(fakePID) != saved {
		t.Errorf("after the call: code % x, registers %+v; want them as they were", mem.b[:len(leafCode)], *fp.reg(fakePID))
	}
	if !slices.Equal(tr.parts.plant.ownMaps, [][2]uint64{{addr, 0x1000}}) {
		t.Errorf("PROFILE's areas %#x, want the one mapped", tr.parts.plant.ownMaps)
	}
	want := []string{"getRegs 8388608", "setRegs 8388608 pc=0x401004", "step 8388608",
		"syscall 8388608 mmap(0x0, 0x1000) = 0x7e0000000000", "waitFor 8388608", "getRegs 8388608", "setRegs 8388608 pc=0x401004"}
	if !slices.Equal(fp.calls, want) {
		t.Errorf("calls:\n\t%s\nwant:\n\t%s", strings.Join(fp.calls, "\n\t"), strings.Join(want, "\n\t"))
	}
}

// TestProcessSeam: no file of the package but the adapter
// (process_ptrace.go) calls a function of package ptrace that acts on a
// process, or takes one as a value: the process seam stays the one way
// to the program, and a stop's path can be tested over the fake. The
// other functions of package ptrace are pure: what an error means,
// whether a file is a terminal, whether the platform can trace, the
// CPU's counter and its check across CPUs (PROFILE's own threads), the
// tracer giving up its own CPU, the time a ring of samples holds.
func TestProcessSeam(t *testing.T) {
	if testutil.Slow() {
		t.Skip("the sources are the host's (the arm64 VM has the test binary alone)")
	}
	pure := map[string]bool{"IsNoProcess": true, "IsRingError": true, "IsTerminal": true, "Supported": true, "Counter": true, "CounterWarp": true, "Yield": true, "RingHolds": true}
	fset := token.NewFileSet()
	parse := func(pattern string) []*ast.File {
		paths, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		var files []*ast.File
		for _, p := range paths {
			if strings.HasSuffix(p, "_test.go") || filepath.Base(p) == "process_ptrace.go" {
				continue
			}
			f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		return files
	}
	acting := map[string]bool{}
	for _, f := range parse(filepath.Join("ptrace", "*.go")) {
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.IsExported() && !pure[fn.Name.Name] {
				acting[fn.Name.Name] = true
			}
		}
	}
	if !acting["GetRegs"] || !acting["WaitPolling"] || !acting["Attach"] {
		t.Fatalf("package ptrace's functions not found: %v", acting)
	}
	files := parse("*.go")
	if len(files) < 20 {
		t.Fatalf("%d files of package profile found", len(files))
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "ptrace" && acting[sel.Sel.Name] {
				t.Errorf("%s: ptrace.%s outside the process seam: call it through tracer.proc (process.go)", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
}
