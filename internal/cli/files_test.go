package cli

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// writeProgram writes a file of the given mode at dir/name, making the
// directories on the way.
func writeProgram(t *testing.T, dir, name string, mode os.FileMode) {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), mode); err != nil {
		t.Fatal(err)
	}
}

func TestLookPath(t *testing.T) {
	// cwd is the current directory, bin the only directory on PATH.
	cwd, bin := t.TempDir(), t.TempDir()
	writeProgram(t, cwd, "both", 0o755)
	writeProgram(t, cwd, "local", 0o755)
	writeProgram(t, cwd, "plain", 0o644)
	writeProgram(t, cwd, "sub/tool", 0o755)
	if err := os.Mkdir(filepath.Join(cwd, "shadow"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeProgram(t, bin, "both", 0o755)
	writeProgram(t, bin, "onpath", 0o755)
	writeProgram(t, bin, "shadow", 0o755)
	t.Chdir(cwd)
	t.Setenv("PATH", bin)

	tests := []struct {
		name    string
		arg     string
		want    string // the path found, or "" for an error
		wantErr error
	}{
		{name: "current directory before PATH", arg: "both", want: filepath.Join(cwd, "both")},
		{name: "current directory only", arg: "local", want: filepath.Join(cwd, "local")},
		// docs/design/linux.md: any file in the current directory is taken, as the
		// original did; running it is the next step's business.
		{name: "file without execute permission", arg: "plain", want: filepath.Join(cwd, "plain")},
		{name: "directory is not a program", arg: "shadow", want: filepath.Join(bin, "shadow")},
		{name: "PATH only", arg: "onpath", want: filepath.Join(bin, "onpath")},
		{name: "relative with slash", arg: "sub/tool", want: filepath.Join(cwd, "sub", "tool")},
		{name: "dot slash", arg: "./local", want: filepath.Join(cwd, "local")},
		{name: "absolute", arg: filepath.Join(bin, "onpath"), want: filepath.Join(bin, "onpath")},
		{name: "slash skips PATH", arg: "./onpath", wantErr: fs.ErrNotExist},
		{name: "slash needs execute permission", arg: "./plain", wantErr: fs.ErrPermission},
		{name: "missing", arg: "nosuch", wantErr: exec.ErrNotFound},
		{name: "missing with slash", arg: "sub/nosuch", wantErr: fs.ErrNotExist},
		{name: "empty", arg: "", wantErr: exec.ErrNotFound},
		{name: "another case, current directory", arg: "LOCAL", want: filepath.Join(cwd, "local")},
		{name: "another case, with slash", arg: "sub/TOOL", want: filepath.Join(cwd, "sub", "tool")},
		{name: "another case is not looked for on PATH", arg: "ONPATH", wantErr: exec.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LookPath(tt.arg)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("LookPath(%q) = %q, %v; want an error wrapping %v", tt.arg, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("LookPath(%q) = %q, %v; want %q", tt.arg, got, err, tt.want)
			}
		})
	}
}

func TestWithExt(t *testing.T) {
	tests := []struct {
		name, ext, want string
	}{
		{"prog", ".pbt", "prog.pbt"},
		{"prog.pbo", ".pbt", "prog.pbo"},
		{"prog.pbt", ".pbt", "prog.pbt"},
		{"dir.d/name", ".pbt", "dir.d/name.pbt"},
		{"/usr/bin/gzip", ".pbi", "/usr/bin/gzip.pbi"},
		{"libfoo.so", ".pbo", "libfoo.so.pbo"},
		{"app.v2", ".pbt", "app.v2.pbt"},
		{"RUN.PBO", ".pbo", "RUN.PBO"},
		{"", ".pbt", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := WithExt(tt.name, tt.ext); got != tt.want {
				t.Errorf("WithExt(%q, %q) = %q, want %q", tt.name, tt.ext, got, tt.want)
			}
		})
	}
}

func TestDataName(t *testing.T) {
	tests := []struct {
		program, ext, want string
	}{
		{"/usr/bin/gzip", ".pbi", "gzip.pbi"},
		{"gzip", ".pbo", "gzip.pbo"},
		{"./a.out", ".pbt", "a.out.pbt"},
		{"../build/prog", ".pbi", "prog.pbi"},
	}
	for _, tt := range tests {
		t.Run(tt.program, func(t *testing.T) {
			if got := DataName(tt.program, tt.ext); got != tt.want {
				t.Errorf("DataName(%q, %q) = %q, want %q", tt.program, tt.ext, got, tt.want)
			}
		})
	}
}

// TestFindFile checks the case-insensitive lookup of docs/linux.md: an
// exact name wins, another case is found when it is the only match, and
// only the last element is folded.
func TestFindFile(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"fcount.pbt", "Mixed.PBO", "twice.pbt", "TWICE.pbt", "sub/inner.pbi"} {
		writeProgram(t, dir, name, 0o644)
	}
	t.Chdir(dir)
	tests := []struct{ name, want string }{
		{"fcount.pbt", "fcount.pbt"},
		{"FCOUNT.PBT", "fcount.pbt"},
		{"Fcount.pbt", "fcount.pbt"},
		{"mixed.pbo", "Mixed.PBO"},
		{"./FCOUNT.pbt", "./fcount.pbt"},
		{dir + "/FCOUNT.PBT", dir + "/fcount.pbt"},
		{"sub/INNER.PBI", "sub/inner.pbi"},
		{"SUB/inner.pbi", "SUB/inner.pbi"}, // directories are not folded
		{"twice.pbt", "twice.pbt"},         // exact
		{"Twice.pbt", "Twice.pbt"},         // ambiguous: left to fail
		{"nosuch.pbt", "nosuch.pbt"},
		{"nodir/x.pbt", "nodir/x.pbt"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := FindFile(tt.name); got != tt.want {
			t.Errorf("FindFile(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestInputName checks that an input name means the same file in the three
// tools: app.v2 is the program whose data files are app.v2.pbt and
// app.v2.pbo, while a name that ends in another extension of an existing
// file is that file.
func TestInputName(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"app.v2", "app.v2.pbt", "fcount.pbt", "fcount.pbo", "libfoo.so.1.pbt", "only.pbo"} {
		writeProgram(t, dir, name, 0o644)
	}
	t.Chdir(dir)
	tests := []struct{ name, ext, want string }{
		{"app.v2", ".pbt", "app.v2.pbt"},
		{"app.v2.pbt", ".pbt", "app.v2.pbt"},
		{"fcount", ".pbt", "fcount.pbt"},
		{"fcount.pbt", ".pbt", "fcount.pbt"},
		{"FCOUNT.PBT", ".pbt", "fcount.pbt"},
		{"FCOUNT", ".pbt", "fcount.pbt"},
		{"fcount.pbo", ".pbt", "fcount.pbo"}, // plist prog.pbo: PRF1303, as the original
		{"libfoo.so.1", ".pbt", "libfoo.so.1.pbt"},
		{"only", ".pbo", "only.pbo"},
		{"nosuch", ".pbt", "nosuch.pbt"},
		{"nosuch.v3", ".pbt", "nosuch.v3.pbt"},
		{"", ".pbt", ""},
	}
	for _, tt := range tests {
		if got := InputName(tt.name, tt.ext); got != tt.want {
			t.Errorf("InputName(%q, %q) = %q, want %q", tt.name, tt.ext, got, tt.want)
		}
	}
}
