package dwarf_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/sourceprofiler/sprof/dwarf"
)

// ExampleOpen builds a C program with debugging information and reads
// it as PREP does: its functions, with the object module each comes
// from and where it is declared, and the line of its first row.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	prog := filepath.Join(dir, "prog")
	if out, err := exec.Command("cc", "-g", "-O0", "-o", prog, "testdata/prog.c").CombinedOutput(); err != nil {
		fmt.Println(err, string(out))
		return
	}
	f, err := dwarf.Open(prog)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	rows, err := f.Lines()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, fn := range f.Funcs {
		if fn.Unit < 0 {
			continue // (the C run-time's start-up code, from the symbol table)
		}
		first := 0
		for _, r := range rows {
			if r.Addr == fn.Entry {
				first = r.Line
				break
			}
		}
		fmt.Printf("%-13s %s, declared at %s:%d, first row at line %d\n",
			fn.Name, fn.Source, filepath.Base(fn.DeclFile), fn.DeclLine, first)
	}
	// Output:
	// square        prog.o, declared at prog.c:8, first row at line 9
	// twice         prog.o, declared at prog.c:13, first row at line 14
	// fact          prog.o, declared at prog.c:18, first row at line 19
	// never_called  prog.o, declared at prog.c:25, first row at line 26
	// accumulate    prog.o, declared at prog.c:30, first row at line 31
	// main          prog.o, declared at prog.c:40, first row at line 41
}
