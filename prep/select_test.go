package prep

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sourceprofiler/sprof/internal/prf"
)

// testCandidates is a program "prog" built from prog.c and util.cpp with
// DWARF, a shared library libfoo.so.1, the C run-time's startup code and a
// static libc function (symbol table only), and a Go package.
func testCandidates() []candidate {
	c := func(module, name, source, declFile string, declLine int) candidate {
		return candidate{
			module:     module,
			modulePath: "/build/" + module,
			names:      matchNames(name),
			source:     source,
			declFile:   declFile,
			declLine:   declLine,
		}
	}
	cands := []candidate{
		c("prog", "main", "prog.o", "/src/prog.c", 40),
		c("prog", "fib", "prog.o", "/src/prog.c", 10),
		c("prog", "helper", "prog.o", "/src/prog.c", 20),
		c("prog", "_ZN7Counter4bumpEi", "util.o", "/src/lib/util.cpp", 5),
		c("prog", "_ZN7Counter4bumpEv", "util.o", "/src/lib/util.cpp", 6),
		c("prog", "_ZNKSt6vectorIiSaIiEE4sizeEv", "util.o", "/usr/include/c++/12/bits/stl_vector.h", 988),
		c("prog", "_start", "prog", "", 0),
		c("prog", "printf", "prog", "", 0),
		c("libfoo.so.1", "foo_add", "foo.o", "/src/foo.c", 3),
		c("prog", "main.main", "main", "/src/main.go", 7),
		c("prog", "runtime.mallocgc", "runtime", "/go/src/runtime/malloc.go", 1000),
		c("prog", "internal/abi.Name", "internal/abi", "/go/src/internal/abi/type.go", 50),
	}
	for i := range cands {
		switch cands[i].source {
		case "main", "runtime", "internal/abi":
			cands[i].unitIsPackage = true
		case "prog":
			cands[i].noDebug = true
		}
	}
	return cands
}

// selectedNames runs the selection and returns the stored names selected,
// and the warnings.
func selectedNames(t *testing.T, specs ...Spec) ([]string, []string) {
	t.Helper()
	var patterns []pattern
	for _, s := range specs {
		p, err := parseSpec(s)
		if err != nil {
			t.Fatalf("parseSpec(%q): %v", s.Text, err)
		}
		patterns = append(patterns, p)
	}
	var warnings []string
	cands := testCandidates()
	sel := applySpecs(cands, patterns, func(err *prf.Diagnostic) { warnings = append(warnings, err.Error()) })
	var names []string
	for i, ok := range sel {
		if ok {
			names = append(names, cands[i].names[0])
		}
	}
	return names, warnings
}

func TestApplySpecs(t *testing.T) {
	all := []string{}
	for _, c := range testCandidates() {
		all = append(all, c.names[0])
	}
	without := func(names ...string) []string {
		return slices.DeleteFunc(slices.Clone(all), func(n string) bool { return slices.Contains(names, n) })
	}
	exc := func(s string) Spec { return Spec{Op: Exclude, Text: s} }
	inc := func(s string) Spec { return Spec{Op: Include, Text: s} }
	excAll := Spec{Op: ExcludeAll}
	tests := []struct {
		name  string
		specs []Spec
		want  []string
	}{
		{"no specs", nil, all},
		{"function", []Spec{exc("fib")}, without("fib")},
		{"mangled", []Spec{exc("_ZN7Counter4bumpEi")}, without("_ZN7Counter4bumpEi")},
		{"demangled with params", []Spec{exc("Counter::bump(int)")}, without("_ZN7Counter4bumpEi")},
		{"demangled without params", []Spec{exc("Counter::bump")}, without("_ZN7Counter4bumpEi", "_ZN7Counter4bumpEv")},
		{"demangled no params no template", []Spec{exc("std::vector::size")}, without("_ZNKSt6vectorIiSaIiEE4sizeEv")},
		{"glob std", []Spec{exc("std::*")}, without("_ZNKSt6vectorIiSaIiEE4sizeEv")},
		{"glob question", []Spec{exc("f?b")}, without("fib")},
		{"glob runtime.*", []Spec{exc("runtime.*")}, without("runtime.mallocgc")},
		{"go package", []Spec{exc("runtime")}, without("runtime.mallocgc")},
		{"go package glob", []Spec{exc("internal/*")}, without("internal/abi.Name")},
		{"go main package", []Spec{excAll, inc("main")}, []string{"main", "main.main"}},
		{"object", []Spec{exc("util.o")}, without("_ZN7Counter4bumpEi", "_ZN7Counter4bumpEv", "_ZNKSt6vectorIiSaIiEE4sizeEv")},
		{"object glob", []Spec{excAll, inc("*.o")}, without("_start", "printf", "main.main", "runtime.mallocgc", "internal/abi.Name")},
		{"source", []Spec{exc("prog.c")}, without("main", "fib", "helper")},
		{"source all lines", []Spec{excAll, inc("prog.c(0-0)")}, []string{"main", "fib", "helper"}},
		{"source range", []Spec{excAll, inc("prog.c(1-15,35-45)")}, []string{"main", "fib"}},
		{"source single line", []Spec{excAll, inc("prog.c(20)")}, []string{"helper"}},
		{"source reversed range", []Spec{excAll, inc("prog.c(30-5)")}, nil},
		{"source path suffix", []Spec{excAll, inc("lib/util.cpp")}, []string{"_ZN7Counter4bumpEi", "_ZN7Counter4bumpEv"}},
		{"source glob", []Spec{excAll, inc("*.h")}, []string{"_ZNKSt6vectorIiSaIiEE4sizeEv"}},
		{"go source", []Spec{excAll, inc("malloc.go")}, []string{"runtime.mallocgc"}},
		{"library", []Spec{exc("libfoo.so.1")}, without("foo_add")},
		{"library without version", []Spec{exc("libfoo.so")}, without("foo_add")},
		{"library glob", []Spec{excAll, inc("lib*.so*")}, []string{"foo_add"}},
		{"library path", []Spec{exc("/build/libfoo.so.1")}, without("foo_add")},
		{"archive", []Spec{exc("libc.a")}, without("_start", "printf")},
		{"archive then function", []Spec{exc("*.a"), inc("printf")}, without("_start")},
		{"excall", []Spec{excAll}, nil},
		{"excall inc exc", []Spec{excAll, inc("prog.o"), exc("helper")}, []string{"main", "fib"}},
		{"exc then inc", []Spec{exc("prog.o"), inc("fib")}, without("main", "helper")},
		{"inc then excall", []Spec{inc("fib"), excAll}, nil},
		{"exc twice", []Spec{exc("fib"), exc("fib")}, without("fib")},
		{"case-sensitive", []Spec{exc("MAIN"), exc("PROG.C")}, all},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := selectedNames(t, tt.specs...)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("selected (-want +got):\n%s", diff)
			}
		})
	}
}

func TestApplySpecsWarnings(t *testing.T) {
	tests := []struct {
		name  string
		specs []Spec
		want  []string
	}{
		{"matched", []Spec{{Op: Exclude, Text: "fib"}}, nil},
		{"object", []Spec{{Op: Exclude, Text: "nosuch.obj"}}, []string{"function/source/object/lib nosuch.obj was never matched"}},
		// An object name without extension is a function name: never
		// matched (../golden/fcount/sel11-prep.out).
		{"object without extension", []Spec{{Op: Exclude, Text: "prog"}}, []string{"function/source/object/lib prog was never matched"}},
		// The spec is shown without its ranges (../golden/fcount/sel7-prep.out).
		{"source ranges", []Spec{{Op: Exclude, Text: "nosuch.c(0-0)"}}, []string{"function/source/object/lib nosuch.c was never matched"}},
		{"source reversed range", []Spec{{Op: Include, Text: "prog.c(30-20)"}}, []string{"function/source/object/lib prog.c was never matched"}},
		{"function with params", []Spec{{Op: Include, Text: "Counter::bump(long)"}}, []string{"function/source/object/lib Counter::bump(long) was never matched"}},
		{"after excall still matches", []Spec{{Op: ExcludeAll}, {Op: Exclude, Text: "fib"}}, nil},
		{"default is quiet", []Spec{{Op: Exclude, Text: "nosuch", Default: true}}, nil},
		{"in order", []Spec{{Op: Exclude, Text: "b"}, {Op: Include, Text: "a"}}, []string{
			"function/source/object/lib b was never matched",
			"function/source/object/lib a was never matched",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, got := selectedNames(t, tt.specs...)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}
