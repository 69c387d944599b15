package datafile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sourceprofiler/sprof/internal/prf"
)

// The PRF numbers of the file helpers (original.md §12).
const (
	codeOpen         = 1011
	codeRead         = 1012
	codeWrite        = 1013
	codeSignature    = 1301
	codePlanVersion  = 1302
	codeTotalVersion = 1303
	codeConflict     = 1304
	codeNotSamePlan  = 1306
)

// filePerm is the mode of the files the Save helpers write.
const filePerm = 0o644

// WriteFileAtomic replaces the file at path with what write writes, so that
// path holds either its old content or the whole new one, never a part:
// write fills a buffered temporary file in the same directory, which is
// synced, given mode perm (as is, not filtered by the umask) and renamed
// over path; the directory is synced last. On any error the temporary file
// is removed and path is left as it was. A symbolic link at path is
// replaced, not followed.
func WriteFileAtomic(path string, perm os.FileMode, write func(io.Writer) error) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp*")
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
	if err := fill(f, perm, write); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	renamed = true
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// fill writes the temporary file f through a buffer, syncs and closes it.
func fill(f *os.File, perm os.FileMode, write func(io.Writer) error) error {
	bw := bufio.NewWriterSize(f, 64<<10)
	if err := write(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := f.Chmod(perm); err != nil {
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

// OpenPlan reads the .pbi at path. Its errors carry PRF numbers: PRF1011
// when the file cannot be opened, PRF1301 when it is not a profiler file,
// PRF1302 when it is of another version or kind, and PRF1012 when it is
// truncated, corrupted or malformed.
func OpenPlan(path string) (*Plan, error) {
	v, err := openFile(path, kindPlan)
	if err != nil {
		return nil, err
	}
	return v.(*Plan), nil
}

// OpenCounts reads the .pbo at path. Its errors are those of [OpenPlan] but
// that a file of another version or kind gives PRF1012, as the original has
// no version message for a .pbo; the cause says which it is.
func OpenCounts(path string) (*Counts, error) {
	v, err := openFile(path, kindCounts)
	if err != nil {
		return nil, err
	}
	return v.(*Counts), nil
}

// OpenMerged reads the .pbt at path. Its errors are those of [OpenPlan] but
// that a file of another version or kind gives PRF1303, as PLIST gives for
// a .pbo or a .pbi.
func OpenMerged(path string) (*Merged, error) {
	v, err := openFile(path, kindMerged)
	if err != nil {
		return nil, err
	}
	return v.(*Merged), nil
}

func openFile(path string, k kind) (any, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, prf.Wrap(pathCause(err), codeOpen, "cannot open file %s", path)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, prf.Wrap(pathCause(err), codeOpen, "cannot open file %s", path)
	} else if fi.IsDir() {
		return nil, prf.Wrap(errors.New("is a directory"), codeOpen, "cannot open file %s", path)
	}
	v, err := read(f, k)
	if err == nil {
		err = trailing(f, k)
	}
	if err != nil {
		return nil, readError(err, path, k)
	}
	return v, nil
}

// trailing refuses bytes after the end of the file's checksum.
func trailing(f *os.File, k kind) error {
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
// path the PRF message already says.
func pathCause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// readError gives a reader's error its PRF number.
func readError(err error, path string, k kind) error {
	switch {
	case errors.Is(err, ErrSignature):
		return prf.Wrap(err, codeSignature, "file %s has an incorrect (old) signature", path)
	case errors.Is(err, ErrVersion), errors.Is(err, ErrKind):
		switch k {
		case kindPlan:
			return prf.Wrap(err, codePlanVersion, "PBI file %s has an incorrect (old) version number", path)
		case kindMerged:
			return prf.Wrap(err, codeTotalVersion, "PBT file %s has an incorrect (old) version number", path)
		}
	}
	return prf.Wrap(err, codeRead, "cannot read expected number of bytes from file %s", path)
}

// SavePlan writes p to path atomically ([WriteFileAtomic]). Its errors
// carry PRF1013.
func SavePlan(path string, p *Plan) error {
	return save(path, p)
}

// SaveCounts writes c to path atomically. Its errors carry PRF1013.
func SaveCounts(path string, c *Counts) error {
	return save(path, c)
}

// SaveMerged writes m to path atomically. Its errors carry PRF1013.
func SaveMerged(path string, m *Merged) error {
	return save(path, m)
}

func save(path string, v any) error {
	err := WriteFileAtomic(path, filePerm, func(w io.Writer) error { return write(w, v) })
	if err != nil {
		return prf.Wrap(err, codeWrite, "cannot write expected number of bytes to file %s", path)
	}
	return nil
}

// MergeError gives an error of [Merged.Add] its PRF number, naming path, the
// .pbo or .pbt added: PRF1306 for [ErrNotSamePlan], PRF1304 for
// [ErrConflict]. Other errors are returned with the path; nil stays nil.
func MergeError(err error, path string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNotSamePlan):
		return prf.Wrap(err, codeNotSamePlan, "PBT or PBO file %s is not derived from same PBI file", path)
	case errors.Is(err, ErrConflict):
		return prf.Wrap(err, codeConflict, "PBT or PBO file %s conflicts with current profiling state", path)
	}
	return fmt.Errorf("merge %s: %w", path, err)
}
