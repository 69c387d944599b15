package cli

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// LookPath finds a program as a shell would, except that a name without a
// slash that is a file in the current directory is taken from there
// (docs/design/linux.md), and that a name typed in another case than on
// disk is found as [FindFile] finds it. It returns an absolute path.
func LookPath(name string) (string, error) {
	if !strings.Contains(name, "/") {
		if st, err := os.Stat(FindFile(name)); err == nil && !st.IsDir() {
			return filepath.Abs(FindFile(name))
		}
	} else {
		name = FindFile(name)
	}
	p, err := exec.LookPath(name)
	if err != nil {
		var e *exec.Error
		if errors.As(err, &e) {
			return "", e.Err
		}
		return "", err
	}
	return filepath.Abs(p)
}

// FindFile returns name when a file of that name exists. Otherwise, when
// its directory holds exactly one entry whose name differs from name's last
// element only in case, it returns that entry, so that plist FCOUNT.PBT
// finds fcount.pbt as the original's users on Windows typed it. Otherwise
// it returns name, and opening it fails with the system's reason. Only the
// last element is matched this way; directories must be typed as they are.
func FindFile(name string) string {
	if _, err := os.Lstat(name); !errors.Is(err, fs.ErrNotExist) {
		return name
	}
	dir, base := filepath.Split(name)
	if base == "" {
		return name
	}
	list := dir
	if list == "" {
		list = "."
	}
	entries, err := os.ReadDir(list)
	if err != nil {
		return name
	}
	match := ""
	for _, e := range entries {
		if strings.EqualFold(e.Name(), base) {
			if match != "" {
				return name // ambiguous: FCOUNT.pbt and fcount.PBT
			}
			match = e.Name()
		}
	}
	if match == "" {
		return name
	}
	return dir + match
}

// WithExt adds ext (".pbt") to a file name that has none, as the original
// did for the names given to /IT, /IO, /OT, /I, /O and PLIST's input.
func WithExt(name, ext string) string {
	if name == "" || filepath.Ext(filepath.Base(name)) != "" {
		return name
	}
	return name + ext
}

// DataName returns the default data file of a program: its base name with
// ext, in the current directory (/usr/bin/gzip gives gzip.pbi).
func DataName(program, ext string) string {
	return filepath.Base(program) + ext
}
