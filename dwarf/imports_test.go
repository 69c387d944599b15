package dwarf

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// pltLabel is objdump's name of a PLT entry: "0000000000001030 <printf@plt>:".
var pltLabel = regexp.MustCompile(`(?m)^([0-9a-f]+) <([^@>]+)@plt>:$`)

// TestImports checks the PLT entries read from the file against those
// objdump names, for x86-64 with and without IBT's second PLT, and arm64
// when its cross tools are installed; and the libraries their symbol
// versions name.
func TestImports(t *testing.T) {
	for _, c := range []struct {
		name, cc, objdump string
		flags             []string
	}{
		{"amd64", "gcc", "objdump", nil},
		{"amd64-ibt", "gcc", "objdump", []string{"-fcf-protection=full", "-Wl,-z,ibtplt"}},
		{"amd64-now", "gcc", "objdump", []string{"-Wl,-z,now"}},
		{"arm64", "aarch64-linux-gnu-gcc", "aarch64-linux-gnu-objdump", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			objdump := needTool(t, c.objdump)
			dir, lib := buildC(t, c.cc, "lib.c", "libt.so", "-shared", "-fPIC")
			copySource(t, dir, "imports.c")
			args := append([]string{"-g", "-o", "prog", "imports.c", lib}, c.flags...)
			run(t, dir, nil, c.cc, args...)
			path := filepath.Join(dir, "prog")
			f := open(t, path)
			var want []string
			for _, m := range pltLabel.FindAllStringSubmatch(run(t, "", nil, objdump, "-d", "-j", ".plt", "-j", ".plt.sec", path), -1) {
				addr, _ := strconv.ParseUint(m[1], 16, 64)
				if m[2] != "__cxa_finalize" && m[2] != "__gmon_start__" { // weak: left out
					want = append(want, fmt.Sprintf("%s@%#x", m[2], addr))
				}
			}
			var got []string
			for _, imp := range f.Imports {
				got = append(got, fmt.Sprintf("%s@%#x", imp.Name, imp.Entry))
				lib := "libc.so.6" // (arm64's start-up code calls abort and
				// __libc_start_main through the PLT too)
				if strings.HasPrefix(imp.Name, "lib_") {
					lib = "" // libt.so has no symbol versions
				}
				if imp.Library != lib {
					t.Errorf("%s: library %q, want %q", imp.Name, imp.Library, lib)
				}
				if imp.End != imp.Entry+16 {
					t.Errorf("%s: entry %#x to %#x", imp.Name, imp.Entry, imp.End)
				}
			}
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(got, want) || len(got) < 4 {
				t.Errorf("imports %v, objdump %v", got, want)
			}
			if !slices.Contains(f.Needed, "libt.so") && !slices.ContainsFunc(f.Needed, func(n string) bool { return strings.HasSuffix(n, "/libt.so") }) {
				t.Errorf("needed %v, want libt.so", f.Needed)
			}
		})
	}
}
