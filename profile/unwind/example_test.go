package unwind_test

import (
	"encoding/binary"
	"fmt"

	"github.com/sourceprofiler/sprof/profile/unwind"
)

// Two functions of x86-64 code with their CFI: f at 0x1000, whose CFA is
// rsp+8 with its return address at CFA-8 (the CIE's rules, as at a
// function's entry), called by g at 0x2000, an outermost function whose
// CFI leaves its return address undefined. The stack copy holds f's
// return address into g.
func Example() {
	cfi := debugFrame(cieAMD64,
		fdeSpec{lo: 0x1000, size: 0x100},
		fdeSpec{lo: 0x2000, size: 0x100, prog: []byte{0x07, 16}}) // DW_CFA_undefined: the return address column
	m, err := unwind.Parse([]unwind.Section{{Data: cfi}}, 0, unwind.AMD64)
	if err != nil {
		fmt.Println(err)
		return
	}
	stack := unwind.Stack{Addr: 0x7ff0, Data: binary.LittleEndian.AppendUint64(nil, 0x2045)}
	regs := unwind.Regs{Arch: unwind.AMD64, PC: 0x1000, SP: 0x7ff0}
	pcs, stop := unwind.Unwind(regs, stack, func(pc uint64) *unwind.Module { return m }, 64)
	fmt.Printf("%#x: %v\n", pcs, stop)
	// Output: [0x1000 0x2045]: end of the stack
}
