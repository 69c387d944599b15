package datafile

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sourceprofiler/sprof/internal/prf"
)

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.pbt")
	writeString := func(s string) func(io.Writer) error {
		return func(w io.Writer) error {
			_, err := io.WriteString(w, s)
			return err
		}
	}
	if err := WriteFileAtomic(path, 0o640, writeString("first")); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(path, 0o600, writeString("second")); err != nil {
		t.Fatal(err)
	}
	checkFile(t, path, "second")
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v (%v), want 0600", fi.Mode(), err)
	}

	// A write that fails after more than the buffer's worth of bytes
	// leaves the old file as it was and no temporary file.
	errMidway := errors.New("failed midway")
	err := WriteFileAtomic(path, 0o600, func(w io.Writer) error {
		if _, err := w.Write(bytes.Repeat([]byte("x"), 1<<20)); err != nil {
			return err
		}
		return errMidway
	})
	if !errors.Is(err, errMidway) {
		t.Errorf("error %v, want %v", err, errMidway)
	}
	checkFile(t, path, "second")
	checkDir(t, dir, "x.pbt")

	// A panicking writer leaves no temporary file either.
	func() {
		defer func() { _ = recover() }()
		_ = WriteFileAtomic(path, 0o600, func(io.Writer) error { panic("boom") })
	}()
	checkFile(t, path, "second")
	checkDir(t, dir, "x.pbt")

	if err := WriteFileAtomic(filepath.Join(dir, "missing", "y"), 0o600, writeString("y")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("write into a missing directory: error %v", err)
	}
	// Renaming over a directory fails; the directory stays.
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(filepath.Join(dir, "d"), 0o600, writeString("d")); err == nil {
		t.Error("write over a directory: no error")
	}
	checkDir(t, dir, "d", "x.pbt")
}

func TestWriteFileAtomicRelative(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := WriteFileAtomic("rel.pbo", 0o644, func(w io.Writer) error {
		_, err := io.WriteString(w, "rel")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	checkFile(t, "rel.pbo", "rel")
}

func checkFile(t *testing.T, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || string(b) != want {
		t.Errorf("%s holds %q (%v), want %q", path, b, err, want)
	}
}

// checkDir checks that dir holds exactly the named entries.
func checkDir(t *testing.T, dir string, want ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("directory entries (-want +got):\n%s", d)
	}
}

func TestSaveOpen(t *testing.T) {
	dir := t.TempDir()
	plan, counts, merged := testPlan(LineCounting), testCounts(FuncTiming, true), testMerged(t, FuncTiming)
	pbi, pbo, pbt := filepath.Join(dir, "x.pbi"), filepath.Join(dir, "x.pbo"), filepath.Join(dir, "x.pbt")
	if err := SavePlan(pbi, plan); err != nil {
		t.Fatal(err)
	}
	if err := SaveCounts(pbo, counts); err != nil {
		t.Fatal(err)
	}
	if err := SaveMerged(pbt, merged); err != nil {
		t.Fatal(err)
	}
	p, err := OpenPlan(pbi)
	if err != nil {
		t.Fatal(err)
	}
	c, err := OpenCounts(pbo)
	if err != nil {
		t.Fatal(err)
	}
	m, err := OpenMerged(pbt)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{cmp.Diff(plan, p), cmp.Diff(counts, c), cmp.Diff(merged, m)} {
		if d != "" {
			t.Errorf("save and open differ (-want +got):\n%s", d)
		}
	}
}

func TestSaveErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.pbi")
	if err := SavePlan(path, testPlan(FuncCounting)); err != nil {
		t.Fatal(err)
	}
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bad := testPlan(FuncTiming)
	bad.StartIndex = 9
	err = SavePlan(path, bad)
	checkPRF(t, err, 1013, "cannot write expected number of bytes to file "+path+": ")
	if b, _ := os.ReadFile(path); !bytes.Equal(b, old) {
		t.Error("a failed save changed the file")
	}
	checkDir(t, dir, "x.pbi")

	err = SaveCounts(filepath.Join(dir, "no", "x.pbo"), testCounts(FuncCounting, false))
	checkPRF(t, err, 1013, "cannot write expected number of bytes to file "+filepath.Join(dir, "no", "x.pbo"))
	err = SaveMerged(filepath.Join(dir, "no", "x.pbt"), testMerged(t, FuncCounting))
	checkPRF(t, err, 1013, "cannot write expected number of bytes to file")
}

// TestOpenErrors checks the PRF number and message of every failure of the
// Open helpers (original.md §1.2 and §12).
func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	file := func(name string, b []byte) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	pbi := encode(t, testPlan(FuncCounting))
	pbo := encode(t, testCounts(FuncCounting, false))
	pbt := encode(t, testMerged(t, FuncCounting))
	future := bytes.Clone(pbt)
	future[10] = 2
	flipped := bytes.Clone(pbo)
	flipped[len(flipped)/2] ^= 0x20
	open := map[string]func(string) error{
		"plan":   func(p string) error { _, err := OpenPlan(p); return err },
		"counts": func(p string) error { _, err := OpenCounts(p); return err },
		"merged": func(p string) error { _, err := OpenMerged(p); return err },
	}
	tests := []struct {
		name  string
		path  string
		open  string
		code  int
		text  string // the message after the path
		cause error
	}{
		{"missing", filepath.Join(dir, "none.pbo"), "counts", 1011, ": no such file or directory", fs.ErrNotExist},
		{"directory", dir, "merged", 1011, ": is a directory", nil},
		{"empty", file("empty.pbo", nil), "counts", 1012, ": read counts (.pbo): file is truncated", ErrTruncated},
		{"truncated", file("cut.pbo", pbo[:len(pbo)-5]), "counts", 1012, ": read counts (.pbo): file is truncated", ErrTruncated},
		{"flipped", file("flip.pbo", flipped), "counts", 1012, ": read counts (.pbo): checksum mismatch", ErrChecksum},
		{"trailing", file("long.pbi", append(bytes.Clone(pbi), 0)), "plan", 1012, ": read plan (.pbi): malformed data at offset " + strconv.Itoa(len(pbi)) + ": data after the checksum", nil},
		{"exe as pbt", file("prog", []byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00")), "merged", 1301, " has an incorrect (old) signature", ErrSignature},
		{"c source as pbi", file("prog.c", []byte("int main(void) { return 0; }\n")), "plan", 1301, " has an incorrect (old) signature", ErrSignature},
		{"pbo as pbt", file("a.pbo", pbo), "merged", 1303, " has an incorrect (old) version number", ErrKind},
		{"pbi as pbt", file("a.pbi", pbi), "merged", 1303, " has an incorrect (old) version number", ErrKind},
		{"pbt as pbi", file("a.pbt", pbt), "plan", 1302, " has an incorrect (old) version number", ErrKind},
		{"future pbt", file("future.pbt", future), "merged", 1303, " has an incorrect (old) version number", ErrVersion},
		{"future pbt as pbi", file("future2.pbt", future), "plan", 1302, " has an incorrect (old) version number", ErrVersion},
		{"pbi as pbo", file("b.pbi", pbi), "counts", 1012, ": read counts (.pbo): wrong kind of data file: plan (.pbi), want counts (.pbo)", ErrKind},
		{"future pbo", file("future.pbo", future), "counts", 1012, ": read counts (.pbo): unsupported format version 2, want 1", ErrVersion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := open[tt.open](tt.path)
			prefix := map[int]string{
				1011: "cannot open file ",
				1012: "cannot read expected number of bytes from file ",
				1301: "file ",
				1302: "PBI file ",
				1303: "PBT file ",
			}[tt.code]
			checkPRF(t, err, tt.code, prefix+tt.path+tt.text)
			if tt.cause != nil && !errors.Is(err, tt.cause) {
				t.Errorf("error %v does not wrap %v", err, tt.cause)
			}
		})
	}
}

func TestOpenUnreadable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads files without read permission")
	}
	path := filepath.Join(t.TempDir(), "x.pbi")
	if err := os.WriteFile(path, encode(t, testPlan(FuncCounting)), 0o200); err != nil {
		t.Fatal(err)
	}
	_, err := OpenPlan(path)
	checkPRF(t, err, 1011, "cannot open file "+path+": permission denied")
}

// checkPRF checks err's PRF number and that its message begins with want.
func checkPRF(t *testing.T, err error, code int, want string) {
	t.Helper()
	if got := prf.Code(err); got != code {
		t.Errorf("PRF%04d, want PRF%04d: %v", got, code, err)
	}
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q, want it to begin with %q", err, want)
	}
}
