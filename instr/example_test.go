package instr_test

import (
	"debug/elf"
	"fmt"

	"github.com/sourceprofiler/sprof/instr"
)

// ExampleArch_Decode decodes a function's first instructions on each
// architecture, as PROFILE does before it plants: each instruction's
// length, kind, and where a direct branch lands.
func ExampleArch_Decode() {
	code := map[elf.Machine][]byte{
		elf.EM_X86_64:  {0x55, 0x48, 0x89, 0xe5, 0xe8, 0x00, 0x01, 0x00, 0x00, 0xc3},             // push %rbp; mov %rsp,%rbp; call; ret
		elf.EM_AARCH64: {0x5f, 0x24, 0x03, 0xd5, 0x40, 0x00, 0x00, 0x94, 0xc0, 0x03, 0x5f, 0xd6}, // bti c; bl; ret
	}
	for _, m := range []elf.Machine{elf.EM_X86_64, elf.EM_AARCH64} {
		a, err := instr.ForMachine(m)
		if err != nil {
			fmt.Println(err)
			return
		}
		pc := uint64(0x401000)
		for b := code[m]; len(b) > 0; {
			in, err := a.Decode(b, pc)
			if err != nil {
				fmt.Println(err)
				return
			}
			fmt.Printf("%s %#x %d %-6v %s\n", a.Name(), pc, in.Len, in.Kind, in.Text)
			pc, b = pc+uint64(in.Len), b[in.Len:]
		}
	}
	// Output:
	// amd64 0x401000 1 other  push %rbp
	// amd64 0x401001 3 other  mov %rsp,%rbp
	// amd64 0x401004 5 call   callq 0x401109
	// amd64 0x401009 1 ret    retq
	// arm64 0x401000 4 nop    bti c
	// arm64 0x401004 4 call   bl 0x401104
	// arm64 0x401008 4 ret    ret
}
