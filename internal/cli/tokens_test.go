package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/sourceprofiler/sprof/internal/prf"
)

// writeFiles writes name=content files into dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// chain returns response files r1 ... rN, each naming the next, the last
// holding /nologo.
func chain(n int) map[string]string {
	files := map[string]string{}
	for i := 1; i < n; i++ {
		files[fmt.Sprintf("r%d", i)] = fmt.Sprintf("@r%d", i+1)
	}
	files[fmt.Sprintf("r%d", n)] = "/nologo"
	return files
}

// TestResponseFiles reads real files, relative to the working directory as
// the original did.
func TestResponseFiles(t *testing.T) {
	tests := []struct {
		name  string
		args  string
		files map[string]string
		list  []string // the List the command line gives
		err   string
	}{
		{name: "CR LF lines", args: "@resp.txt prog", files: map[string]string{"resp.txt": "/inc a\r\n/exc b\r\n"}, list: []string{"+a", "-b"}},
		{name: "argument after the file", args: "@r x prog", files: map[string]string{"r": "/inc"}, list: []string{"+x"}},
		{name: "empty file", args: "@empty prog", files: map[string]string{"empty": ""}},
		{name: "8 levels", args: "@r1 prog", files: chain(8)},
		{name: "9 levels", args: "@r1 prog", files: chain(9), err: "toy: fatal error PRF1202: response files nested too deeply"},
		{name: "same file twice", args: "@r @r prog", files: map[string]string{"r": "/exc x"}, list: []string{"-x", "-x"}},
		{name: "name in another case", args: "@RESP prog", files: map[string]string{"resp": "/inc y"}, list: []string{"+y"}},
		{name: "missing", args: "@nosuch.rsp", err: "toy: fatal error PRF1011: cannot open file nosuch.rsp: no such file or directory"},
		{name: "missing nested", args: "@r prog", files: map[string]string{"r": "/nologo @sub/nosuch"},
			err: "toy: fatal error PRF1011: cannot open file sub/nosuch: no such file or directory"},
		{name: "directory", args: "@. prog", err: "toy: fatal error PRF1011: cannot open file .: is a directory"},
		{name: "too large", args: "@big prog", files: map[string]string{"big": strings.Repeat(" ", maxResponseBytes+1)},
			err: "toy: fatal error PRF1011: cannot open file big: response files exceed 4 MiB in total"},
		{name: "too large together", args: "@half @half @half prog",
			files: map[string]string{"half": "/nologo" + strings.Repeat(" ", maxResponseBytes/2)},
			err:   "toy: fatal error PRF1011: cannot open file half: response files exceed 4 MiB in total"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tt.files)
			t.Chdir(dir)
			c, err := toyTool().Parse(words(tt.args), nil, nil)
			if tt.err != "" {
				if err == nil || prf.Line("toy", err) != tt.err {
					t.Errorf("toy %s:\n got %v\nwant %s", tt.args, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("toy %s: %v", tt.args, err)
			}
			if !cmp.Equal(c.Options.List, tt.list, cmpopts.EquateEmpty()) || !cmp.Equal(c.Names, []string{"prog"}) {
				t.Errorf("toy %s: list %q, names %q; want %q, [prog]", tt.args, c.Options.List, c.Names, tt.list)
			}
		})
	}
}

// TestResponseFileInEnv expands a response file named by the environment
// variable, before the arguments.
func TestResponseFileInEnv(t *testing.T) {
	c, _, err := parseToy(t, toyTool(), words("/inc c prog"), "/exc a @r", map[string]string{"r": "/inc b /nologo"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"-a", "+b", "+c"}; !cmp.Equal(c.Options.List, want) || !c.NoLogo {
		t.Errorf("list %q, NoLogo %v; want %q, true", c.Options.List, c.NoLogo, want)
	}
}

// TestReadFileBound checks that readFile never reads more than the limit
// plus one byte, even from an endless file.
func TestReadFileBound(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	if _, err := readFile("/dev/zero", 1000); err != errResponseTooLarge {
		t.Errorf("readFile(/dev/zero) = %v, want %v", err, errResponseTooLarge)
	}
	dir := t.TempDir()
	name := filepath.Join(dir, "r")
	writeFiles(t, dir, map[string]string{"r": "12345"})
	for _, tt := range []struct {
		limit int
		ok    bool
	}{{5, true}, {4, false}} {
		data, err := readFile(name, tt.limit)
		if ok := err == nil && string(data) == "12345"; ok != tt.ok {
			t.Errorf("readFile(5 bytes, limit %d) = %q, %v", tt.limit, data, err)
		}
	}
}
