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
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
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

// TestWriteFileAtomicDirError writes where no file can be made: into a
// missing directory, under a file, into a directory without write
// permission. The error names the directory, made absolute, with the
// system's reason, and never the temporary file.
func TestWriteFileAtomicDirError(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile("file", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir("ro", 0o555); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path, dir string
		cause     error
	}{
		{"missing/x.pbo", filepath.Join(dir, "missing"), syscall.ENOENT},
		{"file/x.pbo", filepath.Join(dir, "file"), syscall.ENOTDIR},
		{"ro/x.pbo", filepath.Join(dir, "ro"), syscall.EACCES},
	}
	for _, tt := range tests {
		if tt.cause == syscall.EACCES && os.Geteuid() == 0 {
			continue // root writes there (e2e's TestUnwritableDirectory runs as nobody)
		}
		err := WriteFileAtomic(tt.path, 0o644, func(w io.Writer) error {
			_, err := io.WriteString(w, "x")
			return err
		})
		var de *DirError
		if !errors.As(err, &de) || de.Dir != tt.dir || !errors.Is(err, tt.cause) {
			t.Errorf("%s: error %v, want a *DirError of %s wrapping %v", tt.path, err, tt.dir, tt.cause)
			continue
		}
		want := "write " + tt.path + ": directory " + tt.dir + " cannot be written: " + tt.cause.Error()
		if err.Error() != want || strings.Contains(err.Error(), ".tmp") {
			t.Errorf("%s: error %q, want %q", tt.path, err, want)
		}
	}
	checkDir(t, dir, "file", "ro")
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

// TestWriteFileAtomicLongNames writes files whose names are up to the
// longest a Linux file system takes (255 bytes): the temporary file must
// never be what fails, whatever the name's length or characters.
func TestWriteFileAtomicLongNames(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{200, 236, 237, 244, 251, 255} {
		for _, r := range []string{"p", "é"} {
			name := strings.Repeat(r, n/len(r))
			if len(name) < n {
				name += strings.Repeat("x", n-len(name))
			}
			path := filepath.Join(dir, name)
			if err := WriteFileAtomic(path, 0o644, func(w io.Writer) error {
				_, err := io.WriteString(w, name)
				return err
			}); err != nil {
				t.Errorf("a %d-byte name: %v", len(name), err)
				continue
			}
			checkFile(t, path, name)
			os.Remove(path)
		}
	}
	checkDir(t, dir)
	// A name too long for the file system fails for itself, cleanly.
	path := filepath.Join(dir, strings.Repeat("p", 256))
	if err := WriteFileAtomic(path, 0o644, func(io.Writer) error { return nil }); !errors.Is(err, syscall.ENAMETOOLONG) {
		t.Errorf("a 256-byte name: %v, want ENAMETOOLONG", err)
	}
	checkDir(t, dir)
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
	checkFileError(t, err, OpWrite, "write "+path+": ")
	if b, _ := os.ReadFile(path); !bytes.Equal(b, old) {
		t.Error("a failed save changed the file")
	}
	checkDir(t, dir, "x.pbi")

	err = SaveCounts(filepath.Join(dir, "no", "x.pbo"), testCounts(FuncCounting, false))
	checkFileError(t, err, OpWrite, "write "+filepath.Join(dir, "no", "x.pbo"))
	err = SaveMerged(filepath.Join(dir, "no", "x.pbt"), testMerged(t, FuncCounting))
	checkFileError(t, err, OpWrite, "write ")
}

// TestOpenErrors checks the operation, cause and message of every failure
// of the Open helpers. Package prf gives them their PRF numbers.
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
	future[10] = Version + 1
	flipped := bytes.Clone(pbo)
	flipped[len(flipped)/2] ^= 0x20
	open := map[string]func(string) error{
		"plan":   func(p string) error { _, err := OpenPlan(p); return err },
		"counts": func(p string) error { _, err := OpenCounts(p); return err },
		"merged": func(p string) error { _, err := OpenMerged(p); return err },
		"any":    func(p string) error { _, err := OpenAny(p); return err },
	}
	next := strconv.Itoa(Version + 1)
	tests := []struct {
		name  string
		path  string
		open  string
		op    Op
		text  string // the message after the path
		cause error
	}{
		{"missing", filepath.Join(dir, "none.pbo"), "counts", OpOpen, ": no such file or directory", fs.ErrNotExist},
		{"directory", dir, "merged", OpOpen, ": is a directory", nil},
		{"empty", file("empty.pbo", nil), "counts", OpRead, ": read counts (.pbo): file is truncated", ErrTruncated},
		{"truncated", file("cut.pbo", pbo[:len(pbo)-5]), "counts", OpRead, ": read counts (.pbo): file is truncated", ErrTruncated},
		{"flipped", file("flip.pbo", flipped), "counts", OpRead, ": read counts (.pbo): checksum mismatch", ErrChecksum},
		{"trailing", file("long.pbi", append(bytes.Clone(pbi), 0)), "plan", OpRead, ": read plan (.pbi): malformed data at offset " + strconv.Itoa(len(pbi)) + ": data after the checksum", nil},
		{"exe as pbt", file("prog", []byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00")), "merged", OpRead, ": read merged profile (.pbt): not a profiler data file", ErrSignature},
		{"c source as pbi", file("prog.c", []byte("int main(void) { return 0; }\n")), "plan", OpRead, ": read plan (.pbi): not a profiler data file", ErrSignature},
		{"pbo as pbt", file("a.pbo", pbo), "merged", OpRead, ": read merged profile (.pbt): wrong kind of data file: counts (.pbo), want merged profile (.pbt)", ErrKind},
		{"pbt as pbi", file("a.pbt", pbt), "plan", OpRead, ": read plan (.pbi): wrong kind of data file", ErrKind},
		{"future pbt", file("future.pbt", future), "merged", OpRead, ": read merged profile (.pbt): unsupported format version " + next + ", want " + strconv.Itoa(MinVersion) + " to " + strconv.Itoa(Version), ErrVersion},
		{"future pbo", file("future.pbo", future), "counts", OpRead, ": read counts (.pbo): unsupported format version " + next, ErrVersion},
		{"any kind, not a data file", file("prog.sh", []byte("#!/bin/sh\n")), "any", OpRead, ": read data file: not a profiler data file", ErrSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := open[tt.open](tt.path)
			checkFileError(t, err, tt.op, string(tt.op)+" "+tt.path+tt.text)
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
	checkFileError(t, err, OpOpen, "open "+path+": permission denied")
}

// checkFileError checks that err is a *FileError of operation op whose
// message begins with want.
func checkFileError(t *testing.T, err error, op Op, want string) {
	t.Helper()
	var fe *FileError
	if !errors.As(err, &fe) || fe.Op != op {
		t.Errorf("error %#v, want a *FileError of operation %q", err, op)
	}
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q, want it to begin with %q", err, want)
	}
}
