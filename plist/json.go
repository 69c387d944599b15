package plist

import (
	"cmp"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"time"
)

// The JSON of the documented schema (FormatJSON).

// The JSON schema (docs/exports.md): names joined to their figures, not
// the data files' model.
type (
	jsonProfile struct {
		Schema    string         `json:"schema"`
		Profile   string         `json:"profile"`
		TimeView  string         `json:"timeView,omitempty"`
		Runs      []jsonRun      `json:"runs"`
		CallDepth int            `json:"callDepth,omitempty"`
		TotalNs   int64          `json:"totalTimeNs,omitempty"`
		CostNs    int64          `json:"costUncertaintyNs,omitempty"`
		CPUNs     int64          `json:"cpuTimeNs,omitempty"`
		WaitNs    int64          `json:"insideWaitNs,omitempty"`
		OutWaitNs int64          `json:"outsideWaitNs,omitempty"`
		Sampling  *jsonSampling  `json:"sampling,omitempty"`
		Modules   []jsonModule   `json:"modules"`
		Functions []jsonFunction `json:"functions,omitempty"`
		Lines     []jsonLine     `json:"lines,omitempty"`
	}
	jsonSampling struct {
		IntervalNs   int64   `json:"intervalNs"`
		Sampler      string  `json:"sampler"`
		Samples      uint64  `json:"samples"`
		Outside      uint64  `json:"outside"`
		Profiler     uint64  `json:"profilerOverhead,omitempty"`
		Uncounted    bool    `json:"callsNotCounted,omitempty"`
		Stacks       uint64  `json:"stacks,omitempty"`
		StacksCut    uint64  `json:"stacksCut,omitempty"`
		Lost         uint64  `json:"lost"`
		KernelTimeNs int64   `json:"kernelTimeNs"`
		Kernel       *uint64 `json:"kernelSamples,omitempty"`
	}
	jsonRun struct {
		Command    string    `json:"command"`
		Time       time.Time `json:"time"`
		Incomplete bool      `json:"incomplete,omitempty"`
		Reason     string    `json:"reason,omitempty"`
	}
	jsonModule struct {
		Name string `json:"name"`
		Path string `json:"path"`
	}
	jsonFunction struct {
		Module  string       `json:"module"`
		Name    string       `json:"name"`
		Symbol  string       `json:"symbol"`
		Source  string       `json:"source"`
		File    string       `json:"file,omitempty"`
		Line    int          `json:"line,omitempty"`
		Hits    uint64       `json:"hits"`
		TimeNs  *int64       `json:"timeNs,omitempty"`
		ChildNs *int64       `json:"timeWithChildrenNs,omitempty"`
		WaitNs  *int64       `json:"waitNs,omitempty"`
		CWaitNs *int64       `json:"waitWithChildrenNs,omitempty"`
		Samples *uint64      `json:"samples,omitempty"`
		Kernel  *uint64      `json:"kernelSamples,omitempty"`
		KChild  *uint64      `json:"kernelSamplesWithChildren,omitempty"`
		Unsure  bool         `json:"uncertain,omitempty"`
		Callers []jsonCaller `json:"callers,omitempty"`
	}
	jsonCaller struct {
		Stack  []string `json:"stack"`
		Hits   uint64   `json:"hits"`
		TimeNs *int64   `json:"timeNs,omitempty"`
	}
	jsonLine struct {
		Module   string       `json:"module"`
		File     string       `json:"file"`
		Line     int          `json:"line"`
		Hits     uint64       `json:"hits"`
		Samples  *uint64      `json:"samples,omitempty"`
		Branches []jsonBranch `json:"branches,omitempty"`
	}
	// jsonBranch is a branch of a line (branch coverage): its number
	// among the line's branches, by address (lcov's block), and the
	// runs that went to its target (taken) and on to the next
	// instruction (notTaken).
	jsonBranch struct {
		Block    int    `json:"block"`
		Taken    uint64 `json:"taken"`
		NotTaken uint64 `json:"notTaken"`
	}
)

// jsonSchema names the schema and its version.
const jsonSchema = "sprof-profile/1"

// jsonExport writes the JSON.
type jsonExport struct{ *report }

// writeJSON writes the profile as JSON of the documented schema.
func (r jsonExport) writeJSON(w io.Writer) error {
	out := jsonProfile{Schema: jsonSchema, Profile: strings.ToLower(r.plan.Method.Words()), CallDepth: r.m.Stats.CallDepth}
	timed := r.hasTimes()
	if timed {
		out.TotalNs, out.CostNs, out.CPUNs = r.m.Stats.TotalTime, r.m.Stats.CostUncertainty, r.m.Stats.CPUTime
	}
	if r.plan.Method.IsTiming() {
		out.TimeView = r.o.Time.String()
		if w := r.m.Stats.Waits; w != nil {
			out.WaitNs, out.OutWaitNs = w.InsideWait, w.OutsideWait
		}
	}
	sampled := r.plan.Method.IsSampling()
	if sampled {
		sm := &r.m.Stats.Sampling
		name, _ := sm.Sampler.MarshalText()
		out.Sampling = &jsonSampling{IntervalNs: sm.Interval, Sampler: string(name), Samples: r.insideSamples() + sm.Outside,
			Outside: sm.Outside, Profiler: sm.Overhead, Uncounted: r.plan.Uncounted,
			Stacks: sm.Stacks, StacksCut: sm.StacksCut, Lost: sm.Lost, KernelTimeNs: sm.KernelTime}
		if sm.KernelSampled() {
			out.Sampling.Kernel = &sm.Kernel
		}
	}
	for _, run := range r.m.Runs {
		out.Runs = append(out.Runs, jsonRun{Command: run.CommandLine, Time: time.Unix(run.Time, 0).UTC(), Incomplete: run.Incomplete, Reason: run.Reason})
	}
	for _, m := range r.plan.Modules {
		out.Modules = append(out.Modules, jsonModule{Name: m.Name, Path: m.Path})
	}
	if r.plan.Method.IsFunction() {
		for i := range r.plan.Funcs {
			out.Functions = append(out.Functions, r.jsonFunction(i, timed, sampled))
		}
	}
	if sampled {
		// The sampled lines: a sampling profile counts no line.
		for i := range r.plan.Lines {
			if n := r.lineSamples(i); n > 0 {
				l := &r.plan.Lines[i]
				out.Lines = append(out.Lines, jsonLine{Module: r.moduleName(l.Module), File: r.lineFile(l), Line: l.Line, Samples: &n})
			}
		}
	}
	if !r.plan.Method.IsFunction() {
		branches := r.jsonBranches()
		for i := range r.plan.Lines {
			l := &r.plan.Lines[i]
			out.Lines = append(out.Lines, jsonLine{Module: r.moduleName(l.Module), File: r.lineFile(l), Line: l.Line, Hits: r.hits(i),
				Branches: branches[i]})
		}
	}
	slices.SortStableFunc(out.Lines, func(a, b jsonLine) int {
		return cmp.Or(cmp.Compare(a.Module, b.Module), cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// jsonBranches returns the branches of each line (Plan.Lines index),
// numbered among those of its source line; nil without branches.
func (r jsonExport) jsonBranches() map[int][]jsonBranch {
	br := branchView(r)
	if !br.present() {
		return nil
	}
	blocks := branchBlocks(r.report, func(line int) lineKey {
		l := &r.plan.Lines[line]
		return lineKey{l.Module, l.File, l.Line}
	})
	out := map[int][]jsonBranch{}
	for i, b := range r.plan.Branches {
		if blocks[i] < 0 {
			continue
		}
		c := br.counts(i)
		out[b.Line] = append(out[b.Line], jsonBranch{Block: blocks[i], Taken: c[0].n, NotTaken: c[1].n})
	}
	return out
}

// jsonFunction returns function i of the JSON, with its times when timed
// (and its waits, when the runs measured them and the times include
// them), its samples when sampled, and its caller stacks.
func (r jsonExport) jsonFunction(i int, timed, sampled bool) jsonFunction {
	f := &r.plan.Funcs[i]
	jf := jsonFunction{Module: r.moduleName(f.Module), Name: r.names[i], Symbol: f.Name, Source: f.Source,
		File: f.File, Line: f.Line, Hits: r.hits(i)}
	if timed {
		t, c := r.funcTime(i), r.childTime(i)
		jf.TimeNs, jf.ChildNs, jf.Unsure = &t, &c, r.uncertain(i)
	}
	if w := r.m.Stats.Waits; w != nil && i < len(w.FuncWait) && i < len(w.ChildWait) {
		fw, cw := w.FuncWait[i], w.ChildWait[i]
		jf.WaitNs, jf.CWaitNs = &fw, &cw
	}
	if sampled {
		n := r.samples(i)
		jf.Samples = &n
	}
	if sm := &r.m.Stats.Sampling; sampled && sm.KernelSampled() {
		k, kc := at(sm.KernelSamples, i), at(sm.KernelChildSamples, i)
		jf.Kernel, jf.KChild = &k, &kc
	}
	for _, si := range at(r.stacks, i) {
		s := r.m.Stats.Stacks[si]
		var stack []string
		for _, c := range s.Callers {
			if c >= 0 && c < len(r.names) {
				stack = append(stack, r.names[c])
			}
		}
		jc := jsonCaller{Stack: stack, Hits: s.Hits}
		if timed {
			t := s.Time
			jc.TimeNs = &t
		}
		jf.Callers = append(jf.Callers, jc)
	}
	return jf
}
