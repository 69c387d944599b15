package instr

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// flowString writes f one block a line: its start, its successors, E
// where it is entered from outside, L where it leaves.
func flowString(f *Flow) string {
	var b strings.Builder
	for _, x := range f.Blocks {
		fmt.Fprintf(&b, "%x-%x %v", x.Start, x.End, x.Succs)
		if len(x.Far) > 0 {
			fmt.Fprintf(&b, " far %x", x.Far)
		}
		if x.Entered {
			b.WriteString(" E")
		}
		if x.Leaves {
			b.WriteString(" L")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// words returns the arm64 instructions ws as code.
func words(ws ...uint32) []byte {
	var b []byte
	for _, w := range ws {
		b = binary.LittleEndian.AppendUint32(b, w)
	}
	return b
}

func TestFuncFlow(t *testing.T) {
	for _, tc := range []struct {
		name string
		arch Arch
		code []byte
		cuts []uint64
		want string
	}{
		{
			// test %edi,%edi; je 1009; add $1,%eax; jmp 100c; add $2,%eax; ret
			name: "amd64 diamond", arch: AMD64, code: hexs(t, "85ff 7405 83c001 eb03 83c002 c3"),
			cuts: []uint64{0x1009, 0x100c},
			want: "1000-1004 [2 1]\n1004-1009 [3]\n1009-100c [3]\n100c-100d [] L\n",
		},
		{
			// the same, with a landing from elsewhere on the jmp (and
			// one outside)
			name: "amd64 diamond cut", arch: AMD64, code: hexs(t, "85ff 7405 83c001 eb03 83c002 c3"),
			cuts: []uint64{0x1007, 0x3000},
			want: "1000-1004 [3 1]\n1004-1007 [2]\n1007-1009 [4]\n1009-100c [4]\n100c-100d [] L\n",
		},
		{
			// xor %eax,%eax; call 2000; dec %edi; jne 1000; ret: the
			// block after the call is entered afresh
			name: "amd64 loop with a call", arch: AMD64, code: hexs(t, "31c0 e8f90f0000 ffcf 75f5 c3"),
			want: "1000-1007 [] far [2000]\n1007-100b [0 2] E\n100b-100c [] L\n",
		},
		{
			// dec %edi; jne 1000; jmp 2000 (a tail call); ud2 (reached
			// by nothing); nop (falls off the end)
			name: "amd64 tail call, trap, fall off", arch: AMD64, code: hexs(t, "ffcf 75fc e9f70f0000 0f0b 90"),
			want: "1000-1004 [0 1]\n1004-1009 [] far [2000]\n1009-100b [] L\n100b-100c [] far [100c] E\n",
		},
		{
			// call 1000 (itself); call *%rax; ret
			name: "amd64 recursion, indirect call", arch: AMD64, code: hexs(t, "e8fbffffff ffd0 c3"),
			want: "1000-1005 [] far [1000]\n1005-1007 [] E L\n1007-1008 [] E L\n",
		},
		{
			// cbz w0, 100c; add w1,w1,#1; b 1010; add w1,w1,#2; ret
			name: "arm64 diamond", arch: ARM64, code: words(0x34000060, 0x11000421, 0x14000002, 0x11000821, 0xd65f03c0),
			want: "1000-1004 [2 1]\n1004-100c [3]\n100c-1010 [3]\n1010-1014 [] L\n",
		},
		{
			// add; bl 2000; subs w0,w0,#1; b.ne 1000; ret
			name: "arm64 loop with a call", arch: ARM64, code: words(0x11000421, 0x940003ff, 0x71000400, 0x54ffffa1, 0xd65f03c0),
			want: "1000-1008 [] far [2000]\n1008-1010 [0 2] E\n1010-1014 [] L\n",
		},
		{
			// b 2000 (a tail call); brk #0; svc #0; ret
			name: "arm64 tail call, trap, system call", arch: ARM64, code: words(0x14000400, 0xd4200000, 0xd4000001, 0xd65f03c0),
			want: "1000-1004 [] far [2000]\n1004-1008 [] L\n1008-100c [] E L\n100c-1010 [] E L\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := FuncFlow(tc.arch, tc.code, 0x1000, 0x1000, 0x1000+uint64(len(tc.code)), tc.cuts)
			if err != nil {
				t.Fatal(err)
			}
			if got := flowString(f); got != tc.want {
				t.Errorf("got\n%swant\n%s", got, tc.want)
			}
		})
	}
}

// TestFuncFlowRefused: where the flow is not proven.
func TestFuncFlowRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		arch Arch
		code []byte
		is   error
	}{
		// cmp $3,%edi; ja 100a; jmp *%rax (a switch's jump); ret
		{"amd64 switch", AMD64, hexs(t, "83ff03 7702 ffe0 c3"), ErrFlowIndirect},
		// cbz w0, 100c... br x0
		{"arm64 switch", ARM64, words(0x34000040, 0xd61f0000, 0xd65f03c0), ErrFlowIndirect},
		// jmp 1001 (inside the mov); mov $1,%eax
		{"amd64 into an instruction", AMD64, hexs(t, "eb00 b801000000"), nil},
		// a function cut in an instruction
		{"amd64 cut", AMD64, hexs(t, "90 b8010000"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code := tc.code
			if tc.name == "amd64 into an instruction" {
				code[1] = 1 // jmp 1003: the mov's second byte
			}
			_, err := FuncFlow(tc.arch, code, 0x1000, 0x1000, 0x1000+uint64(len(code)), nil)
			if err == nil || tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("err = %v, want %v", err, tc.is)
			}
		})
	}
}

// TestCrossJumps: the jumps between functions, and from code of none.
func TestCrossJumps(t *testing.T) {
	// f [1000,1005): jmp 1010 (into g's middle); g [1005,1011): call
	// 1000; nop; je 100d (its own); nop; nop; ret; ret; between: jmp 1006
	code := hexs(t, "e90b000000 e8f6ffffff 90 7400 90 90 c3 c3 e9f0ffffff")
	m := MapCode(AMD64, code, 0x1000, nil)
	got := m.CrossJumps([][2]uint64{{0x1000, 0x1005}, {0x1005, 0x1011}})
	want := [][2]uint64{{0x1005, 0x1000}, {0x1011, 0x1006}, {0x1000, 0x1010}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("CrossJumps = %x, want %x", got, want)
	}
	// f [1000,1002): nop; nop, falling off into nops, which fall into
	// g [1004,1006): ret; nop; nops after a return fall nowhere, and
	// h [1008,1009) is entered by nothing.
	m = MapCode(AMD64, hexs(t, "9090 9090 c390 9090 c3"), 0x1000, nil)
	got = m.CrossJumps([][2]uint64{{0x1000, 0x1002}, {0x1004, 0x1006}, {0x1008, 0x1009}})
	want = [][2]uint64{{0x1001, 0x1002}, {0x1003, 0x1004}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("CrossJumps of falls = %x, want %x", got, want)
	}
}
