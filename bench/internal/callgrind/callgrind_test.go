package callgrind

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The outputs of testdata, written by hand (and read by the tests of
// bench/linecheck and bench/branchcheck too):
//
//   - calls.out is of the shape --dump-instr=yes writes: compressed
//     names, absolute and relative positions, a call into another object
//     through the PLT, whose cost line is the callee's inclusive cost,
//     followed by the PLT stub's cost charged to the call's position, and
//     another object's code.
//   - jumps.out is of the shape --collect-jumps=yes --dump-instr=yes
//     writes (callgrind/dump.c), of a position-independent program loaded
//     0x108000 above its link-time addresses: a conditional jump that went
//     both ways (jcnd=3/5 at 0x109004), one that ran 4 times and never
//     went to its target (no jcnd= line: its Ir alone), one that always
//     did, in two contexts (4/4 and 3/3 at 0x109100, the second's target
//     after a jfi= and a jfn=), a plain jump (jump=), a call whose cost
//     line is the callee's inclusive cost and the next instruction's
//     after it, and another object's jump, which is not the program's.
var calls, jumps = testOutput("calls.out"), testOutput("jumps.out")

// testOutput returns the output in testdata/name, or an empty one.
func testOutput(name string) string {
	b, _ := os.ReadFile(filepath.Join("testdata", name)) // (missing: the tests that read it fail)
	return string(b)
}

func isProg(obj string) bool { return obj == "/opt/prog" }

// TestReadCalls: each instruction's count and each line's, the call's
// inclusive cost and the PLT stub's after it left out, and libc's code.
func TestReadCalls(t *testing.T) {
	p, err := Read(strings.NewReader(calls), isProg)
	if err != nil {
		t.Fatal(err)
	}
	wantIR := map[uint64]uint64{0x109000: 1, 0x109002: 1, 0x109005: 5, 0x109009: 5, 0x10900e: 5, 0x109100: 7, 0x109101: 7}
	if !maps.Equal(p.Ir, wantIR) {
		t.Errorf("Ir %#v,\nwant %#v", p.Ir, wantIR)
	}
	wantLines := map[Line]uint64{{"prog.c", 3}: 2, {"prog.c", 4}: 5, {"prog.c", 5}: 10, {"prog.c", 10}: 14}
	if !maps.Equal(p.Lines, wantLines) {
		t.Errorf("lines %v,\nwant %v", p.Lines, wantLines)
	}
	if p.First["main"] != 0x109000 || p.First["leaf"] != 0x109100 || len(p.First) != 2 {
		t.Errorf("functions' first addresses %#v", p.First)
	}
}

// TestReadJumps: the conditional jumps' ways, summed over contexts, and
// the jumps' position lines and the call's inclusive cost left out.
func TestReadJumps(t *testing.T) {
	p, err := Read(strings.NewReader(jumps), isProg)
	if err != nil {
		t.Fatal(err)
	}
	wantIR := map[uint64]uint64{0x109000: 5, 0x109004: 5, 0x109008: 4, 0x10900d: 1, 0x109010: 2, 0x109100: 7, 0x109102: 4}
	if !maps.Equal(p.Ir, wantIR) {
		t.Errorf("Ir %#v,\nwant %#v", p.Ir, wantIR)
	}
	wantTaken := map[Arc]uint64{{0x109004, 0x109010}: 3, {0x109100, 0x109000}: 7}
	if !maps.Equal(p.Taken, wantTaken) {
		t.Errorf("jumps taken %#v, want %#v", p.Taken, wantTaken)
	}
	wantExecs := map[uint64]uint64{0x109004: 5, 0x109100: 7}
	if !maps.Equal(p.Execs, wantExecs) {
		t.Errorf("jumps' executions %#v, want %#v", p.Execs, wantExecs)
	}
}

func TestReadRefuses(t *testing.T) {
	const head = "positions: instr\nevents: Ir\nob=/opt/prog\n0x1000 1\n"
	for _, c := range []struct{ in, want string }{
		{"positions: line\nevents: Ir\n", "not dumped with --dump-instr=yes"},
		{"events: Ir\n0x1000 1\n", "line 2: a cost line before the positions: and events: lines"},
		{"positions: instr\nevents: Dr\n0x1000 1\n", "no Ir event"},
		{"events: Ir\n", "no positions: line"},
		{"positions: instr\nevents: Ir\nob=/other\n0x1000 1\n", "no instruction of the program ran"},
		{head + "0x1000 x\n", `line 5: cost line "0x1000 x"`},
		{head + "+0x10 1\n", `cost line "+0x10 1"`},
		{head + "jcnd=3 +1\n", "no slash"},
		{head + "jcnd=a/5 +1\n", "jcnd=a/5 +1"},
		{head + "jcnd=3/5\n", "want TAKEN/EXECUTED and 1 positions"},
		{head + "jcnd=3/5 0xZZ\n", "jcnd=3/5 0xZZ"},
		{"jcnd=3/5 +1\n", "before the positions: line"},
		{head + strings.Repeat("9", 2<<20) + "\n", "token too long"},
	} {
		_, err := Read(strings.NewReader(c.in), isProg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.40q: error %v, want one saying %q", c.in, err, c.want)
		}
	}
}

// TestVotes: the bias most entries agree on, the lowest of a tie, none
// without a vote; an entry callgrind did not see, or above its address
// there, has no vote.
func TestVotes(t *testing.T) {
	p := &Profile{First: map[string]uint64{"main": 0x109000, "leaf": 0x109100, "odd": 0x2000}}
	v := Votes{}
	if _, ok := v.Bias(); ok {
		t.Error("a bias with no vote")
	}
	v.Entry(p, "main", 0x1000)
	v.Entry(p, "leaf", 0x1100)
	v.Entry(p, "odd", 0x1000)
	v.Entry(p, "unseen", 0x1200)
	v.Entry(p, "below", 0x200000)
	if b, ok := v.Bias(); !ok || b != 0x108000 {
		t.Errorf("bias %#x, %v; want 0x108000", b, ok)
	}
	v = Votes{0x3000: 2, 0x1000: 2, 0x500: 1}
	if b, _ := v.Bias(); b != 0x1000 {
		t.Errorf("a tie: bias %#x, want the lowest, 0x1000", b)
	}
}

func FuzzRead(f *testing.F) {
	f.Add(calls)
	f.Add(jumps)
	f.Add("positions: instr\nevents: Ir\nob=(1) /opt/prog\n+1 2\njcnd=1/2 -1 \n* \n-1 3\n* 4\n")
	f.Fuzz(func(t *testing.T, in string) {
		p, err := Read(strings.NewReader(in), isProg)
		if (p == nil) == (err == nil) {
			t.Errorf("profile %v and error %v", p, err)
		}
	})
}

// TestSameFile: callgrind names the program by the path it ran, which
// may differ from the plan's by a symbolic link.
func TestSameFile(t *testing.T) {
	dir := t.TempDir()
	prog, link, other := filepath.Join(dir, "prog"), filepath.Join(dir, "link"), filepath.Join(dir, "other")
	for _, err := range []error{os.WriteFile(prog, nil, 0o755), os.WriteFile(other, nil, 0o755), os.Symlink(prog, link)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	same := SameFile(prog)
	for obj, want := range map[string]bool{prog: true, link: true, other: false, filepath.Join(dir, "missing"): false} {
		if same(obj) != want {
			t.Errorf("%s: same %v, want %v", obj, !want, want)
		}
	}
	if !SameFile("/no/such/prog")("/no/such/prog") || SameFile("/no/such/prog")(prog) {
		t.Error("a program that is gone: only its own name is it")
	}
}
