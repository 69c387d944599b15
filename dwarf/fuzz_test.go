package dwarf

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// FuzzOpen reads arbitrary bytes as an ELF file: it must return a File or
// an error, never panic, and the File's Lines, Rows, InlinedCalls and Code
// must not panic either.
func FuzzOpen(f *testing.F) {
	f.Add([]byte(nil))
	f.Add([]byte("\x7fELF"))
	f.Add(dwzFile())
	f.Add(hostileFile())
	f.Add(bombFile())
	// A real gcc binary when gcc is there: DWARF 5, line tables, symbols.
	if gcc, err := exec.LookPath("gcc"); err == nil {
		dir := f.TempDir()
		copySource(f, dir, "lines.c")
		out := filepath.Join(dir, "lines")
		if err := exec.Command(gcc, "-g", "-O1", "-o", out, filepath.Join(dir, "lines.c")).Run(); err == nil {
			if data, err := os.ReadFile(out); err == nil {
				f.Add(data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := newFile(bytes.NewReader(data), "fuzz", nil)
		if (file == nil) == (err == nil) {
			t.Fatalf("newFile = %v, %v: want exactly one of them", file, err)
		}
		if err != nil {
			return
		}
		file.Lines()
		file.Rows()
		file.InlinedCalls()
		for _, fn := range file.Funcs {
			file.Code(fn.Entry, 16)
		}
	})
}
