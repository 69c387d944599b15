package datafile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// filePerm is the mode of a new data file before the umask, as open(2)
// takes it: 0666 less the umask, as cp and compilers make their files.
const filePerm = 0o666

// WriteFileAtomic replaces the file at path with what write writes, so that
// path holds either its old content or the whole new one, never a part:
// write fills a buffered temporary file in the same directory, which is
// synced and renamed over path; the directory is synced last. On any error
// the temporary file is removed and path is left as it was.
//
// The new file's mode is perm less the umask, as open(2) and os.WriteFile
// make it (the kernel applies the umask, or the directory's default ACL),
// and never wider than the mode of the file it replaces: a 0600 file stays
// 0600. A symbolic link at path is replaced, not followed, unless it leads
// to what is not a regular file: that, and what is not a regular file at
// path itself (a device, a FIFO, a socket, a directory, an open file named
// through /proc as /dev/stdout is), is never replaced: the error is a
// [*NotRegularError].
func WriteFileAtomic(path string, perm os.FileMode, write func(io.Writer) error) error {
	old, err := replaced(path)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	f, err := createTemp(path, perm, old)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	renamed := false
	defer func() {
		if !renamed {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := fill(f, write); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	renamed = true
	if err := syncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// DirError is the error of a write that cannot make a file in its
// directory: one the user may not write, on a read-only file system, or
// one that does not exist. [WriteFileAtomic] returns one wrapped when it
// cannot create its temporary file, whose name it does not give.
type DirError struct {
	// Dir is the directory, absolute when it could be made so.
	Dir string
	// Err is the system's reason, without a path.
	Err error
}

// NewDirError returns the [*DirError] of directory dir for err, an error of
// creating a file in it.
func NewDirError(dir string, err error) *DirError {
	if abs, aerr := filepath.Abs(dir); aerr == nil {
		dir = abs
	}
	return &DirError{Dir: dir, Err: pathCause(err)}
}

func (e *DirError) Error() string {
	return fmt.Sprintf("directory %s cannot be written: %v", e.Dir, e.Err)
}

// Unwrap returns the cause.
func (e *DirError) Unwrap() error { return e.Err }

// maxTempName bounds the temporary file's name: NAME_MAX is 255 bytes on
// Linux file systems, and CreateTemp adds up to 20 digits to the pattern.
const maxTempName = 255 - 20

// tempPattern is the pattern of the temporary file that replaces base:
// ".base.tmp*", with base shortened so that the temporary name is never
// what fails (a name of 250 bytes has a temporary name of 265).
func tempPattern(base string) string {
	const extra = len("..tmp")
	if len(base)+extra > maxTempName {
		base = strings.ToValidUTF8(base[:maxTempName-extra], "")
	}
	return "." + base + ".tmp*"
}

// fill writes the temporary file f through a buffer, syncs and closes it.
func fill(f *os.File, write func(io.Writer) error) error {
	bw := bufio.NewWriterSize(f, 64<<10)
	if err := write(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return f.Close()
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// FileError is the error of the Open and Save functions: what was done to
// which file. Err is the cause: the system's error (without the path, which
// FileError says), or a reader's error wrapping [ErrSignature],
// [ErrVersion], [ErrKind], [ErrTruncated], [ErrChecksum] or a
// [*FormatError].
type FileError struct {
	Op   Op
	Path string
	// Kind is the kind of file expected (read) or written.
	Kind Kind
	Err  error
}

// Op is what a [FileError] was doing.
type Op string

// The operations of a [FileError].
const (
	OpOpen  Op = "open"  // the file could not be opened
	OpRead  Op = "read"  // it was opened but is not a valid file of its kind
	OpWrite Op = "write" // it could not be written
)

func (e *FileError) Error() string {
	return fmt.Sprintf("%s %s: %v", e.Op, e.Path, e.Err)
}

// Unwrap returns the cause.
func (e *FileError) Unwrap() error { return e.Err }

// OpenPlan reads the .pbi at path. Its errors are [*FileError]s.
func OpenPlan(path string) (*Plan, error) {
	v, err := openFile(path, KindPlan)
	if err != nil {
		return nil, err
	}
	return v.(*Plan), nil
}

// OpenCounts reads the .pbo at path. Its errors are [*FileError]s.
func OpenCounts(path string) (*Counts, error) {
	v, err := openFile(path, KindCounts)
	if err != nil {
		return nil, err
	}
	return v.(*Counts), nil
}

// OpenMerged reads the .pbt at path. Its errors are [*FileError]s.
func OpenMerged(path string) (*Merged, error) {
	v, err := openFile(path, KindMerged)
	if err != nil {
		return nil, err
	}
	return v.(*Merged), nil
}

// OpenAny reads a data file of any kind at path and returns a *Plan,
// *Counts or *Merged. Its errors are [*FileError]s.
func OpenAny(path string) (any, error) {
	return openFile(path, 0)
}

func openFile(path string, k Kind) (any, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &FileError{Op: OpOpen, Path: path, Kind: k, Err: pathCause(err)}
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, &FileError{Op: OpOpen, Path: path, Kind: k, Err: pathCause(err)}
	} else if fi.IsDir() {
		return nil, &FileError{Op: OpOpen, Path: path, Kind: k, Err: errors.New("is a directory")}
	}
	v, err := read(f, k)
	if err == nil {
		err = trailing(f, k)
	}
	if err != nil {
		return nil, &FileError{Op: OpRead, Path: path, Kind: k, Err: err}
	}
	return v, nil
}

// trailing refuses bytes after the end of the file's checksum.
func trailing(f *os.File, k Kind) error {
	var b [1]byte
	n, err := io.ReadFull(f, b[:])
	switch {
	case n > 0:
		off, err := f.Seek(0, io.SeekCurrent)
		if err != nil {
			off = 0 // not seekable: the offset is unknown
		}
		return fmt.Errorf("read %s: %w", k, &FormatError{Off: off - 1, Msg: "data after the checksum"})
	case err == io.EOF:
		return nil
	}
	return fmt.Errorf("read %s: %w", k, err)
}

// pathCause drops the *fs.PathError around an error, whose operation and
// path the FileError says.
func pathCause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// SavePlan writes p to path atomically ([WriteFileAtomic]). Its errors are
// [*FileError]s.
func SavePlan(path string, p *Plan) error {
	return save(path, KindPlan, p)
}

// SaveCounts writes c to path atomically. Its errors are [*FileError]s.
func SaveCounts(path string, c *Counts) error {
	return save(path, KindCounts, c)
}

// SaveMerged writes m to path atomically. Its errors are [*FileError]s.
func SaveMerged(path string, m *Merged) error {
	return save(path, KindMerged, m)
}

func save(path string, k Kind, v any) error {
	err := WriteFileAtomic(path, filePerm, func(w io.Writer) error { return write(w, v) })
	if err != nil {
		return &FileError{Op: OpWrite, Path: path, Kind: k, Err: err}
	}
	return nil
}
