package instr

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// TestBookNodesRunAMD64 runs the book code with caller stacks (nodes) on
// this machine (x86-64), by a C driver that copies in a block made here
// and prints it back after the calls: a calls b twice; c calls itself to
// a depth of three. The table holds the nodes of those paths (a, a b, c,
// c c, c c c), as PROFILE would have added them: every call finds its
// node, and each node's figures hold by construction. Each path is its
// function's only one but c's: a node's calls, own time and time with
// children are its function's; c's three nodes have one call each, the
// three own times adding up to c's, and each time with children that of
// the call it names, the outermost c's. Then with the node of a b not
// in the table: b's first entry adds it (the next node, its key in it
// and in a slot), the second finds it, and its figures are b's. And with
// the table full besides, b's entry stops at the breakpoint (SIGTRAP,
// which the driver catches and tells), for PROFILE.
func TestBookNodesRunAMD64(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("runs x86-64 code")
	}
	need(t, "gcc")
	const fa, fb, fc = 0, 1, 2
	b := Book{Offset: 0x40, Frames: 16, Funcs: 3, Nodes: 8}
	var code []byte
	fn := func(f int, body func(at int) []byte) int {
		at := len(code)
		entry, _ := amd64{}.BookEntryCode(b, f)
		exit, _ := amd64{}.BookExitCode(b, f, 0)
		code = append(code, entry.Code...)
		code = append(code, body(len(code))...)
		code = append(append(code, exit.Code...), 0xc3)
		return at
	}
	offB := fn(fb, func(int) []byte { return []byte{0x90, 0x90} })
	offA := fn(fa, func(at int) []byte { return append(callAt(at, offB), callAt(at+5, offB)...) })
	offC := len(code)
	fn(fc, func(at int) []byte {
		return append([]byte{0x48, 0xff, 0xcf, 0x74, 0x05}, callAt(at+5, offC)...) // dec %rdi; jz over; call c
	})

	// The block as PROFILE leaves it: an empty book, a nanosecond a tick,
	// the root's node, and the table's nodes.
	size := b.Offset + b.Size()
	block := make([]byte, size)
	put := func(off, v uint64) { binary.LittleEndian.PutUint64(block[off:], v) }
	get := func(off uint64) uint64 { return binary.LittleEndian.Uint64(block[off:]) }
	put(b.Offset+BookTop, b.FrameAt(1))
	put(b.Offset+BookDeepest, b.FrameAt(1))
	put(b.FrameAt(0)+FrameSP, ^uint64(0))
	put(b.FrameAt(0)+FrameNode, RootNode)
	put(b.Offset+BookScale, 1<<BookScaleShift)
	count := RootNode + 1
	addNode := func(parent, f int) int {
		key := NodeKeyOf(parent, f)
		i := b.NodeSlot(key)
		for get(b.NodeTableAt()+BookNodeSlotSize*uint64(i)) != 0 {
			i = (i + 1) % b.NodeSlots()
		}
		put(b.NodeTableAt()+BookNodeSlotSize*uint64(i), key)
		put(b.NodeTableAt()+BookNodeSlotSize*uint64(i)+8, uint64(count))
		put(b.NodeAt(count)+NodeKey, key)
		count++
		return count - 1
	}
	nA := addNode(RootNode, fa)
	nAB := addNode(nA, fb)
	nC := addNode(RootNode, fc)
	nCC := addNode(nC, fc)
	nCCC := addNode(nCC, fc)
	put(b.Offset+BookNodeCount, uint64(count))
	driver := buildDriver(t, fmt.Sprintf(nodeDriver, cArray(code), cArray(block), size, b.Offset+BookNodeCount, offA, offC))

	run := func(mode string) []byte {
		out, err := exec.Command(driver, mode).Output()
		if err != nil {
			t.Fatalf("driver %s: %v\n%s", mode, err, out)
		}
		after, err := hex.DecodeString(strings.TrimSpace(string(out)))
		if err != nil || len(after) != int(size) {
			t.Fatalf("driver %s said %d bytes (%v), want the block's %d", mode, len(after), err, size)
		}
		return after
	}
	block = run("all")
	figure := func(at uint64) [7]int64 {
		var f [7]int64
		for i := range f {
			f[i] = int64(get(at + 8*uint64(i)))
		}
		return f
	}
	if top := get(b.Offset + BookTop); top != b.FrameAt(1) {
		t.Errorf("shadow stack's top at %#x, want %#x, the root's next", top, b.FrameAt(1))
	}
	fig := func(f int) [7]int64 { return figure(b.FigureAt(f)) }
	node := func(n int) [7]int64 { return figure(b.NodeAt(n)) }
	t.Logf("a %v b %v c %v", fig(fa), fig(fb), fig(fc))
	t.Logf("nodes a %v, a b %v, c %v, c c %v, c c c %v", node(nA), node(nAB), node(nC), node(nCC), node(nCCC))
	// A node's calls, own time, time with children, kids and calls
	// beneath (its open calls and outermost calls, words 3 and 5, are
	// not kept).
	same := func(name string, n [7]int64, calls, self, all, kids, beneath int64) {
		if want := [7]int64{calls, self, all, 0, kids, 0, beneath}; n != want {
			t.Errorf("node %s: %v, want %v", name, n, want)
		}
	}
	a, bb, c := fig(fa), fig(fb), fig(fc)
	same("a", node(nA), 1, a[1], a[2], 2, 2)
	same("a b", node(nAB), 2, bb[1], bb[2], 0, 0)
	if c[0] != 3 || a[0] != 1 || bb[0] != 2 {
		t.Fatalf("calls a %d, b %d, c %d: want 1, 2, 3", a[0], bb[0], c[0])
	}
	n1, n2, n3 := node(nC), node(nCC), node(nCCC)
	same("c", n1, 1, n1[1], c[2], 1, 2)
	same("c c", n2, 1, n2[1], n2[2], 1, 1)
	same("c c c", n3, 1, n3[1], n3[1], 0, 0)
	if n1[1]+n2[1]+n3[1] != c[1] || n2[2] != n2[1]+n3[2] || n1[2] != n1[1]+n2[2] || n3[1] <= 0 {
		t.Errorf("c's nodes' own times %d, %d, %d (c's %d), with children %d, %d, %d: want c's own time theirs, each with children its own and its callee's",
			n1[1], n2[1], n3[1], c[1], n1[2], n2[2], n3[2])
	}
	for n := count; n < b.Nodes; n++ {
		if node(n) != [7]int64{} {
			t.Errorf("node %d, never added, has figures %v", n, node(n))
		}
	}

	// A node missing: b's first entry under a adds it, as node 7.
	block = run("missing")
	if n := get(b.Offset + BookNodeCount); n != uint64(count)+1 {
		t.Fatalf("%d nodes after a b's was added, want %d", n, count+1)
	}
	if key := get(b.NodeAt(count) + NodeKey); key != NodeKeyOf(nA, fb) {
		t.Errorf("the node added has key %#x, want a b's, %#x", key, NodeKeyOf(nA, fb))
	}
	bb = fig(fb)
	same("a b, added", node(count), 2, bb[1], bb[2], 0, 0)
	if n := node(nAB); n != [7]int64{} {
		t.Errorf("a b's node taken out of the table has figures %v", n)
	}

	// The table full besides: b's entry stops at the breakpoint.
	out, err := exec.Command(driver, "full").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "stopped" {
		t.Errorf("a's call of b with the node missing, the table full: %q, %v; want it stopped", out, err)
	}
}

// nodeDriver is the C driver of TestBookNodesRunAMD64. Its arguments:
// the code, the block, its size, a's and c's offsets. With "all", it
// calls a() and c(3) and prints the block in hex; with "missing", it
// takes the node of a's call of b out of the table first (the slot
// holding b's key from a's node, 2 << 32 | 1); with "full", the table's
// count besides at its room (8), and says "stopped" at a SIGTRAP.
const nodeDriver = `#define _GNU_SOURCE
#include <asm/prctl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static unsigned char code[] = {%s};
static const unsigned char init[] = {%s};
static unsigned char block[%d] __attribute__((aligned(64)));

static void on_trap(int sig) {
	(void)sig;
	write(1, "stopped\n", 8);
	_exit(0);
}

int main(int argc, char **argv) {
	unsigned char *x = mmap(0, sizeof code, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (x == MAP_FAILED || argc < 2) return 1;
	memcpy(x, code, sizeof code);
	memcpy(block, init, sizeof block);
	if (strcmp(argv[1], "all") != 0) {
		/* The slot whose key is a's node (2) << 32 | b (1). */
		for (size_t i = 0; i + 16 <= sizeof block; i += 8) {
			uint64_t k;
			memcpy(&k, block + i, 8);
			if (k == ((uint64_t)2 << 32 | 1) && i %% 16 == 0) memset(block + i, 0, 16);
		}
		signal(SIGTRAP, on_trap);
	}
	if (strcmp(argv[1], "full") == 0) {
		uint64_t room = 8;
		memcpy(block + %d, &room, 8);
	}
	if (syscall(SYS_arch_prctl, ARCH_SET_GS, block)) return 2;
	void (*a)(void) = (void (*)(void))(x + %d);
	void (*c)(long) = (void (*)(long))(x + %d);
	a();
	c(3);
	for (size_t i = 0; i < sizeof block; i++) printf("%%02x", block[i]);
	printf("\n");
	return 0;
}
`
