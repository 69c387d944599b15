//go:build linux && (amd64 || arm64)

package unwind_test

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/sourceprofiler/sprof/internal/elfid"
	"github.com/sourceprofiler/sprof/internal/testutil"
	"github.com/sourceprofiler/sprof/profile/unwind"
)

var (
	liveOnce sync.Once
	liveSnap *snapshot
)

// liveSnapshot is the -O2 PIE fixture stopped in c, taken once.
func liveSnapshot(t testing.TB) *snapshot {
	t.Helper()
	liveOnce.Do(func() {
		prog := testutil.BuildC(t, "unwind", builds[0].flags...)
		liveSnap = takeSnapshot(t, prog)
	})
	if liveSnap == nil {
		t.Skip("no snapshot")
	}
	return liveSnap
}

// TestStopTruncated cuts the stack copy at every word: the frames found
// are always the first of the whole unwind's, and a walk cut short says
// the copy ended.
func TestStopTruncated(t *testing.T) {
	s := liveSnapshot(t)
	full, stop := unwind.Unwind(s.regs, s.stack, s.moduleOf, 64)
	if stop != unwind.StopEnd {
		t.Fatalf("full unwind: %v", stop)
	}
	seen := map[int]bool{}
	for n := 0; n <= len(s.stack.Data); n += 8 {
		cut := unwind.Stack{Addr: s.stack.Addr, Data: s.stack.Data[:n]}
		pcs, stop := unwind.Unwind(s.regs, cut, s.moduleOf, 64)
		if !slices.Equal(pcs, full[:len(pcs)]) {
			t.Fatalf("copy of %d bytes: frames %x, not the first of %x", n, pcs, full)
		}
		if len(pcs) < len(full) && stop != unwind.StopOutsideStack {
			t.Fatalf("copy of %d bytes: %d frames, %v; want %v", n, len(pcs), stop, unwind.StopOutsideStack)
		}
		seen[len(pcs)] = true
	}
	for k := 1; k <= len(full); k++ {
		if !seen[k] {
			t.Errorf("no cut gave %d frames", k)
		}
	}
}

// TestStopLive: a PC in no module, a PC in a module but in no FDE, a
// zeroed return address, the frames asked for.
func TestStopLive(t *testing.T) {
	s := liveSnapshot(t)
	full, _ := unwind.Unwind(s.regs, s.stack, s.moduleOf, 64)
	regs := s.regs
	regs.PC = 0x1000
	if pcs, stop := unwind.Unwind(regs, s.stack, s.moduleOf, 64); len(pcs) != 1 || stop != unwind.StopNoModule {
		t.Errorf("PC in no module: %x, %v", pcs, stop)
	}
	if s.vdso != 0 {
		regs.PC = s.vdso + 0x10 // no file to load: the walk stops there, counted
		if pcs, stop := unwind.Unwind(regs, s.stack, s.moduleOf, 64); len(pcs) != 1 || stop != unwind.StopNoModule {
			t.Errorf("PC in the vDSO: %x, %v", pcs, stop)
		}
	}
	regs.PC = s.live(s.regs.PC).lo // the ELF header
	if pcs, stop := unwind.Unwind(regs, s.stack, s.moduleOf, 64); len(pcs) != 1 || stop != unwind.StopNoFDE {
		t.Errorf("PC in the ELF header: %x, %v", pcs, stop)
	}
	// c's return address into b, zeroed where c saved it.
	data := slices.Clone(s.stack.Data)
	zeroed := false
	for i := 0; i+8 <= len(data) && !zeroed; i += 8 {
		if binary.LittleEndian.Uint64(data[i:])&^s.regs.PACMask == full[1] { // signed on arm64
			binary.LittleEndian.PutUint64(data[i:], 0)
			zeroed = true
		}
	}
	pcs, stop := unwind.Unwind(s.regs, unwind.Stack{Addr: s.stack.Addr, Data: data}, s.moduleOf, 64)
	if !zeroed || len(pcs) != 1 || stop != unwind.StopEnd {
		t.Errorf("return address zeroed (%v): %x, %v; want c alone, %v", zeroed, pcs, stop, unwind.StopEnd)
	}
	for _, max := range []int{0, 1, 3} {
		pcs, stop := unwind.Unwind(s.regs, s.stack, s.moduleOf, max)
		if !slices.Equal(pcs, full[:max]) || stop != unwind.StopMaxFrames {
			t.Errorf("max %d: %x, %v", max, pcs, stop)
		}
	}
}

// TestUnwindConcurrent unwinds the snapshot from several goroutines at
// once through the same modules (their caches of rows shared), each
// finding the same frames.
func TestUnwindConcurrent(t *testing.T) {
	s := liveSnapshot(t)
	prog := testutil.BuildC(t, "unwind", builds[0].flags...)
	fresh := takeSnapshot(t, prog) // modules with empty caches
	want, _ := unwind.Unwind(s.regs, s.stack, s.moduleOf, 64)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for range 8 {
		wg.Go(func() {
			for range 100 {
				pcs, stop := unwind.Unwind(fresh.regs, fresh.stack, fresh.moduleOf, 64)
				if len(pcs) != len(want) || stop != unwind.StopEnd {
					errs <- fmt.Sprintf("%d frames, %v; want %d, %v", len(pcs), stop, len(want), unwind.StopEnd)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestVDSOFromMemory loads the CFI of the vDSO from its image in the
// process's memory, as the sampler does where no file holds it
// (unwind.FromImage): its bias is the image's as mapped, and its
// functions are covered at their run-time addresses.
func TestVDSOFromMemory(t *testing.T) {
	s := liveSnapshot(t)
	if s.vdsoImg == nil {
		t.Skip("no vDSO")
	}
	f, err := elf.NewFile(bytes.NewReader(s.vdsoImg))
	if err != nil {
		t.Fatal(err)
	}
	bias := s.vdso - elfid.LinkBase(f)
	m, err := unwind.FromImage(s.vdsoImg, s.vdso, s.regs.Arch)
	if errors.Is(err, unwind.ErrNoCFI) {
		t.Skip("the vDSO has no CFI")
	}
	if err != nil {
		t.Fatal(err)
	}
	if m.Bias != bias {
		t.Errorf("bias %#x, want %#x", m.Bias, bias)
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	covered, funcs := 0, 0
	for _, sym := range syms {
		if elf.ST_TYPE(sym.Info) == elf.STT_FUNC && sym.Size > 0 {
			funcs++
			if m.Covers(sym.Value + bias) {
				covered++
			}
		}
	}
	t.Logf("vDSO: %d FDEs, %d of %d functions covered", m.FDEs(), covered, funcs)
	if covered == 0 || m.Covers(bias) {
		t.Errorf("%d of %d functions covered, the ELF header %v", covered, funcs, m.Covers(bias))
	}
}

// BenchmarkUnwind unwinds the live snapshot (c, b, a, main, libc's start
// and _start: 7 frames).
func BenchmarkUnwind(b *testing.B) {
	s := liveSnapshot(b)
	pcs, _ := unwind.Unwind(s.regs, s.stack, s.moduleOf, 64)
	b.ReportAllocs()
	for b.Loop() {
		unwind.Unwind(s.regs, s.stack, s.moduleOf, 64)
	}
	b.ReportMetric(float64(len(pcs)*b.N)/b.Elapsed().Seconds(), "frames/s")
}

// BenchmarkUnwindCold unwinds the live snapshot through modules that
// have kept no rows: every frame's FDE program run by delve.
func BenchmarkUnwindCold(b *testing.B) {
	s := liveSnapshot(b)
	pcs, _ := unwind.Unwind(s.regs, s.stack, s.moduleOf, 64)
	b.ReportAllocs()
	for b.Loop() {
		for _, lm := range s.modules {
			lm.mod.ForgetRows()
		}
		unwind.Unwind(s.regs, s.stack, s.moduleOf, 64)
	}
	b.ReportMetric(float64(len(pcs)*b.N)/b.Elapsed().Seconds(), "frames/s")
}

// BenchmarkLoad loads libc's CFI, as once per mapped module.
func BenchmarkLoad(b *testing.B) {
	s := liveSnapshot(b)
	var libc string
	for _, lm := range s.modules {
		if lm.path != "" && lm.mod.FDEs() > 1000 {
			libc = lm.path
		}
	}
	if _, err := os.Stat(libc); err != nil {
		b.Skip("no libc")
	}
	b.ReportAllocs()
	var m *unwind.Module
	for b.Loop() {
		var err error
		if m, err = unwind.Load(libc, 0x7f0000000000, hostArch(b)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(m.FDEs()), "FDEs")
}
