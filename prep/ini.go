package prep

import (
	"bufio"
	"bytes"
	_ "embed" // the built-in profiler.ini
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sourceprofiler/sprof/internal/prf"
)

// builtinProfilerIni is the profiler.ini PREP uses when none sits beside its
// executable.
//
//go:embed profiler.ini
var builtinProfilerIni []byte

// Limits of ReadIni: an ini file is a short list written by hand.
const (
	maxIniSize = 1 << 20
	maxIniLine = 4096
)

// ReadIni reads the selections of a profiler.ini or tools.ini: the
// "exclude:SPEC" and "include:SPEC" lines of its [profiler] section, in
// order. Section names and the two keywords are case-insensitive; SPEC is
// the rest of the line with surrounding blanks removed. Blank lines and
// lines starting with ";" or "#" are comments; other sections are ignored;
// CR LF line ends and a UTF-8 byte order mark are accepted. Name is the
// file's name for error messages. A line of the [profiler] section that is
// neither a directive nor a comment, a line longer than 4096 bytes, a file
// over 1 MiB (PRF1648) and a malformed SPEC (PRF1422) are errors.
func ReadIni(r io.Reader, name string) ([]Spec, error) {
	specs, err := readIni(r)
	switch {
	case err == nil:
		return specs, nil
	case prf.Code(err) != 0:
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return nil, prf.BadIni(name, err)
}

// readIni is ReadIni with errors that do not name the file.
func readIni(r io.Reader) ([]Spec, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxIniSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxIniSize {
		return nil, fmt.Errorf("larger than %d bytes", maxIniSize)
	}
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 256), maxIniLine)
	var specs []Spec
	inProfiler := false
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == ';' || line[0] == '#' {
			continue
		}
		if line[0] == '[' {
			section, ok := strings.CutSuffix(line[1:], "]")
			if !ok {
				return nil, fmt.Errorf("line %d: unclosed section header %q", n, line)
			}
			inProfiler = strings.EqualFold(strings.TrimSpace(section), "profiler")
			continue
		}
		if !inProfiler {
			continue
		}
		spec, err := parseDirective(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		specs = append(specs, spec)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("line longer than %d bytes", maxIniLine)
		}
		return nil, err
	}
	return specs, nil
}

// parseDirective parses one "exclude:SPEC" or "include:SPEC" line and checks
// the SPEC's syntax.
func parseDirective(line string) (Spec, error) {
	key, text, ok := strings.Cut(line, ":")
	var spec Spec
	switch k := strings.TrimSpace(key); {
	case ok && strings.EqualFold(k, "exclude"):
		spec.Op = Exclude
	case ok && strings.EqualFold(k, "include"):
		spec.Op = Include
	default:
		return spec, fmt.Errorf("%q is not an include: or exclude: directive", line)
	}
	spec.Text = strings.TrimSpace(text)
	if _, err := parseSpec(spec); err != nil {
		return spec, err
	}
	return spec, nil
}

// DefaultSpecs returns the default selections, to be applied before the
// command line's: those of profiler.ini, read from prepBinaryDir or
// ../share/sprof beside it (readProfilerIni) or, when there is none, the
// built-in copy; then those of tools.ini, read from
// the directory named by $INIT or, when INIT is unset or empty, from cwd.
// On Linux the name is tools.ini, or TOOLS.INI when only that exists.
//
// A missing profiler.ini, and a missing tools.ini in cwd, are not reported;
// INIT naming a directory without tools.ini gives warning PRF1011 "cannot
// open file" through warn, as the original did. A file that exists but
// cannot be read, or is malformed, is an error. The specifications of
// profiler.ini have Default set.
func DefaultSpecs(prepBinaryDir string, getenv func(string) string, cwd string, warn func(*prf.Diagnostic)) ([]Spec, error) {
	specs, err := readProfilerIni(prepBinaryDir)
	if err != nil {
		return nil, err
	}
	for i := range specs {
		specs[i].Default = true
	}
	dir, quiet := getenv("INIT"), true
	if dir != "" {
		quiet = false
	} else {
		dir = cwd
	}
	tools, err := readToolsIni(dir, quiet, warn)
	if err != nil {
		return nil, err
	}
	return append(specs, tools...), nil
}

// readProfilerIni reads profiler.ini from dir, PREP's own directory (the
// build's bin/), else from ../share/sprof beside it (where make install
// puts it: /usr/local/bin/prep reads /usr/local/share/sprof/profiler.ini),
// else the built-in copy.
func readProfilerIni(dir string) ([]Spec, error) {
	if dir != "" {
		for _, p := range ProfilerIniPaths(dir) {
			specs, err := readIniFile(p)
			if !errors.Is(err, fs.ErrNotExist) {
				return specs, err
			}
		}
	}
	return ReadIni(bytes.NewReader(builtinProfilerIni), "built-in profiler.ini")
}

// ProfilerIniPaths are where PREP, installed in dir, looks for
// profiler.ini, in order.
func ProfilerIniPaths(dir string) []string {
	return []string{
		filepath.Join(dir, "profiler.ini"),
		filepath.Join(filepath.Dir(dir), "share", "sprof", "profiler.ini"),
	}
}

// readToolsIni reads tools.ini (or TOOLS.INI) from dir. When neither exists
// it warns with PRF1011 unless quiet.
func readToolsIni(dir string, quiet bool, warn func(*prf.Diagnostic)) ([]Spec, error) {
	lower := filepath.Join(dir, "tools.ini")
	for _, name := range []string{lower, filepath.Join(dir, "TOOLS.INI")} {
		specs, err := readIniFile(name)
		if !errors.Is(err, fs.ErrNotExist) {
			return specs, err
		}
	}
	if !quiet {
		abs, err := filepath.Abs(lower)
		if err != nil {
			abs = lower
		}
		warn(prf.ToolsIniMissing(abs))
	}
	return nil, nil
}

// readIniFile reads an ini file; a missing file gives an error satisfying
// errors.Is(err, fs.ErrNotExist), any other failure to open it PRF1011.
func readIniFile(name string) ([]Spec, error) {
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err != nil {
		return nil, prf.CannotOpen(name, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, prf.CannotOpen(name, errors.New("is a directory"))
	}
	return ReadIni(f, name)
}
