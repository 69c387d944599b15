package books

import (
	"slices"
	"testing"

	"github.com/sourceprofiler/sprof/instr"
)

// TestCostsCorrected: a run whose every call's code costs 3 ns inside the
// interval it measures and 5 ns outside it (2 before the entry's reading
// and 1 after, 2 before the exit's and 3 after) is booked as the
// counter reads it; with that cost taken out, each function's own time
// and time with children are its body's, exactly: main's 7 ns, f's 20 ns
// twice, g's 10 ns twice within them, and r's 4 ns at each of three
// levels of a recursion, counted once.
func TestCostsCorrected(t *testing.T) {
	const main, f, g, r = 0, 1, 2, 3
	b := instr.Book{Offset: 64, Frames: 8, Funcs: 4}
	p := NewProgramBook(make([]byte, b.Offset+instr.BookSize(b.Frames, b.Funcs)), b)
	var now uint64
	call := func(fn int, sp uint64, body func()) {
		now += 2
		p.Enter(fn, sp, now)
		now++
		body()
		now += 2
		p.Exit(fn, sp, now)
		now += 3
	}
	var rec func(level int) func()
	rec = func(level int) func() {
		return func() {
			now += 4
			if level < 3 {
				call(r, 0x100-uint64(level)*0x10, rec(level+1))
			}
		}
	}
	call(main, 0x1000, func() {
		now += 7
		for range 2 {
			call(f, 0x900, func() {
				now += 15
				call(g, 0x800, func() { now += 10 })
				now += 5
			})
		}
		call(r, 0x100, rec(1))
	})
	want := map[int][2]int64{main: {7, 7 + 40 + 20 + 12}, f: {40, 60}, g: {20, 20}, r: {12, 12}}
	c := Costs{In: 3, Out: 5}
	for fn, w := range want {
		got := c.Corrected(p.Figure(fn))
		if got.Self != w[0] || got.All != w[1] {
			t.Errorf("function %d: own %d ns, with children %d (booked %+v); want %d, %d", fn, got.Self, got.All, p.Figure(fn), w[0], w[1])
		}
	}
	// A cost measured above what a tiny function's calls took leaves
	// it nothing, never less, and its time with children no less.
	if got := (Costs{In: 30, Out: 5}).Corrected(p.Figure(g)); got.Self != 0 || got.All != 0 {
		t.Errorf("g at 30 ns a call: own %d, with children %d; want 0, 0", got.Self, got.All)
	}
}

// TestCostsScaled: a call's measured cost is split as the calibration
// split its own.
func TestCostsScaled(t *testing.T) {
	if got := (Costs{In: 10, Out: 30}).Scaled(60.4); got != (Costs{In: 15, Out: 45}) {
		t.Errorf("scaled %+v, want 15 and 45, to the nanosecond", got)
	}
	if got := (Costs{}).Scaled(8); got != (Costs{In: 8}) {
		t.Errorf("scaled from nothing %+v, want all of it inside", got)
	}
}

// TestCostsCorrectedAll: a function whose calls cost less than the
// average (g's thousand empty calls from h) comes out below nothing and
// is given nothing; the time within outermost calls is the own times'
// sum, and no time with children passes it (f's would, at 1,010 ns of
// 30: more than the whole).
func TestCostsCorrectedAll(t *testing.T) {
	const main, f, g, h = 0, 1, 2, 3
	figs := []Figure{
		main: {Calls: 1, Self: 50, All: 20100, Kids: 2, Outer: 1, Beneath: 1003},
		f:    {Calls: 1, Self: 20, All: 1040, Kids: 1, Outer: 1, Beneath: 1},
		g:    {Calls: 1001, Self: 6010, All: 6010, Outer: 1001},
		h:    {Calls: 1, Self: 10020, All: 15020, Kids: 1000, Outer: 1, Beneath: 1000},
	}
	got, inside := (Costs{In: 10, Out: 10}).CorrectedAll(figs)
	want := []Figure{
		main: {Calls: 1, Self: 20, All: 30, Kids: 2, Outer: 1, Beneath: 1003},
		f:    {Calls: 1, Self: 0, All: 30, Kids: 1, Outer: 1, Beneath: 1},
		g:    {Calls: 1001, Self: 0, All: 0, Outer: 1001},
		h:    {Calls: 1, Self: 10, All: 10, Kids: 1000, Outer: 1, Beneath: 1000},
	}
	if inside != 30 || !slices.Equal(got, want) {
		t.Errorf("inside %d, figures %+v; want 30, %+v", inside, got, want)
	}
}
