package profile

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"testing"

	"github.com/sourceprofiler/sprof/internal/testutil"
)

// loopFuncs are the loop's own functions, by file: the loop, a stop
// dispatched, a thread taken in or let go, an exec. They reach the parts
// through the hooks alone (docs/architecture.md, "The loop, the hooks
// and the parts").
var loopFuncs = map[string][]string{
	"tracer.go": {"loop", "stopped"},
	"tasks.go":  {"spawned", "adopt", "exec"},
	"attach.go": {"threadGone"},
}

// partFields are the fields of the run's parts (t.parts) that hold a
// part. (The loop stamps each stop's moments on timing's clocks,
// t.clocks: when it was seen, when the thread was let go.)
var partFields = map[string]bool{
	"entries": true, "exits": true, "rings": true, "lines": true, "bp": true,
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
