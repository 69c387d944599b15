package dwarf

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	stddwarf "debug/dwarf"
)

// Lines returns the statement rows of the line tables of all units, sorted
// by address, one row per address: where several rows share an address
// (gcc 12 location views) the last statement row names the line, as gdb
// does. Rows outside every executable segment (sequences of functions the
// linker dropped) and rows of line 0 (no source line) are left out. Lines
// reads the tables on every call; callers keep the result.
func (f *File) Lines() ([]LineRow, error) {
	rows, err := f.StatementRows()
	if err != nil {
		return nil, err
	}
	out := rows[:0]
	for i, r := range rows {
		if i+1 < len(rows) && rows[i+1].Addr == r.Addr {
			continue
		}
		out = append(out, r)
	}
	return slices.Clip(out), nil
}

// StatementRows returns every statement row of the line tables of all
// units, sorted by address, the rows of one address in table order (gcc
// 12's location views give several: an inlined call's line and its
// callee's first line start at one address). Rows outside every
// executable segment and rows of line 0 are left out, as in Lines.
func (f *File) StatementRows() ([]LineRow, error) {
	return f.rows(false)
}

// Rows returns every row of the line tables of all units, statement rows
// ([LineRow.Stmt]) and the others, sorted by address, the rows of one
// address in table order, those outside every executable segment and of
// line 0 left out, as in StatementRows. Of the rows of one address the
// last names the instruction there, be it a statement row or not: the
// statement rows before it mark statements that have no instruction of
// their own there (location views).
func (f *File) Rows() ([]LineRow, error) {
	return f.rows(true)
}

// rows reads the rows of the line tables: every row with all, else the
// statement rows.
func (f *File) rows(all bool) (rows []LineRow, err error) {
	if f.impl == nil || f.impl.data == nil {
		return nil, fmt.Errorf("read lines of %s: %w", f.Path, ErrNoDWARF)
	}
	op := "read lines of " + f.Path
	if f.DebugFile != "" {
		op = "read lines of " + f.DebugFile
	}
	defer catch(&err, op)
	for i, cu := range f.impl.cus {
		rows, err = f.impl.unitLines(rows, cu, i, f.Units[i].CompDir, all)
		if err != nil {
			return nil, fmt.Errorf("%s: unit %q: %w", op, f.Units[i].Name, err)
		}
	}
	// A stable sort keeps the rows of one address in table order, so the
	// last of them is the one that names the line (Lines).
	slices.SortStableFunc(rows, func(a, b LineRow) int { return cmp.Compare(a.Addr, b.Addr) })
	return slices.Clip(rows), nil
}

// unitLines appends the statement rows of one unit's line table, whose
// compilation directory is compDir, or with all its every row.
func (x *file) unitLines(rows []LineRow, cu *stddwarf.Entry, unit int, compDir string, all bool) ([]LineRow, error) {
	lr, err := x.data.LineReader(cu)
	if err != nil || lr == nil {
		return rows, err
	}
	var e stddwarf.LineEntry
	// The names of one file, resolved once.
	var last *stddwarf.LineFile
	name := ""
	for {
		if err := lr.Next(&e); err != nil {
			if errors.Is(err, io.EOF) {
				return rows, nil
			}
			return rows, err
		}
		if e.EndSequence || (!e.IsStmt && !all) || e.Line <= 0 || !x.inExec(e.Address, e.Address+1) {
			continue
		}
		if e.File != last {
			last, name = e.File, ""
			if e.File != nil {
				name = inCompDir(e.File.Name, compDir)
			}
		}
		rows = append(rows, LineRow{Addr: e.Address, File: name, Line: e.Line, Unit: unit, Stmt: e.IsStmt})
	}
}

// inCompDir returns the name of a file of a unit's line table resolved
// against the unit's compilation directory compDir: relative names of
// DWARF 5 line tables are relative to it (DWARF 5 section 6.2.4: "each
// additional path entry is either a full path name or is relative to the
// current directory of the compilation"), and debug/dwarf joins a DWARF
// 5 file with its directory entry as it is. A unit compiled from another
// directory ("gcc -c ../src/parse.c") then names its files
// "../src/parse.c", which only the compilation directory resolves. A name
// stays as it is when the directory is not absolute itself (one made
// relative by -ffile-prefix-map says nothing of where it was).
func inCompDir(name, compDir string) string {
	if name == "" || filepath.IsAbs(name) || !filepath.IsAbs(compDir) {
		return name
	}
	return filepath.Join(compDir, name)
}
