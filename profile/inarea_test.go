package profile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"runtime"
	"slices"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/profile/layout"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// The counts of arm64 without LSE, in the threads' areas of the stack
// table (instr.CountInArea): the counters over areas, and the entries'
// trampolines that count into them.

// areaCounters returns counters of items counters in the areas of the
// stack table, at most areas of them, in shared memory as newCounters
// lays it out and places it (at a program address of its own), over a
// fake process of the host's architecture (whose stack pointer the
// tracer reads).
func areaCounters(t *testing.T, items, areas int) (*counters, *fakeProcess, *[]string) {
	t.Helper()
	l, size := layout.New(layout.Spec{Kind: instr.CountInArea, Items: items, ByTable: true, MaxBlocks: areas, DepthSlots: depthSlots})
	shared, err := ptrace.NewShared(int(size + guardSize))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shared.Close() })
	l.Place(0x7f12_3456_0000)
	arch, err := instr.ForName(runtime.GOARCH)
	if err != nil {
		t.Skip(err)
	}
	fp := newFakeProcess(arch, nil)
	warnings := &[]string{}
	env := counterEnv{proc: fp, arch: arch, pid: fakePID, threads: map[int]*thread{fakePID: {tid: fakePID, tgid: fakePID}},
		items: items, funcs: true, hits: make([]uint64, items),
		warn: func(d *prf.Diagnostic) { *warnings = append(*warnings, d.Error()) }}
	c := &counters{env: env, shared: shared, layout: l, next: 1, blockOf: map[int]int{}}
	c.writeGuard()
	return c, fp, warnings
}

// count adds n to counter k where the code of a thread at sp adds it:
// the address the count's code makes of the site (its areas' address
// and counter) and the stack table's entry for sp, not the layout's
// reading of an area.
func (c *counters) countAt(sp uint64, k int, n uint64) {
	s := c.layout.Site(k)
	table := c.layout.StackTable(c.shared.Bytes())
	addr := s.Areas + s.Counter + uint64(binary.LittleEndian.Uint32(table[4*instr.TableIndex(sp):]))
	mem := c.shared.Bytes()[addr-c.layout.ProgAddr:]
	binary.LittleEndian.PutUint64(mem, binary.LittleEndian.Uint64(mem)+n)
}

// TestCountsInAreas: each thread counts in the area its stack has, an
// area left by a thread that ended is given to the next with its counts
// kept, the threads on a stack no thread owns count in area 0, and a
// thread beyond the areas counts there too, warned about: the totals
// are the sums over every area, area 0 included.
func TestCountsInAreas(t *testing.T) {
	const (
		a, b, late, beyond = 101, 102, 103, 104
		stackA, stackB     = 0x7ff0_0000_8000, 0x7ff0_0010_8000 // (their tops)
		stray              = 0x7ff0_2000_0000                   // an alternate signal stack
	)
	c, _, warnings := areaCounters(t, 3, 3)
	if c.layout.CountAt() != instr.DepthAreaAlign || !c.keepsDepth() || c.layout.FirstCounted() != 0 {
		t.Fatalf("counters at %#x in an area, depth kept %v, counted from area %d: want after the depth area, kept, from area 0",
			c.layout.CountAt(), c.keepsDepth(), c.layout.FirstCounted())
	}
	give := func(tid int, top uint64) int {
		b, owned := c.take(tid, false)
		if owned {
			c.pointStack(top-0x8000, top-1, b, -1)
			c.stacks = map[int][2]uint64{b: {top - 0x8000, top - 1}}
		}
		return b
	}
	if give(a, stackA) != 1 || give(b, stackB) != 2 {
		t.Fatalf("areas %v, want 1 and 2", c.blockOf)
	}
	c.countAt(stackA-0x100, 0, 5)
	c.countAt(stackB-0x7f00, 0, 7)
	c.countAt(stackB-0x20, 2, 1)
	c.countAt(stray-0x40, 1, 3)
	c.threadEnded(a)
	if got := give(late, stackA); got != 1 {
		t.Fatalf("the late thread's area %d, want 1, the ended thread's", got)
	}
	c.countAt(stackA-0x4000, 0, 11)
	if got := give(beyond, 0x7ff0_0100_0000); got != 0 || !c.overflow {
		t.Fatalf("a thread beyond the areas: area %d, overflow %v; want area 0, warned", got, c.overflow)
	}
	c.countAt(0x7ff0_0100_0000-0x80, 2, 2)
	if got, want := c.totals(3), []uint64{5 + 7 + 11, 3, 1 + 2}; !slices.Equal(got, want) {
		t.Errorf("totals %v, want %v", got, want)
	}
	if got := c.layout.Count(c.shared.Bytes(), 1, 0); got != 16 {
		t.Errorf("area 1's first counter %d, want the ended thread's 5 and the late thread's 11", got)
	}
	c.ended()
	if !slices.Equal(c.env.hits, []uint64{23, 3, 3}) || len(*warnings) != 1 {
		t.Errorf("hits %v, warnings %q; want the totals, and the threads beyond warned about", c.env.hits, *warnings)
	}
	if c.layout.Stride%instr.DepthAreaAlign != 0 || (c.layout.ProgAddr+c.layout.AreasAt)%instr.DepthAreaAlign != 0 ||
		c.layout.Stride < instr.DepthAreaAlign+3*8 {
		t.Errorf("areas at %#x, %#x apart: want them aligned for the depth code, and room for the counters", c.layout.AreasAt, c.layout.Stride)
	}
}

// TestCountsInAreasWithoutDepth: function sampling keeps no call depth;
// the counters start the areas, which are a stack table's still.
func TestCountsInAreasWithoutDepth(t *testing.T) {
	l, _ := layout.New(layout.Spec{Kind: instr.CountInArea, Items: 5, MaxBlocks: 8, DepthSlots: depthSlots})
	l.Place(0x7f00_0000_0000)
	if !l.Table || l.KeepsDepth() || l.CountAt() != 0 || l.CounterRef(2) != 16 || !l.OwnParts() || l.PerThread() {
		t.Errorf("layout %+v: want areas of the table, no depth, the counters from the start", l)
	}
	if s := l.Site(1); s.Counter != 8 || s.Table != l.ProgAddr+l.TableAt || s.Areas != l.AreaAddr(0) {
		t.Errorf("site %+v, want counter 8 through the table at %#x, the areas at %#x", s, l.ProgAddr+l.TableAt, l.AreaAddr(0))
	}
}

// TestVforkInAreasDiscounted: a vfork child counts in the area of its
// stack, its waiting parent's, or area 0 for a stack of its own (as
// posix_spawn's child has), or in a Go program whose thread pointers
// PROFILE sets, its Go code, in the area the thread pointer it inherits
// holds, its parent's; what it adds is discounted when it leaves, its
// parent's counts kept.
func TestVforkInAreasDiscounted(t *testing.T) {
	const (
		parent, child = fakePID, fakePID + 1
		top           = 0x7ff0_0000_8000
	)
	for _, c := range []struct {
		name     string
		own, tp  bool
		childAdd func(c *counters, sp uint64, k int, n uint64)
	}{
		{"the parent's stack", false, false, (*counters).countAt},
		{"a stack of its own", true, false, (*counters).countAt},
		{"a goroutine's stack, through the thread pointer", true, true, func(c *counters, _ uint64, k int, n uint64) {
			at := c.layout.AreasAt + c.layout.Stride + c.layout.CounterRef(k)
			mem := c.shared.Bytes()[at:]
			binary.LittleEndian.PutUint64(mem, binary.LittleEndian.Uint64(mem)+n)
		}},
	} {
		cs, fp, _ := areaCounters(t, 2, 4)
		cs.env.threadPointer = c.tp
		b, _ := cs.take(parent, false)
		cs.pointStack(top-0x8000, top-1, b, -1)
		cs.countAt(top-0x100, 0, 4)
		sp := uint64(top - 0x800)
		if c.own {
			sp = 0x7ff0_1000_0000
		}
		cs.env.arch.SetSP(fp.reg(child), sp)
		fp.pointers = map[int]uint64{child: cs.layout.AreaAddr(b)}
		if err := cs.threadBorn(child, true); err != nil {
			t.Fatal(err)
		}
		c.childAdd(cs, sp-0x40, 0, 1)
		c.childAdd(cs, sp-0x40, 1, 2)
		cs.threadEnded(child)
		cs.countAt(top-0x100, 1, 3)
		if got := cs.totals(2); !slices.Equal(got, []uint64{4, 3}) {
			t.Errorf("%s: totals %v, want the parent's 4 and 3 alone", c.name, got)
		}
	}
}

// TestEntriesInAreas: counting in the threads' areas, a C function's
// entry jumps to a trampoline that counts in the thread's area (the
// region of its count's load and store rolled back), then keeps the
// call depth; a Go function's counts in the area its thread pointer
// holds, where PROFILE sets it (a Go program that has no other use for
// it), else keeps a breakpoint (its goroutine's stack is in no table),
// its reason said.
func TestEntriesInAreas(t *testing.T) {
	// stp x29, x30, [sp, #-16]!; mov x29, sp; mov w0, #0; ldp x29, x30, [sp], #16; ret
	fn := a64Code(0xa9bf7bfd, 0x910003fd, 0x52800000, 0xa8c17bfd, 0xd65f03c0)
	code := append(slices.Clone(fn), fn...)
	plan := &datafile.Plan{Method: datafile.FuncCounting, Modules: []datafile.Module{{Name: "prog", Arch: "arm64"}},
		Funcs: []datafile.Func{
			{Name: "f", Entry: leafAt, Low: leafAt, High: leafAt + 20},
			{Name: "main.g", Entry: leafAt + 20, Low: leafAt + 20, High: leafAt + 40, Frame: datafile.FrameGoroutine},
		}}
	for _, run := range []struct {
		tp     bool
		method datafile.Method
	}{{false, datafile.FuncCounting}, {false, datafile.FuncCoverage}, {true, datafile.FuncCounting}} {
		tp := run.tp
		plan.Method = run.method
		mem := &fakeMem{base: pieAt, b: append(slices.Clone(code), make([]byte, 64)...)}
		e, _ := testPlanter(plan, mem, fakeAreas(mem))
		e.arch = instr.ARM64
		e.scan = codeScan{code: codeMaps{instr.MapCode(instr.ARM64, code, pieAt, nil)}}
		l, _ := layout.New(layout.Spec{Kind: instr.CountInArea, Items: 2, ByTable: true, MaxBlocks: 8, DepthSlots: depthSlots})
		l.Place(0x7f00_0000_0000)
		c := &counters{env: counterEnv{threadPointer: tp}, layout: l, blockOf: map[int]int{}}
		var handed []int
		var once []bool
		et := newEntryTrampolines(plan, instr.ARM64, e, func(p *planting, item int, o bool) error {
			handed, once = append(handed, item), append(once, o)
			return nil
		})
		et.env.counters = c
		plantTwoAtPIE(t, e, et, c, false)
		c.sortTramps()
		if !tp && (et.patched != 1 || len(et.fellBack) != 1 || !errors.Is(et.fellBack[0].err, errGoArea) || !slices.Equal(handed, []int{1})) {
			t.Fatalf("%d patched, fall-backs %+v, handed %v; want f patched, main.g handed to the breakpoints (no table)", et.patched, et.fellBack, handed)
		}
		if !tp {
			if r := fallBackReason(et.fellBack[0].err); r != "Go function, no LSE" {
				t.Errorf("reason %q", r)
			}
			// (Covered, the breakpoint goes at its first hit, as
			// coverage by breakpoints takes them out.)
			if want := run.method.IsCoverage(); once[0] != want {
				t.Errorf("%v: main.g's breakpoint taken out at its first hit: %v, want %v", run.method, once[0], want)
			}
		}
		if tp && (et.patched != 2 || len(et.fellBack) != 0 || len(c.tramps) != 2) {
			t.Fatalf("thread pointer: %d patched, fall-backs %+v: want both", et.patched, et.fellBack)
		}
		tf := c.tramps[slices.IndexFunc(c.tramps, func(x *tramp) bool { return x.patch.Site == pieAt })]
		count := et.entryCount(0)
		depth, _ := instr.ARM64.DepthCode(l.Depth(false))
		if !bytes.HasPrefix(tf.code.Code, append(slices.Clone(count.Code), depth.Code...)) || len(count.Rollback) != 1 {
			t.Errorf("trampoline % x, want f's count in its area, then the call depth", tf.code.Code)
		}
		want := []region{{at: 0, rollback: count.Rollback}, {at: len(count.Code), rollback: depth.Rollback}}
		if !reflect.DeepEqual(tf.regions, want) {
			t.Errorf("regions %+v, want the count's and the depth's %+v", tf.regions, want)
		}
		if tp {
			tg := c.tramps[slices.IndexFunc(c.tramps, func(x *tramp) bool { return x.patch.Site == pieAt+20 })]
			s := l.Site(1)
			s.GoStack, s.ThreadPointer = true, true
			goCount, _ := instr.ARM64.EntryCount(instr.CountInArea, s)
			if !bytes.HasPrefix(tg.code.Code, goCount.Code) || !reflect.DeepEqual(tg.regions, []region{{at: 0, rollback: goCount.Rollback}}) {
				t.Errorf("main.g's trampoline % x, regions %+v: want its count through the thread pointer, and no depth", tg.code.Code, tg.regions)
			}
		}
		if !c.rolls() || !et.entryScratch(0) {
			t.Errorf("rolls %v, scratch %v: want a thread rolled out of a count in its area, x16 and x17 used", c.rolls(), et.entryScratch(0))
		}
	}
}
