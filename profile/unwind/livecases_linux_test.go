//go:build linux && (amd64 || arm64)

package unwind_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/internal/testutil"
	"github.com/sourceprofiler/sprof/profile/unwind"
)

// builds are the fixture's builds the live tests unwind: optimised without
// frame pointers and not, PIE and not.
var builds = []struct {
	name  string
	flags []string
}{
	{"O2-nofp-pie", []string{"-O2", "-fomit-frame-pointer", "-fPIE", "-pie"}},
	{"O2-nofp-nopie", []string{"-O2", "-fomit-frame-pointer", "-fno-pie", "-no-pie"}},
	{"O0-pie", []string{"-O0", "-fPIE", "-pie"}},
	{"O0-nopie", []string{"-O0", "-fno-pie", "-no-pie"}},
}

// TestUnwindLive unwinds the fixture stopped in c: the frames are c, b, a,
// main, libc's start frames and _start, and the walk ends at the end of
// the stack, where _start's CFI leaves the return address undefined.
func TestUnwindLive(t *testing.T) {
	for _, b := range builds {
		t.Run(b.name, func(t *testing.T) {
			prog := testutil.BuildC(t, "unwind", b.flags...)
			s := takeSnapshot(t, prog)
			pcs, stop := unwind.Unwind(s.regs, s.stack, s.moduleOf, 64)
			names := s.names(pcs)
			t.Logf("%d frames, %v: %s (PAC mask %#x)", len(pcs), stop, strings.Join(names, " <- "), s.regs.PACMask)
			if stop != unwind.StopEnd {
				t.Errorf("stop %v, want %v", stop, unwind.StopEnd)
			}
			if want := []string{"c", "b", "a", "main"}; len(names) < 5 || !slices.Equal(names[:4], want) {
				t.Fatalf("frames %v, want %v then libc's start", names, want)
			}
			if gdb := gdbFrames(t, prog); gdb != nil && !slices.Equal(gdb, names[:min(len(gdb), len(names))]) {
				t.Errorf("gdb's frames %v, not the first of ours", gdb)
			}
			if last := names[len(names)-1]; last != "_start" {
				t.Errorf("outermost frame %s, want _start", last)
			}
			for i, pc := range pcs[4 : len(pcs)-1] {
				if lm := s.live(pc - 1); lm == nil || lm.path == prog {
					t.Errorf("frame %d (%s) between main and _start is not in libc", i+4, names[i+4])
				}
			}
		})
	}
}

// TestUnwindSignal unwinds the fixture stopped in its signal handler: the
// handler, the signal return trampoline (libc's __restore_rt, whose CFI
// reads the interrupted registers from the signal frame with DWARF
// expressions), raise's frames in libc, then c, b, a, main to _start.
func TestUnwindSignal(t *testing.T) {
	for _, b := range builds {
		t.Run(b.name, func(t *testing.T) {
			prog := testutil.BuildC(t, "unwind", b.flags...)
			s := takeSnapshot(t, prog, "signal")
			pcs, stop := unwind.Unwind(s.regs, s.stack, s.moduleOf, 64)
			names := s.names(pcs)
			t.Logf("%d frames, %v: %s", len(pcs), stop, strings.Join(names, " <- "))
			if last := pcs[len(pcs)-1]; last >= s.vdso && last < s.vdsoEnd {
				// arm64: the handler returns into the vDSO's trampoline,
				// which no file holds: the walk stops there, counted.
				if stop != unwind.StopNoModule || len(pcs) != 2 || names[0] != "handler" {
					t.Fatalf("frames %v, %v: want the handler, its return into the vDSO, %v", names, stop, unwind.StopNoModule)
				}
				t.Skip("the signal trampoline is the vDSO's")
			}
			if stop != unwind.StopEnd || names[0] != "handler" || names[len(names)-1] != "_start" {
				t.Fatalf("frames %v, %v: want handler first, _start last, %v", names, stop, unwind.StopEnd)
			}
			i := slices.Index(names, "c")
			if i < 3 || !slices.Equal(names[i:i+4], []string{"c", "b", "a", "main"}) {
				t.Fatalf("frames %v: want c, b, a, main under libc's frames", names)
			}
			for j, pc := range pcs[1:i] {
				if lm := s.live(pc - 1); lm == nil || lm.path == prog {
					t.Errorf("frame %d (%s) between handler and c is not in libc", j+1, names[j+1])
				}
			}
			// Without libc's CFI, the walk stops at the handler's return
			// into the trampoline: counted, not guessed.
			noLibc := func(pc uint64) *unwind.Module {
				if lm := s.live(pc); lm != nil && lm.path == prog {
					return lm.mod
				}
				return nil
			}
			pcs, stop = unwind.Unwind(s.regs, s.stack, noLibc, 64)
			if stop != unwind.StopNoModule || len(pcs) != 2 {
				t.Errorf("without libc: %d frames, %v; want 2 (handler, its return address), %v", len(pcs), stop, unwind.StopNoModule)
			}
		})
	}
}
