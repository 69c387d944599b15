package profile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"syscall"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// The parts of planting over their own narrow environments, no tracer:
// the planting engine over a memory and a way to map areas, the injector
// over a fake process, the modules over a memory, the capabilities over
// a plan.

// countingMem is a memory that counts its writes.
type countingMem struct {
	*fakeMem
	writes int
}

func (m *countingMem) WriteMem(addr uint64, b []byte) error {
	m.writes++
	return m.fakeMem.WriteMem(addr, b)
}

// testPlanter returns a planter of plan over mem, whose areas are mapped
// by mapArea, with its warnings.
func testPlanter(plan *datafile.Plan, mem instr.Memory, mapArea func(hint, size uint64) (uint64, error)) (*planter, *[]int) {
	var warned []int
	e := &planter{arch: instr.AMD64, plan: plan, mem: &mem, warn: func(d *prf.Diagnostic) { warned = append(warned, d.Code) },
		mapArea: mapArea, pageSize: 4096, areas: map[uint64][][2]uint64{}}
	return e, &warned
}

// TestPlanterAreas: the area next to a module is asked for within reach
// of its code and noted with the module's instance, to be unmapped with
// it; where none can be mapped, the planter warns (PRF4644) and the area
// is not mapped.
func TestPlanterAreas(t *testing.T) {
	var asked [][2]uint64
	mapped := func(hint, size uint64) (uint64, error) {
		asked = append(asked, [2]uint64{hint, size})
		return hint, nil
	}
	e, warned := testPlanter(leafFuncs(datafile.FuncCounting), &fakeMem{base: leafAt, b: slices.Clone(leafCode)}, mapped)
	a := e.areaNear(leafInstance(), leafMaps, 100)
	if !a.mapped() || len(asked) != 1 || asked[0][1] != 4096 || len(*warned) != 0 {
		t.Fatalf("area at %#x, asked for %#x, warned %v; want one page mapped", a.base, asked, *warned)
	}
	if d := int64(leafAt) - int64(a.base); d <= 0 || d > 100<<20 {
		t.Errorf("area at %#x, %d bytes below the module: want it below, within reach", a.base, d)
	}
	if got := e.areas[leafAt]; !slices.Equal(got, [][2]uint64{{a.base, 4096}}) {
		t.Errorf("areas of the instance %#x, want the one mapped", got)
	}

	refused := func(uint64, uint64) (uint64, error) { return 0, errors.New("no room") }
	e, warned = testPlanter(leafFuncs(datafile.FuncCounting), &fakeMem{base: leafAt, b: slices.Clone(leafCode)}, refused)
	if a := e.areaNear(leafInstance(), leafMaps, 100); a.mapped() || !slices.Equal(*warned, []int{4644}) || len(e.areas) != 0 {
		t.Errorf("area mapped %v, warned %v, areas %v; want none mapped, PRF4644", a.mapped(), *warned, e.areas)
	}
}

// TestPlanterWrites: spans close together are written in one write,
// filled with the code between them as read; one far from them in
// another. A read of code at the end of a mapping reads what there is and
// zeroes the rest.
func TestPlanterWrites(t *testing.T) {
	code := bytes.Repeat([]byte{0x90}, 0x3000)
	mem := &countingMem{fakeMem: &fakeMem{base: leafAt, b: code}}
	e, _ := testPlanter(leafFuncs(datafile.FuncCounting), mem, nil)
	text := moduleText{start: leafAt, b: slices.Clone(code)}
	spans := []span{{leafAt + 0x2800, []byte{0xcc}}, {leafAt + 4, []byte{0xcc}}, {leafAt, []byte{0xe9, 1, 2, 3, 4}}}
	if err := e.writeCode(text, spans); err != nil {
		t.Fatal(err)
	}
	if mem.writes != 2 {
		t.Errorf("%d writes, want 2: one for the two spans close together, one for the far one", mem.writes)
	}
	want := slices.Clone(code)
	copy(want, []byte{0xe9, 1, 2, 3, 0xcc})
	want[0x2800] = 0xcc
	if !bytes.Equal(code, want) {
		t.Errorf("code after the writes differs from the spans written over it")
	}

	b := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	if err := e.readCode(leafAt+0x3000-8, b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, append(bytes.Repeat([]byte{0x90}, 8), make([]byte, 8)...)) {
		t.Errorf("read at the mapping's end % x, want its last 8 bytes and zeroes", b)
	}
}

// testInjector is an injector of the fake process, its thread fakePID
// stopped in leafCode (fm), which holds no signal and was not attached to.
func testInjector() (*injector, *fakeProcess, *fakeMem) {
	fm := &fakeMem{base: leafAt, b: slices.Clone(leafCode)}
	var proc process = newFakeProcess(instr.AMD64, fm)
	fp := proc.(*fakeProcess)
	pid := fakePID
	fp.reg(pid).SetPC(leafAt + 4)
	var mem instr.Memory = fm
	return &injector{arch: instr.AMD64, proc: &proc, pid: &pid, mem: &mem, warn: func(*prf.Diagnostic) {},
		attached: func() bool { return false }, consumed: func(int) {}, held: func(int, ptrace.WaitStatus) bool { return false }}, fp, fm
}

// TestInjectorBorrows: a run of system calls borrows the stopped thread
// once; meanwhile, the program's memory as every part reads it holds the
// program's own bytes where the system call instruction was written, and
// after it the thread's instruction, its registers and the memory are as
// they were.
func TestInjectorBorrows(t *testing.T) {
	j, fp, fm := testInjector()
	pid, mem := fakePID, j.mem
	saved := *fp.reg(pid)
	var areas []uint64
	err := j.withCalls(j.setupThread(), func() error {
		if _, ok := (*mem).(borrowedMem); !ok {
			t.Errorf("memory during the calls %T, want borrowedMem", *mem)
		}
		got := make([]byte, len(leafCode))
		if err := (*mem).ReadMem(leafAt, got); err != nil || !bytes.Equal(got, leafCode) {
			t.Errorf("code read during the calls % x, %v; want the program's own", got, err)
		}
		for range 2 {
			addr, err := j.mmap(0, 0x1000)
			if err != nil {
				return err
			}
			areas = append(areas, addr)
		}
		return nil
	})
	if err != nil || len(areas) != 2 || areas[0] == areas[1] {
		t.Fatalf("areas %#x, %v; want two", areas, err)
	}
	if *mem != instr.Memory(fm) || !bytes.Equal(fm.b, leafCode) || *fp.reg(pid) != saved || j.run != nil {
		t.Errorf("after the calls: memory %T, code % x, registers changed %v; want them as they were", *mem, fm.b, *fp.reg(pid) != saved)
	}
	if n := len(slices.DeleteFunc(fp.acts(), func(c string) bool { return c != "step 8388608" })); n != 2 {
		t.Errorf("%d steps, want one for each call", n)
	}
}

// TestInjectorStepHeld: a signal that a thread takes as the injector
// steps it, and that the run holds for the thread (an attachment's
// SIGSTOP sent before PROFILE attached: attachment.heldStop), is not the
// step's end: the step is made again, and ends at its SIGTRAP.
func TestInjectorStepHeld(t *testing.T) {
	j, fp, _ := testInjector()
	pid := fakePID
	var held []ptrace.WaitStatus
	j.attached = func() bool { return true }
	j.held = func(tid int, ws ptrace.WaitStatus) bool {
		held = append(held, ws)
		return ws.StopSignal() == syscall.SIGSTOP
	}
	fp.script = []fakeEvent{{tid: pid, ws: stoppedBy(syscall.SIGSTOP)}, {tid: pid, ws: stoppedBy(syscall.SIGTRAP)}}
	ws, err := j.stepOnce(pid)
	if err != nil || ws != stoppedBy(syscall.SIGTRAP) {
		t.Fatalf("step ended with %v, %v; want its SIGTRAP", ws, err)
	}
	if !slices.Equal(held, []ptrace.WaitStatus{stoppedBy(syscall.SIGSTOP), stoppedBy(syscall.SIGTRAP)}) {
		t.Errorf("offered to hold %v, want the SIGSTOP and then the SIGTRAP", held)
	}
	if n := len(slices.DeleteFunc(fp.acts(), func(c string) bool { return c != "step 8388608" })); n != 2 {
		t.Errorf("%d steps, want 2: the SIGSTOP held, the step made again", n)
	}
}

// TestModulesConsistent: the dynamic linker's list of objects is read
// as consistent when r_debug's state word says so, when it cannot be
// read, or when there is none (musl); not while it adds or deletes.
func TestModulesConsistent(t *testing.T) {
	const at = 0x7000
	fm := &fakeMem{base: at, b: make([]byte, 32)}
	var mem instr.Memory = fm
	m := &modules{mem: &mem}
	for _, c := range []struct {
		state uint64
		word  uint32
		want  bool
	}{
		{0, 1, true},
		{at + rStateOffset, rtConsistent, true},
		{at + rStateOffset, 1, false}, // RT_ADD
		{at + rStateOffset, 2, false}, // RT_DELETE
		{at + 0x1000, 1, true},        // unreadable
	} {
		binary.LittleEndian.PutUint32(fm.b[rStateOffset:], c.word)
		m.rdv = rendezvous{brk: at, state: c.state}
		if got := m.consistent(); got != c.want {
			t.Errorf("state word at %#x holding %d: consistent %v, want %v", c.state, c.word, got, c.want)
		}
	}
}

// TestProbeCaps: the capabilities are what the architecture and the plan
// allow: Go's depth keys where the plan has goroutine frames; the thread
// pointer only where the architecture's Go records need it and the
// program leaves it free (no program here: not free); and the ring of a
// Go function's record code is a goroutine's.
func TestProbeCaps(t *testing.T) {
	goPlan := &datafile.Plan{Funcs: []datafile.Func{{Name: "main.f", File: "f.go", Frame: datafile.FrameGoroutine}}}
	cPlan := &datafile.Plan{Funcs: []datafile.Func{{Name: "f", File: "f.c", Frame: datafile.FrameSP}}}
	for _, arch := range []instr.Arch{instr.AMD64, instr.ARM64} {
		_, goRing := arch.RecordCode(instr.Ring{Records: ringRecords, Table: 1, Goroutine: true}, 0)
		for _, c := range []struct {
			plan    *datafile.Plan
			goDepth bool
		}{{goPlan, true}, {cPlan, false}} {
			got := probeCaps(arch, c.plan, "/nonexistent")
			if want := (caps{goRing: goRing, goDepth: c.goDepth}); got != want {
				t.Errorf("%s, %s: caps %+v, want %+v", arch.Name(), c.plan.Funcs[0].Name, got, want)
			}
		}
	}
	c := caps{threadPointer: true}
	base := instr.Ring{Records: ringRecords}
	if r := c.recordRing(base, &goPlan.Funcs[0]); !r.Goroutine || !r.ThreadPointer {
		t.Errorf("a Go function's ring %+v, want a goroutine's through the thread pointer", r)
	}
	if r := c.recordRing(base, &cPlan.Funcs[0]); r.Goroutine || r.ThreadPointer {
		t.Errorf("a C function's ring %+v, want the thread's", r)
	}
}
