package datafile

// The sections of the three kinds' bodies, encoded and decoded field by field
// in the order doc.go gives (the encoder and decoder themselves are in
// codec.go).

// planStrings estimates the distinct strings of p: a name per function and
// a few per module, as sources and files repeat.
func planStrings(p *Plan) int {
	return len(p.Funcs) + 8*len(p.Modules) + 2*len(p.LeftOut)
}

func encodePlan(p *Plan) *encoder {
	e := newEncoder(planStrings(p))
	e.plan(p)
	return e
}

func encodeCounts(c *Counts) *encoder {
	e := newEncoder(4)
	e.section(secCounts, func(w *payload) {
		w.id(c.PlanID)
		w.uvarint(uint64(c.Method))
	})
	e.runs([]Run{c.Run}, []int64{c.Overhead})
	e.stats(&c.Stats)
	return e
}

func encodeMerged(m *Merged) *encoder {
	e := newEncoder(planStrings(&m.Plan) + 2*len(m.Runs))
	e.plan(&m.Plan)
	e.runs(m.Runs, m.Overheads)
	e.stats(&m.Stats)
	e.section(secDiscarded, func(w *payload) {
		w.int(len(m.Discarded))
		for _, id := range m.Discarded {
			w.bytes(id)
		}
	})
	return e
}

// plan encodes sections 2 to 5.
func (e *encoder) plan(p *Plan) {
	e.section(secPlan, func(w *payload) {
		w.id(p.ID)
		w.uvarint(uint64(p.Method))
		w.str(p.StartFunc)
		w.varint(int64(p.StartIndex))
		w.bool(p.Attribution)
		w.int(p.StackDepth)
		w.varint(p.Calibration)
		w.int(len(p.LeftOut))
		for _, l := range p.LeftOut {
			w.str(l.What)
			w.int(l.Funcs)
			w.str(l.Include)
		}
		w.bool(p.Uncounted)
	})
	e.section(secModules, func(w *payload) {
		w.int(len(p.Modules))
		for i := range p.Modules {
			m := &p.Modules[i]
			w.str(m.Name)
			w.str(m.Path)
			w.str(m.Arch)
			w.bytes(m.BuildID)
			w.varint(m.Size)
			w.varint(m.ModTime)
			w.bool(m.PIE)
			w.uvarint(m.LinkBase)
			w.strs(m.Files)
			w.strs(m.CompDirs)
		}
	})
	e.section(secFuncs, func(w *payload) {
		w.int(len(p.Funcs))
		for i := range p.Funcs {
			f := &p.Funcs[i]
			w.int(f.Module)
			w.str(f.Name)
			w.str(f.Source)
			w.uvarint(f.Entry)
			w.uvarint(f.Low)
			w.uvarint(f.High)
			w.uvarint(uint64(f.Frame))
			w.str(f.File)
			w.int(f.Line)
		}
		w.int(len(p.Inlined))
		for i := range p.Inlined {
			c := &p.Inlined[i]
			w.int(c.Func)
			w.varint(int64(c.Parent))
			w.int(len(c.Ranges))
			for _, r := range c.Ranges {
				w.uvarint(r.Low)
				w.uvarint(r.High)
			}
		}
	})
	e.section(secLines, func(w *payload) {
		w.int(len(p.Lines))
		for i := range p.Lines {
			l := &p.Lines[i]
			w.int(l.Module)
			w.int(l.File)
			w.int(l.Line)
			w.int(len(l.Addrs))
			for _, a := range l.Addrs {
				w.uvarint(a)
			}
		}
		w.int(len(p.Branches))
		for _, b := range p.Branches {
			w.int(b.Line)
			w.uvarint(b.Addr)
			w.uvarint(b.Target)
		}
	})
}

func (d *decoder) plan(p *Plan) {
	s := d.section(secPlan)
	p.ID = s.id()
	p.Method = s.method()
	p.StartFunc = s.str()
	p.StartIndex = s.signed()
	p.Attribution = s.bool()
	p.StackDepth = s.int()
	p.Calibration = s.varint()
	if d.version >= 7 {
		if n := s.count(3); n > 0 {
			p.LeftOut = make([]LeftOut, n)
		}
		for i := 0; i < len(p.LeftOut) && s.ok(); i++ {
			l := &p.LeftOut[i]
			l.What = s.str()
			l.Funcs = s.int()
			l.Include = s.str()
		}
	}
	if d.version >= 11 {
		p.Uncounted = s.bool()
	}
	d.end(s)

	s = d.section(secModules)
	if n := s.count(10); n > 0 {
		p.Modules = make([]Module, n)
	}
	for i := 0; i < len(p.Modules) && s.ok(); i++ {
		m := &p.Modules[i]
		m.Name = s.str()
		m.Path = s.str()
		m.Arch = s.str()
		m.BuildID = s.bytes()
		m.Size = s.varint()
		m.ModTime = s.varint()
		m.PIE = s.bool()
		m.LinkBase = s.uvarint()
		m.Files = s.strList()
		m.CompDirs = s.strList()
	}
	d.end(s)

	s = d.section(secFuncs)
	p.Funcs = s.funcs()
	if d.version >= 14 {
		p.Inlined = s.inlined()
	}
	d.end(s)

	s = d.section(secLines)
	if n := s.count(4); n > 0 {
		p.Lines = make([]Line, n)
	}
	// (The lines' addresses are cut from slabs, not made one by one: a
	// million lines made a million small slices.)
	var slab []uint64
	for i := 0; i < len(p.Lines) && s.ok(); i++ {
		l := &p.Lines[i]
		l.Module = s.int()
		l.File = s.int()
		l.Line = s.int()
		if n := s.count(1); n > 0 {
			if n > len(slab) {
				slab = make([]uint64, max(n, addrSlab))
			}
			l.Addrs, slab = slab[:n:n], slab[n:]
		}
		for j := 0; j < len(l.Addrs) && s.ok(); j++ {
			l.Addrs[j] = s.uvarint()
		}
	}
	if d.version >= 15 {
		p.Branches = s.branches()
	}
	d.end(s)
}

// branches reads a plan's branches (version 15 on).
func (d *decoder) branches() []Branch {
	n := d.count(3)
	if n == 0 {
		return nil
	}
	out := make([]Branch, n)
	for i := 0; i < n && d.ok(); i++ {
		out[i] = Branch{Line: d.int(), Addr: d.uvarint(), Target: d.uvarint()}
	}
	return out
}

func (d *decoder) counts(c *Counts) {
	s := d.section(secCounts)
	c.PlanID = s.id()
	c.Method = s.method()
	d.end(s)
	at := d.off
	runs, overheads := d.runs()
	if d.ok() && len(runs) != 1 {
		d.failAt(at, "counts hold %d runs, want 1", len(runs))
	}
	if d.ok() {
		c.Run, c.Overhead = runs[0], overheads[0]
	}
	d.stats(&c.Stats)
}

func (d *decoder) merged(m *Merged) {
	d.plan(&m.Plan)
	m.Runs, m.Overheads = d.runs()
	d.stats(&m.Stats)
	if d.version < 4 {
		return // no discarded runs before version 4
	}
	s := d.section(secDiscarded)
	if n := s.count(1); n > 0 {
		m.Discarded = make([]Hex, n)
	}
	for i := 0; i < len(m.Discarded) && s.ok(); i++ {
		m.Discarded[i] = s.bytes()
	}
	d.end(s)
}

// runs encodes section 7; runs and overheads are parallel (Validate).
func (e *encoder) runs(runs []Run, overheads []int64) {
	e.section(secRuns, func(w *payload) {
		w.int(len(runs))
		for i := range runs {
			r := &runs[i]
			w.varint(r.Time)
			w.str(r.CommandLine)
			w.bool(r.Incomplete)
			w.str(r.Reason)
			w.bytes(r.ID)
			w.varint(overheads[i])
		}
	})
}

func (d *decoder) runs() ([]Run, []int64) {
	s := d.section(secRuns)
	n := s.count(6)
	var runs []Run
	var overheads []int64
	if n > 0 {
		runs, overheads = make([]Run, n), make([]int64, n)
	}
	for i := 0; i < n && s.ok(); i++ {
		r := &runs[i]
		r.Time = s.varint()
		r.CommandLine = s.str()
		r.Incomplete = s.bool()
		r.Reason = s.str()
		r.ID = s.bytes()
		overheads[i] = s.varint()
	}
	d.end(s)
	return runs, overheads
}

// stats encodes section 8.
func (e *encoder) stats(st *Stats) {
	e.section(secStats, func(w *payload) {
		w.int(st.CallDepth)
		w.varint(st.TotalTime)
		w.varint(st.OutsideTime)
		w.int(len(st.Hits))
		for _, h := range st.Hits {
			w.uvarint(h)
		}
		w.varints(st.FuncTime)
		w.varints(st.ChildTime)
		w.int(len(st.Stacks))
		for i := range st.Stacks {
			k := &st.Stacks[i]
			w.int(k.Func)
			w.int(len(k.Callers))
			for _, c := range k.Callers {
				w.varint(int64(c))
			}
			w.uvarint(k.Key)
			w.uvarint(k.CallerKey)
			w.uvarint(k.Hits)
			w.varint(k.Time)
			w.varint(k.ChildTime)
		}
		sm := &st.Sampling
		w.varint(sm.Interval)
		w.uvarint(uint64(sm.Sampler))
		w.uvarint(sm.Outside)
		w.uvarint(sm.Lost)
		w.varint(sm.KernelTime)
		w.uvarints(sm.Samples)
		w.uvarints(sm.LineSamples)
		w.varint(st.CostUncertainty)
		w.varint(st.CPUTime)
		w.waits(st)
		w.uvarint(sm.Overhead)
		w.uvarint(sm.Stacks)
		w.uvarint(sm.StacksCut)
		w.uvarint(sm.Kernel)
		w.uvarints(sm.KernelSamples)
		w.uvarints(sm.KernelChildSamples)
		w.uvarints(st.Branches)
		w.uvarints(st.Unprobed)
	})
}

// waits encodes the end of section 8: whether the waits were measured
// and, when they were, the waits of the functions, inside, and of each
// stack (zero, and not written, when they were not: Validate).
func (w *payload) waits(st *Stats) {
	ws := st.Waits
	w.bool(ws != nil)
	if ws == nil {
		return
	}
	w.varints(ws.FuncWait)
	w.varints(ws.ChildWait)
	w.varint(ws.InsideWait)
	w.varint(ws.OutsideWait)
	w.int(len(st.Stacks))
	for i := range st.Stacks {
		w.varint(st.Stacks[i].Wait)
		w.varint(st.Stacks[i].ChildWait)
	}
}

// waits decodes what [payload.waits] encodes, into st whose stacks are
// read.
func (d *decoder) waits(st *Stats) {
	if !d.bool() {
		return
	}
	ws := &WaitStats{}
	ws.FuncWait = d.varints()
	ws.ChildWait = d.varints()
	ws.InsideWait = d.varint()
	ws.OutsideWait = d.varint()
	at := d.off
	n := d.count(2)
	if d.ok() && n != len(st.Stacks) {
		d.failAt(at, "waits of %d stacks for %d stacks", n, len(st.Stacks))
	}
	for i := 0; i < n && d.ok(); i++ {
		st.Stacks[i].Wait = d.varint()
		st.Stacks[i].ChildWait = d.varint()
	}
	st.Waits = ws
}

func (w *payload) uvarints(list []uint64) {
	w.int(len(list))
	for _, v := range list {
		w.uvarint(v)
	}
}

func (d *decoder) uvarints() []uint64 {
	n := d.count(1)
	if n == 0 {
		return nil
	}
	list := make([]uint64, n)
	for i := 0; i < n && d.ok(); i++ {
		list[i] = d.uvarint()
	}
	return list
}

func (w *payload) varints(list []int64) {
	w.int(len(list))
	for _, v := range list {
		w.varint(v)
	}
}

func (d *decoder) varints() []int64 {
	n := d.count(1)
	if n == 0 {
		return nil
	}
	list := make([]int64, n)
	for i := 0; i < n && d.ok(); i++ {
		list[i] = d.varint()
	}
	return list
}

func (d *decoder) stats(st *Stats) {
	s := d.section(secStats)
	st.CallDepth = s.int()
	st.TotalTime = s.varint()
	st.OutsideTime = s.varint()
	if n := s.count(1); n > 0 {
		st.Hits = make([]uint64, n)
	}
	for i := 0; i < len(st.Hits) && s.ok(); i++ {
		st.Hits[i] = s.uvarint()
	}
	st.FuncTime = s.varints()
	st.ChildTime = s.varints()
	if n := s.count(6); n > 0 {
		st.Stacks = make([]Stack, n)
	}
	for i := 0; i < len(st.Stacks) && s.ok(); i++ {
		k := &st.Stacks[i]
		k.Func = s.int()
		if n := s.count(1); n > 0 {
			k.Callers = make([]int, n)
		}
		for j := 0; j < len(k.Callers) && s.ok(); j++ {
			k.Callers[j] = s.signed()
		}
		k.Key = s.uvarint()
		if d.version >= 6 {
			k.CallerKey = s.uvarint()
		}
		k.Hits = s.uvarint()
		k.Time = s.varint()
		k.ChildTime = s.varint()
	}
	if d.version >= 5 {
		sm := &st.Sampling
		sm.Interval = s.varint()
		sm.Sampler = Sampler(min(s.uvarint(), 255)) // (Validate refuses what is not a sampler)
		sm.Outside = s.uvarint()
		sm.Lost = s.uvarint()
		sm.KernelTime = s.varint()
		sm.Samples = s.uvarints()
		sm.LineSamples = s.uvarints()
	}
	if d.version >= 8 {
		st.CostUncertainty = s.varint()
	}
	if d.version >= 9 {
		st.CPUTime = s.varint()
	}
	if d.version >= 10 {
		s.waits(st)
	}
	if d.version >= 11 {
		st.Sampling.Overhead = s.uvarint()
	}
	if d.version >= 12 {
		st.Sampling.Stacks = s.uvarint()
		st.Sampling.StacksCut = s.uvarint()
	}
	if d.version >= 13 {
		st.Sampling.Kernel = s.uvarint()
		st.Sampling.KernelSamples = s.uvarints()
		st.Sampling.KernelChildSamples = s.uvarints()
	}
	if d.version >= 15 {
		st.Branches = s.uvarints()
		st.Unprobed = s.uvarints()
	}
	d.end(s)
}

// funcs reads a plan's functions.
func (d *decoder) funcs() []Func {
	n := d.count(9)
	if n == 0 {
		return nil
	}
	out := make([]Func, n)
	for i := 0; i < n && d.ok(); i++ {
		f := &out[i]
		f.Module = d.int()
		f.Name = d.str()
		f.Source = d.str()
		f.Entry = d.uvarint()
		f.Low = d.uvarint()
		f.High = d.uvarint()
		f.Frame = Frame(d.uvarint())
		f.File = d.str()
		f.Line = d.int()
	}
	return out
}

// inlined reads a plan's inlined calls (version 14 on).
func (d *decoder) inlined() []Inlined {
	n := d.count(3)
	if n == 0 {
		return nil
	}
	out := make([]Inlined, n)
	for i := 0; i < n && d.ok(); i++ {
		c := &out[i]
		c.Func = d.int()
		c.Parent = d.signed()
		if m := d.count(2); m > 0 {
			c.Ranges = make([]Range, m)
		}
		for j := 0; j < len(c.Ranges) && d.ok(); j++ {
			c.Ranges[j] = Range{d.uvarint(), d.uvarint()}
		}
	}
	return out
}

// addrSlab is how many line addresses the decoder makes room for at once.
const addrSlab = 1 << 14
