package profile

import (
	"slices"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/profile/procmaps"
)

// TestWatchEndCheck: the watch's checks of the program's code over their
// own environment (watchEnv), without a tracer. The end-of-run check
// finds the jump PROFILE wrote over a function's first instruction as it
// was, then changed (the program wrote its own code there), and its code
// made writable; a fault where a copy of the jump lands is a copy of
// patched code run. Each warning comes once.
func TestWatchEndCheck(t *testing.T) {
	const copyAt = leafAt + 0x20
	jump := []byte{0xe9, 0x00, 0x01, 0x00, 0x00} // jmp leafAt+0x105
	mem := &fakeMem{base: leafAt, b: make([]byte, 0x40)}
	copy(mem.b, jump)
	plan := &datafile.Plan{Method: datafile.FuncCounting, Funcs: []datafile.Func{{Name: "f", Low: leafAt, High: leafAt + 0x10}}}
	var said []int
	e := watchEnv{warn: func(d *prf.Diagnostic) { said = append(said, d.Code) }, plan: plan, arch: instr.AMD64, mem: mem}
	perms := "r-xp"
	readMaps := func() ([]procmaps.Mapping, error) {
		return []procmaps.Mapping{{Start: leafAt, End: leafAt + 0x1000, Perms: perms, Inode: 1, Path: "/leaf"}}, nil
	}
	var w watch
	w.wrote(0, 0, []span{{leafAt, jump}})
	w.checkCode(e, readMaps)
	if len(said) != 0 {
		t.Fatalf("warned %v of code as PROFILE left it", said)
	}
	mem.b[1] = 0x10
	perms = "rwxp"
	w.endCheck(e, readMaps)
	w.checkCode(e, readMaps)
	if !slices.Equal(said, []int{4667, 4668}) || !w.ended {
		t.Errorf("warned %v (ended %v), want PRF4667 and PRF4668 once", said, w.ended)
	}
	said = nil
	copy(mem.b[copyAt-leafAt:], jump)
	w.copyOfJump(copyAt+0x105, e)
	if !slices.Equal(said, []int{4669}) || w.looks != 1 {
		t.Errorf("warned %v after %d looks, want PRF4669 of the copy at %#x", said, w.looks, copyAt)
	}
	if got := funcAt(plan, 0, 0, leafAt+4); got != "function f" {
		t.Errorf("funcAt = %q, want function f", got)
	}
}
