package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/sourceprofiler/sprof/datafile"
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
		tool  Tool
		args  string
		files map[string]string
		want  any
		err   string
	}{
		// plist-response-file
		{name: "plist", tool: Plist, args: "@resp.txt fcount", files: map[string]string{"resp.txt": "/nologo /sn\r\n"},
			want: plistWant(func(o *PlistOptions) { o.NoLogo, o.Sort = true, SortName })},
		{name: "split on any white space, no quoting", tool: Prep, args: "@r prog", files: map[string]string{"r": "\t/inc\na(1-2,\t3-4)\r\n\n /fc "},
			want: prepWant(func(o *PrepOptions) {
				o.Method, o.Specs = datafile.FuncCounting, []Spec{{Include, "a(1-2,"}}
				o.Programs = []string{"3-4)", "prog"}
			})},
		{name: "argument in the next file", tool: Prep, args: "/oi @r prog", files: map[string]string{"r": "out.pbi /fc"},
			want: prepWant(func(o *PrepOptions) { o.OutputPBI, o.Method = "out.pbi", datafile.FuncCounting })},
		{name: "argument after the file", tool: Prep, args: "@r out.pbi prog", files: map[string]string{"r": "/oi"},
			want: prepWant(func(o *PrepOptions) { o.OutputPBI = "out.pbi" })},
		{name: "empty file", tool: Plist, args: "@empty fcount", files: map[string]string{"empty": ""},
			want: plistWant(nil)},
		{name: "8 levels", tool: Plist, args: "@r1 fcount", files: chain(8),
			want: plistWant(func(o *PlistOptions) { o.NoLogo = true })},
		{name: "9 levels", tool: Plist, args: "@r1 fcount", files: chain(9),
			err: "plist: fatal error PRF1202: response files nested too deeply"},
		{name: "same file twice", tool: Prep, args: "@r @r prog", files: map[string]string{"r": "/inc x"},
			want: prepWant(func(o *PrepOptions) { o.Specs = []Spec{{Include, "x"}, {Include, "x"}} })},
		{name: "missing", tool: Prep, args: "@nosuch.rsp",
			err: "prep: fatal error PRF1011: cannot open file nosuch.rsp: no such file or directory"},
		{name: "missing nested", tool: Plist, args: "@r fcount", files: map[string]string{"r": "/nologo @sub/nosuch"},
			err: "plist: fatal error PRF1011: cannot open file sub/nosuch: no such file or directory"},
		{name: "directory", tool: Plist, args: "@. fcount",
			err: "plist: fatal error PRF1011: cannot open file .: is a directory"},
		{name: "too large", tool: Plist, args: "@big fcount", files: map[string]string{"big": strings.Repeat(" ", maxResponseBytes+1)},
			err: "plist: fatal error PRF1011: cannot open file big: response files exceed 4 MiB in total"},
		{name: "too large together", tool: Plist, args: "@half @half @half fcount",
			files: map[string]string{"half": "/nologo" + strings.Repeat(" ", maxResponseBytes/2)},
			err:   "plist: fatal error PRF1011: cannot open file half: response files exceed 4 MiB in total"},
		{name: "after end of options", tool: Plist, args: "-- @r", files: map[string]string{"r": "/nologo"},
			want: plistWant(func(o *PlistOptions) { o.Input = "@r" })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tt.files)
			t.Chdir(dir)
			var opts any
			var err error
			switch tt.tool {
			case Prep:
				opts, err = ParsePrep(words(tt.args), nil, nil)
			case Plist:
				opts, err = ParsePlist(words(tt.args), nil, nil)
			}
			if tt.err != "" {
				if got := fatal(tt.tool, err); got != tt.err {
					t.Errorf("%s %s:\n got %s\nwant %s", tt.tool.Name, tt.args, got, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s %s: %v", tt.tool.Name, tt.args, err)
			}
			if diff := cmp.Diff(tt.want, opts, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s %s: options (-want +got):\n%s", tt.tool.Name, tt.args, diff)
			}
		})
	}
}

// TestResponseFileInEnv expands a response file named by the environment
// variable, before the arguments.
func TestResponseFileInEnv(t *testing.T) {
	opts, _, err := parseAny(t, Prep, words("/inc c prog"), "/exc a @r", map[string]string{"r": "/inc b /nologo"})
	if err != nil {
		t.Fatal(err)
	}
	want := prepWant(func(o *PrepOptions) {
		o.NoLogo = true
		o.Specs = []Spec{{Exclude, "a"}, {Include, "b"}, {Include, "c"}}
	})
	if diff := cmp.Diff(want, opts, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("options (-want +got):\n%s", diff)
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
