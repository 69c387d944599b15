package profile

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"testing"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/internal/testutil"
	"github.com/sourceprofiler/sprof/profile/books"
)

// loopFuncs are the loop's own functions, by file: the loop, a stop
// dispatched, a thread taken in or let go, an exec. They reach the parts
// through the hooks alone (docs/architecture.md, "The loop, the hooks
// and the parts").
var loopFuncs = map[string][]string{
	"tracer.go":   {"loop", "stopped", "wait"},
	"progress.go": {"waitTelling"},
	"tasks.go":    {"spawned", "adopt", "exec"},
	"attach.go":   {"threadGone"},
}

// partFields are the fields of the run's parts (t.parts) that hold a
// part. (The loop stamps each stop's moments on timing's clocks,
// t.clocks: when it was seen, when the thread was let go.)
var partFields = map[string]bool{
	"entries": true, "exits": true, "rings": true, "ledgers": true, "lines": true, "bp": true,
	"plant": true, "calls": true, "modules": true,
	"counters": true, "sampling": true, "books": true, "trace": true, "watch": true,
}

// TestLoopNamesNoPart holds the loop's functions to calling no part by
// name: what a part does at a thread's birth or end, a stop, an exec or
// the end of the run, it does through its hooks.
func TestLoopNamesNoPart(t *testing.T) {
	if testutil.Slow() {
		t.Skip("the sources are the host's (the arm64 VM has the test binary alone)")
	}
	fset := token.NewFileSet()
	for file, funcs := range loopFuncs {
		f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		found := 0
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || !slices.Contains(funcs, fn.Name.Name) {
				continue
			}
			found++
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := sel.X.(*ast.SelectorExpr); ok && partFields[sel.Sel.Name] {
					if t0, ok := x.X.(*ast.Ident); ok && t0.Name == "t" && x.Sel.Name == "parts" {
						t.Errorf("%s: %s names the part t.parts.%s: reach it through a hook (hooks.go)", fset.Position(sel.Pos()), fn.Name.Name, sel.Sel.Name)
					}
				}
				return true
			})
		}
		if found != len(funcs) {
			t.Errorf("%s: found %d of the functions %v", file, found, funcs)
		}
	}
}

// TestWaitPolicies: how the loop waits for the next stop follows from
// the parts' idle needs alone (idleHook): it sleeps with none; it polls
// yielding first for timing with breakpoints, within a yield window of
// the last breakpoint it booked (else it sleeps); it reads the rings between
// polls; it writes the trace every so often, yielding first, while the
// rings are read or timing yields; it polls for the ptrace sampler's
// rounds; an attached run's wait also ends with its window.
func TestWaitPolicies(t *testing.T) {
	for _, c := range []struct {
		name  string
		parts func(tr *tracer)
		want  string
		every time.Duration
	}{
		{"breakpoints", func(*tracer) {}, "sleeping", 0},
		{"timed with breakpoints", func(tr *tracer) {
			tr.parts.books, tr.clocks.yielding = testBooks(-1, "", false, 0), true
			tr.clocks.epoch = time.Now() // (a stop booked at 0, just now)
		}, "yielding", 0},
		{"timed, no breakpoint booked for a while", func(tr *tracer) {
			tr.parts.books, tr.clocks.yielding = testBooks(-1, "", false, 0), true
			tr.clocks.epoch = time.Now().Add(-time.Second) // (the last at 0, a second ago)
		}, "sleeping", 0},
		{"timed in-process", func(tr *tracer) {
			tr.parts.books, tr.parts.rings = testBooks(-1, "", false, 0), newRings(tr)
		}, "idling", 0},
		{"timed in-process, traced", func(tr *tracer) {
			tr.parts.books, tr.parts.rings, tr.parts.trace = testBooks(-1, "", false, 0), newRings(tr), &traceFile{}
		}, "ticking", traceFlushEvery / 2},
		{"timed with breakpoints, traced", func(tr *tracer) {
			tr.parts.books, tr.clocks.yielding, tr.parts.trace = testBooks(-1, "", false, 0), true, &traceFile{}
			tr.clocks.epoch = time.Now()
		}, "ticking", traceFlushEvery / 2},
		{"sampled by the kernel", func(tr *tracer) {
			tr.parts.sampling = newSampler(samplerEnv{plan: samplingPlan()}, time.Millisecond)
		}, "sleeping", 0},
		{"sampled by ptrace", func(tr *tracer) {
			tr.parts.sampling = newSampler(samplerEnv{plan: samplingPlan()}, time.Millisecond)
			tr.parts.sampling.kind = datafile.PtraceSampler
		}, "polling", 250 * time.Microsecond},
		{"attached", func(tr *tracer) { tr.attach = &attachment{} }, "quitting", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			fp := newFakeProcess(instr.AMD64, &fakeMem{})
			tr := &tracer{plan: &datafile.Plan{Method: datafile.FuncTiming}, cfg: Config{Warn: func(*prf.Diagnostic) {}},
				threads: map[int]*thread{}, proc: fp, clocks: clocks{stolen: map[books.Key]int64{}, carried: map[int]uint64{}}}
			tr.parts.bp = newBreakpoints(tr)
			c.parts(tr)
			tr.choose()
			tr.wait(0)
			if got := fp.calls[len(fp.calls)-1]; got != "wait "+c.want {
				t.Errorf("waits with %q, want %q", got, "wait "+c.want)
			}
			if _, every, _ := tr.parts.waiting(); c.want != "quitting" && every != c.every {
				t.Errorf("idle work every %v, want %v", every, c.every)
			}
		})
	}
}
