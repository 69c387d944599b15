package profile

import (
	"debug/elf"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/elfid"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/internal/testutil"
	"github.com/sourceprofiler/sprof/prep"
	"github.com/sourceprofiler/sprof/profile/layout"
	"github.com/sourceprofiler/sprof/profile/procmaps"
)

// hostLibc are the C libraries of each architecture on this machine (the
// host's, and the arm64 cross compiler's).
var hostLibc = map[string]string{
	"amd64": "/lib/x86_64-linux-gnu/libc.so.6",
	"arm64": "/usr/aarch64-linux-gnu/lib/libc.so.6",
}

// TestPatchRuleRealPrograms: every patch PROFILE plants in programs no
// one here wrote (Lua 5.4 and zstd built from Debian's sources, the C
// library), every line of Lua and zstd and every function entry of the
// three, on x86-64 and arm64, keeps the rule of instr.Layout: each
// instruction of their code is as it was, or begins a jump to a
// trampoline that runs it, and no byte that may be data changed
// (instr.VerifyPatched, over a fake memory: the program is loaded, as a
// PIE program or a library is, and planted, not run). And almost every
// site takes a jump: at most 1 in 200 keeps a breakpoint. Loaded low, as
// a program not PIE is (its jumps cannot land below address 0), the rule
// holds too, and at most 1 site in 20 keeps a breakpoint.
func TestPatchRuleRealPrograms(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Lua and zstd (scripts/real-programs) the first time")
	}
	for _, arch := range []string{"amd64", "arm64"} {
		for _, name := range []string{"lua", "zstd", "libc"} {
			for _, method := range []datafile.Method{datafile.FuncCounting, datafile.LineCounting} {
				if name == "libc" && !method.IsFunction() {
					continue // (no debugging information)
				}
				for _, load := range []struct {
					name        string
					bias        uint64
					perFallBack int
				}{{"pie", pieBias[arch], 200}, {"low", 0x400000, 20}} {
					if load.name == "low" && name == "libc" {
						continue
					}
					t.Run(fmt.Sprintf("%s/%s/%v/%s", arch, name, method, load.name), func(t *testing.T) {
						path := hostLibc[arch]
						if name != "libc" {
							path = testutil.RealProgram(t, arch, name)
						}
						checkPatchRule(t, path, method, load.bias, load.perFallBack)
					})
				}
			}
		}
	}
}

// pieBias is where Linux loads a PIE program: on arm64 above x86-64's
// whole user space (a layout that took x86-64's top for arm64's planted
// no entry of an arm64 PIE in-process).
var pieBias = map[string]uint64{"amd64": 0x555555554000, "arm64": 0xaaaaaaaa0000}

// checkPatchRule plants the plan of method for the program at path in
// a fake memory and checks the patched code against the rule.
func checkPatchRule(t *testing.T, path string, method datafile.Method, bias uint64, perFallBack int) {
	plan, err := prep.BuildPlan(prep.Options{Method: method, Programs: []string{path}, Calibration: -1})
	if err != nil {
		t.Skipf("no plan of %s: %v", path, err)
	}
	tr, mem, orig := realTracer(t, path, plan, bias)
	lo, hi := mem.base, mem.base+uint64(len(orig))
	var funcs [][2]uint64
	var named []uint64
	for _, f := range plan.Funcs {
		funcs = append(funcs, [2]uint64{f.Low + bias, f.High + bias})
		named = append(named, f.Entry+bias, f.Low+bias)
	}
	for _, l := range plan.Lines {
		for _, a := range l.Addrs {
			named = append(named, a+bias)
		}
	}
	for _, a := range elfid.ReadFuncStarts(path) {
		named = append(named, a+bias)
	}
	named = append(named, instr.ScanCode(tr.arch, orig, lo).Jumps...)
	slices.Sort(named)
	errs := instr.VerifyPatched(tr.arch, instr.Patched{Start: lo, Orig: orig, Final: mem.b[:hi-lo], Funcs: funcs,
		Code: func(a uint64) bool { _, ok := slices.BinarySearch(named, a); return ok },
		Read: func(addr uint64, n int) ([]byte, bool) {
			for ; n > 0; n-- {
				if b, err := mem.span(addr, n); err == nil {
					return b, true
				}
			}
			return nil, false
		}})
	for _, err := range errs[:min(len(errs), 10)] {
		t.Error(err)
	}
	planted, fell := tr.plantedCounts()
	t.Logf("%d sites planted in-process, %d keep breakpoints; %d errors", planted, fell, len(errs))
	if planted == 0 || fell*perFallBack > planted+fell {
		t.Errorf("%d of %d sites keep breakpoints, want at most 1 in %d", fell, planted+fell, perFallBack)
	}
}

// plantedCounts returns how many sites the in-process mechanisms took,
// and how many they left to breakpoints.
func (t *tracer) plantedCounts() (planted, fell int) {
	if t.parts.lines != nil {
		return t.parts.lines.patched, len(t.parts.lines.fellBack)
	}
	return t.parts.entries.patched, len(t.parts.entries.fellBack)
}

// realTracer returns a tracer of plan over a fake memory holding the
// program at path, its segments loaded with bias, planted as PROFILE
// plants a module (scanned, then planted), and the code as it was, from
// the first segment to the last.
func realTracer(t *testing.T, path string, plan *datafile.Plan, realBias uint64) (*tracer, *fakeMem, []byte) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	arch, err := instr.ForMachine(f.Machine)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := ^uint64(0), uint64(0)
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			lo, hi = min(lo, p.Vaddr&^0xfff), max(hi, p.Vaddr+p.Memsz)
		}
	}
	image := make([]byte, hi-lo)
	var maps []procmaps.Mapping
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD {
			continue
		}
		if _, err := p.ReadAt(image[p.Vaddr-lo:p.Vaddr-lo+p.Filesz], 0); err != nil {
			t.Fatal(err)
		}
		perms := "r--p"
		if p.Flags&elf.PF_X != 0 {
			perms = "r-xp"
		}
		start := (p.Vaddr &^ 0xfff) + realBias
		maps = append(maps, procmaps.Mapping{Start: start, End: (p.Vaddr+p.Memsz+0xfff)&^0xfff + realBias, Perms: perms, Path: path, Inode: 1, Offset: p.Off &^ 0xfff})
	}
	orig := slices.Clone(image)
	mem := &fakeMem{base: lo + realBias, b: image}
	tr := &tracer{
		cfg:     Config{Warn: func(*prf.Diagnostic) {}},
		plan:    plan,
		arch:    arch,
		mem:     mem,
		counted: counted{hits: make([]uint64, plan.NumItems())},
	}
	tr.parts.calls = newInjector(tr)
	tr.parts.plant = newPlanter(tr, 4096)
	mapAreas(tr, mem)
	tr.proc = newFakeProcess(arch, mem)
	tr.parts.bp = newBreakpoints(tr)
	tr.choose()
	kind := instr.CountPerThread
	if _, err := arch.Counting(0); err != nil || arch.MaxInstLen() == 4 {
		kind = instr.CountShared // (arm64, as with LSE)
	}
	tr.parts.counters = &counters{env: tr.counterEnv(), layout: layout.Layout{Kind: kind, ProgAddr: 0x7f0000000000, BlockSize: 1 << 20, NBlocks: 2, Records: ringRecords, DepthSlots: depthSlots}, next: 2, blockOf: map[int]int{}}
	tr.choose()
	if plan.Method.IsFunction() {
		tr.parts.entries = newEntryTrampolines(tr.plan, tr.arch, tr.parts.plant, tr.parts.bp.plantEntry)
		tr.choose()
	} else {
		tr.parts.lines = newLineTrampolines(tr)
		tr.choose()
	}
	in := procmaps.Instance{First: maps[0], Lo: lo + realBias, Hi: hi + realBias}
	tr.parts.plant.scanCode(maps, in, 0, path, realBias)
	if err := tr.plantModule(0, realBias, in, maps); err != nil && !errors.Is(err, errNoCode) {
		t.Fatal(err)
	}
	return tr, mem, orig
}

// TestGuardedLineSites plans the lines of lines.c built for arm64 with
// BTI (-mbranch-protection=standard, -O2, PIE) in a fake memory: the
// first line of a function with an indirect jump (sw's switch, interp's
// computed goto) is a `bti c`, whose patch goes on the next instruction,
// the next line's site. The two share one count there (no indirect jump
// lands after a BTI pad); each kept a breakpoint when every site of such
// a function was probed. The patches keep the rule.
func TestGuardedLineSites(t *testing.T) {
	cc := testutil.MustHaveTool(t, "aarch64-linux-gnu-gcc")
	prog := filepath.Join(t.TempDir(), "lines")
	out, err := exec.Command(cc, "-g", "-O2", "-fPIE", "-pie", "-pthread", "-mbranch-protection=standard", "-o", prog,
		filepath.Join(testutil.Root(t), "testdata", "progs", "c", "lines.c")).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	plan, err := prep.BuildPlan(prep.Options{Method: datafile.LineCounting, Programs: []string{prog}, Calibration: -1})
	if err != nil {
		t.Fatal(err)
	}
	tr, _, _ := realTracer(t, prog, plan, pieBias["arm64"])
	for _, fb := range tr.parts.lines.fellBack {
		t.Errorf("line %d at %#x keeps a breakpoint: %v", fb.line, fb.addr, fb.err)
	}
	checkPatchRule(t, prog, datafile.LineCounting, pieBias["arm64"], 1<<30)
}
