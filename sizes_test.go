package sprof_test

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The size limits of the code (issue 32, part 6): pieces a reader can hold
// in mind. They apply to every non-test .go file of the module.
const (
	maxFileLines = 600 // lines of a file
	maxFuncLines = 80  // lines of a function, a method or a top-level func literal, from func to its closing brace
	maxMethods   = 40  // methods of a type
	maxFields    = 20  // fields of a struct type
)

// The exceptions, each with its reason. A file or type excepted that is
// within the limits is an error too: remove its exception.
var (
	// bigFiles may be over maxFileLines: tables of data.
	// (The message catalogue, once one, is split by the tool that says
	// each message: internal/prf/catalogue*.go.)
	bigFiles = map[string]string{}
	// manyMethods may have over maxMethods methods (package directory
	// and type).
	manyMethods = map[string]string{
		"instr.amd64": "an architecture's type implements instr's interfaces: its methods hold every difference of x86-64",
		"instr.arm64": "an architecture's type implements instr's interfaces: its methods hold every difference of arm64",
	}
	// skippedDirs are not checked at all, with what they hold.
	skippedDirs = map[string]string{}
)

// optionStructs may have any number of fields (package directory and
// type): the options of a library, one field each, as its tool's table
// sets them. They are not checked for need: an option struct stays one.
var optionStructs = map[string]bool{
	"prep.Options":   true,
	"plist.Options":  true,
	"profile.Config": true,
}

// TestSizes holds the module's code to the size limits above.
func TestSizes(t *testing.T) {
	files := goSources(t, ".")
	if len(files) < 100 {
		t.Fatalf("found %d Go files: the walk is wrong", len(files))
	}
	var problems []string
	used := map[string]bool{}
	methods := map[string]int{} // package.type: methods
	fset := token.NewFileSet()
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if n := lineCount(src); n > maxFileLines {
			if _, ok := bigFiles[name]; ok {
				used[name] = true
			} else {
				problems = append(problems, fmt.Sprintf("%s: %d lines, over %d: split it by job", name, n, maxFileLines))
			}
		}
		f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		problems = append(problems, longFuncs(fset, f)...)
		problems = append(problems, bigStructs(fset, f, path.Dir(name))...)
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv != nil {
				methods[path.Dir(name)+"."+receiverName(fd.Recv.List[0].Type)]++
			}
		}
	}
	for typ, n := range methods {
		if n <= maxMethods {
			continue
		}
		if _, ok := manyMethods[typ]; ok {
			used[typ] = true
			continue
		}
		problems = append(problems, fmt.Sprintf("type %s: %d methods, over %d: give its jobs types of their own", typ, n, maxMethods))
	}
	for _, list := range []map[string]string{bigFiles, manyMethods} {
		for k := range list {
			if !used[k] {
				problems = append(problems, fmt.Sprintf("%s is within the limits: remove its exception from sizes_test.go", k))
			}
		}
	}
	for dir := range skippedDirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			problems = append(problems, fmt.Sprintf("skipped directory %s is not there: remove its exception from sizes_test.go", dir))
		}
	}
	sort.Strings(problems)
	for _, p := range problems {
		t.Error(p)
	}
}

// goSources returns the non-test .go files of the module under root, as
// slash paths relative to it: not those of testdata (fixtures, whose lines
// tests cite), of directories the go command ignores (".", "_"), of
// nested modules, or of skippedDirs.
func goSources(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(p)
		if d.IsDir() {
			if p == root {
				return nil
			}
			name := d.Name()
			if name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, skip := skippedDirs[rel]; skip {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, "_test.go") {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// lineCount returns the lines of src, the last one counted without its
// newline.
func lineCount(src []byte) int {
	n := bytes.Count(src, []byte("\n"))
	if len(src) > 0 && src[len(src)-1] != '\n' {
		n++
	}
	return n
}

// longFuncs returns the functions and methods of f, and the func literals
// of its package-level declarations, over maxFuncLines.
func longFuncs(fset *token.FileSet, f *ast.File) []string {
	var out []string
	check := func(what string, from, to token.Pos) {
		start, end := fset.Position(from), fset.Position(to)
		if n := end.Line - start.Line + 1; n > maxFuncLines {
			out = append(out, fmt.Sprintf("%s:%d: %s: %d lines, over %d: break it into named steps", start.Filename, start.Line, what, n, maxFuncLines))
		}
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			name := d.Name.Name
			if d.Recv != nil {
				name = receiverName(d.Recv.List[0].Type) + "." + name
			}
			check(name, d.Type.Func, d.End())
		case *ast.GenDecl:
			ast.Inspect(d, func(n ast.Node) bool {
				if lit, ok := n.(*ast.FuncLit); ok {
					check("func literal", lit.Type.Func, lit.End())
					return false
				}
				return true
			})
		}
	}
	return out
}

// bigStructs returns the struct types of f, of package directory pkg, at
// any level, with over maxFields fields (an embedded type is one, a line
// of names as many as it names).
func bigStructs(fset *token.FileSet, f *ast.File, pkg string) []string {
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok {
			return true
		}
		st, ok := ts.Type.(*ast.StructType)
		if !ok || optionStructs[pkg+"."+ts.Name.Name] {
			return true
		}
		fields := 0
		for _, fl := range st.Fields.List {
			fields += max(len(fl.Names), 1)
		}
		if fields > maxFields {
			pos := fset.Position(ts.Pos())
			out = append(out, fmt.Sprintf("%s:%d: type %s: %d fields, over %d: group them into types of their own", pos.Filename, pos.Line, ts.Name.Name, fields, maxFields))
		}
		return true
	})
	return out
}

// receiverName returns the name of a method's receiver type: T of T, *T,
// T[P] and *T[P, Q].
func receiverName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return fmt.Sprintf("%T", e)
		}
	}
}
