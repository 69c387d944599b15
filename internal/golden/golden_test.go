package golden

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheck: a golden file equal to the output passes; one that differs
// fails naming the line; -update writes it, directories included.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "out.golden")
	saved := *Update
	defer func() { *Update = saved }()
	*Update = true
	Check(t, path, []byte("a\nb\n"))
	if b, err := os.ReadFile(path); err != nil || string(b) != "a\nb\n" {
		t.Fatalf("-update wrote %q, %v", b, err)
	}
	*Update = false
	Check(t, path, []byte("a\nb\n"))
	if d := Diff([]byte("a\nb\n"), []byte("a\nc\n")); !strings.Contains(d, "line 2") || strings.Contains(d, "line 1") {
		t.Errorf("diff %q, want line 2 only", d)
	}
}
