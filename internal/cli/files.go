package cli

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
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

// InputName returns the data file that a name given for an input of kind
// ext (".pbt", ".pbo", ".pbi") means: the name itself when it ends in ext;
// else the name with ext added when that file exists, so that a program
// whose name has a dot reads the same files in the three tools (plist
// app.v2 lists app.v2.pbt, as prep /FC app.v2 wrote it); else the name
// itself when such a file exists (plist prog.pbo reads the .pbo, and says
// it is no .pbt, as the original did); else the name with ext added, which
// the error then names. Names typed in another case are found as
// [FindFile] finds them.
func InputName(name, ext string) string {
	if name == "" || strings.EqualFold(filepath.Ext(name), ext) {
		return FindFile(name)
	}
	withExt := FindFile(name + ext)
	if exists(withExt) {
		return withExt
	}
	if found := FindFile(name); exists(found) && filepath.Ext(filepath.Base(name)) != "" {
		return found
	}
	return withExt
}

func exists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}

// WithExt adds ext (".pbt") to a file name given for an output (/OT, /OI,
// /O) unless it already ends in a data file's extension: the original
// took any extension as given, but on Linux a program's or library's own
// name has dots (libfoo.so, app.v2), and /O libfoo.so must not write over
// the library.
func WithExt(name, ext string) string {
	switch strings.ToLower(filepath.Ext(filepath.Base(name))) {
	case ".pbi", ".pbo", ".pbt":
		return name
	}
	if name == "" {
		return name
	}
	return name + ext
}

// DataName returns the default data file of a program: its base name with
// ext, in the current directory (/usr/bin/gzip gives gzip.pbi).
func DataName(program, ext string) string {
	return filepath.Base(program) + ext
}

// RunFiles returns the .pbo files of the runs of base that exist: base.pbo,
// then base.pbo.2, base.pbo.3..., in that order. PROFILE writes a run to
// base.pbo.N when base.pbo holds a run not merged yet, so that runs at the
// same time, or one after the other without prep /M between them, are all
// kept (docs/linux.md, "Merging and concurrent runs"); prep /M base merges
// them all.
func RunFiles(base string) []string {
	var files []string
	if pbo := FindFile(base + ".pbo"); exists(pbo) {
		files = append(files, pbo)
	}
	numbered, _ := filepath.Glob(globEscape(base) + ".pbo.[0-9]*")
	type run struct {
		n    int
		name string
	}
	var runs []run
	for _, name := range numbered {
		n, err := strconv.Atoi(strings.TrimPrefix(name, base+".pbo."))
		if err == nil && n >= 2 {
			runs = append(runs, run{n, name})
		}
	}
	slices.SortFunc(runs, func(a, b run) int { return a.n - b.n })
	for _, r := range runs {
		files = append(files, r.name)
	}
	return files
}

// NextRunFile returns the first base.pbo.N, N from 2, that does not exist.
func NextRunFile(base string) string {
	for n := 2; ; n++ {
		if name := base + ".pbo." + strconv.Itoa(n); !exists(name) {
			return name
		}
	}
}

// globEscape quotes the characters filepath.Match takes as patterns.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
