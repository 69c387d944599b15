package datafile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// writeString is a writer of WriteFileAtomic and WriteOutput that writes s.
func writeString(s string) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := io.WriteString(w, s)
		return err
	}
}

// withUmask runs f with the process's umask set to mask. (No test of the
// package runs in parallel: the umask is the process's.)
func withUmask(t *testing.T, mask int, f func()) {
	t.Helper()
	old := syscall.Umask(mask)
	defer syscall.Umask(old)
	f()
}

// checkMode checks the permission bits of the file at path.
func checkMode(t *testing.T, path string, want fs.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != want {
		t.Errorf("%s: mode %v, want a regular file of %v", filepath.Base(path), fi.Mode(), want)
	}
}

// TestWriteFileUmask: a new file has mode 0666 less the umask, as cp and
// compilers make files; a file replaced keeps at most its mode, the
// umask narrowing it further. Every way a tool writes a file is held to
// it: the data files, a report (WriteOutput), the trace (CreateLive) and
// the /E file (OpenLog). Before, every file was 0644 whatever the umask,
// and a 0600 report became 0644.
func TestWriteFileUmask(t *testing.T) {
	writers := map[string]func(path string) error{
		"WriteFileAtomic": func(path string) error { return WriteFileAtomic(path, filePerm, writeString("x")) },
		"WriteOutput":     func(path string) error { return WriteOutput(path, filePerm, writeString("x")) },
		"CreateLive": func(path string) error {
			f, err := CreateLive(path, filePerm, true)
			if err == nil {
				err = f.Close()
			}
			return err
		},
		"OpenLog": func(path string) error {
			f, err := OpenLog(path, false, filePerm)
			if err == nil {
				err = f.Close()
			}
			return err
		},
	}
	tests := []struct {
		umask int
		old   fs.FileMode // 0: no file before
		want  fs.FileMode
	}{
		{0o077, 0, 0o600},
		{0o022, 0, 0o644},
		{0o002, 0, 0o664},
		{0o027, 0, 0o640},
		{0o022, 0o600, 0o600}, // never wider than the file replaced
		{0o022, 0o640, 0o640},
		{0o022, 0o666, 0o644}, // nor than the umask says
		{0o077, 0o644, 0o600},
		{0o002, 0o444, 0o444},
	}
	for name, write := range writers {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/%03o-%03o", name, tt.umask, tt.old), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "f")
				if tt.old != 0 {
					if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
						t.Fatal(err)
					}
					if err := os.Chmod(path, tt.old); err != nil {
						t.Fatal(err)
					}
				}
				withUmask(t, tt.umask, func() {
					if err := write(path); err != nil {
						t.Fatal(err)
					}
				})
				checkMode(t, path, tt.want)
			})
		}
	}
}

// TestWriteFileLinks: a symbolic link at a data file's name is replaced,
// its target left as it was, by every way a tool writes a file but
// OpenLog's append, which refuses it (ErrAppendLink). Before, the trace
// and the /E file were opened through it (O_CREAT and O_TRUNC): any file
// the user may write could be overwritten.
func TestWriteFileLinks(t *testing.T) {
	writers := map[string]func(path string) error{
		"WriteFileAtomic": func(path string) error { return WriteFileAtomic(path, filePerm, writeString("new")) },
		"WriteOutput":     func(path string) error { return WriteOutput(path, filePerm, writeString("new")) },
		"CreateLive": func(path string) error {
			f, err := CreateLive(path, filePerm, true)
			if err != nil {
				return err
			}
			_, err = f.WriteString("new")
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			return err
		},
		"OpenLog": func(path string) error {
			f, err := OpenLog(path, false, filePerm)
			if err != nil {
				return err
			}
			_, err = f.WriteString("new")
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			return err
		},
	}
	for name, write := range writers {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			victim := filepath.Join(dir, "victim")
			if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "prog.pbx")
			if err := os.Symlink(victim, path); err != nil {
				t.Fatal(err)
			}
			if err := write(path); err != nil {
				t.Fatal(err)
			}
			checkFile(t, victim, "precious")
			checkFile(t, path, "new")
			checkMode(t, path, 0o666&^currentUmask(t))
			checkDir(t, dir, "prog.pbx", "victim")
		})
	}
	t.Run("OpenLog-append", func(t *testing.T) {
		dir := t.TempDir()
		victim := filepath.Join(dir, "victim")
		if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "errs.txt")
		if err := os.Symlink(victim, path); err != nil {
			t.Fatal(err)
		}
		if f, err := OpenLog(path, true, filePerm); !errors.Is(err, ErrAppendLink) {
			if f != nil {
				f.Close()
			}
			t.Errorf("append through a link: error %v, want ErrAppendLink", err)
		}
		checkFile(t, victim, "precious")
		if fi, err := os.Lstat(path); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("the link: %v, %v", fi, err)
		}
	})
}

// currentUmask returns the process's umask.
func currentUmask(t *testing.T) fs.FileMode {
	t.Helper()
	m := syscall.Umask(0)
	syscall.Umask(m)
	return fs.FileMode(m)
}

// TestNotReplaced: what is not a regular file, at a data file's name or
// at the end of a link there, is never replaced: a FIFO, a device, a
// directory, /dev/stdout. The data file's write fails, naming what is
// there; the thing stays.
func TestNotReplaced(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("fifo", filepath.Join(dir, "tofifo")); err != nil {
		t.Fatal(err)
	}
	// (Nothing outside dir: a test that fails as root must not replace
	// the system's /dev/null or /dev/stdout.)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	fd := fmt.Sprintf("/proc/self/fd/%d", w.Fd())
	if err := os.Symlink(fd, filepath.Join(dir, "stdout")); err != nil { // as /dev/stdout is
		t.Fatal(err)
	}
	want := []string{"d", "fifo", "stdout", "tofifo"}
	tests := []struct {
		name, want string
	}{
		{"fifo", "is a FIFO, not a regular file"},
		{"tofifo", "is a FIFO, not a regular file"},
		{"d", "is a directory"},
		{"stdout", "is an open file named through /proc, not a regular file"},
		{fd, "is an open file named through /proc, not a regular file"},
	}
	// The node of /dev/null (1, 3), which only root may make.
	if err := syscall.Mknod(filepath.Join(dir, "null"), syscall.S_IFCHR|0o666, 1<<8|3); err == nil {
		tests = append(tests, struct{ name, want string }{"null", "is a character device, not a regular file"})
		want = append(want, "null")
		slices.Sort(want)
	}
	for _, tt := range tests {
		path := tt.name
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		before, _ := os.Lstat(path)
		var nr *NotRegularError
		err := WriteFileAtomic(path, filePerm, writeString("x"))
		if !errors.As(err, &nr) || err.Error() != "write "+path+": "+tt.want {
			t.Errorf("WriteFileAtomic %s: error %v, want %q", tt.name, err, tt.want)
		}
		if err := Replaceable(path); !errors.As(err, &nr) {
			t.Errorf("Replaceable %s: %v", tt.name, err)
		}
		if f, err := CreateLive(path, filePerm, false); !errors.As(err, &nr) {
			if f != nil {
				f.Close()
			}
			t.Errorf("CreateLive %s: %v", tt.name, err)
		}
		if after, err := os.Lstat(path); err != nil || !os.SameFile(before, after) || after.Mode() != before.Mode() {
			t.Errorf("%s was replaced: %v, %v", tt.name, after, err)
		}
	}
	checkDir(t, dir, want...)
}

// TestWriteOutputInPlace: a report written to what is not a regular file
// is written into it, never replacing it: a FIFO (or a link to one), a
// device node, the tool's own descriptors through /proc (/dev/stdout is a
// link to /proc/self/fd/1), their offset and append mode kept. Before,
// the FIFO and the device node were replaced by regular files, and
// /dev/stdout could not be written by a user who may not write /dev.
func TestWriteOutputInPlace(t *testing.T) {
	dir := t.TempDir()
	t.Run("fifo", func(t *testing.T) {
		fifo := filepath.Join(dir, "fifo")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("fifo", filepath.Join(dir, "tofifo")); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"fifo", "tofifo"} {
			read := fifoReader(t, fifo)
			if err := WriteOutput(filepath.Join(dir, name), filePerm, writeString("report of "+name)); err != nil {
				t.Fatal(err)
			}
			if s := read(); s != "report of "+name {
				t.Errorf("%s: the reader got %q", name, s)
			}
		}
		if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
			t.Errorf("the FIFO is now %v (%v)", fi.Mode(), err)
		}
	})
	t.Run("device", func(t *testing.T) {
		null := filepath.Join(dir, "null")
		// The node of /dev/null (1, 3): only root may make one.
		if err := syscall.Mknod(null, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
			t.Skipf("mknod: %v (as root only)", err)
		}
		if err := WriteOutput(null, filePerm, writeString("discarded")); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Lstat(null); err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
			t.Errorf("the device is now %v (%v)", fi.Mode(), err)
		}
	})
	t.Run("own descriptors", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		defer w.Close()
		link := filepath.Join(dir, "stdout") // as /dev/stdout is
		if err := os.Symlink(fmt.Sprintf("/proc/self/fd/%d", w.Fd()), link); err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{fmt.Sprintf("/proc/self/fd/%d", w.Fd()), fmt.Sprintf("/dev/fd/%d", w.Fd()), link} {
			if err := WriteOutput(path, filePerm, writeString(path+"\n")); err != nil {
				t.Fatal(err)
			}
			b := make([]byte, 100)
			n, _ := r.Read(b)
			if string(b[:n]) != path+"\n" {
				t.Errorf("%s: the pipe got %q", path, b[:n])
			}
		}
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("the link is now %v (%v)", fi.Mode(), err)
		}
		// A regular file open for appending (plist -o /dev/stdout >> log):
		// appended to, the same file.
		log := filepath.Join(dir, "log")
		if err := os.WriteFile(log, []byte("head\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		before, _ := os.Stat(log)
		if err := WriteOutput(fmt.Sprintf("/dev/fd/%d", f.Fd()), filePerm, writeString("report\n")); err != nil {
			t.Fatal(err)
		}
		checkFile(t, log, "head\nreport\n")
		if after, _ := os.Stat(log); !os.SameFile(before, after) {
			t.Error("the log was replaced")
		}
	})
	t.Run("regular", func(t *testing.T) {
		// A regular file is still replaced whole.
		path := filepath.Join(dir, "report.txt")
		if err := os.WriteFile(path, []byte("old report"), 0o600); err != nil {
			t.Fatal(err)
		}
		before, _ := os.Stat(path)
		if err := WriteOutput(path, filePerm, writeString("new")); err != nil {
			t.Fatal(err)
		}
		checkFile(t, path, "new")
		if after, _ := os.Stat(path); os.SameFile(before, after) {
			t.Error("the report was written in place, not replaced")
		}
	})
}

// TestCreateLive: the file written as a run goes has its name at once,
// before it is closed, so that what is written survives the writer; with
// the lock, a second writer of the same name gets ErrBusy and leaves the
// first one's file as it is, until the first is done.
func TestCreateLive(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "prog.pbx")
	if err := os.WriteFile(path, []byte("last run's trace"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := CreateLive(path, filePerm, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("first"); err != nil {
		t.Fatal(err)
	}
	checkFile(t, path, "first") // written, not yet closed
	checkDir(t, dir, "prog.pbx")
	g, err := CreateLive(path, filePerm, true)
	if !errors.Is(err, ErrBusy) {
		if g != nil {
			g.Close()
		}
		t.Fatalf("a second writer: %v, want ErrBusy", err)
	}
	if _, err := f.WriteString(" run"); err != nil {
		t.Fatal(err)
	}
	checkFile(t, path, "first run")
	checkDir(t, dir, "prog.pbx")
	f.Close()
	g, err = CreateLive(path, filePerm, true)
	if err != nil {
		t.Fatalf("after the first: %v", err)
	}
	g.Close()
	checkFile(t, path, "")
}

// TestOpenLog: PROFILE's /E file is a new file, replacing what was
// there; with /A the same file, appended to, its mode kept; a terminal
// or a FIFO is written in place.
func TestOpenLog(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "errs.txt")
	if err := os.WriteFile(path, []byte("one\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(path)
	f, err := OpenLog(path, true, filePerm)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("two\n")
	f.Close()
	checkFile(t, path, "one\ntwo\n")
	checkMode(t, path, 0o600)
	if after, _ := os.Stat(path); !os.SameFile(before, after) {
		t.Error("/A replaced the file")
	}
	f, err = OpenLog(path, false, filePerm)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("three\n")
	checkFile(t, path, "three\n")
	f.Close()
	checkMode(t, path, 0o600)
	// Appending to a file that is not there makes it.
	f, err = OpenLog(filepath.Join(dir, "new.txt"), true, filePerm)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	checkFile(t, filepath.Join(dir, "new.txt"), "")

	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, appendTo := range []bool{false, true} {
		read := fifoReader(t, fifo)
		f, err := OpenLog(fifo, appendTo, filePerm)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("logged\n")
		f.Close()
		if s := read(); s != "logged\n" {
			t.Errorf("append %v: the FIFO's reader got %q", appendTo, s)
		}
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("the FIFO is now %v (%v)", fi.Mode(), err)
	}
}

// fifoReader opens the FIFO at path for reading, without waiting for a
// writer, and returns the function that reads what was written, once
// the writer is done: nothing, and no wait, when no writer came (the
// FIFO was replaced).
func fifoReader(t *testing.T, path string) func() string {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	return func() string {
		defer f.Close()
		b, _ := io.ReadAll(f)
		return string(b)
	}
}
