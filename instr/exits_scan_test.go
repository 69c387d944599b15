package instr

import (
	"debug/elf"
	"slices"
	"testing"
)

// TestExitsFromScansAgree holds the exits found and planned from the
// scans' fast decoding (FindExits, PlanExits) to the full decoder, over
// the functions of the host's C library: every exit FindExits finds is a
// return, an indirect jump or a direct jump out of its function as the
// full decoder reads the instruction there, and it misses none the full
// decoder's walk of the function finds; every planned patch's
// instructions are those the full decoder reads over its window, whole,
// the exit last.
func TestExitsFromScansAgree(t *testing.T) {
	f, err := elf.Open("/usr/lib/x86_64-linux-gnu/libc.so.6")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	syms, _ := f.DynamicSymbols()
	text := f.Section(".text")
	data, err := text.Data()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Size == 0 || s.Value < text.Addr || s.Value+s.Size > text.Addr+uint64(len(data)) {
			continue
		}
		fn := data[s.Value-text.Addr : s.Value-text.Addr+s.Size]
		want, ok := fullExits(fn, s.Value, s.Value+s.Size)
		if !ok {
			continue // (the full decoder fails somewhere: the scans may not)
		}
		got, err := FindExits(AMD64, fn, s.Value, s.Value+s.Size)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: exits %+v (%v), the full decoder's %+v", s.Name, got, err, want)
		}
		plans, err := AMD64.PlanExits(fn, s.Value, s.Value+s.Size, false)
		if err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
		for _, p := range plans {
			checkWindow(t, s.Name, fn, s.Value, p)
		}
		checked++
	}
	if checked < 1000 {
		t.Errorf("%d functions checked: the walk is wrong", checked)
	}
}

// fullExits returns the exits of the function fn at [start, end) by the
// full decoder, instruction after instruction; false where it fails.
func fullExits(fn []byte, start, end uint64) ([]Exit, bool) {
	var exits []Exit
	for off := 0; off < len(fn); {
		pc := start + uint64(off)
		in, err := decodeAMD64Bare(fn[off:], pc)
		if err != nil || in.Len <= 0 {
			return nil, false
		}
		if e, ok := exitAt(pc, in.Len, in.Kind, in.Target, start, end); ok {
			exits = append(exits, e)
		}
		off += in.Len
	}
	return exits, true
}

// checkWindow checks that plan p's patch holds whole instructions as the
// full decoder reads them, from its site to the exit, last.
func checkWindow(t *testing.T, name string, fn []byte, start uint64, p ExitPlan) {
	t.Helper()
	if p.Err != nil {
		return
	}
	pc := p.Patch.Site
	for i, in := range p.Patch.Insts {
		x, err := decodeAMD64Bare(fn[pc-start:], pc)
		if err != nil || x.Len != in.Len || x.Kind != in.Kind || x.Target != in.Target {
			t.Errorf("%s: the patch at %#x, instruction %d at %#x: %+v, the full decoder's %+v (%v)", name, p.Patch.Site, i, pc, in, x.Inst, err)
			return
		}
		pc += uint64(in.Len)
	}
	if last := pc - uint64(p.Exit.Len); last != p.Exit.PC {
		t.Errorf("%s: the patch at %#x ends its instructions at %#x, want the exit %#x's end", name, p.Patch.Site, pc, p.Exit.PC)
	}
}
