package plist

import (
	"compress/gzip"
	"fmt"
	"io"
	"time"

	"github.com/google/pprof/profile"
)

// The profile.proto (FormatPprof), gzipped, for go tool pprof.

// writeGzipped writes p gzipped at the fastest level: pprof's own
// default level took most of an export's time for a large profile (2.5 s
// of 4 for a million lines), for a file 3 % larger.
func writeGzipped(w io.Writer, p *profile.Profile) error {
	z, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
	if err != nil {
		return err
	}
	if err := p.WriteUncompressed(z); err != nil {
		return err
	}
	return z.Close()
}

// pprofExport writes the profile.proto.
type pprofExport struct{ *report }

// newPprof returns a profile of the runs and the modules (as mappings),
// without sample types, and the functions that make its functions
// (function i of the plan, made at its first use) and its locations (a
// line of a function in a module).
func (r pprofExport) newPprof() (p *profile.Profile, function func(int) *profile.Function,
	location func(f *profile.Function, mod, line int) *profile.Location) {
	p = &profile.Profile{}
	if n := len(r.m.Runs); n > 0 {
		p.TimeNanos = r.m.Runs[0].Time * int64(time.Second)
		p.Comments = []string{r.m.Runs[n-1].CommandLine}
	}
	for mi, m := range r.plan.Modules {
		p.Mapping = append(p.Mapping, &profile.Mapping{ID: uint64(mi + 1), File: m.Path, BuildID: fmt.Sprintf("%x", []byte(m.BuildID))})
	}
	fn := make([]*profile.Function, len(r.plan.Funcs))
	function = func(i int) *profile.Function {
		if fn[i] == nil {
			f := &r.plan.Funcs[i]
			fn[i] = &profile.Function{ID: uint64(len(p.Function) + 1), Name: r.exportName(i), SystemName: f.Name,
				Filename: f.File, StartLine: int64(f.Line)}
			p.Function = append(p.Function, fn[i])
		}
		return fn[i]
	}
	location = func(f *profile.Function, mod, line int) *profile.Location {
		loc := &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: f, Line: int64(line)}}}
		if mod >= 0 && mod < len(p.Mapping) {
			loc.Mapping = p.Mapping[mod]
		}
		p.Location = append(p.Location, loc)
		return loc
	}
	return p, function, location
}

// writePprof writes a profile.proto (github.com/google/pprof/profile):
// the sample types are calls (count) and, for timing, time (nanoseconds,
// each function's own); with /AT a sample per distinct chain of calls
// (callStacks: the function and its callers, as deep as /STACK tells
// them), else one per function; for line profiles one per line, at the
// line, in the function that holds it. pprof counts a sample once in the
// cumulative figure of each function it holds, however often the
// function recurs in it: a recursive function's is its time with
// children, as the listing's. Function sampling profiles are CPU
// profiles (writeSampledPprof).
func (r pprofExport) writePprof(w io.Writer) error {
	if r.plan.Method.IsSampling() {
		return r.writeSampledPprof(w)
	}
	p, function, location := r.newPprof()
	p.SampleType = []*profile.ValueType{{Type: "calls", Unit: "count"}}
	p.PeriodType = &profile.ValueType{Type: "calls", Unit: "count"}
	p.Period = 1
	timed := r.hasTimes()
	if timed {
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: "time", Unit: "nanoseconds"})
	}
	values := func(hits uint64, t int64) []int64 {
		if timed {
			return []int64{int64(hits), t}
		}
		return []int64{int64(hits)}
	}
	if !r.plan.Method.IsFunction() {
		files := map[string]*profile.Function{}
		for i := range r.plan.Lines {
			l := &r.plan.Lines[i]
			var f *profile.Function
			if fi := r.lineFunc(l); fi >= 0 {
				f = function(fi)
			} else if f = files[r.lineFile(l)]; f == nil {
				f = &profile.Function{ID: uint64(len(p.Function) + 1), Name: r.lineFile(l), Filename: r.lineFile(l)}
				p.Function = append(p.Function, f)
				files[r.lineFile(l)] = f
			}
			p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{location(f, l.Module, l.Line)}, Value: values(r.hits(i), 0)})
		}
		return writeGzipped(w, p)
	}
	locs := make([]*profile.Location, len(r.plan.Funcs))
	loc := func(i int) *profile.Location {
		if locs[i] == nil {
			locs[i] = location(function(i), r.plan.Funcs[i].Module, r.plan.Funcs[i].Line)
		}
		return locs[i]
	}
	withStacks := make([]bool, len(r.plan.Funcs))
	for _, c := range r.callStacks() {
		withStacks[c.funcs[len(c.funcs)-1]] = true
		stack := make([]*profile.Location, 0, len(c.funcs))
		for k := len(c.funcs) - 1; k >= 0; k-- {
			stack = append(stack, loc(c.funcs[k]))
		}
		p.Sample = append(p.Sample, &profile.Sample{Location: stack, Value: values(c.hits, c.time)})
	}
	for i := range r.plan.Funcs {
		if !withStacks[i] {
			p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{loc(i)}, Value: values(r.hits(i), r.funcTime(i))})
		}
	}
	return writeGzipped(w, p)
}

// writeSampledPprof writes a function sampling profile as a CPU profile,
// as runtime/pprof writes one: the sample types are samples (count) and
// cpu (nanoseconds), the period Interval nanoseconds of CPU time. Each
// sampled line is a sample at that line of its function (placeSamples),
// and the samples of a function on none of its lines one at its
// declaration's line. With /AT samples are leaves, without stacks: the
// samples are of the program counter alone, and the /AT stacks are the
// calls', their times estimated. Sampled stacks (without /AT) are each
// sample's callers: a function sampled in one chain of callers has its
// lines' samples under it; one sampled in several has a sample per
// chain, at its declaration's line (which of its lines each chain's
// samples were on is not recorded).
func (r pprofExport) writeSampledPprof(w io.Writer) error {
	p, function, location := r.newPprof()
	callers, perChain := r.sampledCallers()
	locs := make([]*profile.Location, len(r.plan.Funcs))
	stackOf := func(leaf *profile.Location, fns []int) []*profile.Location {
		stack := []*profile.Location{leaf}
		for k := len(fns) - 1; k >= 0; k-- {
			f := fns[k]
			if locs[f] == nil {
				locs[f] = location(function(f), r.plan.Funcs[f].Module, r.plan.Funcs[f].Line)
			}
			stack = append(stack, locs[f])
		}
		return stack
	}
	interval := r.m.Stats.Sampling.Interval
	p.SampleType = []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}}
	p.PeriodType = &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}
	p.Period = interval
	for _, m := range p.Mapping {
		// Every location has its function and line: nothing to look up.
		m.HasFunctions, m.HasFilenames, m.HasLineNumbers = true, true, true
	}
	type key struct {
		fn   int
		file string
		line int
	}
	// elsewhere has the functions of lines in another file than their
	// function's (inlined code).
	elsewhere := map[key]*profile.Function{}
	samples := map[key]*profile.Sample{}
	for _, pl := range r.placeSamples() {
		if perChain[pl.fn] {
			continue
		}
		f := &r.plan.Funcs[pl.fn]
		pf, line := function(pl.fn), f.Line
		if pl.line >= 0 {
			l := &r.plan.Lines[pl.line]
			line = l.Line
			if file := r.lineFile(l); file != f.File {
				k := key{pl.fn, file, 0}
				if elsewhere[k] == nil {
					elsewhere[k] = &profile.Function{ID: uint64(len(p.Function) + 1), Name: pf.Name,
						SystemName: pf.SystemName, Filename: file}
					p.Function = append(p.Function, elsewhere[k])
				}
				pf = elsewhere[k]
			}
		}
		k := key{pl.fn, pf.Filename, line}
		if s := samples[k]; s != nil {
			s.Value[0] += int64(pl.n)
			s.Value[1] += int64(pl.n) * interval
			continue
		}
		samples[k] = &profile.Sample{Location: stackOf(location(pf, f.Module, line), callers[pl.fn]),
			Value: []int64{int64(pl.n), int64(pl.n) * interval}}
		p.Sample = append(p.Sample, samples[k])
	}
	if interval > 0 {
		for _, c := range r.callStacks() {
			if fn := c.funcs[len(c.funcs)-1]; perChain[fn] && c.time > 0 {
				f := &r.plan.Funcs[fn]
				n := c.time / interval
				p.Sample = append(p.Sample, &profile.Sample{Location: stackOf(location(function(fn), f.Module, f.Line), c.funcs[:len(c.funcs)-1]),
					Value: []int64{n, n * interval}})
			}
		}
	}
	return writeGzipped(w, p)
}

// sampledCallers returns, for each function of a profile with sampled
// stacks whose samples fell in one chain of callers, those callers
// (outermost first; none for one at the stack base), and marks those
// whose samples fell in several (perChain). Profiles without sampled
// stacks have neither.
func (r pprofExport) sampledCallers() (callers [][]int, perChain []bool) {
	callers, perChain = make([][]int, len(r.plan.Funcs)), make([]bool, len(r.plan.Funcs))
	if r.m.Stats.Sampling.Stacks == 0 {
		return callers, perChain
	}
	chains := make([]int, len(r.plan.Funcs))
	for _, c := range r.callStacks() {
		if fn := c.funcs[len(c.funcs)-1]; c.time > 0 {
			chains[fn]++
			callers[fn] = c.funcs[:len(c.funcs)-1]
		}
	}
	for fn, n := range chains {
		perChain[fn] = n > 1
	}
	return callers, perChain
}
