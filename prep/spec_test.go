package prep

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sourceprofiler/sprof/internal/prf"
)

func TestParseSpecKinds(t *testing.T) {
	tests := []struct {
		text   string
		kind   specKind
		glob   string
		ranges []lineRange
		shown  string
	}{
		{"libfoo.so", kindLibrary, "libfoo.so", nil, "libfoo.so"},
		{"libfoo.so.1", kindLibrary, "libfoo.so.1", nil, "libfoo.so.1"},
		{"libc.so.6.1.2", kindLibrary, "libc.so.6.1.2", nil, "libc.so.6.1.2"},
		{"lib*.so*", kindLibrary, "lib*.so*", nil, "lib*.so*"},
		{"/usr/lib/libm.so.6", kindLibrary, "/usr/lib/libm.so.6", nil, "/usr/lib/libm.so.6"},
		{"libc.a", kindArchive, "libc.a", nil, "libc.a"},
		{"*.a", kindArchive, "*.a", nil, "*.a"},
		{"parse.o", kindObject, "parse.o", nil, "parse.o"},
		{"fcount2.obj", kindObject, "fcount2.obj", nil, "fcount2.obj"},
		{"crt*.o", kindObject, "crt*.o", nil, "crt*.o"},
		{"parse.c", kindSource, "parse.c", nil, "parse.c"},
		{"src/parse.cpp", kindSource, "src/parse.cpp", nil, "src/parse.cpp"},
		{"Main.C", kindSource, "Main.C", nil, "Main.C"},
		{"main.go", kindSource, "main.go", nil, "main.go"},
		{"lib.rs", kindSource, "lib.rs", nil, "lib.rs"},
		{"*.h", kindSource, "*.h", nil, "*.h"},
		{"parse.c(3-41,50-67)", kindSource, "parse.c", []lineRange{{3, 41}, {50, 67}}, "parse.c"},
		{"lcount.c(21)", kindSource, "lcount.c", []lineRange{{21, 21}}, "lcount.c"},
		{"lcount.c(21-22,35-37,13-13)", kindSource, "lcount.c", []lineRange{{21, 22}, {35, 37}, {13, 13}}, "lcount.c"},
		{"parse.c(0-0)", kindSource, "parse.c", nil, "parse.c"},
		{"parse.c(5-6,0-0)", kindSource, "parse.c", nil, "parse.c"},
		{"lcount.c(30-20)", kindSource, "lcount.c", []lineRange{{30, 20}}, "lcount.c"},
		{"parse.c(65535)", kindSource, "parse.c", []lineRange{{65535, 65535}}, "parse.c"},
		{"Makefile(1-3)", kindSource, "Makefile", []lineRange{{1, 3}}, "Makefile"},
		{"*(0-0)", kindSource, "*", nil, "*"},
		{"main", kindFunction, "main", nil, "main"},
		{"_Z3fibi", kindFunction, "_Z3fibi", nil, "_Z3fibi"},
		{"Counter::bump(int)", kindFunction, "Counter::bump(int)", nil, "Counter::bump(int)"},
		{"bump()", kindFunction, "bump()", nil, "bump()"},
		{"Counter::operator()(int)", kindFunction, "Counter::operator()(int)", nil, "Counter::operator()(int)"},
		{"main.(*T).M", kindFunction, "main.(*T).M", nil, "main.(*T).M"},
		{"main.(*T).c", kindFunction, "main.(*T).c", nil, "main.(*T).c"},
		{"runtime", kindFunction, "runtime", nil, "runtime"},
		{"runtime.*", kindFunction, "runtime.*", nil, "runtime.*"},
		{"internal/*", kindFunction, "internal/*", nil, "internal/*"},
		{"std::*", kindFunction, "std::*", nil, "std::*"},
		{"helper.constprop.0", kindFunction, "helper.constprop.0", nil, "helper.constprop.0"},
		{"fcount2", kindFunction, "fcount2", nil, "fcount2"},
		{"foo.so.bar", kindFunction, "foo.so.bar", nil, "foo.so.bar"},
		{"_GLOBAL__sub_I_main.cpp*", kindFunction, "_GLOBAL__sub_I_main.cpp*", nil, "_GLOBAL__sub_I_main.cpp*"},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			p, err := parseSpec(Spec{Op: Exclude, Text: tt.text})
			if err != nil {
				t.Fatalf("parseSpec: %v", err)
			}
			got := []any{p.kind, p.glob, p.ranges, p.shown}
			want := []any{tt.kind, tt.glob, tt.ranges, tt.shown}
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(lineRange{})); diff != "" {
				t.Errorf("parseSpec(%q) (-want +got):\n%s", tt.text, diff)
			}
		})
	}
}

func TestParseSpecSyntaxErrors(t *testing.T) {
	tests := []struct{ text, msg string }{
		// ../golden/lcount/sel9-prep.out, ../golden/diag/prep-exc-syntax.out,
		// ../golden/diag/prep-exc-empty-parens.out.
		{"lcount.c(5-", "syntax error in /EXC or /INC specification: lcount.c"},
		{"fcount.c(1-2", "syntax error in /EXC or /INC specification: fcount.c"},
		{"fcount.c()", "syntax error in /EXC or /INC specification: fcount.c"},
		{"parse.c(a-b)", "syntax error in /EXC or /INC specification: parse.c"},
		{"parse.c(65536)", "syntax error in /EXC or /INC specification: parse.c"},
		{"parse.c(1-99999)", "syntax error in /EXC or /INC specification: parse.c"},
		{"parse.c(1-2)x", "syntax error in /EXC or /INC specification: parse.c"},
		{"parse.c(1--2)", "syntax error in /EXC or /INC specification: parse.c"},
		{"parse.c(1-2,)", "syntax error in /EXC or /INC specification: parse.c"},
		{"parse.c(1 - 2)", "syntax error in /EXC or /INC specification: parse.c"},
		{"parse.c(-5)", "syntax error in /EXC or /INC specification: parse.c"},
		{"foo(5-", "syntax error in /EXC or /INC specification: foo"},
		{"(1-2", "syntax error in /EXC or /INC specification: (1-2"},
		{"()", "syntax error in /EXC or /INC specification: ()"},
		{"", "syntax error in /EXC or /INC specification: "},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			_, err := parseSpec(Spec{Op: Include, Text: tt.text})
			if err == nil {
				t.Fatalf("parseSpec(%q) succeeded, want PRF1422", tt.text)
			}
			if code := prf.Code(err); code != 1422 || err.Error() != tt.msg {
				t.Errorf("parseSpec(%q) = PRF%d %q, want PRF1422 %q", tt.text, code, err, tt.msg)
			}
		})
	}
}

func TestParseSpecExcludeAllIgnoresText(t *testing.T) {
	if _, err := parseSpec(Spec{Op: ExcludeAll, Text: "x.c(5-"}); err != nil {
		t.Errorf("parseSpec(ExcludeAll) = %v, want nil", err)
	}
}

func TestGlob(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"main", "main", true},
		{"main", "mainx", false},
		{"main", "Main", false},
		{"*", "", true},
		{"*", "anything/at::all", true},
		{"std::*", "std::vector<int>::size", true},
		{"std::*", "xstd::vector", false},
		{"runtime.*", "runtime.mallocgc", true},
		{"runtime.*", "runtime", false},
		{"internal/*", "internal/runtime/atomic", true},
		{"_?", "_x", true},
		{"_?", "_", false},
		{"_?", "_é", true},
		{"f?b", "fib", true},
		{"*b*", "fib", true},
		{"*b*", "fibx", true},
		{"*x*", "fib", false},
		{"f*", "f\xff\xfe", true},
		{"*.o", "parse.o", true},
		{"*.o", "parse.obj", false},
		{"a*b*c", "aXbYbZc", true},
		{"a*b*c", "aXbYbZ", false},
		{"**x", "x", true},
		{"lib*.so*", "libc.so.6", true},
		{"operator*", "operator*", true},
		{"", "", true},
		{"", "x", false},
	}
	for _, tt := range tests {
		if got := glob(tt.pattern, tt.name); got != tt.want {
			t.Errorf("glob(%q, %q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
}

func TestMatchNames(t *testing.T) {
	tests := []struct {
		name string
		want []string
	}{
		{"main", []string{"main"}},
		{"main.main", []string{"main.main"}},
		{"_ZN7Counter4bumpEi", []string{"_ZN7Counter4bumpEi", "Counter::bump(int)", "Counter::bump"}},
		{"_Z4bumpv", []string{"_Z4bumpv", "bump()", "bump"}},
		{"_ZNKSt6vectorIiSaIiEE4sizeEv", []string{
			"_ZNKSt6vectorIiSaIiEE4sizeEv",
			"std::vector<int, std::allocator<int> >::size() const",
			"std::vector<int, std::allocator<int> >::size",
			"std::vector::size",
		}},
		{"_ZN4main3fib17h0123456789abcdefE", []string{"_ZN4main3fib17h0123456789abcdefE", "main::fib"}},
		{"_RNvCs1234_4main3fib", []string{"_RNvCs1234_4main3fib", "main::fib"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, matchNames(tt.name)); diff != "" {
			t.Errorf("matchNames(%q) (-want +got):\n%s", tt.name, diff)
		}
	}
}
