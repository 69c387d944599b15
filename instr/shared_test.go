package instr

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestSharedFilesChooseNoArch holds the package to the rule of [Arch]:
// what differs between architectures is in each architecture's own
// files, those whose names begin with its name (amd64*.go, arm64*.go),
// and the other files, shared by all, choose nothing by architecture.
// A shared file may not compare an architecture's Name() with a string,
// nor switch on it, nor use anything an architecture's files declare
// (AMD64, decodeAMD64Bare...) but in the table of the architectures,
// arches. Tests are free to.
func TestSharedFilesChooseNoArch(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var shared []*ast.File
	own := map[string]string{} // what the architectures' files declare: name to file
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		if archOf(name) == "" {
			shared = append(shared, f)
			continue
		}
		for _, id := range topLevel(f) {
			own[id] = name
		}
	}
	if len(shared) == 0 || len(own) == 0 {
		t.Fatalf("%d shared files, %d declarations of the architectures' files: the globs are wrong", len(shared), len(own))
	}
	for _, f := range shared {
		for _, bad := range archChoices(fset, f, own) {
			t.Error(bad)
		}
	}
}

// TestArchChoicesFinds checks that archChoices sees each way a shared
// file could choose by architecture.
func TestArchChoicesFinds(t *testing.T) {
	const src = `package instr

var arches = []Arch{AMD64}

func f(a Arch) int {
	if a.Name() == "arm64" {
		return 4
	}
	if "amd64" != a.Name() || a == AMD64 {
		return 1
	}
	switch a.Name() {
	case "arm64":
		return decodeAMD64Bare()
	}
	return a.MaxInstLen()
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "shared.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	own := map[string]string{"AMD64": "amd64.go", "decodeAMD64Bare": "amd64.go"}
	got := archChoices(fset, f, own)
	want := []string{
		`shared.go:6:5: compares Name() with "arm64"`,
		`shared.go:9:5: compares Name() with "amd64"`,
		`shared.go:9:33: uses AMD64 of amd64.go`,
		`shared.go:12:2: switches on Name()`,
		`shared.go:14:10: uses decodeAMD64Bare of amd64.go`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("archChoices found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// archOf returns the architecture whose file name is, or "" for a
// shared file.
func archOf(name string) string {
	for _, a := range arches {
		if strings.HasPrefix(filepath.Base(name), a.arch.Name()) {
			return a.arch.Name()
		}
	}
	return ""
}

// topLevel returns the names f declares at the package level, methods
// aside (they are reached through a value, not by name).
func topLevel(f *ast.File) []string {
	var names []string
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				names = append(names, d.Name.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					names = append(names, s.Name.Name)
				case *ast.ValueSpec:
					for _, n := range s.Names {
						names = append(names, n.Name)
					}
				}
			}
		}
	}
	return names
}

// archChoices returns where the shared file f chooses by architecture:
// a comparison of a Name() call with a string literal, a switch on a
// Name() call, or a use of a name an architecture's file declares (own),
// outside the declaration of arches.
func archChoices(fset *token.FileSet, f *ast.File, own map[string]string) []string {
	var found []string
	report := func(n ast.Node, format string, args ...any) {
		found = append(found, fmt.Sprintf("%s: %s", fset.Position(n.Pos()), fmt.Sprintf(format, args...)))
	}
	var visit func(n ast.Node) bool
	visit = func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ValueSpec:
			if len(n.Names) == 1 && n.Names[0].Name == "arches" {
				return false
			}
		case *ast.SelectorExpr:
			ast.Inspect(n.X, visit)
			return false // n.Sel is a field or method, not a declaration's name
		case *ast.Ident:
			if own[n.Name] != "" {
				report(n, "uses %s of %s", n.Name, own[n.Name])
			}
		case *ast.BinaryExpr:
			if n.Op != token.EQL && n.Op != token.NEQ {
				break
			}
			for _, pair := range [][2]ast.Expr{{n.X, n.Y}, {n.Y, n.X}} {
				if lit, ok := pair[1].(*ast.BasicLit); ok && isNameCall(pair[0]) && lit.Kind == token.STRING {
					s, _ := strconv.Unquote(lit.Value)
					report(n, "compares Name() with %q", s)
				}
			}
		case *ast.SwitchStmt:
			if isNameCall(n.Tag) {
				report(n, "switches on Name()")
			}
		}
		return true
	}
	ast.Inspect(f, visit)
	return found
}

// isNameCall reports whether e is a call x.Name() without arguments.
func isNameCall(e ast.Expr) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok || len(call.Args) != 0 {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "Name"
}
