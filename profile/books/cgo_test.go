package books

import (
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
)

// cgoBooks are books of a plan of two Go functions, main and g, and two
// C functions, f and h (the indices of testBooks).
func cgoBooks() *Books {
	p := &datafile.Plan{Method: datafile.FuncTiming, StartIndex: -1,
		Funcs: []datafile.Func{{Name: "main", Frame: datafile.FrameGoroutine}, {Name: "f"},
			{Name: "g", Frame: datafile.FrameGoroutine}, {Name: "h"}}}
	return New(p)
}

var goroutine1 = Key{Goroutine: true, ID: 1}

// goKey is the key of a Go frame d bytes below its goroutine's stack top
// (frameKey).
func goKey(d uint64) uint64 { return 1<<63 - d }

// TestBooksCgoRuns: in a goroutine's ledger, Go's main calls C's f
// (cgo), which calls Go's g back, which calls C's h. Go's keys (a
// distance from the goroutine's stack top, turned) are far above C's
// (stack pointers of the thread's system stack): each call across nests
// in its caller, and each time is its own: main 10+10, f 10+10, g 10+10,
// h 10. A chain whose exits were not seen closes where the thread is
// back in a run below: g's entry at main's depth closes f and the rest
// (they returned), and an exit deeper than the top frame of its kind's
// run closes nothing.
func TestBooksCgoRuns(t *testing.T) {
	b := cgoBooks()
	play(b, goroutine1,
		in(bMain, goKey(100), 0),
		in(bF, 0x7000, 10),
		in(bG, goKey(300), 20),
		in(bH, 0x6000, 30), out(bH, 0x6000, 40),
		out(bG, goKey(300), 50),
		out(bF, 0x7000, 60),
		out(bMain, goKey(100), 70))
	checkBooks(t, b, booked{
		hits: []uint64{1, 1, 1, 1}, self: []int64{20, 20, 20, 10}, all: []int64{70, 50, 30, 10},
		depth: 4, inside: 70,
	})

	b = cgoBooks()
	play(b, goroutine1,
		in(bMain, goKey(100), 0),
		in(bF, 0x7000, 10),
		in(bG, goKey(300), 20),
		in(bH, 0x6000, 30),
		out(bH, 0x5000, 35),    // (deeper than h: nothing)
		in(bG, goKey(100), 40), // main's sibling: main, f, g and h returned unseen
		out(bG, goKey(100), 50))
	checkBooks(t, b, booked{
		hits: []uint64{1, 1, 2, 1}, self: []int64{10, 10, 20, 10}, all: []int64{40, 30, 30, 10},
		depth: 4, inside: 50,
	})
}
