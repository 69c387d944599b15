package plist

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/prf"
)

func TestFixed(t *testing.T) {
	tests := []struct {
		v    float64
		prec int
		want string
	}{
		{0.0625, 3, "0.063"}, // an exact half: away from zero, as MSVC
		{-0.0625, 3, "-0.063"},
		{0.25, 1, "0.3"},
		{12.75, 1, "12.8"},
		{0.35, 1, "0.3"}, // 0.34999999999999997 is below the half
		{2.675, 2, "2.67"},
		{84.61538461538461, 1, "84.6"},
		{100, 1, "100.0"},
		{0, 3, "0.000"},
		{1e20, 1, "100000000000000000000.0"},
	}
	for _, tt := range tests {
		if got := fixed(tt.v, tt.prec); got != tt.want {
			t.Errorf("fixed(%v, %d) = %q, want %q", tt.v, tt.prec, got, tt.want)
		}
	}
}

func TestPercent(t *testing.T) {
	tests := []struct {
		part, whole float64
		want        string
	}{
		{177, 210, "84.3"},
		{11, 13, "84.6"},
		{5, 0, "0.0"}, // a zero denominator prints 0.0
		{0, 0, "0.0"},
		{1, 400, "0.3"}, // 0.25, an exact half
	}
	for _, tt := range tests {
		if got := fixed(percent(tt.part, tt.whole), 1); got != tt.want {
			t.Errorf("percent(%v, %v) = %s, want %s", tt.part, tt.whole, got, tt.want)
		}
	}
}

func TestDates(t *testing.T) {
	now := time.Date(1997, time.November, 5, 23, 37, 0, 0, time.FixedZone("CET", 3600))
	if got, want := ctime(now), "Wed Nov 05 23:37:00 1997"; got != want {
		t.Errorf("ctime = %q, want %q", got, want)
	}
	// 22:59 UTC is 23:59 in now's zone.
	run := time.Date(1997, time.November, 5, 22, 59, 30, 0, time.UTC).Unix()
	if got, want := runDate(run, now), "1997 Nov 05 23:59"; got != want {
		t.Errorf("runDate = %q, want %q", got, want)
	}
}

func TestExpandTabs(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a\tb", "a   b"},
		{"abcd\te", "abcd    e"},
		{"\t", "    "},
		{"   10  43.1\tx", "   10  43.1 x"},
		{"é\tx", "é   x"}, // columns count characters
		{"\xff\tx", "\xff   x"},
		{"no tabs", "no tabs"},
	}
	for _, tt := range tests {
		if got := expandTabs(tt.in); got != tt.want {
			t.Errorf("expandTabs(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCutRunes(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"Profile: Function counting", 7, "Profile"},
		{"short", 40, "short"},
		{"abc", 0, ""},
		{"ääää", 2, "ää"},
	}
	for _, tt := range tests {
		if got := cutRunes(tt.in, tt.n); got != tt.want {
			t.Errorf("cutRunes(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

// TestPaging checks the rule of original.md §5.5.4: a page break comes
// before a checked line when the page holds pageLen lines; empty and
// underline lines are never checked, so a page may run over.
func TestPaging(t *testing.T) {
	var b bytes.Buffer
	p := newPrinter(&b, Options{PageLength: 3}, []string{"H1", "H2"})
	p.heading = []string{"T"}
	if p.pageLen != minPageLength {
		t.Fatalf("PageLength 3 gives pages of %d lines, want %d", p.pageLen, minPageLength)
	}
	for i := 0; i < 14; i++ {
		p.text("row")
	}
	// The page holds 16 lines now; empty and dash lines still go on it.
	p.blank()
	p.underline(3)
	p.text("next")
	if err := p.flush(); err != nil {
		t.Fatal(err)
	}
	want := "H1\nH2\n" + strings.Repeat("row\n", 14) + "\n---\n\fH1\nH2\nT\nnext\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

func TestPageWidth(t *testing.T) {
	for _, tt := range []struct {
		o    Options
		want string
	}{
		{Options{}, "abc def\n"},
		{Options{PageWidthGiven: true, PageWidth: 5}, "abc d\n"},
		{Options{PageWidthGiven: true, PageWidth: 0}, "\n"},
		{Options{PageWidthGiven: true, PageWidth: -3}, "\n"},
	} {
		var b bytes.Buffer
		p := newPrinter(&b, tt.o, nil)
		p.text("abc\tdef")
		if err := p.flush(); err != nil {
			t.Fatal(err)
		}
		if b.String() != tt.want {
			t.Errorf("%+v: %q, want %q", tt.o, b.String(), tt.want)
		}
	}
}

func TestDefaultDemangle(t *testing.T) {
	tests := []struct{ in, want string }{
		{"_Z5twicei", "twice(int)"},
		{"_ZN7Counter4bumpEi", "Counter::bump(int)"},
		{"_ZNK7Counter5valueEv", "Counter::value() const"},
		{"_Z3maxIiET_S0_S0_", "max<int>(int, int)"}, // no return type
		{"_Z3maxIiET_S0_S0_.constprop.0", "max<int>(int, int) [clone .constprop.0]"},
		{"_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write"},
		{"_ZN4core3fmt5write17h0000000000000000E", "core::fmt::write"}, // too few digits for the demangler
		{"_RNvCs1234_7mycrate3foo", "mycrate::foo"},
		{"_RNvNtCs9ltgdHTiPiY_4core3fmt5write", "core::fmt::write"},
		{"main", "main"},
		{"main.(*server).handle", "main.(*server).handle"},
		{"_Z", "_Z"},
		{"_Zbogus", "_Zbogus"},
	}
	for _, tt := range tests {
		if got := defaultDemangle(tt.in); got != tt.want {
			t.Errorf("defaultDemangle(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestResolveSort(t *testing.T) {
	tests := []struct {
		m    datafile.Method
		s    Sort
		want Sort
		ok   bool
	}{
		{datafile.FuncCounting, SortDefault, SortCount, true},
		{datafile.FuncCounting, SortName, SortName, true},
		{datafile.FuncCounting, SortTime, SortCount, false},
		{datafile.FuncCounting, SortLine, SortCount, false},
		{datafile.FuncCoverage, SortDefault, SortName, true},
		{datafile.FuncCoverage, SortCount, SortCount, true},
		{datafile.FuncCoverage, SortChildTime, SortName, false},
		{datafile.FuncTiming, SortDefault, SortTime, true},
		{datafile.FuncTiming, SortChildTime, SortChildTime, true},
		{datafile.FuncTiming, SortLineSummary, SortTime, false},
		{datafile.FuncSampling, SortDefault, SortTime, true},
		{datafile.FuncSampling, SortCount, SortCount, true},
		{datafile.FuncSampling, SortLine, SortTime, false},
		{datafile.LineCounting, SortDefault, SortLine, true},
		{datafile.LineCounting, SortName, SortLine, false},
		{datafile.LineCoverage, SortDefault, SortLineSummary, true},
		{datafile.LineCoverage, SortCount, SortCount, true},
		{datafile.FuncCounting, Sort(99), SortCount, false},
	}
	for _, tt := range tests {
		got, ok := resolveSort(tt.m, tt.s)
		if got != tt.want || ok != tt.ok {
			t.Errorf("resolveSort(%v, %d) = %d, %v; want %d, %v", tt.m, tt.s, got, ok, tt.want, tt.ok)
		}
	}
}

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestGenerateErrors(t *testing.T) {
	sampling := readInput(t, "cpprust")
	sampling.Plan.Method = datafile.FuncSampling
	timingAT := readInput(t, "timing")
	timingAT.Plan.Attribution = true
	tests := []struct {
		name string
		m    *datafile.Merged
		o    Options
		want string // "" for success
	}{
		{"nil", nil, Options{}, "write report: no profile"},
		{"sampling listing", sampling, Options{}, ""},
		{"sampling records", sampling, Options{Tab: true}, ""},
		{"sampling gmon.out without runs", sampling, Options{Format: FormatGmon},
			"write report: write gmon.out: the profile has no sampling run (no sampling interval)"},
		{"counting gmon.out", readInput(t, "cpprust"), Options{Format: FormatGmon},
			"write report: gmon.out holds sampled time: only function sampling profiles (prep /FS) can be written as one, not function counting ones"},
		{"timing gmon.out, no run", readInput(t, "never"), Options{Format: FormatGmon},
			"write report: gmon.out holds sampled time: only function sampling profiles (prep /FS) can be written as one, not function timing ones"},
		{"timing attribution listing", timingAT, Options{}, ""},
		{"timing attribution records", timingAT, Options{Tab: true}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			warned := false
			tt.o.Warn = func(*prf.Diagnostic) { warned = true }
			err := Generate(io.Discard, tt.m, tt.o)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("Generate: %q, want %q", got, tt.want)
			}
			if err != nil && warned {
				t.Errorf("warned before failing")
			}
		})
	}
}

func TestGenerateWriteError(t *testing.T) {
	m := readInput(t, "cpprust")
	for _, tab := range []bool{false, true} {
		err := Generate(failingWriter{}, m, Options{Tab: tab})
		if err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Errorf("tab %v: %v, want the writer's error", tab, err)
		}
	}
}

// TestFileNames: each file is named by the shortest path suffix no other
// file of the profile ends with, its base name where that is unique; a
// path that another ends with is named whole; one path in two modules is
// one file.
func TestFileNames(t *testing.T) {
	for _, c := range []struct {
		files [][]string
		want  [][]string
	}{
		{[][]string{{"/src/a/util.c", "/src/b/util.c", "/src/main.c"}}, [][]string{{"a/util.c", "b/util.c", "main.c"}}},
		{[][]string{{"/go/src/syscall/asm_linux_amd64.s", "/go/src/internal/runtime/syscall/asm_linux_amd64.s"}},
			[][]string{{"src/syscall/asm_linux_amd64.s", "runtime/syscall/asm_linux_amd64.s"}}},
		{[][]string{{"src/util.c", "lib/src/util.c", "lcount.c"}}, [][]string{{"src/util.c", "lib/src/util.c", "lcount.c"}}},
		{[][]string{{"/x/prog.c", "/usr/include/stdio.h"}, {"/y/lib.c", "/usr/include/stdio.h"}},
			[][]string{{"prog.c", "stdio.h"}, {"lib.c", "stdio.h"}}},
		{[][]string{{"/x/util.c"}, {"/y/util.c"}}, [][]string{{"x/util.c"}, {"y/util.c"}}},
		{[][]string{{"util.c", "/util.c", "C:\\src\\lcount.c", ""}}, [][]string{{"util.c", "/util.c", "C:\\src\\lcount.c", ""}}},
	} {
		mods := make([]datafile.Module, len(c.files))
		for i, f := range c.files {
			mods[i].Files = f
		}
		if d := cmp.Diff(c.want, fileNames(mods)); d != "" {
			t.Errorf("fileNames(%q) (-want +got):\n%s", c.files, d)
		}
	}
}
