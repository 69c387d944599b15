package cli

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// LookPath finds a program as a shell would, except that a name without a
// slash that is a file in the current directory is taken from there
// (linux.md). It returns an absolute path.
func LookPath(name string) (string, error) {
	if !strings.Contains(name, "/") {
		if st, err := os.Stat(name); err == nil && !st.IsDir() {
			return filepath.Abs(name)
		}
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
