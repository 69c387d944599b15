package unwind_test

import (
	"debug/elf"
	"testing"

	"github.com/sourceprofiler/sprof/profile/unwind"
)

// TestMappingBias checks the bias of an executable mapping of a file, as
// /proc/PID/maps shows it, from its program headers: a PIE, an executable
// at its link address, a segment mapped in two parts, a text segment
// that does not start on a page, and an offset no executable segment
// holds.
func TestMappingBias(t *testing.T) {
	load := func(off, vaddr, size uint64, flags elf.ProgFlag) *elf.Prog {
		return &elf.Prog{ProgHeader: elf.ProgHeader{Type: elf.PT_LOAD, Flags: flags, Off: off, Vaddr: vaddr, Filesz: size, Memsz: size, Align: 0x1000}}
	}
	pie := []*elf.Prog{
		load(0, 0, 0x800, elf.PF_R),
		load(0x1000, 0x1000, 0x2000, elf.PF_R|elf.PF_X),
		load(0x3000, 0x3000, 0x500, elf.PF_R),
	}
	exe := []*elf.Prog{
		load(0, 0x400000, 0x800, elf.PF_R),
		load(0x1000, 0x401000, 0x2000, elf.PF_R|elf.PF_X),
	}
	arm64 := []*elf.Prog{ // (ld for arm64: text from offset 0, 64 KiB aligned)
		{ProgHeader: elf.ProgHeader{Type: elf.PT_LOAD, Flags: elf.PF_R | elf.PF_X, Off: 0, Vaddr: 0x400000, Filesz: 0x8d0, Align: 0x10000}},
		{ProgHeader: elf.ProgHeader{Type: elf.PT_LOAD, Flags: elf.PF_R | elf.PF_W, Off: 0xfdc8, Vaddr: 0x41fdc8, Filesz: 0x270, Align: 0x10000}},
	}
	unaligned := []*elf.Prog{
		load(0, 0, 0x1234, elf.PF_R),
		load(0x1234, 0x2234, 0x3000, elf.PF_R|elf.PF_X),
	}
	tests := []struct {
		name          string
		progs         []*elf.Prog
		start, offset uint64
		want          uint64
		wantErr       bool
	}{
		{"pie", pie, 0x555555555000, 0x1000, 0x555555554000, false},
		{"pie, second part", pie, 0x555555556000, 0x2000, 0x555555554000, false},
		{"executable", exe, 0x401000, 0x1000, 0, false},
		{"arm64", arm64, 0x400000, 0, 0, false},
		{"arm64 pie", arm64, 0xaaaab0000000, 0, 0xaaaab0000000 - 0x400000, false},
		{"unaligned text", unaligned, 0x7f0000001000, 0x1000, 0x7f0000001000 + 0x234 - 0x2234, false},
		{"no executable segment", pie, 0x555555557000, 0x3000, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := unwind.MappingBias(tt.progs, tt.start, tt.offset)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want error %v", err, tt.wantErr)
			}
			if err == nil && got != tt.want {
				t.Errorf("bias %#x, want %#x", got, tt.want)
			}
		})
	}
}
