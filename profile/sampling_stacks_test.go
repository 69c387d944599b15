package profile

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/profile/books"
	"github.com/sourceprofiler/sprof/profile/procmaps"
	"github.com/sourceprofiler/sprof/profile/ptrace"
	"github.com/sourceprofiler/sprof/profile/unwind"
)

// TestStackTallyFigures books chains of known samples: main calls f, f
// calls g and itself, g calls code no function holds. Each chain is a
// caller stack keyed as /AT keys the calls of the same chain (so that
// PLIST follows them as it follows /AT's), with its function's own
// samples and those with children; a function's time with children
// counts each sample once however often it recurs on the stack; the
// samples of unprofiled code count in their callers' times with
// children only.
func TestStackTallyFigures(t *testing.T) {
	const main, f, g = 0, 1, 2
	plan := &datafile.Plan{Method: datafile.FuncSampling, StackDepth: 0,
		Funcs: []datafile.Func{{Name: "main"}, {Name: "f"}, {Name: "g"}}}
	const iv = 1000
	tl := newStackTally(nil)
	samples := []struct {
		fn    int   // -1: outside
		stack []int // the profiled functions, innermost first
		n     int
	}{
		{main, []int{main}, 2},
		{f, []int{f, main}, 10},
		{f, []int{f, f, main}, 5},
		{g, []int{g, f, f, main}, 7},
		{g, []int{g, f, main}, 3},
		{-1, []int{-1, g, f, main}, 4}, // (in code g called: outside)
		{-1, []int{-1}, 6},             // outside, no profiled caller
	}
	for _, s := range samples {
		for range s.n {
			tl.count(s.fn, slices.Clone(s.stack), 1, false)
		}
	}
	tl.taken, tl.cut = 37, 1
	var st datafile.Stats
	tl.figures(&st, plan, iv)

	if want := []int64{31 * iv, 29 * iv, 14 * iv}; !slices.Equal(st.ChildTime, want) {
		t.Errorf("time with children %v, want %v", st.ChildTime, want)
	}
	if st.Sampling.Stacks != 37 || st.Sampling.StacksCut != 1 {
		t.Errorf("stacks %d, cut %d, want 37 and 1", st.Sampling.Stacks, st.Sampling.StacksCut)
	}
	// The stacks, against /AT's of the same calls.
	at := *plan
	at.Attribution = true
	bk := books.New(&at)
	type id struct {
		fn  int
		key uint64
	}
	want := map[id][2]int64{} // time, time with children
	for _, w := range []struct {
		path      []int
		self, all int64
	}{
		{[]int{main}, 2, 31},
		{[]int{main, f}, 10, 29},
		{[]int{main, f, f}, 5, 12},
		{[]int{main, f, f, g}, 7, 7},
		{[]int{main, f, g}, 3, 7},
	} {
		i := bk.StackFor(w.path)
		want[id{w.path[len(w.path)-1], bk.Stacks()[i].Key}] = [2]int64{w.self * iv, w.all * iv}
	}
	atStacks := bk.Stacks()
	if len(st.Stacks) != len(want) {
		t.Fatalf("%d stacks, want %d: %+v", len(st.Stacks), len(want), st.Stacks)
	}
	for _, s := range st.Stacks {
		w, ok := want[id{s.Func, s.Key}]
		if !ok {
			t.Errorf("stack %+v: no /AT stack has its key", s)
			continue
		}
		if got := [2]int64{s.Time, s.ChildTime}; got != w || s.Hits != 0 {
			t.Errorf("stack of function %d, key %#x: time and with children %v, %d hits, want %v and none", s.Func, s.Key, got, s.Hits, w)
		}
		for _, a := range atStacks {
			if a.Key == s.Key && a.Func == s.Func && (!slices.Equal(a.Callers, s.Callers) || a.CallerKey != s.CallerKey) {
				t.Errorf("stack %+v, /AT's %+v", s, a)
			}
		}
	}
}

// TestStackTallyTake unwinds samples whose stacks cannot be: one without
// the registers (a thread the kernel had none of) and one in code no
// mapping holds. Each is counted as cut, by reason, its chain its own
// function alone; the warning names the reasons.
func TestStackTallyTake(t *testing.T) {
	plan := samplingPlan()
	places := (&placeTable{}).with(plan, 0, 0, 0x1000, 0x2000, nil)
	reads := 0
	frames := newFrameModules(func() ([]procmaps.Mapping, error) { reads++; return nil, nil }, runtime.GOARCH)
	tl := newStackTally(frames)
	tl.take(places, &ptrace.Sample{PC: 0x1010}, 0, 1)
	tl.take(places, &ptrace.Sample{PC: 0x1110, Regs: true, SP: 0x7ff000, Stack: make([]byte, 64)}, 1, 1)
	tl.take(places, &ptrace.Sample{PC: 0x1110, Regs: true, SP: 0x7ff000}, 1, 1)
	if reads != 1 {
		t.Errorf("the map read %d times before the rings' end, want 1", reads)
	}
	frames.drained()
	tl.take(places, &ptrace.Sample{PC: 0x1110, Regs: true, SP: 0x7ff000}, 1, 3) // (the ptrace sampler's, weighing 3 intervals)
	if reads != 2 {
		t.Errorf("the map read %d times after the rings' end, want 2", reads)
	}
	if tl.taken != 6 || tl.cut != 6 || tl.cutBy[unwind.StopBadRegs] != 1 || tl.cutBy[unwind.StopNoModule] != 5 {
		t.Errorf("taken %d, cut %d by %v", tl.taken, tl.cut, tl.cutBy)
	}
	var st datafile.Stats
	tl.figures(&st, plan, 1)
	if want := []int64{1, 5, 0, 0}; !slices.Equal(st.ChildTime, want) {
		t.Errorf("time with children %v, want %v", st.ChildTime, want)
	}
	var warned []*prf.Diagnostic
	tl.warn(func(d *prf.Diagnostic) { warned = append(warned, d) })
	if len(warned) != 1 || warned[0].Code != 4685 || warned[0].Text != "6 of 6 sampled stacks were not unwound to their end (no module 5, bad registers 1): their outermost profiled function is shown at the stack base" {
		t.Errorf("warnings %v", warned)
	}
}

// TestPlaceOrigin maps a program counter in a trampoline to the
// instruction of the function it carries: the call frame information
// there is the function's.
func TestPlaceOrigin(t *testing.T) {
	plan := samplingPlan()
	tr := &tramp{addr: 0x9000, patch: instr.Patch{Site: 0x1100}}
	tr.code.Code = make([]byte, 0x30)
	tr.code.PCs = []instr.PCMap{{Tramp: 0x9020, Orig: 0x1100}, {Tramp: 0x9024, Orig: 0x1104}}
	p := (&placeTable{}).with(plan, 0, 0, 0x1000, 0x2000, []*tramp{tr})
	for pc, want := range map[uint64]uint64{0x9020: 0x1100, 0x9024: 0x1104, 0x9028: 0x1104, 0x1010: 0x1010, 0x9010: 0x9010, 0x5000: 0x5000} {
		if got := p.origin(pc); got != want {
			t.Errorf("origin of %#x: %#x, want %#x", pc, got, want)
		}
	}
}

// TestFrameModules finds the call frame information of a C program's
// C library through its memory map: loaded once, found again without a
// reading, and in another mapping of the same instance (its code split in
// two, as an mprotect splits it) the same module; code no file holds has
// none, and looking for it reads the map again once between two readings
// of the rings.
func TestFrameModules(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	maps := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/maps"
	reads := 0
	var libc procmaps.Mapping
	f := newFrameModules(func() ([]procmaps.Mapping, error) {
		reads++
		data, err := os.ReadFile(maps)
		if err != nil {
			return nil, err
		}
		all, err := procmaps.Parse(data)
		var split []procmaps.Mapping
		for _, m := range all {
			if strings.Contains(m.Perms, "x") && strings.Contains(m.Path, "libc.so") {
				libc = m
				half := (m.End - m.Start) / 2 &^ 0xfff
				first, second := m, m
				first.End, second.Start, second.Offset = m.Start+half, m.Start+half, m.Offset+half
				split = append(split, first, second)
				continue
			}
			split = append(split, m)
		}
		return split, err
	}, runtime.GOARCH)
	defer f.close()
	for deadline := time.Now().Add(10 * time.Second); libc.Path == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		f.drained()
		f.find(0x10) // (sleep's libc is mapped once the dynamic linker ran)
	}
	if libc.Path == "" {
		t.Skip("sleep maps no libc.so")
	}
	reads = 0
	pc := libc.Start + (libc.End-libc.Start)/4
	m := f.find(pc)
	if m == nil || m.FDEs() < 100 {
		t.Fatalf("no call frame information at %#x in %s (%d loads, %d failed)", pc, libc.Path, f.loads, f.failed)
	}
	if f.find(pc+4) != m || f.find(libc.End-16) != m || f.loads != 1 || reads != 0 {
		t.Errorf("found again, and in the second mapping: %d loads, %d readings, want 1 and 0", f.loads, reads)
	}
	if f.find(0x10) != nil {
		t.Error("call frame information at 0x10")
	}
	if reads != 0 {
		t.Errorf("%d readings before the rings' end, want 0", reads)
	}
	f.drained()
	f.find(0x10)
	if reads != 1 {
		t.Errorf("%d readings after it, want 1", reads)
	}
}

// TestStacklessThreads: a thread the kernel refuses a ring of stacks is
// sampled without its stack, and counted for a warning at the end
// (PRF4686); the others' rings take the stack.
func TestStacklessThreads(t *testing.T) {
	var warned []*prf.Diagnostic
	s := newSampler(samplerEnv{plan: samplingPlan(), warn: func(d *prf.Diagnostic) { warned = append(warned, d) }}, time.Millisecond)
	rings := &fakeSampleRings{rings: map[int]*fakeSampleRing{}, noStacks: map[int]bool{102: true}}
	s.open = rings.open
	s.stacks.tally = newStackTally(newFrameModules(func() ([]procmaps.Mapping, error) { return nil, errors.New("none") }, runtime.GOARCH))
	for _, tid := range []int{101, 102} {
		if err := s.openPerf(tid); err != nil {
			t.Fatal(err)
		}
	}
	if rings.options[101].Stack != stackCopy || rings.options[102].Stack != 0 {
		t.Errorf("options %+v", rings.options)
	}
	s.ended()
	if len(warned) != 1 || warned[0].Code != 4686 {
		t.Errorf("warnings %v, want one PRF4686", warned)
	}
}

// TestFrameModulesVDSO loads the call frame information of this
// process's vDSO from its memory, and finds it at a program counter in
// the vDSO, as a file's (where the kernel built the vDSO with it).
func TestFrameModulesVDSO(t *testing.T) {
	read := func() ([]procmaps.Mapping, error) {
		data, err := os.ReadFile("/proc/self/maps")
		if err != nil {
			return nil, err
		}
		return procmaps.Parse(data)
	}
	maps, err := read()
	if err != nil {
		t.Skip(err)
	}
	mem, err := os.Open("/proc/self/mem")
	if err != nil {
		t.Skip(err)
	}
	defer mem.Close()
	f := newFrameModules(read, runtime.GOARCH)
	f.loadVDSO(maps, func(addr uint64, b []byte) error { _, err := mem.ReadAt(b, int64(addr)); return err })
	if f.loads != 1 {
		t.Fatalf("%d loads, want the vDSO's", f.loads)
	}
	if f.failed == 1 {
		t.Skip("the vDSO has no call frame information (Debian's arm64)")
	}
	for _, m := range maps {
		if m.Path == vdsoPath && strings.Contains(m.Perms, "x") {
			found := false
			for pc := m.Start; pc < m.End && !found; pc += 4 {
				if mod := f.find(pc); mod != nil && mod.Covers(pc) {
					found = true
				}
			}
			if !found || f.loads != 1 {
				t.Errorf("no call frame information found in the vDSO at %#x-%#x (%d loads)", m.Start, m.End, f.loads)
			}
			return
		}
	}
	t.Error("no vDSO in the map")
}

// TestContinued continues an unwinding with the frame pointers' chain,
// from the first return address the unwinding found: where the chain has
// it and goes further, its rest follows, the stack ended (or cut at the
// chain's limit): past the copy, past a switch of stacks; where it does
// not, or the unwinding found no return address (a leaf's caller would
// be lost), nothing changes.
func TestContinued(t *testing.T) {
	long := make([]uint64, ptrace.MaxCallchain-1)
	for i := range long {
		long[i] = 0x5000 + uint64(i)
	}
	for _, c := range []struct {
		name     string
		pcs      []uint64
		chain    []uint64
		want     []uint64
		wantStop unwind.Stop
	}{
		{"continued", []uint64{0x1000, 0x2000, 0x3000}, []uint64{0x2000, 0x3000, 0x4000, 0x4100}, []uint64{0x1000, 0x2000, 0x3000, 0x4000, 0x4100}, unwind.StopEnd},
		{"ends there", []uint64{0x1000, 0x2000}, []uint64{0x2000}, []uint64{0x1000, 0x2000}, unwind.StopEnd},
		{"not in the chain", []uint64{0x1000, 0x2000}, []uint64{0x2100, 0x4000}, []uint64{0x1000, 0x2000}, unwind.StopOutsideStack},
		{"found only deeper", []uint64{0x1000, 0x2000, 0x3000, 0x4000}, []uint64{0x4000, 0x5000}, []uint64{0x1000, 0x2000, 0x3000, 0x4000}, unwind.StopOutsideStack},
		{"a leaf without a frame", []uint64{0x1000, 0x2000, 0x3000}, []uint64{0x3000, 0x4000}, []uint64{0x1000, 0x2000, 0x3000, 0x4000}, unwind.StopEnd},
		{"unwound further", []uint64{0x1000, 0x2000, 0x3000, 0x3100}, []uint64{0x2000, 0x3000}, []uint64{0x1000, 0x2000, 0x3000, 0x3100}, unwind.StopOutsideStack},
		{"no return address", []uint64{0x1000}, []uint64{0x1000, 0x4000}, []uint64{0x1000}, unwind.StopOutsideStack},
		{"no chain", []uint64{0x1000, 0x2000}, nil, []uint64{0x1000, 0x2000}, unwind.StopOutsideStack},
		{"chain at its limit", []uint64{0x1000, 0x5000}, long, append([]uint64{0x1000}, long...), unwind.StopMaxFrames},
	} {
		pcs, stop := continued(slices.Clone(c.pcs), unwind.StopOutsideStack, c.chain)
		if !slices.Equal(pcs, c.want) || stop != c.wantStop {
			t.Errorf("%s: %x, %v; want %x, %v", c.name, pcs, stop, c.want, c.wantStop)
		}
	}
	// Past the chain's end to a return address in no module: the
	// chain's end is the stack's; not where the chain goes on, nor for
	// another stop.
	past := []uint64{0x1000, 0x2000, 0x3000, 0x7fff0000}
	if pcs, stop := continued(slices.Clone(past), unwind.StopNoModule, []uint64{0x2000, 0x3000}); !slices.Equal(pcs, past[:3]) || stop != unwind.StopEnd {
		t.Errorf("past the chain's end: %x, %v", pcs, stop)
	}
	if pcs, stop := continued(slices.Clone(past), unwind.StopNoModule, []uint64{0x2000, 0x3000, 0x4000}); !slices.Equal(pcs, []uint64{0x1000, 0x2000, 0x3000, 0x4000}) || stop != unwind.StopEnd {
		t.Errorf("a chain that goes on: %x, %v", pcs, stop)
	}
	if pcs, stop := continued(slices.Clone(past), unwind.StopBadCFI, []uint64{0x2000, 0x3000}); !slices.Equal(pcs, past) || stop != unwind.StopBadCFI {
		t.Errorf("another stop: %x, %v", pcs, stop)
	}
	// An unwinding that ended (a switch of stacks, whose frame pointers
	// go on) is continued where the chain goes further, and not where
	// it does not.
	ended := []uint64{0x1000, 0x2000, 0x3000}
	if pcs, stop := continued(slices.Clone(ended), unwind.StopEnd, []uint64{0x2000, 0x3000, 0x9000}); !slices.Equal(pcs, []uint64{0x1000, 0x2000, 0x3000, 0x9000}) || stop != unwind.StopEnd {
		t.Errorf("a switch of stacks: %x, %v", pcs, stop)
	}
	if pcs, stop := continued(slices.Clone(ended), unwind.StopEnd, []uint64{0x2000, 0x3000}); !slices.Equal(pcs, ended) || stop != unwind.StopEnd {
		t.Errorf("an unwinding that ended with the chain: %x, %v", pcs, stop)
	}
}

// regionMem is memory from lo to hi, each byte its address's low byte:
// a read that reaches outside fails whole, as /proc/PID/mem's does at
// an unmapped page.
type regionMem struct{ lo, hi uint64 }

func (m regionMem) ReadMem(addr uint64, b []byte) error {
	if addr < m.lo || addr+uint64(len(b)) > m.hi {
		return errors.New("unmapped")
	}
	for i := range b {
		b[i] = byte(addr + uint64(i))
	}
	return nil
}
func (regionMem) WriteMem(uint64, []byte) error { return errors.New("read-only") }
func (regionMem) Close() error                  { return nil }

// TestStopSample copies a thread stopped by the ptrace sampler: its
// registers, and its stack from the stack pointer up, stackCopy bytes
// where the memory holds them, else as far as it goes (to the end of its
// last page).
func TestStopSample(t *testing.T) {
	var regs ptrace.Regs
	pc, sp := uint64(0x401000), uint64(0x7fff0000_1238)
	regs.SetPC(pc)
	regs.SetReg(unwindSP(), sp)
	for _, c := range []struct {
		name string
		hi   uint64
		want int
	}{
		{"whole", sp + 2*stackCopy, stackCopy},
		{"to the stack's end", (sp + 0x1000) &^ 0xfff, int((sp+0x1000)&^0xfff - sp)},
		{"nothing mapped", sp, 0},
	} {
		k := stackSampling{mem: regionMem{lo: sp &^ 0xfff, hi: c.hi}}
		sm := k.stopSample(&fakeProcess{}, 1, &regs)
		if !sm.Regs || sm.PC != pc || sm.SP != sp || len(sm.Stack) != c.want {
			t.Errorf("%s: PC %#x, SP %#x, %d bytes of stack; want %#x, %#x, %d", c.name, sm.PC, sm.SP, len(sm.Stack), pc, sp, c.want)
			continue
		}
		for i, b := range sm.Stack {
			if b != byte(sp+uint64(i)) {
				t.Fatalf("%s: byte %d of the copy is %#x, want %#x", c.name, i, b, byte(sp+uint64(i)))
			}
		}
	}
}

// unwindSP is the DWARF number of the host's stack pointer, which
// ptrace.Regs.SetReg takes.
func unwindSP() int { return map[string]int{"amd64": 7, "arm64": 31}[runtime.GOARCH] }

// TestPtraceRoundRereadsMap: the ptrace sampler lets the memory map be
// read again once a round, as the perf sampler does once a reading of its
// rings: a program whose first samples came before the dynamic linker
// mapped its libraries (under emulation) has their call frame
// information from the next round on.
func TestPtraceRoundRereadsMap(t *testing.T) {
	s := newSampler(samplerEnv{plan: samplingPlan(), threads: map[int]*thread{}, warn: func(*prf.Diagnostic) {}}, time.Millisecond)
	s.kind = datafile.PtraceSampler
	reads := 0
	frames := newFrameModules(func() ([]procmaps.Mapping, error) { reads++; return nil, nil }, runtime.GOARCH)
	s.stacks.tally = newStackTally(frames)
	frames.find(0x1000)
	frames.find(0x1000)
	if reads != 1 {
		t.Fatalf("%d readings before a round, want 1", reads)
	}
	s.interruptAll()
	frames.find(0x1000)
	if reads != 2 {
		t.Errorf("%d readings after a round, want 2", reads)
	}
}

// TestKeptMap: the stacks' memory map is read as the sampling starts,
// and again at the exit stop of the program's last thread, which stands
// once the process has none (gone before its samples were read): a
// program counter in a library loaded since is found in its mapping. A
// map that was never read is an error.
func TestKeptMap(t *testing.T) {
	fp := newFakeProcess(instr.AMD64, &fakeMem{})
	fp.maps = "00400000-00401000 r-xp 00000000 08:01 42 /opt/prog\n"
	s := newSampler(samplerEnv{plan: samplingPlan(), proc: fp, arch: "amd64"}, time.Millisecond)
	s.startStacks(fakePID)
	if s.stacks.maps == nil || s.stacks.tally == nil {
		t.Fatal("no map kept")
	}
	frames := s.stacks.tally.frames
	if _, ok := frames.span(0x400800); !ok {
		t.Error("the program's code not known from the start")
	}
	// A library loaded since; its last thread's exit stop; the process
	// gone; its samples read at the end.
	fp.maps += "7f0000000000-7f0000010000 r-xp 00000000 08:01 43 /opt/lib.so\n"
	s.lastMap()
	fp.maps = ""
	frames.reread()
	if _, ok := frames.span(0x7f0000000800); !ok {
		t.Error("the library's code unknown once the process is gone")
	}
	if _, ok := frames.span(0x400800); !ok {
		t.Error("the program's code unknown once the process is gone")
	}
	empty := &keptMap{mm: fakeMapsFile{fp}}
	if _, err := empty.read(); err == nil {
		t.Error("a map never read: no error")
	}
}
