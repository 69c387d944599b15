package sprof_test

import (
	"os/exec"
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
	"internal/elfid":          {},
	"internal/dwarf":          {"internal/elfid"},
	"internal/instr":          {},
	"internal/prf":            {"datafile"},
	"datafile":                {},
	"internal/prep":           {"internal/dwarf", "internal/instr", "datafile", "internal/prf"},
	"internal/profile":        {"datafile", "internal/elfid", "internal/instr", "internal/profile/ptrace", "internal/prf"},
	"internal/profile/ptrace": {},
	"internal/plist":          {"datafile", "internal/prf"},
	"internal/cli":            {"internal/prf"},
	"internal/testutil":       {"datafile", "internal/cli", "internal/golden", "internal/prf"},
	"internal/golden":         {},
	"e2e":                     {},
	"bench/linecheck":         {"datafile"},
	"cmd/prep":                {"internal/prep", "datafile", "internal/cli", "internal/prf"},
	"cmd/profile":             {"internal/profile", "datafile", "internal/cli", "internal/prf"},
	"cmd/plist":               {"internal/plist", "datafile", "internal/cli", "internal/prf"},
}

// onlyImporters lists outside packages that only some of ours may import.
// PROFILE reads the plan: what it must learn of an ELF file at run time
// (identity, load span, the dynamic linker's rendezvous, function starts)
// package elfid reads for it.
var onlyImporters = map[string][]string{
	"golang.org/x/sys/unix": {"internal/profile/ptrace"},
	"debug/elf":             {"internal/dwarf", "internal/elfid", "internal/instr", "internal/prep", "internal/testutil"},
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
