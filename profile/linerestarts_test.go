package profile

import (
	"encoding/binary"
	"os"
	"slices"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/profile/procmaps"
)

// TestAfterRestarts moves the line sites of a Go module on arm64 that
// begin a restartable expansion in x27 to the instruction after it, and
// no other: not one whose end a branch lands on, not Go assembly's, not
// one whose end is the next site, not one that builds nothing in x27.
// The moved site's counter is found at its new place too. (The module is
// this test's own executable, for its Go build information; the code is
// arm64's, at an address far from it.)
func TestAfterRestarts(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	const start = 0x7e00_0000_0000 // (no function of the executable, whose starts are landings, is near: arm64 links Go at 0x10000)
	words := []uint32{
		0xf000079b, 0x912b437b, 0xa9400b61, // 0x00 line 10: adrp x27; add x27, x27, #0xad0; ldp x1, x2, [x27]
		0xf100045f,             // 0x0c cmp x2, #1
		0xd2800c1b, 0xf87b6820, // 0x10 line 11: mov x27, #0x60; ldr x0, [x1, x27]
		0xf100045f,                         // 0x18 cmp x2, #1 (a branch lands here)
		0xf000079b, 0x912b437b, 0xa9400b61, // 0x1c line 12, of asm.s
		0xf100045f,                         // 0x28 cmp x2, #1
		0xf000079b, 0x912b437b, 0xa9400b61, // 0x2c line 13
		0xf100045f, // 0x38 line 14: cmp x2, #1
		0x54fffee1, // 0x3c b.ne 0x18
		0xd65f03c0, // 0x40 ret
	}
	var code []byte
	for _, w := range words {
		code = binary.LittleEndian.AppendUint32(code, w)
	}
	plan := &datafile.Plan{Method: datafile.LineCounting,
		Modules: []datafile.Module{{Name: "prog", Path: exe, Arch: "arm64", Files: []string{"main.go", "asm.s"}}}}
	sites := []uint64{start, start + 0x10, start + 0x1c, start + 0x2c, start + 0x38}
	ls := &lineSiteSet{counter: []int{0, 1, 2, 3, 4}}
	for i, a := range sites {
		file := 0
		if i == 2 {
			file = 1
		}
		plan.Lines = append(plan.Lines, datafile.Line{File: file, Line: 10 + i, Addrs: []uint64{a}})
		ls.addrs, ls.lines = append(ls.addrs, a), append(ls.lines, []int{i})
	}
	cm := instr.MapCode(instr.ARM64, code, start, nil)
	pl := &planter{arch: instr.ARM64, plan: plan, scan: codeScan{code: codeMaps{cm}, landings: slices.Sorted(slices.Values(cm.Jumps))}}
	p := &planting{in: procmaps.Instance{First: procmaps.Mapping{Path: exe}}, lines: true, lineSites: ls,
		text: moduleText{start: start, b: code}}
	lt := &lineTrampolines{index: &siteIndex{moved: map[siteKey]int{}}}
	pl.afterRestarts(p, lt)
	want := []uint64{start + 0x0c, start + 0x10, start + 0x1c, start + 0x2c, start + 0x38}
	if !slices.Equal(ls.addrs, want) {
		t.Errorf("sites %#x, want %#x", ls.addrs, want)
	}
	if n, ok := lt.index.get(0, start+0x0c); !ok || n != 0 || lt.index.len() != 1 {
		t.Errorf("counters by place %v, want line 10's at its new place alone", lt.index.moved)
	}
	// A module not built by Go keeps every site.
	plan.Modules[0].Path = "/nonexistent"
	p.in.First.Path = ""
	ls.addrs = slices.Clone(sites)
	pl.afterRestarts(p, nil)
	if !slices.Equal(ls.addrs, sites) {
		t.Errorf("sites of a module not Go's %#x, want %#x", ls.addrs, sites)
	}
}
