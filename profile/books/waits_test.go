package books

import (
	"slices"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
)

// TestWaitsCharge charges waits to known open calls and checks where each
// goes: the innermost call's function its own wait, each function open
// its wait with children once however deep its recursion, the time
// inside the outermost calls, a wait with no call open outside them; the
// caller stacks (/AT) of the innermost call and of each open call; each
// function's wait no more than its time once given; nothing given where
// a thread's waits were not measured; and a second giving (an exec)
// adding to the first.
func TestWaitsCharge(t *testing.T) {
	const a, b, c = 0, 1, 2
	plan := &datafile.Plan{Method: datafile.FuncTiming, Attribution: true, Funcs: make([]datafile.Func, 3)}
	w := NewWaits(3, true)
	w.Charge([]int{a, b, a, c}, 100) // c inside a inside b inside a
	w.Charge([]int{a, b}, 20)
	w.Charge(nil, 7)           // no call open
	w.Charge([]int{a, b}, 0)   // nothing waited
	w.Charge([]int{a, b}, -50) // PROFILE's reading earlier than the mark: nothing
	bk := New(plan)
	paths := [][]int{{a}, {a, b}, {a, b, a}, {a, b, a, c}}
	for _, path := range paths {
		bk.AddStack(bk.StackFor(path), 1, 1000, 1000) // (times far above the waits)
	}
	self, all := []int64{1000, 1000, 5}, []int64{1000, 1000, 1000}
	w.Give(bk, self, all)
	got := bk.Figures().Waits
	want := &datafile.WaitStats{FuncWait: []int64{0, 20, 5}, ChildWait: []int64{120, 120, 100}, InsideWait: 120, OutsideWait: 7}
	if !waitsEqual(got, want) {
		t.Errorf("waits %+v, want %+v (c's own wait of 100 no more than its time, 5)", got, want)
	}
	stacks := bk.Figures().Stacks
	for i, want := range [][2]int64{{0, 120}, {20, 120}, {0, 100}, {100, 100}} {
		st := stacks[bk.StackFor(paths[i])]
		if got := [2]int64{st.Wait, st.ChildWait}; got != want {
			t.Errorf("stack %v: waits %v, want %v", paths[i], got, want)
		}
	}
	// Given again (an exec): added, the figures given cleared.
	w.Charge([]int{b}, 30)
	w.Give(bk, self, all)
	if got := bk.Figures().Waits; got.FuncWait[b] != 50 || got.ChildWait[b] != 150 || got.InsideWait != 150 || got.OutsideWait != 7 {
		t.Errorf("after a second giving: %+v, want b's 50 and 150, 150 inside, 7 outside", got)
	}
	// A thread not measured: nothing given.
	u := NewWaits(3, false)
	u.Charge([]int{a}, 10)
	u.Unmeasured()
	fresh := New(plan)
	if u.Give(fresh, self, all); fresh.Figures().Waits != nil || u.Measured() {
		t.Errorf("waits %+v given with a thread's not measured", fresh.Figures().Waits)
	}
}

func waitsEqual(a, b *datafile.WaitStats) bool {
	return a != nil && b != nil && slices.Equal(a.FuncWait, b.FuncWait) && slices.Equal(a.ChildWait, b.ChildWait) &&
		a.InsideWait == b.InsideWait && a.OutsideWait == b.OutsideWait
}

// TestOpenFuncs: the functions of the calls open in a book, outermost
// first, the frames spilled out of the program's shadow stack included.
func TestOpenFuncs(t *testing.T) {
	b := instr.Book{Offset: 128, Frames: 4, Funcs: 3}
	p := NewProgramBook(make([]byte, b.Offset+b.Size()), b)
	if got := OpenFuncs(p); len(got) != 0 {
		t.Errorf("a new book: %v open", got)
	}
	sp, now := uint64(1<<20), uint64(1000)
	var want []int
	for i := range 7 { // (more than the 3 frames the program holds: some spilled)
		fn := i % 3
		sp -= 64
		now += 10
		p.Enter(fn, sp, now)
		want = append(want, fn)
		if got := OpenFuncs(p); !slices.Equal(got, want) {
			t.Fatalf("after entry %d: %v open, want %v", i, got, want)
		}
	}
	if len(p.spill) == 0 {
		t.Fatal("nothing spilled: the test holds no spilled frame")
	}
}
