package dwarf

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestGo(t *testing.T) {
	gobin := needTool(t, "go")
	for _, tt := range []struct {
		name string
		args []string
		pie  bool
	}{
		{"exe", nil, false},
		{"pie", []string{"-buildmode=pie"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "goprog")
			src, err := filepath.Abs(filepath.Join("testdata", "goprog"))
			if err != nil {
				t.Fatal(err)
			}
			args := append([]string{"build", "-o", out}, tt.args...)
			run(t, src, []string{"GOWORK=off", "GOFLAGS=-mod=mod"}, gobin, append(args, ".")...)
			f := open(t, out)
			if !f.HasDWARF || f.PIE != tt.pie || f.Arch != "amd64" && f.Arch != "arm64" {
				t.Errorf("HasDWARF %v PIE %v Arch %q", f.HasDWARF, f.PIE, f.Arch)
			}
			checkNM(t, f, nmFuncs(t, out, false))
			for _, want := range []struct{ name, source, file string }{
				{"main.main", "main", "main.go"},
				{"example.com/goprog/shapes.Area", "example.com/goprog/shapes", "shapes/shapes.go"},
				{"example.com/goprog/shapes.(*Rect).Perimeter", "example.com/goprog/shapes", "shapes/shapes.go"},
			} {
				fn := funcNamed(t, f, want.name)
				if fn.Source != want.source || fn.Unit < 0 || f.Units[fn.Unit].Language != "go" || f.Units[fn.Unit].Name != want.source {
					t.Errorf("%s: Source %q Unit %d", fn.Name, fn.Source, fn.Unit)
				}
				if fn.DeclFile != filepath.Join(src, want.file) {
					t.Errorf("%s: DeclFile %q, want %q", fn.Name, fn.DeclFile, filepath.Join(src, want.file))
				}
			}
			if fn := funcNamed(t, f, "runtime.main"); fn.Source != "runtime" {
				t.Errorf("runtime.main: Source %q", fn.Source)
			}
		})
	}
}

func TestRust(t *testing.T) {
	rustc := needTool(t, "rustc")
	dir := t.TempDir()
	copySource(t, dir, "rust/main.rs")
	out := filepath.Join(dir, "demo")
	run(t, dir, nil, rustc, "-g", "-C", "opt-level=1", "--crate-name", "demo", "-o", out, "main.rs")
	f := open(t, out)
	if !f.HasDWARF {
		t.Fatal("no DWARF")
	}
	checkNM(t, f, nmFuncs(t, out, false))
	var helper *Func
	for i, fn := range f.Funcs {
		// Legacy (_ZN4demo6helper17h...E) or v0 (_RNvCs..._4demo6helper).
		if strings.Contains(fn.Name, "4demo6helper") {
			helper = &f.Funcs[i]
		}
	}
	if helper == nil {
		t.Fatal("no function demo::helper")
	}
	if helper.Source != "demo" || f.Units[helper.Unit].Language != "rust" || helper.DeclFile != filepath.Join(dir, "main.rs") {
		t.Errorf("demo::helper: Source %q Unit %+v DeclFile %q", helper.Source, f.Units[helper.Unit], helper.DeclFile)
	}
	if u := f.Units[helper.Unit]; u.Path != filepath.Join(dir, "main.rs") {
		t.Errorf("unit %q: Path %q, want %q", u.Name, u.Path, filepath.Join(dir, "main.rs"))
	}
}

func TestArm64(t *testing.T) {
	const cc = "aarch64-linux-gnu-gcc"
	needTool(t, cc)
	_, path := buildC(t, cc, "prog.c", "prog", "-O2")
	f := open(t, path)
	if f.Arch != "arm64" || !f.HasDWARF {
		t.Errorf("Arch %q HasDWARF %v", f.Arch, f.HasDWARF)
	}
	checkProgFuncs(t, f, filepath.Dir(path))
	main := funcNamed(t, f, "main")
	code, err := f.Code(main.Entry, 4)
	if err != nil || string(code) != string(textBytes(t, path, main.Entry, 4)) {
		t.Errorf("Code(main) = % x, %v", code, err)
	}
}

func TestNames(t *testing.T) {
	tests := []struct {
		name string
		fn   func(string) string
		in   string
		want string
	}{
		{"object", objectName, "src/parse.c", "parse.o"},
		{"object", objectName, "/abs/lib.cc", "lib.o"},
		{"object", objectName, "noext", "noext.o"},
		{"object", objectName, ".hidden", ".hidden.o"},
		{"object", objectName, "<artificial>", ""},
		{"crate", rustCrate, "src/main.rs/@/demo.1ba8404ce28d149d-cgu.0", "demo"},
		{"crate", rustCrate, "demo.7rcbfp3g-cgu.0", "demo"},
		{"crate", rustCrate, "src/main.rs", ""},
		{"symbol", rustCrateOfSymbol, "_ZN4demo6helper17ha2106966b8e3ff79E", "demo"},
		{"symbol", rustCrateOfSymbol, "_RNvCs1234_4demo6helper", "demo"},
		{"symbol", rustCrateOfSymbol, "_RNvNtCsjrHSEGnQ3l9_3std2rt10lang_start", "std"},
		{"symbol", rustCrateOfSymbol, "_RINvNtNtNtCsjrHSEGnQ3l9_3std3sys7helpers14small_c_stringINtB8_4path7PathBufEB8_", "std"},
		{"symbol", rustCrateOfSymbol, "_RNvCs1_5__abcd3fun", "_abcd"},
		{"symbol", rustCrateOfSymbol, "_ZN99short", ""},
		{"symbol", rustCrateOfSymbol, "main", ""},
		{"symbol", rustCrateOfSymbol, "_R", ""},
	}
	for _, tt := range tests {
		if got := tt.fn(tt.in); got != tt.want {
			t.Errorf("%s(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}
