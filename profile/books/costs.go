package books

import "math"

// Costs are what the book code kept in the program costs a call, in
// nanoseconds: In inside the interval the call's own figures measure
// (its entry's code after the counter's reading, its exit's before), Out
// outside it, in its caller's (the rest of both). The code books the
// times as the counter read them; PROFILE takes the cost out at the end
// (Corrected), once it has measured it in the run.
type Costs struct{ In, Out float64 }

// Call is the whole cost of a call's code.
func (c Costs) Call() float64 { return c.In + c.Out }

// Scaled returns the costs of a call that costs call in all, split as c
// splits its own (all of it inside where c is nothing), each to the
// nanosecond: the times a cost of whole nanoseconds is taken out of keep
// their sums exact (the own times of a thread's calls add up to its
// outermost calls' times with children, to the nanosecond).
func (c Costs) Scaled(call float64) Costs {
	call = math.Round(call)
	in := call
	if c.Call() > 0 {
		in = math.Round(call * c.In / c.Call())
	}
	return Costs{In: in, Out: call - in}
}

// Corrected returns f with the cost c taken out of its times. A call's
// own time holds its code's inside cost, and the outside cost of each
// call it made; a call's time with children holds its inside cost and
// the whole cost of every call made beneath it. A time the cost would
// take below nothing (a tiny function's, where the cost measured over
// the run was more than this function's calls cost) is nothing; the time
// with children is never less than the own time.
func (c Costs) Corrected(f Figure) Figure {
	self := float64(f.Self) - c.In*float64(f.Calls) - c.Out*float64(f.Kids)
	all := float64(f.All) - c.In*float64(f.Outer) - c.Call()*float64(f.Beneath)
	f.Self = max(int64(self+0.5), 0)
	f.All = max(int64(all+0.5), f.Self)
	return f
}

// CorrectedAll returns the figures of every function (by function) with
// the cost c taken out, and the time within outermost calls, which their
// own times add up to. A time with children is never more than that
// time: where a function's own time, taken below nothing, was given
// back (Corrected), its callers' times with children may hold more than
// what is left inside, as the average cost was less than its calls'.
func (c Costs) CorrectedAll(figs []Figure) ([]Figure, int64) {
	out := make([]Figure, len(figs))
	var inside int64
	for fn, f := range figs {
		if f != (Figure{}) {
			out[fn] = c.Corrected(f)
			inside += out[fn].Self
		}
	}
	for fn := range out {
		out[fn].All = min(out[fn].All, inside)
	}
	return out, inside
}

// Add adds g's figures to f's.
func (f *Figure) Add(g Figure) {
	f.Calls += g.Calls
	f.Self += g.Self
	f.All += g.All
	f.Kids += g.Kids
	f.Outer += g.Outer
	f.Beneath += g.Beneath
}
