package datafile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// LockDir takes an advisory exclusive lock (flock(2)) on the directory
// that holds the data file at path, waiting for it if another process holds
// it, and returns the function that releases it. The tools hold it around
// every read-modify-write of the data files of a directory (PREP /M, the
// write of PROFILE's .pbo), so that two of them at once both land: the
// files themselves are replaced by rename, so a lock on a file would be on
// a file that is gone.
//
// A file system that does not support flock on directories (some network
// file systems) gives no lock and no error: the write is still atomic, only
// concurrent merges may lose one another's runs there.
func LockDir(path string) (unlock func(), err error) {
	dir := filepath.Dir(path)
	d, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	for {
		err = syscall.Flock(int(d.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	switch {
	case err == nil:
	case errors.Is(err, syscall.ENOLCK), errors.Is(err, syscall.EOPNOTSUPP), errors.Is(err, syscall.EINVAL):
		d.Close()
		return func() {}, nil
	default:
		d.Close()
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return func() {
		syscall.Flock(int(d.Fd()), syscall.LOCK_UN)
		d.Close()
	}, nil
}
