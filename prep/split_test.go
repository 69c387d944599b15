package prep

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/sourceprofiler/sprof/datafile"
)

// buildSplit compiles testdata/fixture.c with -gsplit-dwarf and flags, to
// an object first as build systems do (gcc names the .dwo file after it:
// fixture.dwo), and links dir/fixture.
func buildSplit(t *testing.T, dir string, flags ...string) string {
	t.Helper()
	gcc := tool(t, "gcc")
	obj := filepath.Join(dir, "fixture.o")
	run(t, dir, nil, gcc, append(append([]string{"-g", "-gsplit-dwarf", "-c", "-o", obj}, flags...), testdataPath(t, "fixture.c"))...)
	prog := filepath.Join(dir, "fixture")
	run(t, dir, nil, gcc, append(append([]string{"-o", prog}, flags...), obj)...)
	return prog
}

// TestBuildPlanSplitDWARF plans a split DWARF build (gcc -gsplit-dwarf):
// the same functions as the plain -g build, declarations included, read
// from fixture.dwo; without the .dwo file, the same functions still, from
// the symbol table, with a warning, and not excluded as code without
// debugging information (the default profiler.ini excludes that, as *.a).
func TestBuildPlanSplitDWARF(t *testing.T) {
	for _, version := range []string{"-gdwarf-4", "-gdwarf-5"} {
		for _, lose := range []bool{false, true} {
			name := version + map[bool]string{false: "", true: "-no-dwo"}[lose]
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				flags := []string{"-O2", "-fPIE", "-pie", version}
				plain := mustBuild(t, []string{buildC(t, t.TempDir(), "fixture", append([]string{"-g"}, append(flags, "fixture.c")...)...)}, "")
				dir := t.TempDir()
				prog := buildSplit(t, dir, flags...)
				if lose {
					if err := os.Remove(filepath.Join(dir, "fixture.dwo")); err != nil {
						t.Fatal(err)
					}
				}
				r := mustBuild(t, []string{prog}, "")
				want := plain.plan.Funcs
				if lose {
					// From the symbol table: no declarations.
					for i := range want {
						want[i].File, want[i].Line = "", 0
					}
					if len(r.warnings) != 1 || !strings.HasPrefix(r.warnings[0], "PRF4623 ") ||
						!strings.Contains(r.warnings[0], "fixture.dwo: not found: no "+filepath.Join(dir, "fixture.dwo")) {
						t.Errorf("warnings %q, want PRF4623 saying fixture.dwo is missing", r.warnings)
					}
				} else if len(r.warnings) != 0 || len(plain.warnings) != 0 {
					t.Errorf("warnings %q, plain build %q", r.warnings, plain.warnings)
				}
				if len(want) != len(fixtureFuncs) {
					t.Fatalf("plain build: %d functions, want %d", len(want), len(fixtureFuncs))
				}
				if diff := gocmp.Diff(want, r.plan.Funcs); diff != "" {
					t.Errorf("functions (-plain build +split build):\n%s", diff)
				}
				for _, f := range r.plan.Funcs {
					if f.Source != "fixture.o" {
						t.Errorf("%s: source %q, want fixture.o", f.Name, f.Source)
					}
				}
				if !lose {
					checkDeclared(t, r.plan.Funcs)
				}
			})
		}
	}
}

// checkDeclared checks that the functions of fixture.c have their
// declarations.
func checkDeclared(t *testing.T, funcs []datafile.Func) {
	t.Helper()
	src := testdataPath(t, "fixture.c")
	for _, f := range funcs {
		if f.File != src || f.Line != lineOf(t, "fixture.c", " "+f.Name+"(") {
			t.Errorf("%s: declared at %s:%d, want %s:%d", f.Name, f.File, f.Line, src, lineOf(t, "fixture.c", " "+f.Name+"("))
		}
	}
}
