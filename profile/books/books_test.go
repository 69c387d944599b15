package books

import (
	"encoding/binary"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
)

// The books are tested on event sequences whose times are known by
// construction; the tracer feeds them the same events from a real program.

// Function indices of the test plans.
const (
	bMain = iota
	bF
	bG
	bH
)

func testBooks(start int, startName string, attribution bool, levels int) *Books {
	p := &datafile.Plan{Method: datafile.FuncTiming, StartIndex: start, StartFunc: startName,
		Attribution: attribution, StackDepth: levels,
		Funcs: []datafile.Func{{Name: "main"}, {Name: "f"}, {Name: "g"}, {Name: "h"}}}
	return New(p)
}

var thread1 = Key{ID: 1}

// call is one entry (exit false) or exit.
type call struct {
	exit bool
	fn   int
	sp   uint64
	at   int64
}

func in(fn int, sp uint64, at int64) call  { return call{false, fn, sp, at} }
func out(fn int, sp uint64, at int64) call { return call{true, fn, sp, at} }

func play(b *Books, k Key, events ...call) {
	for _, e := range events {
		if e.exit {
			b.Exit(k, e.fn, e.sp, e.at)
		} else {
			b.Enter(k, e.fn, e.sp, e.at)
		}
	}
}

type booked struct {
	hits      []uint64
	self, all []int64
	depth     int
	inside    int64
}

func checkBooks(t *testing.T, b *Books, want booked) {
	t.Helper()
	b.Finish()
	if !slices.Equal(b.hits, want.hits) {
		t.Errorf("hits = %v, want %v", b.hits, want.hits)
	}
	if !slices.Equal(b.self, want.self) {
		t.Errorf("function times = %v, want %v", b.self, want.self)
	}
	if !slices.Equal(b.all, want.all) {
		t.Errorf("function+child times = %v, want %v", b.all, want.all)
	}
	if b.depth != want.depth {
		t.Errorf("depth = %d, want %d", b.depth, want.depth)
	}
	if b.inside != want.inside {
		t.Errorf("time inside = %d, want %d", b.inside, want.inside)
	}
}

func TestBooksNested(t *testing.T) {
	b := testBooks(-1, "", false, 0)
	play(b, thread1,
		in(bMain, 1000, 0),
		in(bF, 900, 10), out(bF, 900, 30),
		in(bF, 900, 40), in(bG, 800, 41), out(bG, 800, 43), out(bF, 900, 45),
		out(bMain, 1000, 100))
	checkBooks(t, b, booked{
		hits: []uint64{1, 2, 1, 0}, self: []int64{75, 23, 2, 0}, all: []int64{100, 25, 2, 0},
		depth: 3, inside: 100,
	})
}

// TestBooksRecursion: a function's function+child time is its outermost
// frame's; its function time sums every level's own.
func TestBooksRecursion(t *testing.T) {
	b := testBooks(-1, "", false, 0)
	play(b, thread1,
		in(bF, 100, 0), in(bF, 90, 10), in(bF, 80, 20),
		out(bF, 80, 30), out(bF, 90, 40), out(bF, 100, 50))
	checkBooks(t, b, booked{
		hits: []uint64{0, 3, 0, 0}, self: []int64{0, 50, 0, 0}, all: []int64{0, 50, 0, 0},
		depth: 3, inside: 50,
	})
}

// TestBooksUnseenReturns: frames left without their exits (a longjmp, an
// exception) close at the next event that shows them gone; without exits
// at all (counting), sibling calls still nest right.
func TestBooksUnseenReturns(t *testing.T) {
	b := testBooks(-1, "", false, 0)
	play(b, thread1,
		in(bMain, 100, 0), in(bF, 90, 10), in(bG, 80, 20),
		in(bH, 95, 50), // longjmp back into main, which calls h
		out(bH, 95, 60), out(bMain, 100, 70))
	checkBooks(t, b, booked{
		hits: []uint64{1, 1, 1, 1}, self: []int64{20, 10, 30, 10}, all: []int64{70, 40, 30, 10},
		depth: 3, inside: 70,
	})

	b = testBooks(-1, "", false, 0)
	for i := range 5 {
		play(b, thread1, in(bMain, 100, 0), in(bF, 90, int64(i)), in(bG, 80, int64(i)))
	}
	if b.depth != 3 || b.hits[bMain] != 5 || b.hits[bG] != 5 {
		t.Errorf("entries only: depth %d, hits %v; want depth 3, 5 of each", b.depth, b.hits)
	}
}

// TestBooksExits: a tail call leaves its caller at the jump; a jump to a
// cold part, deeper than the frame, closes nothing; an exit whose frame is
// gone is ignored.
func TestBooksExits(t *testing.T) {
	b := testBooks(-1, "", false, 0)
	play(b, thread1,
		in(bMain, 100, 0), in(bF, 90, 10),
		out(bF, 70, 12), // jump to f.cold
		out(bF, 90, 20), // tail call to g
		in(bG, 90, 20), out(bG, 90, 50),
		out(bG, 90, 55), // nothing open there
		out(bMain, 100, 60))
	checkBooks(t, b, booked{
		hits: []uint64{1, 1, 1, 0}, self: []int64{20, 10, 30, 0}, all: []int64{60, 10, 30, 0},
		depth: 2, inside: 60,
	})
}

// TestBooksThreads: each thread has its own stack; a thread's end closes
// its frames; frames open at the end of the run close at their last event.
func TestBooksThreads(t *testing.T) {
	b := testBooks(-1, "", false, 0)
	thread2 := Key{ID: 2}
	gor := Key{Goroutine: true, ID: 0xc000001000}
	play(b, thread1, in(bMain, 100, 0), in(bF, 90, 10))
	play(b, thread2, in(bG, 500, 12), in(bH, 400, 15))
	play(b, gor, in(bH, 100, 20))
	b.End(thread2, 40) // g and h of thread 2 end with it
	play(b, gor, out(bH, 100, 25))
	play(b, thread1, out(bF, 90, 30), out(bMain, 100, 50))
	play(b, gor, in(bF, 100, 60), in(bG, 90, 70)) // open at the end: closed at 70
	checkBooks(t, b, booked{
		hits: []uint64{1, 2, 2, 2}, self: []int64{30, 30, 3, 30}, all: []int64{50, 30, 28, 30},
		depth: 2, inside: 50 + 28 + 5 + 10,
	})
}

// TestBooksStart: with /SF, only calls made while the start function is
// on the stack count, and the depth counts from it.
func TestBooksStart(t *testing.T) {
	b := testBooks(bF, "f", false, 0)
	play(b, thread1,
		in(bMain, 100, 0),
		in(bG, 90, 5), out(bG, 90, 8), // before f: not counted
		in(bF, 90, 10), in(bG, 80, 12), in(bH, 70, 13), out(bH, 70, 14), out(bG, 80, 16), out(bF, 90, 20),
		in(bG, 90, 30), out(bG, 90, 31), // after f
		in(bF, 90, 40), out(bF, 90, 41),
		out(bMain, 100, 50))
	checkBooks(t, b, booked{
		hits: []uint64{0, 2, 1, 1}, self: []int64{0, 7, 3, 1}, all: []int64{0, 11, 4, 1},
		depth: 3, inside: 11,
	})

	b = testBooks(-1, "nosuch", false, 0) // asked for, not found
	play(b, thread1, in(bMain, 100, 0), in(bF, 90, 10), out(bF, 90, 30), out(bMain, 100, 40))
	checkBooks(t, b, booked{hits: make([]uint64, 4), self: make([]int64, 4), all: make([]int64, 4)})
}

// TestBooksStacks: callers are told apart by /STACK levels and at most two
// are shown, outermost first, -1 for the stack base.
func TestBooksStacks(t *testing.T) {
	// main calls f; main calls g, which calls f; twice over.
	calls := []call{
		in(bMain, 100, 0),
		in(bF, 90, 10), out(bF, 90, 20),
		in(bG, 90, 20), in(bF, 80, 21), out(bF, 80, 25), out(bG, 90, 30),
		in(bG, 90, 30), in(bF, 80, 31), out(bF, 80, 35), out(bG, 90, 40),
		out(bMain, 100, 50),
	}
	type stack struct {
		fn      int
		callers []int
		hits    uint64
		time    int64
		all     int64
	}
	for _, c := range []struct {
		levels int
		want   []stack
	}{
		{0, []stack{
			{bMain, []int{-1}, 1, 20, 50},
			{bF, []int{-1, bMain}, 1, 10, 10},
			{bG, []int{-1, bMain}, 2, 12, 20},
			{bF, []int{bMain, bG}, 2, 8, 8},
		}},
		{1, []stack{
			{bMain, []int{-1}, 1, 20, 50},
			{bF, []int{bMain}, 1, 10, 10},
			{bG, []int{bMain}, 2, 12, 20},
			{bF, []int{bG}, 2, 8, 8},
		}},
	} {
		b := testBooks(-1, "", true, c.levels)
		play(b, thread1, calls...)
		b.Finish()
		var got []stack
		for _, s := range b.stacks {
			got = append(got, stack{s.Func, s.Callers, s.Hits, s.Time, s.ChildTime})
		}
		if len(got) != len(c.want) {
			t.Fatalf("/STACK %d: %d stacks %v, want %v", c.levels, len(got), got, c.want)
		}
		for i := range got {
			g, w := got[i], c.want[i]
			if g.fn != w.fn || !slices.Equal(g.callers, w.callers) || g.hits != w.hits || g.time != w.time || g.all != w.all {
				t.Errorf("/STACK %d: stack %d = %+v, want %+v", c.levels, i, g, w)
			}
		}
	}
}

// TestBooksDeepStacks reproduces the original's deep.c counts of stacks:
// main calls fib, which recurses 300 more levels; /STACK n tells apart at
// most n levels (golden deep/fc-at16, fc-at256, fc-atdefault: 18, 258 and
// 302 stacks).
func TestBooksDeepStacks(t *testing.T) {
	for levels, want := range map[int]int{16: 18, 256: 258, 0: 302, 1000: 302, 1: 3, 2: 4} {
		b := testBooks(-1, "", true, levels)
		play(b, thread1, in(bMain, 100000, 0))
		for d := range 301 {
			play(b, thread1, in(bF, uint64(99000-100*d), int64(d)))
		}
		b.Finish()
		if len(b.stacks) != want {
			t.Errorf("/STACK %d: %d stacks, want %d", levels, len(b.stacks), want)
		}
		if b.depth != 302 {
			t.Errorf("/STACK %d: depth %d, want 302", levels, b.depth)
		}
	}
}

// stackKeyOf is the key of a caller stack (datafile.Stack.Key), as the
// .pbo keeps it: the FNV-1a hash of the number of callers told apart,
// then of those callers, innermost first, each a little-endian 64-bit
// word.
func stackKeyOf(callers ...int) uint64 {
	h := fnv.New64a()
	for _, v := range append([]int{len(callers)}, callers...) {
		h.Write(binary.LittleEndian.AppendUint64(nil, uint64(v)))
	}
	return h.Sum64()
}

// TestBooksStacksBeyondLevels: the same function reached through stacks
// deeper than /STACK that differ only beyond its levels, and recursion,
// twice over (the second time every caller stack is known). main calls
// a, which calls g, h, f; then b, which calls g, h, f; then r, which
// recurses 4 levels below itself. The stacks are told apart by /STACK
// callers and keyed by them (the .pbo's keys); they show two, and keep
// their caller's stack's key, which leads from stack to stack through
// the callers told apart.
func TestBooksStacksBeyondLevels(t *testing.T) {
	const (
		main = iota
		a
		b
		g
		h
		f
		r
	)
	round := func(at int64) []call {
		return []call{
			in(main, 1000, at+0),
			in(a, 990, at+10), in(g, 980, at+11), in(h, 970, at+12), in(f, 960, at+13),
			out(f, 960, at+15), out(h, 970, at+16), out(g, 980, at+17), out(a, 990, at+20),
			in(b, 990, at+20), in(g, 980, at+21), in(h, 970, at+22), in(f, 960, at+23),
			out(f, 960, at+26), out(h, 970, at+27), out(g, 980, at+28), out(b, 990, at+30),
			in(r, 990, at+30), in(r, 980, at+31), in(r, 970, at+32), in(r, 960, at+33), in(r, 950, at+34),
			out(r, 950, at+35), out(r, 960, at+36), out(r, 970, at+37), out(r, 980, at+38), out(r, 990, at+40),
			out(main, 1000, at+50),
		}
	}
	// One round's stacks: the function, the callers told apart
	// (innermost first: the key), the callers shown, hits, function
	// time, function+child time.
	type stack struct {
		fn        int
		key       []int
		shown     []int
		hits      uint64
		time, all int64
	}
	for _, c := range []struct {
		levels int
		want   []stack
	}{
		{2, []stack{
			{main, nil, []int{-1}, 1, 20, 50},
			{a, []int{main}, []int{-1, main}, 1, 4, 10},
			{g, []int{a, main}, []int{main, a}, 1, 2, 6},
			{h, []int{g, a}, []int{a, g}, 1, 2, 4},
			{f, []int{h, g}, []int{g, h}, 2, 5, 5}, // through a and through b
			{b, []int{main}, []int{-1, main}, 1, 3, 10},
			{g, []int{b, main}, []int{main, b}, 1, 2, 7},
			{h, []int{g, b}, []int{b, g}, 1, 2, 5},
			{r, []int{main}, []int{-1, main}, 1, 3, 10},
			{r, []int{r, main}, []int{main, r}, 1, 2, 7},
			{r, []int{r, r}, []int{r, r}, 3, 5, 9}, // levels 3, 4 and 5
		}},
		{3, []stack{
			{main, nil, []int{-1}, 1, 20, 50},
			{a, []int{main}, []int{-1, main}, 1, 4, 10},
			{g, []int{a, main}, []int{main, a}, 1, 2, 6},
			{h, []int{g, a, main}, []int{a, g}, 1, 2, 4},
			{f, []int{h, g, a}, []int{g, h}, 1, 2, 2},
			{b, []int{main}, []int{-1, main}, 1, 3, 10},
			{g, []int{b, main}, []int{main, b}, 1, 2, 7},
			{h, []int{g, b, main}, []int{b, g}, 1, 2, 5},
			{f, []int{h, g, b}, []int{g, h}, 1, 3, 3},
			{r, []int{main}, []int{-1, main}, 1, 3, 10},
			{r, []int{r, main}, []int{main, r}, 1, 2, 7},
			{r, []int{r, r, main}, []int{r, r}, 1, 2, 5},
			{r, []int{r, r, r}, []int{r, r}, 2, 3, 4}, // levels 4 and 5
		}},
		{0, []stack{
			{main, nil, []int{-1}, 1, 20, 50},
			{a, []int{main}, []int{-1, main}, 1, 4, 10},
			{g, []int{a, main}, []int{main, a}, 1, 2, 6},
			{h, []int{g, a, main}, []int{a, g}, 1, 2, 4},
			{f, []int{h, g, a, main}, []int{g, h}, 1, 2, 2},
			{b, []int{main}, []int{-1, main}, 1, 3, 10},
			{g, []int{b, main}, []int{main, b}, 1, 2, 7},
			{h, []int{g, b, main}, []int{b, g}, 1, 2, 5},
			{f, []int{h, g, b, main}, []int{g, h}, 1, 3, 3},
			{r, []int{main}, []int{-1, main}, 1, 3, 10},
			{r, []int{r, main}, []int{main, r}, 1, 2, 7},
			{r, []int{r, r, main}, []int{r, r}, 1, 2, 5},
			{r, []int{r, r, r, main}, []int{r, r}, 1, 2, 3},
			{r, []int{r, r, r, r, main}, []int{r, r}, 1, 1, 1},
		}},
	} {
		p := &datafile.Plan{Method: datafile.FuncTiming, StartIndex: -1, Attribution: true, StackDepth: c.levels,
			Funcs: make([]datafile.Func, 7)}
		bk := New(p)
		play(bk, thread1, round(0)...)
		play(bk, thread1, round(100)...)
		bk.Finish()
		if len(bk.stacks) != len(c.want) {
			t.Errorf("/STACK %d: %d stacks %+v, want %d", c.levels, len(bk.stacks), bk.stacks, len(c.want))
			continue
		}
		for i, s := range bk.stacks {
			w := c.want[i]
			want := datafile.Stack{Func: w.fn, Callers: w.shown, Key: stackKeyOf(w.key...),
				Hits: 2 * w.hits, Time: 2 * w.time, ChildTime: 2 * w.all}
			if s.Func != want.Func || !slices.Equal(s.Callers, want.Callers) || s.Key != want.Key ||
				s.Hits != want.Hits || s.Time != want.Time || s.ChildTime != want.ChildTime {
				t.Errorf("/STACK %d: stack %d = %+v, want %+v (callers %v)", c.levels, i, s, want, w.key)
			}
			// Each stack keeps its caller's stack's key: from stack to
			// stack, the callers told apart, innermost first.
			var chain []int
			for k := s; k.Callers[len(k.Callers)-1] >= 0 && (c.levels == 0 || len(chain) < c.levels); {
				caller := k.Callers[len(k.Callers)-1]
				chain = append(chain, caller)
				next := slices.IndexFunc(bk.stacks, func(o datafile.Stack) bool { return o.Func == caller && o.Key == k.CallerKey })
				if next < 0 {
					t.Errorf("/STACK %d: stack %d: no stack of function %d with key %#x (chain %v)", c.levels, i, caller, k.CallerKey, chain)
					break
				}
				k = bk.stacks[next]
			}
			if !slices.Equal(chain, w.key) {
				t.Errorf("/STACK %d: stack %d's chain of caller stacks %v, want %v", c.levels, i, chain, w.key)
			}
		}
	}
}

// TestBooksDeepStackCost: a call's caller stack is found in a time that
// does not grow with the stack's depth. Under 4,000 frames of a
// recursion, 10,000 calls of one function hash their callers once, the
// first time, whatever /STACK (it used to hash them at every call: 40
// million callers).
func TestBooksDeepStackCost(t *testing.T) {
	const depth, calls = 4000, 10000
	for _, levels := range []int{0, 2, 16, 10000} {
		bk := testBooks(-1, "", true, levels)
		sp := uint64(1 << 30)
		play(bk, thread1, in(bMain, sp, 0))
		for range depth {
			sp -= 64
			play(bk, thread1, in(bF, sp, 0))
		}
		before := bk.hashed
		for i := range calls {
			play(bk, thread1, in(bG, sp-64, int64(2*i+1)), out(bG, sp-64, int64(2*i+2)))
		}
		if d := bk.hashed - before; d > depth+1 {
			t.Errorf("/STACK %d: %d calls at depth %d hashed %d callers, want at most %d", levels, calls, depth+1, d, depth+1)
		}
		if s := bk.stacks[len(bk.stacks)-1]; s.Func != bG || s.Hits != calls || s.Time != calls {
			t.Errorf("/STACK %d: g's stack %+v, want %d hits of 1 ns", levels, s, calls)
		}
	}
}

// TestBooksStepsAreStacks: on random sequences of entries and exits
// (nesting, returns seen and unseen, recursion, a start function), the
// caller stack each call is booked to from its caller's (callerStack) is
// the one its whole chain of callers makes (stackOf), whatever /STACK.
func TestBooksStepsAreStacks(t *testing.T) {
	rnd := rand.New(rand.NewPCG(18, 8))
	for _, levels := range []int{0, 1, 2, 3, 5} {
		for _, start := range []int{-1, bF} {
			bk := testBooks(start, "f", true, levels)
			l := bk.Ledger(thread1)
			sp := uint64(1 << 20)
			for i := range 20000 {
				fn := rnd.IntN(4)
				switch r := rnd.IntN(10); {
				case r < 5 || len(l.frames) == 0: // a call
					sp -= 16
					bk.EnterLedger(l, fn, sp, int64(i))
				case r < 8: // a return
					top := l.frames[len(l.frames)-1]
					bk.ExitLedger(l, top.fn, top.sp, int64(i))
					sp = top.sp + 16
				default: // a longjmp: a call from a frame further out
					up := uint64(16 * (1 + rnd.IntN(len(l.frames))))
					sp += up
					bk.EnterLedger(l, fn, sp, int64(i))
				}
				if n := len(l.frames); n > 0 && l.frames[n-1].begun == int64(i) {
					top := l.frames[n-1]
					under := &Ledger{frames: l.frames[:n-1]}
					if want := bk.stackOf(under, top.fn); top.stack != want {
						t.Fatalf("/STACK %d, start %d, event %d: call of %d booked to stack %d %+v, its callers make %d %+v",
							levels, start, i, top.fn, top.stack, bk.stacks[top.stack], want, bk.stacks[want])
					}
				}
			}
		}
	}
}
