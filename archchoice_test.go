package sprof_test

import (
	"fmt"
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// knownArch are the GOARCH spellings Go knows (go/build's list), and the
// ELF and uname spellings of the two the profiler runs on: each an
// architecture's name to TestNoArchChoices.
var knownArch = []string{
	"386", "amd64", "amd64p32", "arm", "armbe", "arm64", "arm64be", "loong64",
	"mips", "mipsle", "mips64", "mips64le", "mips64p32", "mips64p32le",
	"ppc", "ppc64", "ppc64le", "riscv", "riscv64", "s390", "s390x",
	"sparc", "sparc64", "wasm", "x86_64", "aarch64",
}

// knownOS are the GOOS spellings, for the file names that are build
// constraints (x_linux.go).
var knownOS = []string{
	"aix", "android", "darwin", "dragonfly", "freebsd", "hurd", "illumos", "ios",
	"js", "linux", "nacl", "netbsd", "openbsd", "plan9", "solaris", "wasip1",
	"windows", "zos",
}

// TestNoArchChoices holds every package to the rule of instr.Arch (and of
// docs/architecture.md, "Packages"): what differs between architectures
// is asked of the architecture's value, whose per-architecture answers
// are in instr's architecture files (amd64*.go, arm64*.go), and no other
// code chooses by an architecture's name. It reads every non-test Go
// file of every package of the module, whatever its build constraints,
// but those files and the build-constrained files of profile/ptrace
// (the host's registers), and reports:
//
//   - an architecture's name (a string literal spelling a GOARCH, or
//     "x86_64" or "aarch64"; or a machine of debug/elf, elf.EM_*) in a
//     package that has an architecture's value (instr, and every
//     package that imports it), anywhere but instr's table of the
//     architectures, arches: such a package asks the value;
//   - in the other packages, which have only a name (a plan's Arch, an
//     ELF file's machine, the host's runtime.GOARCH), such a name
//     anywhere but in a table, the composite literal of a package-level
//     variable (dwarf's goarches, plist's gmonMachines, testutil's
//     hosts): elsewhere it is compared (==, !=), a case of a switch, an
//     argument (strings.HasPrefix(runtime.GOARCH, "arm")), a table made
//     in a function to look in (slices.Contains), or a constant that
//     would hide it from these rules;
//   - a switch on runtime.GOARCH or on a Name() call;
//   - a use of what instr's architecture files declare (AMD64, ARM64,
//     decodeAMD64Bare...) outside arches.
//
// Comparing two names neither of which is spelled (PROFILE's check that
// the plan's architecture is the host's, arch.Name() != runtime.GOARCH)
// chooses nothing, and is allowed; so are comments, and tests.
func TestNoArchChoices(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{.Dir}}|{{join .Imports \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	own := archDeclarations(t)
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.Split(line, "|")
		pkg, dir := strings.TrimPrefix(strings.TrimPrefix(parts[0], module), "/"), parts[1]
		hasArch := pkg == "instr" || slices.Contains(strings.Fields(parts[2]), module+"/instr")
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, file := range files {
			name := filepath.Base(file)
			if strings.HasSuffix(name, "_test.go") || (pkg == "instr" && archFile(name)) {
				continue
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, file, nil, parser.ParseComments|parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			if pkg == "profile/ptrace" && constrained(name, f) {
				continue
			}
			checked++
			rel := path.Join(pkg, name)
			for _, bad := range archChoices(fset, f, rel, pkg == "instr", hasArch, own) {
				t.Error(bad)
			}
		}
	}
	if checked < 100 || len(own) < 10 {
		t.Errorf("%d files checked, %d declarations of instr's architecture files: the rule reads too little", checked, len(own))
	}
}

// TestArchChoicesFinds checks that archChoices sees each way a file
// could choose by architecture, and lets tables and the comparison of
// two names be.
func TestArchChoicesFinds(t *testing.T) {
	own := map[string]string{"AMD64": "amd64.go", "decodeAMD64Bare": "amd64.go"}
	for _, c := range []struct {
		name, pkg, src   string
		inInstr, hasArch bool
		want             []string
	}{
		{"profile", "profile", `package profile

import (
	"debug/elf"
	"runtime"

	"github.com/sourceprofiler/sprof/instr"
)

var table = map[string]int{"arm64": 4}

func f(arch instr.Arch, m elf.Machine) int {
	if arch.Name() == "arm64" {
		return 1
	}
	if arch.Name() != runtime.GOARCH || arch == instr.AMD64 {
		return 2
	}
	if m == elf.EM_AARCH64 {
		return 3
	}
	return 0
}
`, false, true, []string{
			`profile/x.go:10:28: names the architecture "arm64"`,
			`profile/x.go:13:20: names the architecture "arm64"`,
			`profile/x.go:16:46: uses AMD64 of instr's amd64.go`,
			`profile/x.go:19:10: names the architecture elf.EM_AARCH64`,
		}},
		{"plist", "plist", `package plist

import (
	"runtime"
	"slices"
	"strings"
)

const arm = "arm64"

var machines = map[string]int{"arm64": 4, "386": 4}

func g(arch string) int {
	if runtime.GOARCH == "amd64" || strings.HasPrefix(arch, "arm64") {
		return 1
	}
	if slices.Contains([]string{"mips", "ppc"}, arch) {
		return 2
	}
	switch runtime.GOARCH {
	case "s390x":
		return 3
	}
	return machines[arch]
}
`, false, false, []string{
			`plist/x.go:9:13: names the architecture "arm64"`,
			`plist/x.go:14:23: names the architecture "amd64"`,
			`plist/x.go:14:58: names the architecture "arm64"`,
			`plist/x.go:17:30: names the architecture "mips"`,
			`plist/x.go:17:38: names the architecture "ppc"`,
			`plist/x.go:20:2: switches on runtime.GOARCH`,
			`plist/x.go:21:7: names the architecture "s390x"`,
		}},
		{"instr", "instr", `package instr

import "debug/elf"

var arches = []struct {
	machine elf.Machine
	arch    Arch
}{{elf.EM_X86_64, AMD64}}

func f(a Arch) int {
	switch a.Name() {
	case "arm64":
		return decodeAMD64Bare()
	}
	if a == AMD64 {
		return 1
	}
	return a.MaxInstLen()
}
`, true, true, []string{
			`instr/x.go:11:2: switches on a Name() call`,
			`instr/x.go:12:7: names the architecture "arm64"`,
			`instr/x.go:13:10: uses decodeAMD64Bare of instr's amd64.go`,
			`instr/x.go:15:10: uses AMD64 of instr's amd64.go`,
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "x.go", c.src, parser.ParseComments|parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			got := archChoices(fset, f, c.pkg+"/x.go", c.inInstr, c.hasArch, own)
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("archChoices found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

// archFile reports whether a file of instr is an architecture's: its
// name begins with the architecture's GOARCH spelling (amd64.go,
// arm64_ring.go).
func archFile(name string) bool {
	for _, a := range knownArch {
		if name == a+".go" || strings.HasPrefix(name, a+"_") {
			return true
		}
	}
	return false
}

// constrained reports whether file f, named name, builds only under
// some constraint: a //go:build line, or a _GOOS or _GOARCH suffix.
func constrained(name string, f *ast.File) bool {
	for _, g := range f.Comments {
		if g.Pos() > f.Package {
			break
		}
		for _, c := range g.List {
			if constraint.IsGoBuild(c.Text) {
				return true
			}
		}
	}
	parts := strings.Split(strings.TrimSuffix(name, ".go"), "_")
	for _, p := range parts[1:] {
		if slices.Contains(knownOS, p) || slices.Contains(knownArch, p) {
			return true
		}
	}
	return false
}

// archDeclarations returns what instr's architecture files declare at
// the package level, methods aside (they are reached through a value,
// not by name): name to file.
func archDeclarations(t *testing.T) map[string]string {
	files, err := filepath.Glob("instr/*.go")
	if err != nil {
		t.Fatal(err)
	}
	own := map[string]string{}
	for _, file := range files {
		name := filepath.Base(file)
		if strings.HasSuffix(name, "_test.go") || !archFile(name) {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					own[d.Name.Name] = name
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						own[s.Name.Name] = name
					case *ast.ValueSpec:
						for _, n := range s.Names {
							own[n.Name] = name
						}
					}
				}
			}
		}
	}
	return own
}

// archChoices returns where f, the file rel of its package, chooses by
// architecture, by the rules of TestNoArchChoices: inInstr for a shared
// file of instr, hasArch for a package that has an architecture's value
// (instr, or one that imports it); own is what instr's architecture
// files declare.
func archChoices(fset *token.FileSet, f *ast.File, rel string, inInstr, hasArch bool, own map[string]string) []string {
	var found []string
	report := func(n ast.Node, format string, args ...any) {
		p := fset.Position(n.Pos())
		found = append(found, fmt.Sprintf("%s:%d:%d: %s", rel, p.Line, p.Column, fmt.Sprintf(format, args...)))
	}
	elfName, instrName, runtimeName := "", "", ""
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		local := path.Base(p)
		if imp.Name != nil {
			local = imp.Name.Name
		}
		switch p {
		case "debug/elf":
			elfName = local
		case module + "/instr":
			instrName = local
		case "runtime":
			runtimeName = local
		}
	}
	// The tables: arches, in instr; the package-level variables' composite
	// literals, in a package without an architecture's value.
	tables := map[ast.Node]bool{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, s := range g.Specs {
			s := s.(*ast.ValueSpec)
			if inInstr {
				if len(s.Names) == 1 && s.Names[0].Name == "arches" {
					tables[s] = true
				}
				continue
			}
			if hasArch {
				continue
			}
			for _, v := range s.Values {
				if _, ok := v.(*ast.CompositeLit); ok {
					tables[v] = true
				}
			}
		}
	}
	isSel := func(e ast.Expr, pkg, name string) bool {
		s, ok := e.(*ast.SelectorExpr)
		if !ok || pkg == "" {
			return false
		}
		x, ok := s.X.(*ast.Ident)
		return ok && x.Name == pkg && (name == "" || s.Sel.Name == name)
	}
	var visit func(n ast.Node) bool
	visit = func(n ast.Node) bool {
		if tables[n] {
			return false
		}
		switch n := n.(type) {
		case *ast.BasicLit:
			if s, err := strconv.Unquote(n.Value); n.Kind == token.STRING && err == nil && slices.Contains(knownArch, s) {
				report(n, "names the architecture %q", s)
			}
		case *ast.SelectorExpr:
			if isSel(n, elfName, "") && strings.HasPrefix(n.Sel.Name, "EM_") {
				report(n, "names the architecture %s.%s", elfName, n.Sel.Name)
			}
			if isSel(n, instrName, "") && own[n.Sel.Name] != "" {
				report(n, "uses %s of instr's %s", n.Sel.Name, own[n.Sel.Name])
			}
			ast.Inspect(n.X, visit)
			return false // n.Sel is a field, a method or a package's name
		case *ast.Ident:
			if inInstr && own[n.Name] != "" {
				report(n, "uses %s of instr's %s", n.Name, own[n.Name])
			}
		case *ast.SwitchStmt:
			if isSel(n.Tag, runtimeName, "GOARCH") {
				report(n, "switches on runtime.GOARCH")
			}
			if call, ok := n.Tag.(*ast.CallExpr); ok && len(call.Args) == 0 {
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Name" {
					report(n, "switches on a Name() call")
				}
			}
		}
		return true
	}
	for _, d := range f.Decls {
		ast.Inspect(d, visit)
	}
	return found
}
