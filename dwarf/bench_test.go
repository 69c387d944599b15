package dwarf

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// bigBinary builds cmd/compile with DWARF (the distributed one has none)
// once per test process: a 33 MB Go binary with some 20,000 functions.
var bigBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "dwarf-bench-")
	if err != nil {
		return "", err
	}
	benchDirs = append(benchDirs, dir)
	out := filepath.Join(dir, "compile")
	cmd := exec.Command("go", "build", "-o", out, "cmd/compile")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build cmd/compile: %w\n%s", err, msg)
	}
	return out, nil
})

// benchDirs are removed by TestMain.
var benchDirs []string

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range benchDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

func benchPath(b *testing.B) string {
	b.Helper()
	needTool(b, "go")
	path, err := bigBinary()
	if err != nil {
		b.Skipf("build cmd/compile: %v", err)
	}
	return path
}

func BenchmarkOpen(b *testing.B) {
	path := benchPath(b)
	b.ReportAllocs()
	var funcs int
	for b.Loop() {
		f, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		funcs = len(f.Funcs)
		f.Close()
	}
	b.ReportMetric(float64(funcs), "funcs")
}

func BenchmarkLines(b *testing.B) {
	path := benchPath(b)
	f, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.ReportAllocs()
	var rows int
	for b.Loop() {
		r, err := f.Lines()
		if err != nil {
			b.Fatal(err)
		}
		rows = len(r)
	}
	b.ReportMetric(float64(rows), "rows")
}
