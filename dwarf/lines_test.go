package dwarf

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// rowsIn returns the lines of the rows in [r.Low, r.High), in address order.
func rowsIn(rows []LineRow, r Range) []int {
	var lines []int
	for _, row := range rows {
		if r.Low <= row.Addr && row.Addr < r.High {
			lines = append(lines, row.Line)
		}
	}
	return lines
}

func TestLines(t *testing.T) {
	dir, path := buildC(t, "gcc", "lines.c", "lines", "-O0")
	f := open(t, path)
	rows, err := f.Lines()
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		if i > 0 && rows[i-1].Addr >= r.Addr {
			t.Fatalf("rows %d and %d out of order: %+v %+v", i-1, i, rows[i-1], r)
		}
		if r.File != filepath.Join(dir, "lines.c") || r.Unit != 0 {
			t.Fatalf("row %+v: want file %s, unit 0", r, filepath.Join(dir, "lines.c"))
		}
	}
	line := func(marker string) int { return markerLine(t, "lines.c", "L:"+marker+" ") }

	add := funcNamed(t, f, "add")
	want := []int{line("add"), line("add-sum"), line("add-return"), line("add-end")}
	if got := rowsIn(rows, add.Ranges[0]); !slices.Equal(got, want) {
		t.Errorf("rows of add: lines %v, want %v", got, want)
	}
	loop := funcNamed(t, f, "loop")
	got := rowsIn(rows, loop.Ranges[0])
	if len(got) == 0 || got[0] != line("loop") {
		t.Fatalf("rows of loop: lines %v, want %d first", got, line("loop"))
	}
	for _, m := range []string{"loop-init", "loop-for", "loop-body", "loop-return", "loop-end"} {
		if !slices.Contains(got, line(m)) {
			t.Errorf("rows of loop: lines %v, no %s (%d)", got, m, line(m))
		}
	}
}

// TestLinesOtherDirectory: a unit compiled from another directory (gcc -c
// ../src/lines.c, an out-of-tree build) names its files by their full
// paths, resolved against its compilation directory, in its rows and its
// declarations, with the line tables of DWARF 5 (whose directory entries
// debug/dwarf leaves relative) and of DWARF 4.
func TestLinesOtherDirectory(t *testing.T) {
	needTool(t, "gcc")
	for _, version := range []string{"-gdwarf-5", "-gdwarf-4"} {
		t.Run(version, func(t *testing.T) {
			dir := t.TempDir()
			src, build := filepath.Join(dir, "src"), filepath.Join(dir, "build")
			for _, d := range []string{src, build} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			copySource(t, src, "lines.c")
			run(t, build, nil, "gcc", version, "-O0", "-o", "lines", "../src/lines.c")
			f := open(t, filepath.Join(build, "lines"))
			rows, err := f.Lines()
			if err != nil {
				t.Fatal(err)
			}
			want := filepath.Join(src, "lines.c")
			if len(rows) == 0 {
				t.Fatal("no rows")
			}
			for _, r := range rows {
				if r.File != want {
					t.Fatalf("row %+v: want file %s", r, want)
				}
			}
			if add := funcNamed(t, f, "add"); add.DeclFile != want {
				t.Errorf("add is declared in %q, want %q", add.DeclFile, want)
			}
			if u := f.Units[0]; u.CompDir != build || u.Path != want {
				t.Errorf("unit compiled in %q from %q, want %q and %q", u.CompDir, u.Path, build, want)
			}
		})
	}
}

// TestLinesLastRowWins checks every address against objdump's decoded line
// table: where gcc 12 puts several statement rows at one address (location
// views), the last one names the line, as gdb says.
func TestLinesLastRowWins(t *testing.T) {
	objdump := needTool(t, "objdump")
	_, path := buildC(t, "gcc", "prog.c", "prog", "-O2")
	f := open(t, path)
	rows, err := f.Lines()
	if err != nil {
		t.Fatal(err)
	}
	want, shared := lastStmtRows(t, run(t, "", nil, objdump, "--dwarf=decodedline", path))
	exec := f.ExecRanges()
	for addr := range want {
		if !inRanges(exec, addr) {
			delete(want, addr)
		}
	}
	got := make(map[uint64]int)
	for _, r := range rows {
		got[r.Addr] = r.Line
	}
	if len(got) != len(want) {
		t.Errorf("%d addresses with rows, objdump has %d", len(got), len(want))
	}
	for addr, line := range want {
		if got[addr] != line {
			t.Errorf("line at %#x = %d, objdump's last statement row says %d", addr, got[addr], line)
		}
	}
	if shared == 0 {
		t.Skip("gcc put no two statement rows of different lines at one address")
	}
	t.Logf("%d addresses with statement rows of several lines", shared)
}

// lastStmtRows parses objdump --dwarf=decodedline: for every address, the
// line of its last statement row, and how many addresses have statement
// rows of different lines.
func lastStmtRows(t *testing.T, out string) (map[uint64]int, int) {
	t.Helper()
	last := make(map[uint64]int)
	lines := make(map[uint64]map[int]bool)
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		// "prog.c  35  0x1230  1  x": file, line, address, view, stmt.
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[2], "0x") || fields[len(fields)-1] != "x" {
			continue
		}
		line, err1 := strconv.Atoi(fields[1])
		addr, err2 := strconv.ParseUint(fields[2][2:], 16, 64)
		if err1 != nil || err2 != nil || line == 0 {
			continue
		}
		last[addr] = line
		if lines[addr] == nil {
			lines[addr] = make(map[int]bool)
		}
		lines[addr][line] = true
	}
	shared := 0
	for _, ls := range lines {
		if len(ls) > 1 {
			shared++
		}
	}
	if len(last) == 0 {
		t.Fatal("objdump printed no line rows")
	}
	return last, shared
}
