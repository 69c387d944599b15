package books

import (
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
)

// The books on several stacks: a thread's own, alternate signal stacks
// above and below it, coroutine stacks, with the mappings known by
// construction.

// extent is a mapping, from lo to hi.
type extent struct{ lo, hi uint64 }

func (s extent) holds(a uint64) bool { return s.lo <= a && a < s.hi }

// fakeMaps is a memory map: StackAt finds the extent that holds an
// address, and counts the questions.
type fakeMaps struct {
	extents []extent
	asked   int
}

func (m *fakeMaps) StackAt(sp uint64) (lo, hi uint64, ok bool) {
	m.asked++
	for _, e := range m.extents {
		if e.holds(sp) {
			return e.lo, e.hi, true
		}
	}
	return 0, 0, false
}

// The stacks of the tests: the thread's, alternate stacks above and below
// it, two coroutine stacks, one mapping holding two coroutine stacks.
var (
	ownStack   = extent{0x10000, 0x20000}
	altAbove   = extent{0x50000, 0x60000}
	altBelow   = extent{0x1000, 0x2000}
	coStack1   = extent{0x30000, 0x31000}
	coStack2   = extent{0x32000, 0x33000}
	sharedHeap = extent{0x40000, 0x48000}
)

func stackBooks(maps *fakeMaps, funcs ...datafile.Func) *Books {
	if funcs == nil {
		funcs = make([]datafile.Func, 4)
	}
	b := New(&datafile.Plan{Method: datafile.FuncTiming, StartIndex: -1, Funcs: funcs})
	b.Where = maps
	return b
}

func allMaps() *fakeMaps {
	return &fakeMaps{extents: []extent{ownStack, altAbove, altBelow, coStack1, coStack2, sharedHeap}}
}

// TestBooksAlternateStack: outer calls spin twice; a signal handler on an
// alternate stack calls tick in the middle of each; the second time
// tick's exit is not seen (the handler left it some other way), and it
// closes when the thread is back on its own stack. The figures are the
// same with the alternate stack above the thread's stack as below it:
// tick nests in spin. (Without the mappings, tick's entry above the
// thread's stack closed outer and spin.)
func TestBooksAlternateStack(t *testing.T) {
	const outer, spin, tick = 0, 1, 2
	for _, alt := range []extent{altAbove, altBelow} {
		maps := allMaps()
		b := stackBooks(maps)
		sig := alt.hi - 0x800
		play(b, thread1,
			in(outer, 0x1f000, 0),
			in(spin, 0x1ef00, 10), in(tick, sig, 20), out(tick, sig, 22), out(spin, 0x1ef00, 30),
			in(spin, 0x1ef00, 30), in(tick, sig, 35), out(spin, 0x1ef00, 40),
			out(outer, 0x1f000, 50))
		checkBooks(t, b, booked{
			hits: []uint64{1, 2, 2, 0}, self: []int64{20, 23, 7, 0}, all: []int64{50, 30, 7, 0},
			depth: 3, inside: 50,
		})
		// The thread's stack once, the alternate stack at each switch
		// (the way back is known: a stretch's).
		if maps.asked != 3 {
			t.Errorf("alternate stack %#x: the map asked %d times, want 3", alt.lo, maps.asked)
		}
	}
}

// TestBooksSignalStackNesting: on the alternate stack the rules are the
// stack's own: a second signal during the handler nests deeper; the
// handler entered again at the same stack pointer, its last exit unseen,
// closes the last one; a longjmp from the handler back into the thread's
// frames closes the handler's.
func TestBooksSignalStackNesting(t *testing.T) {
	const outer, tick, tock, after = 0, 1, 2, 3
	b := stackBooks(allMaps())
	play(b, thread1,
		in(outer, 0x1f000, 0),
		in(tick, 0x5f000, 10), in(tock, 0x5e000, 11), out(tock, 0x5e000, 13), out(tick, 0x5f000, 15),
		in(tick, 0x5f000, 20),  // its exit unseen
		in(tick, 0x5f000, 30),  // closes the last one
		in(after, 0x1ef00, 40), // a longjmp into outer, which calls after
		out(after, 0x1ef00, 45), out(outer, 0x1f000, 50))
	checkBooks(t, b, booked{
		hits: []uint64{1, 3, 1, 1}, self: []int64{50 - 5 - 10 - 10 - 5, 3 + 10 + 10, 2, 5}, all: []int64{50, 25, 2, 5},
		depth: 3, inside: 50,
	})
}

// TestBooksCoroutines: a coroutine on a stack of its own (swapcontext)
// nests in the frame that switched to it and closes when the thread is
// back on the stack below; two coroutines on stacks of their own nest
// one in the other; coroutine stacks in one mapping are one stack to the
// rules: an entry on one closes the other's frames at or below its stack
// pointer.
func TestBooksCoroutines(t *testing.T) {
	const main, resume, f, g = 0, 1, 2, 3
	b := stackBooks(allMaps())
	play(b, thread1,
		in(main, 0x1f000, 0),
		in(resume, 0x1ef00, 10),
		in(f, 0x30f00, 11),       // the coroutine starts
		in(g, 0x32f00, 12),       // and switches to another, which calls g
		out(resume, 0x1ef00, 20), // both switch back: f and g close at 20
		in(f, 0x47f00, 30),       // a coroutine on the shared heap
		in(g, 0x43f00, 31),       // another there, lower: nested
		in(f, 0x47e00, 35),       // the first again, above the second: g closes
		out(main, 0x1f000, 50))
	checkBooks(t, b, booked{
		hits: []uint64{1, 1, 3, 2}, self: []int64{50 - 10 - 20, 10 - 9, 1 + (35 - 30 - 4) + 15, 8 + 4},
		all: []int64{50, 10, 9 + 20, 8 + 4}, depth: 4, inside: 50,
	})
}

// TestBooksStacksUnknown: an address in no known mapping, and the events
// of functions not keyed by the stack pointer (Go's), are compared with
// every frame, as where the mappings are not known at all: an entry
// above them all closes them.
func TestBooksStacksUnknown(t *testing.T) {
	const outer, spin, tick = 0, 1, 2
	b := stackBooks(allMaps())
	play(b, thread1, in(outer, 0x1f000, 0), in(spin, 0x1ef00, 10), in(tick, 0x90000, 20), out(tick, 0x90000, 25))
	checkBooks(t, b, booked{
		hits: []uint64{1, 1, 1, 0}, self: []int64{10, 10, 5, 0}, all: []int64{20, 10, 5, 0},
		depth: 2, inside: 25,
	})

	funcs := make([]datafile.Func, 4)
	funcs[tick].Frame = datafile.FrameNone
	b = stackBooks(allMaps(), funcs...)
	play(b, thread1, in(outer, 0x1f000, 0), in(spin, 0x1ef00, 10), in(tick, 0x5f000, 20), out(tick, 0x5f000, 25))
	checkBooks(t, b, booked{
		hits: []uint64{1, 1, 1, 0}, self: []int64{10, 10, 5, 0}, all: []int64{20, 10, 5, 0},
		depth: 2, inside: 25,
	})

	// A goroutine's frames are keyed by their distance from its stack
	// top: never told apart by stack.
	b = stackBooks(allMaps())
	gor := Key{Goroutine: true, ID: 0xc000001000}
	play(b, gor, in(outer, 0x1f000, 0), in(spin, 0x1ef00, 10), in(tick, 0x5f000, 20), out(tick, 0x5f000, 25))
	checkBooks(t, b, booked{
		hits: []uint64{1, 1, 1, 0}, self: []int64{10, 10, 5, 0}, all: []int64{20, 10, 5, 0},
		depth: 2, inside: 25,
	})
}

// TestBooksStackGrows: the thread's stack grows below the bounds the map
// gave; an entry there is on the same stack (known by its end) and nests,
// and the map is not asked again for what the new bounds hold.
func TestBooksStackGrows(t *testing.T) {
	const main, f, g = 0, 1, 2
	maps := &fakeMaps{extents: []extent{{0x18000, 0x20000}}}
	b := stackBooks(maps)
	play(b, thread1, in(main, 0x1f000, 0), in(f, 0x18100, 10))
	maps.extents[0].lo = 0x10000
	play(b, thread1, in(g, 0x17000, 20), in(g, 0x16000, 30), out(g, 0x16000, 35), out(g, 0x17000, 40),
		out(f, 0x18100, 45), out(main, 0x1f000, 50))
	checkBooks(t, b, booked{
		hits: []uint64{1, 1, 2, 0}, self: []int64{15, 15, 20, 0}, all: []int64{50, 35, 20, 0},
		depth: 4, inside: 50,
	})
	if maps.asked != 2 {
		t.Errorf("the map asked %d times, want 2 (the first entry, the first beyond its bounds)", maps.asked)
	}
}
