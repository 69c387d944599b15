package dwarf

import (
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// splitDebug builds prog.c and splits it as distributions do: prog.debug
// keeps the DWARF (objcopy --only-keep-debug), prog is stripped; with link,
// prog gets a .gnu_debuglink to prog.debug. It returns the directory, the
// stripped binary and the debug file, and the functions of the unstripped
// build.
func splitDebug(t *testing.T, link bool, flags ...string) (dir, bin, debug string, want *File) {
	t.Helper()
	objcopy := needTool(t, "objcopy")
	strip := needTool(t, "strip")
	dir, full := buildC(t, "gcc", "prog.c", "prog-full", flags...)
	want = open(t, full)
	bin = filepath.Join(dir, "prog")
	debug = filepath.Join(dir, "prog.debug")
	run(t, dir, nil, objcopy, "--only-keep-debug", full, debug)
	run(t, dir, nil, strip, "--strip-debug", "-o", bin, full)
	if link {
		run(t, dir, nil, objcopy, "--add-gnu-debuglink=prog.debug", bin)
	}
	return dir, bin, debug, want
}

// checkSameFuncs checks that the functions read through a debug file are
// those of the unstripped binary, Source and declaration included.
func checkSameFuncs(t *testing.T, got, want *File) {
	t.Helper()
	if len(got.Funcs) != len(want.Funcs) {
		t.Fatalf("%d functions, want %d", len(got.Funcs), len(want.Funcs))
	}
	for i, fn := range got.Funcs {
		w := want.Funcs[i]
		if fn.Name != w.Name || fn.Entry != w.Entry || fn.Source != w.Source && fn.Unit >= 0 || fn.DeclLine != w.DeclLine || fn.Unit != w.Unit {
			t.Errorf("function %d: %+v, want %+v", i, fn, w)
		}
	}
	if len(got.Units) != len(want.Units) {
		t.Errorf("%d units, want %d", len(got.Units), len(want.Units))
	}
}

// move renames from to to, creating to's directory.
func move(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

func TestDebugLink(t *testing.T) {
	tests := []struct {
		name string
		// place moves the debug file where the test wants it and returns
		// its new path.
		place func(t *testing.T, root, dir, debug string) string
	}{
		{"beside", func(t *testing.T, root, dir, debug string) string { return debug }},
		{".debug", func(t *testing.T, root, dir, debug string) string {
			to := filepath.Join(dir, ".debug", "prog.debug")
			move(t, debug, to)
			return to
		}},
		{"root", func(t *testing.T, root, dir, debug string) string {
			to := filepath.Join(root, absDir(filepath.Join(dir, "prog")), "prog.debug")
			move(t, debug, to)
			return to
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := noDebugDirs(t)
			dir, bin, debug, want := splitDebug(t, true, "-O0")
			at := tt.place(t, root, dir, debug)
			f := open(t, bin)
			if !f.HasDWARF || f.DebugFile != at || len(f.Warnings) > 0 {
				t.Fatalf("HasDWARF %v DebugFile %q warnings %q; want true, %q, none", f.HasDWARF, f.DebugFile, f.Warnings, at)
			}
			checkSameFuncs(t, f, want)
			// Code comes from the binary: in the debug file .text is NOBITS.
			main := funcNamed(t, f, "main")
			code, err := f.Code(main.Entry, 4)
			if err != nil {
				t.Fatalf("Code: %v", err)
			}
			if w := textBytes(t, bin, main.Entry, 4); string(code) != string(w) {
				t.Errorf("Code(main) = % x, want % x", code, w)
			}
			rows, err := f.Lines()
			if err != nil || len(rows) == 0 {
				t.Errorf("Lines: %d rows, %v", len(rows), err)
			}
		})
	}
}

func TestDebugLinkWrongCRC(t *testing.T) {
	noDebugDirs(t)
	_, bin, debug, _ := splitDebug(t, true, "-O0")
	// Appending a byte keeps the debug file a valid ELF file but changes
	// its CRC: it is another build's debug file as far as the link knows.
	fh, err := os.OpenFile(debug, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.Write([]byte{0}); err != nil {
		t.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
	f := open(t, bin)
	if f.HasDWARF || f.DebugFile != "" {
		t.Errorf("HasDWARF %v DebugFile %q; want false, \"\"", f.HasDWARF, f.DebugFile)
	}
	if len(f.Warnings) != 1 || !strings.Contains(f.Warnings[0], "CRC") {
		t.Errorf("warnings %q, want one about the CRC", f.Warnings)
	}
	checkNM(t, f, nmFuncs(t, bin, false))
}

func TestBuildIDLookup(t *testing.T) {
	root := noDebugDirs(t)
	_, bin, debug, want := splitDebug(t, false, "-O2")
	id := hex.EncodeToString(want.BuildID)
	at := filepath.Join(root, ".build-id", id[:2], id[2:]+".debug")
	move(t, debug, at)
	f := open(t, bin)
	if !f.HasDWARF || f.DebugFile != at {
		t.Fatalf("HasDWARF %v DebugFile %q warnings %q; want true, %q", f.HasDWARF, f.DebugFile, f.Warnings, at)
	}
	checkSameFuncs(t, f, want)
}

func TestOpenWithDebug(t *testing.T) {
	noDebugDirs(t)
	_, bin, debug, want := splitDebug(t, false, "-O0")
	f, err := OpenWithDebug(bin, debug)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !f.HasDWARF || f.DebugFile != debug {
		t.Fatalf("HasDWARF %v DebugFile %q; want true, %q", f.HasDWARF, f.DebugFile, debug)
	}
	checkSameFuncs(t, f, want)

	// The debug file of another build is refused by its build ID.
	_, _, otherDebug, _ := splitDebug(t, false, "-O2")
	if f, err := OpenWithDebug(bin, otherDebug); err == nil || !strings.Contains(err.Error(), "build ID") {
		t.Errorf("OpenWithDebug with another build's debug file: %v, want a build ID error", err)
		if f != nil {
			f.Close()
		}
	}
	// A debug file without DWARF is refused.
	if f, err := OpenWithDebug(bin, bin); !errors.Is(err, ErrNoDWARF) {
		t.Errorf("OpenWithDebug with a stripped debug file: %v, want ErrNoDWARF", err)
		if f != nil {
			f.Close()
		}
	}
}
