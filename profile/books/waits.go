package books

import (
	"slices"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
)

// Waits are the times a run's threads spent off a CPU inside profiled
// calls (issue 33, part 8; docs/architecture.md, "Time on a CPU per
// call"), so that a report can show each call's time on a CPU: its
// elapsed time less its waits. A wait is charged to the calls open when
// it happened, as elapsed time is: to the innermost call's function as
// its own, to each function open (once per recursion, as a function's
// time with children counts) with children, and, with caller stacks, to
// the innermost call's stack as its own and to each open call's stack
// with children.
type Waits struct {
	self, all       []int64
	inside, outside int64
	// paths holds, with caller stacks, the waits of each path of calls
	// (outermost first, by its key), and keys the path of each key.
	paths map[string]*[2]int64
	keys  map[string][]int
	// unmeasured counts the threads whose waits were not measured.
	unmeasured int
}

// NewWaits returns no waits yet for a plan of funcs functions, keeping
// them by caller stack where stacks is set.
func NewWaits(funcs int, stacks bool) *Waits {
	w := &Waits{self: make([]int64, funcs), all: make([]int64, funcs)}
	if stacks {
		w.paths, w.keys = map[string]*[2]int64{}, map[string][]int{}
	}
	return w
}

// Charge charges a wait of ns nanoseconds to the calls open, whose
// functions are open, outermost first (OpenFuncs). A function past the
// plan's (the calibration's) is charged nothing.
func (w *Waits) Charge(open []int, ns int64) {
	if ns <= 0 {
		return
	}
	if len(open) == 0 {
		w.outside += ns
		return
	}
	w.inside += ns
	if top := open[len(open)-1]; top < len(w.self) {
		w.self[top] += ns
	}
	for i, fn := range open {
		if fn < len(w.all) && !slices.Contains(open[:i], fn) {
			w.all[fn] += ns
		}
	}
	if w.paths == nil {
		return
	}
	for n := 1; n <= len(open); n++ {
		key := pathKey(open[:n])
		p := w.paths[key]
		if p == nil {
			p = new([2]int64)
			w.paths[key], w.keys[key] = p, slices.Clone(open[:n])
		}
		if n == len(open) {
			p[0] += ns
		}
		p[1] += ns
	}
}

// Unmeasured notes a thread whose waits were not measured: the run then
// states none.
func (w *Waits) Unmeasured() { w.unmeasured++ }

// Measured reports whether every thread's waits were measured.
func (w *Waits) Measured() bool { return w.unmeasured == 0 }

// Give adds the waits to books b's, each function's no more than its
// time (self and all, the figures b has of it: a wait is inside the
// time, and only the estimate of what PROFILE's code cost could take the
// time below it), unless a thread's were not measured.
func (w *Waits) Give(b *Books, self, all []int64) {
	if !w.Measured() {
		return
	}
	ws := b.waits
	if ws == nil {
		ws = &datafile.WaitStats{FuncWait: make([]int64, len(self)), ChildWait: make([]int64, len(all))}
		b.waits = ws
	}
	ws.InsideWait += w.inside
	ws.OutsideWait += w.outside
	for fn := range min(len(ws.FuncWait), len(w.self), len(self)) {
		ws.FuncWait[fn] = min(ws.FuncWait[fn]+w.self[fn], max(self[fn], 0))
		ws.ChildWait[fn] = min(ws.ChildWait[fn]+w.all[fn], max(all[fn], 0))
	}
	for key, p := range w.paths {
		st := &b.stacks[b.StackFor(w.keys[key])]
		st.Wait = min(st.Wait+p[0], max(st.Time, 0))
		st.ChildWait = min(st.ChildWait+p[1], max(st.ChildTime, 0))
	}
	// (What is given is given once: an exec reads the books again.)
	clear(w.self)
	clear(w.all)
	w.inside, w.outside = 0, 0
	clear(w.paths)
	clear(w.keys)
}

// pathKey is a path of calls' key in Waits.paths.
func pathKey(path []int) string {
	b := make([]byte, 0, 4*len(path))
	for _, fn := range path {
		b = append(b, byte(fn), byte(fn>>8), byte(fn>>16), byte(fn>>24))
	}
	return string(b)
}

// OpenFuncs returns the functions of the calls open in book p,
// outermost first, those spilled out of the program included.
func OpenFuncs(p *ProgramBook) []int {
	var open []int
	for _, s := range p.spill {
		for _, f := range s.frames {
			open = append(open, int(f.fn))
		}
	}
	for i := 1; i <= p.depth() && i < p.b.Frames; i++ {
		open = append(open, int(p.frame(i).fn))
	}
	return open
}

// Clock is the word of a book that serves its thread's task clock
// (instr.BookLock).
type Clock struct{ p *ProgramBook }

// ClockOf returns the clock's word of book p.
func ClockOf(p *ProgramBook) Clock { return Clock{p} }

// Lock returns the page's lock word as the book noted it last.
func (c Clock) Lock() uint32 { return uint32(c.p.get(c.p.b.Offset + instr.BookLock)) }

// SetLock writes it.
func (c Clock) SetLock(lock uint32) { c.p.put(c.p.b.Offset+instr.BookLock, uint64(lock)) }
