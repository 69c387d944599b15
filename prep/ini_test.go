package prep

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sourceprofiler/sprof/internal/prf"
)

func TestReadIni(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []Spec
	}{
		{"empty", "", nil},
		// ../golden/ini/TOOLS.INI.include, CR LF as the original's.
		{"golden include", "[profiler]\r\nexclude:fcount.c(0-0)\r\ninclude:libc.lib\r\n", []Spec{
			{Op: Exclude, Text: "fcount.c(0-0)"},
			{Op: Include, Text: "libc.lib"},
		}},
		{"comments and blanks", "; comment\n# another\n[profiler]\n\n  ; indented comment\nexclude:fib\n", []Spec{
			{Op: Exclude, Text: "fib"},
		}},
		{"other sections ignored", "[other]\nexclude:a\n[profiler]\nexclude:b\n[more]\ninclude:c\nwhatever = 1\n[Profiler]\ninclude:d\n", []Spec{
			{Op: Exclude, Text: "b"},
			{Op: Include, Text: "d"},
		}},
		{"before any section", "exclude:a\n[profiler]\nexclude:b", []Spec{
			{Op: Exclude, Text: "b"},
		}},
		{"keywords case and blanks", "[ PROFILER ]\n  EXCLUDE : Counter::bump(int) const  \r\nInclude:std::vector<int, std::allocator<int> >::size\n", []Spec{
			{Op: Exclude, Text: "Counter::bump(int) const"},
			{Op: Include, Text: "std::vector<int, std::allocator<int> >::size"},
		}},
		{"byte order mark", "\uFEFF[profiler]\nexclude:x\n", []Spec{{Op: Exclude, Text: "x"}}},
		{"spec with colons", "[profiler]\nexclude:type:*\nexclude:std::*\n", []Spec{
			{Op: Exclude, Text: "type:*"},
			{Op: Exclude, Text: "std::*"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadIni(strings.NewReader(tt.text), "tools.ini")
			if err != nil {
				t.Fatalf("ReadIni: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ReadIni (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadIniErrors(t *testing.T) {
	tests := []struct {
		name string
		text string
		msg  string
		code int
	}{
		{"unknown directive", "[profiler]\nexclude:a\nexclud:b\n", `cannot read the selections of t.ini: line 3: "exclud:b" is not an include: or exclude: directive`, 1648},
		{"no colon", "[profiler]\nexclude fib\n", `cannot read the selections of t.ini: line 2: "exclude fib" is not an include: or exclude: directive`, 1648},
		{"unclosed section", "[profiler\nexclude:a\n", `cannot read the selections of t.ini: line 1: unclosed section header "[profiler"`, 1648},
		{"bad spec", "[profiler]\r\nexclude:lcount.c(5-\r\n", "read t.ini: line 2: syntax error in /EXC or /INC specification: lcount.c", 1422},
		{"empty spec", "[profiler]\ninclude:\n", "read t.ini: line 2: syntax error in /EXC or /INC specification: ", 1422},
		{"long line", "[profiler]\nexclude:" + strings.Repeat("x", maxIniLine) + "\n", "cannot read the selections of t.ini: line longer than 4096 bytes", 1648},
		{"too large", strings.Repeat(";\n", maxIniSize/2+1), "cannot read the selections of t.ini: larger than 1048576 bytes", 1648},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadIni(strings.NewReader(tt.text), "t.ini")
			if err == nil {
				t.Fatal("ReadIni succeeded, want an error")
			}
			if err.Error() != tt.msg || prf.Code(err) != tt.code {
				t.Errorf("ReadIni error = PRF%d %q, want PRF%d %q", prf.Code(err), err, tt.code, tt.msg)
			}
		})
	}
}

// TestBuiltinProfilerIni checks that the shipped defaults parse and exclude
// what the package documentation promises.
func TestBuiltinProfilerIni(t *testing.T) {
	specs, err := ReadIni(bytes.NewReader(builtinProfilerIni), "profiler.ini")
	if err != nil {
		t.Fatalf("ReadIni(profiler.ini): %v", err)
	}
	texts := map[string]bool{}
	for _, s := range specs {
		if s.Op != Exclude {
			t.Errorf("profiler.ini has %v:%s, want only exclusions", s.Op, s.Text)
		}
		if texts[s.Text] {
			t.Errorf("profiler.ini lists %s twice", s.Text)
		}
		texts[s.Text] = true
	}
	for _, want := range []string{"_start", "_init", "_fini", "__libc_csu_*", "frame_dummy", "*.a", "crt1.o",
		"runtime", "runtime.*", "internal/*", "type:*", "go:*", "fmt.*", "std::*", "core::*", "__rust_*",
		"__gnu_cxx::*", "__cxa_*"} {
		if !texts[want] {
			t.Errorf("profiler.ini does not exclude %s", want)
		}
	}
}

func TestDefaultSpecs(t *testing.T) {
	builtin, err := ReadIni(bytes.NewReader(builtinProfilerIni), "profiler.ini")
	if err != nil {
		t.Fatal(err)
	}
	asDefault := func(specs []Spec) []Spec {
		out := make([]Spec, len(specs))
		for i, s := range specs {
			s.Default = true
			out[i] = s
		}
		return out
	}
	write := func(t *testing.T, dir, name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	own := "[profiler]\nexclude:own\n"
	tools := "[profiler]\r\nexclude:fcount2.obj\r\n"
	ownSpecs := []Spec{{Op: Exclude, Text: "own", Default: true}}
	toolsSpecs := []Spec{{Op: Exclude, Text: "fcount2.obj"}}

	tests := []struct {
		name     string
		setup    func(t *testing.T, bin, initDir, cwd string)
		initVar  string // "" unset, "init" the init directory, "missing" a directory without tools.ini
		want     []Spec
		warnings []string
	}{
		{"built-in only", nil, "", asDefault(builtin), nil},
		{"profiler.ini beside prep", func(t *testing.T, bin, _, _ string) { write(t, bin, "profiler.ini", own) }, "", ownSpecs, nil},
		{"tools.ini in cwd", func(t *testing.T, bin, _, cwd string) {
			write(t, bin, "profiler.ini", own)
			write(t, cwd, "tools.ini", tools)
		}, "", append(ownSpecs, toolsSpecs...), nil},
		{"TOOLS.INI in cwd", func(t *testing.T, bin, _, cwd string) {
			write(t, bin, "profiler.ini", own)
			write(t, cwd, "TOOLS.INI", tools)
		}, "", append(ownSpecs, toolsSpecs...), nil},
		{"tools.ini in INIT", func(t *testing.T, bin, initDir, cwd string) {
			write(t, bin, "profiler.ini", own)
			write(t, initDir, "tools.ini", tools)
			write(t, cwd, "tools.ini", "[profiler]\nexclude:not-this-one\n")
		}, "init", append(ownSpecs, toolsSpecs...), nil},
		{"INIT without tools.ini", func(t *testing.T, bin, _, cwd string) {
			write(t, bin, "profiler.ini", own)
			write(t, cwd, "tools.ini", tools)
		}, "missing", ownSpecs, []string{"PRF1011 cannot open file MISSING/tools.ini"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			bin, initDir, cwd, missing := filepath.Join(root, "bin"), filepath.Join(root, "init"), filepath.Join(root, "cwd"), filepath.Join(root, "missing")
			for _, d := range []string{bin, initDir, cwd, missing} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if tt.setup != nil {
				tt.setup(t, bin, initDir, cwd)
			}
			env := map[string]string{}
			switch tt.initVar {
			case "init":
				env["INIT"] = initDir
			case "missing":
				env["INIT"] = missing
			}
			var warnings []string
			got, err := DefaultSpecs(bin, func(k string) string { return env[k] }, cwd, func(err *prf.Diagnostic) {
				warnings = append(warnings, fmt.Sprintf("PRF%d %s", prf.Code(err), strings.ReplaceAll(err.Error(), missing, "MISSING")))
			})
			if err != nil {
				t.Fatalf("DefaultSpecs: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("DefaultSpecs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.warnings, warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefaultSpecsErrors(t *testing.T) {
	t.Run("malformed tools.ini", func(t *testing.T) {
		cwd := t.TempDir()
		if err := os.WriteFile(filepath.Join(cwd, "tools.ini"), []byte("[profiler]\ninclude:x.c()\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := DefaultSpecs("", func(string) string { return "" }, cwd, func(*prf.Diagnostic) {})
		if prf.Code(err) != 1422 {
			t.Errorf("DefaultSpecs = %v, want PRF1422", err)
		}
	})
	t.Run("unreadable profiler.ini", func(t *testing.T) {
		bin := t.TempDir()
		// A directory named profiler.ini exists but cannot be read as a file.
		if err := os.Mkdir(filepath.Join(bin, "profiler.ini"), 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := DefaultSpecs(bin, func(string) string { return "" }, t.TempDir(), func(*prf.Diagnostic) {}); err == nil {
			t.Error("DefaultSpecs succeeded, want an error")
		}
	})
}

// TestProfilerIniInstalled: an installed prep ($PREFIX/bin/prep) reads
// $PREFIX/share/sprof/profiler.ini, and one beside prep wins over it.
func TestProfilerIniInstalled(t *testing.T) {
	root := t.TempDir()
	bin, share := filepath.Join(root, "bin"), filepath.Join(root, "share", "sprof")
	for _, d := range []string{bin, share} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(dir, spec string) {
		if err := os.WriteFile(filepath.Join(dir, "profiler.ini"), []byte("[profiler]\nexclude:"+spec+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	first := func() string {
		specs, err := DefaultSpecs(bin, func(string) string { return "" }, t.TempDir(), func(*prf.Diagnostic) {})
		if err != nil || len(specs) == 0 {
			t.Fatalf("DefaultSpecs = %v, %v", specs, err)
		}
		return specs[0].Text
	}
	write(share, "installed")
	if got := first(); got != "installed" {
		t.Errorf("with share/sprof/profiler.ini: first spec %q, want installed", got)
	}
	write(bin, "beside")
	if got := first(); got != "beside" {
		t.Errorf("with bin/profiler.ini too: first spec %q, want beside", got)
	}
}
