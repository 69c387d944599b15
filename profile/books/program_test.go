package books

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
)

// TestProgramBookKnownCalls: main calls f, which calls g twice; the
// times are ticks known by construction, and a hold of 100 ticks in g's
// second call is not g's.
func TestProgramBookKnownCalls(t *testing.T) {
	b := instr.Book{Offset: 64, Frames: 8, Funcs: 4}
	p := NewProgramBook(make([]byte, b.Offset+instr.BookSize(b.Frames, b.Funcs)), b)
	p.Enter(bMain, 1000, 0)
	p.Enter(bF, 900, 10)
	p.Enter(bG, 800, 20)
	p.Exit(bG, 800, 50) // 30
	p.Enter(bG, 800, 60)
	p.SetHeld(100) // PROFILE held the thread 100 ticks in that call
	p.Exit(bG, 800, 200)
	p.Exit(bF, 900, 210) // 200 less the hold: 100, 70 of them g's
	p.CloseAll(300)      // main: 300 less the hold
	// (With the calls each function's calls made, its outermost calls,
	// and the calls beneath them: main made f's, f made g's two.)
	want := map[int]Figure{bMain: {1, 100, 200, 1, 1, 3}, bF: {1, 30, 100, 2, 1, 2}, bG: {2, 70, 70, 0, 2, 0}}
	for fn, w := range want {
		if got := p.Figure(fn); got != w {
			t.Errorf("function %d: %+v, want %+v", fn, got, w)
		}
	}
	if p.Depth() != 3 || p.Inside() != 200 || p.Open() != 0 {
		t.Errorf("depth %d, inside %d, open %d: want 3, 200, 0", p.Depth(), p.Inside(), p.Open())
	}
}

// TestProgramBookAgreesWithBooks plays random runs of calls, returns,
// tail calls, longjmps (frames left without their exits), exits deeper
// than the open call and recursions far deeper than the program's
// shadow stack (spilled and brought back), into a program's book and
// into the books kept by PROFILE: the figures must be the same.
//
// With attribution, the book keeps the calls' caller stacks as nodes
// (nodes.go), in a table of 6 nodes (started again many times over, its
// figures moved out), or of 64 or 4,096: each stack's calls, own time and
// time with children, its shown callers and its key, by /STACK 0 (every
// level), 1 or 2, must be the books' own.
//
// With a start function (/SF), the plan's StartFunc and StartIndex (each
// seed's function in turn) and the book's Start its index plus one, a
// call of another function counts only within one of its calls: the
// entry of another function with no call open and none spilled counts
// nothing, in either. An entry with the shadow stack's frames all
// spilled, the calls open all PROFILE's, is within the calls open, and
// counts. The start function's entries, and every entry with no start
// function, open a frame. Each configuration's runs must have had
// entries of both kinds, the second where the shadow stack is small
// enough to spill (4 and 5 frames), and some calls counted. A start
// function the plan names and does not have (StartIndex -1: the books'
// noStart) makes nothing count: the book's Start is past every
// function's, and every figure is 0 in both.
func TestProgramBookAgreesWithBooks(t *testing.T) {
	const funcs = 6
	for _, sf := range []struct {
		name string
		// start returns the plan's StartFunc and StartIndex, and the
		// book's Start, of a run of seed.
		start func(seed uint64) (name string, index, start int)
	}{
		{"no start function", func(uint64) (string, int, int) { return "", -1, 0 }},
		{"a start function", func(seed uint64) (string, int, int) {
			i := int(seed % funcs)
			return fmt.Sprint("f", i), i, i + 1
		}},
		{"a start function not found", func(uint64) (string, int, int) { return "missing", -1, funcs + 3 }},
	} {
		t.Run(sf.name, func(t *testing.T) {
			for _, c := range []struct {
				frames, nodes, levels int
			}{{4, 0, 0}, {5, 0, 0}, {64, 0, 0}, {4, 6, 0}, {64, 64, 1}, {5, 4096, 2}, {64, 4096, 0}} {
				// What the runs of c did with the start function: the
				// entries of other functions that counted nothing,
				// those that counted in a thread whose frames were all
				// spilled, and the calls counted.
				var skipped, inSpill, counted uint64
				for seed := range uint64(40) {
					startName, startIndex, bookStart := sf.start(seed)
					sk, sp, n := agreeRun(t, seed, c.frames, c.nodes, c.levels, funcs, startName, startIndex, bookStart)
					skipped, inSpill, counted = skipped+sk, inSpill+sp, counted+n
				}
				t.Logf("%+v: %d entries counted nothing, %d counted with the frames all spilled; %d calls", c, skipped, inSpill, counted)
				switch {
				case sf.name == "no start function": // (every entry opened a frame: agreeRun)
					if counted == 0 {
						t.Errorf("%+v: no call counted", c)
					}
				case sf.name == "a start function not found":
					if counted != 0 || skipped == 0 {
						t.Errorf("%+v: %d calls counted, %d entries counted nothing; want none, and some", c, counted, skipped)
					}
				case skipped == 0 || counted == 0 || (c.frames <= 5 && inSpill == 0):
					t.Errorf("%+v: %d entries counted nothing, %d counted with the frames all spilled, %d calls; want some of each", c, skipped, inSpill, counted)
				}
			}
		})
	}
}

// agreeRun plays the random run of seed (TestProgramBookAgreesWithBooks)
// into a program's book of frames frames and nodes nodes, and into the
// books of a plan of funcs functions, /STACK levels and start function
// startName, startIndex (none where startName is ""); the program's book
// has Start start. It fails the test where their figures differ, or
// where an entry of a function that counts whatever the calls open (the
// start function, or any with none) opens no frame, and returns the
// entries that counted nothing, those of functions other than the start
// function that counted where the shadow stack had no call open and
// some spilled, and the calls counted.
func agreeRun(t *testing.T, seed uint64, frames, nodes, levels, funcs int, startName string, startIndex, start int) (skipped, inSpill, counted uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, uint64(frames)))
	plan := &datafile.Plan{Method: datafile.FuncTiming, StartFunc: startName, StartIndex: startIndex, Funcs: make([]datafile.Func, funcs),
		Attribution: nodes > 0, StackDepth: levels}
	books := New(plan)
	b := instr.Book{Offset: 128, Frames: frames, Funcs: funcs, Nodes: nodes, Start: start}
	p := NewProgramBook(make([]byte, b.Offset+b.Size()), b)
	what := fmt.Sprintf("frames %d, nodes %d, /STACK %d, start %d, seed %d", frames, nodes, levels, start, seed)
	type open struct {
		fn int
		sp uint64
	}
	stack := []open{{-1, 1 << 20}}
	now := uint64(1000)
	enter := func(fn int, sp uint64) {
		spilledOnly := p.depth() == 0 && len(p.spill) > 0
		books.Enter(thread1, fn, sp, int64(now))
		p.Enter(fn, sp, now)
		// The entry opened a frame where the top is fn's at sp: any
		// frame at sp before it was closed.
		top := p.frame(p.depth())
		opened := p.depth() > 0 && top.sp == sp && top.fn == uint64(fn)
		switch {
		case !opened && b.Counts(fn):
			t.Fatalf("%s: an entry of function %d, which counts whatever the calls open, opened no frame", what, fn)
		case !opened:
			skipped++
		case spilledOnly && !b.Counts(fn):
			inSpill++
		}
	}
	exit := func(fn int, sp uint64) {
		books.Exit(thread1, fn, sp, int64(now))
		p.Exit(fn, sp, now)
	}
	for range 2000 {
		now += uint64(r.IntN(50))
		top := stack[len(stack)-1]
		switch k := r.IntN(20); {
		case k < 9 || len(stack) == 1: // a call
			fn, sp := r.IntN(funcs), top.sp-8*uint64(1+r.IntN(32))
			stack = append(stack, open{fn, sp})
			enter(fn, sp)
		case k < 17: // a return
			stack = stack[:len(stack)-1]
			exit(top.fn, top.sp)
		case k < 18: // a tail call
			fn := r.IntN(funcs)
			exit(top.fn, top.sp)
			stack[len(stack)-1].fn = fn
			enter(fn, top.sp)
		case k < 19: // a longjmp over some frames
			stack = stack[:max(1, len(stack)-1-r.IntN(4))]
		default: // an exit deeper than the open call (a cold part)
			exit(top.fn, top.sp-64)
		}
	}
	now += 10
	books.End(thread1, int64(now))
	p.CloseAll(now)
	f := books.Figures()
	for fn := range funcs {
		got, want := p.Figure(fn), Figure{Calls: f.Hits[fn], Self: f.Self[fn], All: f.All[fn]}
		if got.Calls != want.Calls || got.Self != want.Self || got.All != want.All {
			t.Fatalf("%s, function %d: %+v, the books %+v", what, fn, got, want)
		}
		counted += got.Calls
	}
	if p.Depth() != f.Depth || p.Inside() != f.Inside {
		t.Fatalf("%s: depth %d, inside %d; the books %d, %d", what, p.Depth(), p.Inside(), f.Depth, f.Inside)
	}
	if nodes == 0 {
		return skipped, inSpill, counted
	}
	// The program's nodes, as caller stacks, against the books'.
	kept := New(plan)
	takeNodes(p, func(path []int, g Figure) {
		if g.Outer != g.Calls {
			t.Fatalf("%s: a node's outermost calls %d, its calls %d", what, g.Outer, g.Calls)
		}
		kept.AddStack(kept.StackFor(path), g.Calls, g.Self, g.All)
	})
	want := map[uint64]datafile.Stack{}
	for _, st := range f.Stacks {
		want[st.Key^uint64(st.Func)] = st
	}
	got := kept.Figures().Stacks
	for _, st := range got {
		w, ok := want[st.Key^uint64(st.Func)]
		delete(want, st.Key^uint64(st.Func))
		// (A stack told apart by fewer callers than its calls had may
		// be reached from several caller stacks: its CallerKey is the
		// first found's, which depends on the order the stacks are
		// found in.)
		sameCaller := st.CallerKey == w.CallerKey || levels > 0
		if !ok || st.Hits != w.Hits || st.Time != w.Time || st.ChildTime != w.ChildTime || !sameCaller || !slices.Equal(st.Callers, w.Callers) {
			t.Fatalf("%s: stack %+v, the books' %+v (found %v)", what, st, w, ok)
		}
	}
	if len(want) > 0 {
		t.Fatalf("%s: %d stacks of the books' not in the program's, %d stacks", what, len(want), len(got))
	}
	return skipped, inSpill, counted
}

// TestProgramBookNodes: a program's caller stacks, known by construction:
// main calls f twice and g once, f calls g; in a table of 4 nodes (the
// root and three stacks), g's call from main finds the table full, so
// the figures of the nodes so far move out and the table starts again
// with the open calls' nodes; and each path's figures come out once.
func TestProgramBookNodes(t *testing.T) {
	b := instr.Book{Offset: 64, Frames: 8, Funcs: 4, Nodes: 5}
	p := NewProgramBook(make([]byte, b.Offset+b.Size()), b)
	p.Enter(bMain, 1000, 0)
	for i := range uint64(2) {
		p.Enter(bF, 900, 10+100*i)
		p.Enter(bG, 800, 20+100*i)
		p.Exit(bG, 800, 50+100*i) // 30
		p.Exit(bF, 900, 70+100*i) // 60, 30 its own
	}
	if n := p.nodes.count(); n != 5 {
		t.Fatalf("%d nodes in use, want 5: none, the root, main, main f, main f g", n)
	}
	p.Enter(bG, 800, 300) // the table full
	p.Exit(bG, 800, 310)  // 10
	if n := p.nodes.count(); n != 4 {
		t.Fatalf("%d nodes in use after the table started again, want 4: none, the root, main, main g", n)
	}
	p.CloseAll(400)
	got := map[string]Figure{}
	takeNodes(p, func(path []int, f Figure) { got[fmt.Sprint(path)] = f })
	want := map[string]Figure{
		fmt.Sprint([]int{bMain}):         {Calls: 1, Self: 400 - 120 - 10, All: 400, Kids: 3, Outer: 1, Beneath: 5},
		fmt.Sprint([]int{bMain, bF}):     {Calls: 2, Self: 60, All: 120, Kids: 2, Outer: 2, Beneath: 2},
		fmt.Sprint([]int{bMain, bF, bG}): {Calls: 2, Self: 60, All: 60, Outer: 2},
		fmt.Sprint([]int{bMain, bG}):     {Calls: 1, Self: 10, All: 10, Outer: 1},
	}
	if !maps.Equal(got, want) {
		t.Errorf("caller stacks %v, want %v", got, want)
	}
	takeNodes(p, func(path []int, f Figure) { t.Errorf("stack %v taken twice: %+v", path, f) })
}

// fakeStacks is a StackFinder of two stacks.
type fakeStacks [2][2]uint64

func (s fakeStacks) StackAt(sp uint64) (uint64, uint64, bool) {
	for _, st := range s {
		if st[0] <= sp && sp < st[1] {
			return st[0], st[1], true
		}
	}
	return 0, 0, false
}

// TestProgramBookOtherStack: a signal handler's call on an alternate
// stack above the thread's nests in the call it interrupted, as the
// books' stretches have it, and leaves it open.
func TestProgramBookOtherStack(t *testing.T) {
	b := instr.Book{Offset: 0, Frames: 8, Funcs: 4}
	p := NewProgramBook(make([]byte, instr.BookSize(b.Frames, b.Funcs)), b)
	p.Where = fakeStacks{{0x1000, 0x2000}, {0x8000, 0x9000}}
	p.Enter(bF, 0x1f00, 0)
	p.Enter(bG, 0x8f00, 10) // above: on the alternate stack
	p.Exit(bG, 0x8f00, 15)
	p.Exit(bF, 0x1f00, 40)
	if f, g := p.Figure(bF), p.Figure(bG); f != (Figure{1, 35, 40, 1, 1, 1}) || g != (Figure{1, 5, 5, 0, 1, 0}) || p.Depth() != 2 {
		t.Errorf("f %+v, g %+v, depth %d: want g nested in f", f, g, p.Depth())
	}
}

// FuzzProgramBook: a book is the program's memory, which it may have
// written over with anything. Whatever it holds, Damaged says so before
// anything else is read; taken back (Restore) or found sound, the book's
// rules read and write only inside it, and never panic.
func FuzzProgramBook(f *testing.F) {
	b := instr.Book{Offset: 64, Frames: 6, Funcs: 3, Nodes: 6}
	size := b.Offset + b.Size()
	sound := make([]byte, size)
	p := NewProgramBook(sound, b)
	p.Enter(1, 0x1000, 10)
	p.Enter(2, 0x0f00, 20)
	f.Add(sound, []byte{0, 1, 2, 3})
	f.Add(make([]byte, size), []byte{9, 9})
	f.Fuzz(func(t *testing.T, mem, ops []byte) {
		if len(mem) < int(size) {
			mem = append(mem, make([]byte, int(size)-len(mem))...)
		}
		mem = mem[:size]
		p := OpenProgramBook(mem, b)
		if p.Damaged() {
			p.Restore()
			if p.Damaged() {
				t.Fatal("a book taken back is still damaged")
			}
		}
		now := p.LastTime()
		for i, op := range ops {
			now += uint64(op)
			fn, sp := int(op)%b.Funcs, 0x2000-uint64(op)*8
			switch i % 3 {
			case 0:
				p.Enter(fn, sp, now)
			case 1:
				p.Exit(fn, sp, now)
			default:
				p.Snapshot()
			}
			if p.Damaged() {
				t.Fatalf("op %d made the book damaged", i)
			}
		}
		p.CloseAll(now + 1)
		if p.Open() != 0 {
			t.Errorf("%d calls open after all closed", p.Open())
		}
		p.Take(func(int, Figure) {})
		takeNodes(p, func(path []int, _ Figure) {
			if len(path) == 0 {
				t.Error("a caller stack of no function")
			}
		})
	})
}

// TestFreshProgramBook: a book started on memory just mapped, all zeros,
// writing only the words that are not, is byte for byte the book
// NewProgramBook starts (with caller stacks or without), and books a
// call as it does: one call of function 1, entered at 100 and left at
// 250, is 150 ns.
func TestFreshProgramBook(t *testing.T) {
	for _, b := range []instr.Book{{Offset: 64, Frames: 8, Funcs: 3}, {Offset: 64, Frames: 8, Funcs: 3, Nodes: 6}} {
		size := b.Offset + b.Size()
		fresh, reset := make([]byte, size), make([]byte, size)
		p, q := FreshProgramBook(fresh, b), NewProgramBook(reset, b)
		if !slices.Equal(fresh, reset) {
			t.Errorf("%d nodes: the fresh book's memory is not the new book's", b.Nodes)
		}
		for _, p := range []*ProgramBook{p, q} {
			p.Enter(1, 0x1000, 100)
			p.Exit(1, 0x1000, 250)
		}
		if f, g := p.Figure(1), q.Figure(1); f.Calls != 1 || f.Self != 150 || f != g {
			t.Errorf("%d nodes: the fresh book %+v, the new one %+v: want one call of 150 ns in each", b.Nodes, f, g)
		}
		if !slices.Equal(fresh, reset) {
			t.Errorf("%d nodes: the fresh book's memory after a call is not the new book's", b.Nodes)
		}
	}
}

// TestRestoreKeepsScale: a book the program wrote over, taken back empty
// (no snapshot to take it back to), keeps the counter's scale and the
// stack's bounds PROFILE wrote: the code reads them, and a scale of 0
// would make every later time 0.
func TestRestoreKeepsScale(t *testing.T) {
	b := instr.Book{Offset: 64, Frames: 8, Funcs: 3}
	mem := make([]byte, b.Offset+b.Size())
	p := NewProgramBook(mem, b)
	p.SetScale(3 << 31)
	p.SetStack(0x7000, 0x9000)
	for i := range mem[b.Offset : b.Offset+128] {
		mem[b.Offset+uint64(i)] = 0xee // (written over)
	}
	if !p.Damaged() {
		t.Fatal("a book written over is not damaged")
	}
	p.Restore()
	word := func(off uint64) uint64 { return p.get(b.Offset + off) }
	if p.Damaged() || word(instr.BookScale) != 3<<31 || word(instr.BookStackLo) != 0x7000 || word(instr.BookStackHi) != 0x9000 {
		t.Errorf("restored: damaged %v, scale %#x, stack %#x-%#x; want a book, %#x, 0x7000-0x9000",
			p.Damaged(), word(instr.BookScale), word(instr.BookStackLo), word(instr.BookStackHi), uint64(3<<31))
	}
}

// takeNodes hands the figures of each caller stack of book p to keep
// (ProgramBook.TakeNodesInto, then Paths.Take).
func takeNodes(p *ProgramBook, keep func(path []int, f Figure)) {
	paths := NewPaths()
	p.TakeNodesInto(paths)
	paths.Take(keep)
}
