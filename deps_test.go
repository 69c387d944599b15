package sprof_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/sourceprofiler/sprof"

// allowed lists, for every package of the project, the project packages its
// non-test code may import. Data flows one way: dwarf -> prep -> .pbi ->
// profile -> .pbo -> prep (merge) -> .pbt -> plist; profile never imports
// dwarf or prep, plist sees only datafile (docs/architecture.md).
var allowed = map[string][]string{
	"internal/elfid":           {},
	"dwarf":                    {"internal/elfid"},
	"instr":                    {},
	"internal/prf":             {"datafile"},
	"datafile":                 {},
	"prep":                     {"dwarf", "instr", "datafile", "internal/prf"},
	"profile":                  {"datafile", "internal/elfid", "instr", "profile/ptrace", "profile/layout", "profile/books", "profile/procmaps", "profile/unwind", "internal/prf"},
	"profile/ptrace":           {},
	"profile/layout":           {"instr"},
	"profile/books":            {"datafile", "instr"},
	"profile/procmaps":         {},
	"profile/unwind":           {},
	"plist":                    {"datafile", "internal/prf"},
	"internal/cli":             {"internal/prf"},
	"internal/testutil":        {"datafile", "internal/cli", "internal/golden", "internal/prf"},
	"internal/golden":          {},
	"e2e":                      {},
	"bench/internal/callgrind": {},
	"bench/linecheck":          {"datafile", "bench/internal/callgrind"},
	"bench/branchcheck":        {"datafile", "bench/internal/callgrind"},
	"cmd/prep":                 {"prep", "datafile", "internal/cli", "internal/prf"},
	"cmd/profile":              {"profile", "datafile", "internal/cli", "internal/prf"},
	"cmd/plist":                {"plist", "datafile", "internal/cli", "internal/prf"},
}

// onlyImporters lists outside packages that only some of ours may import.
// PROFILE reads the plan: what it must learn of an ELF file at run time
// (identity, load span, the dynamic linker's rendezvous, function starts)
// package elfid reads for it, and the call frame information (.eh_frame,
// .debug_frame) package unwind reads for it, which alone uses delve's
// DWARF packages.
var onlyImporters = map[string][]string{
	"golang.org/x/sys/unix": {"profile/ptrace"},
	"debug/elf":             {"dwarf", "internal/elfid", "instr", "prep", "internal/testutil", "profile/unwind"},
	"github.com/go-delve/delve/pkg/dwarf/frame":  {"profile/unwind"},
	"github.com/go-delve/delve/pkg/dwarf/op":     {"profile/unwind"},
	"github.com/go-delve/delve/pkg/dwarf/regnum": {"profile/unwind"},
}

func TestImportRules(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}:{{join .Imports \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, imports, _ := strings.Cut(line, ":")
		if path == module {
			continue
		}
		pkg := strings.TrimPrefix(path, module+"/")
		allow, known := allowed[pkg]
		if !known {
			t.Errorf("package %s is not in the import table of deps_test.go: add it", pkg)
			continue
		}
		for _, imp := range strings.Fields(imports) {
			if users, ok := onlyImporters[imp]; ok && !slices.Contains(users, pkg) {
				t.Errorf("%s imports %s, which only %v may import", pkg, imp, users)
			}
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			dep := strings.TrimPrefix(imp, module+"/")
			if (dep == "internal/testutil" || dep == "internal/golden") && pkg != "internal/testutil" {
				t.Errorf("%s imports %s outside its tests", pkg, dep)
			} else if !slices.Contains(allow, dep) {
				t.Errorf("%s imports %s, which the import rules do not allow", pkg, dep)
			}
		}
	}
}

// apiPackages are the packages at the top of the module, the toolchain's
// parts as an API (docs/architecture.md, "Packages").
var apiPackages = []string{"datafile", "dwarf", "prep", "instr", "profile", "plist"}

// TestAPIPackages: each API package stands at the top of the module,
// with a package comment and a runnable example (an Example function
// with its output).
func TestAPIPackages(t *testing.T) {
	for _, pkg := range apiPackages {
		out, err := exec.Command("go", "list", "-f", "{{.Doc}}|{{join .XTestGoFiles \" \"}} {{join .TestGoFiles \" \"}}", "./"+pkg).Output()
		if err != nil {
			t.Errorf("%s: go list: %v", pkg, err)
			continue
		}
		doc, files, _ := strings.Cut(strings.TrimSpace(string(out)), "|")
		if !strings.HasPrefix(doc, "Package "+pkg+" ") {
			t.Errorf("%s: package comment %q, want one that starts \"Package %s\"", pkg, doc, pkg)
		}
		if !hasExample(t, pkg, strings.Fields(files)) {
			t.Errorf("%s: no Example function with an // Output: comment", pkg)
		}
	}
}

// hasExample reports whether one of the test files of pkg holds an
// Example function that has an output to check.
func hasExample(t *testing.T, pkg string, files []string) bool {
	for _, name := range files {
		b, err := os.ReadFile(filepath.Join(pkg, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, fn := range strings.Split(string(b), "\nfunc Example")[1:] {
			body, _, _ := strings.Cut(fn, "\n}\n")
			if strings.Contains(body, "\t// Output:") {
				return true
			}
		}
	}
	return false
}
