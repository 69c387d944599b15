package cli

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/internal/prf"
)

// fakeFS returns a readFunc over in-memory response files, failing like the
// file system for a missing one.
func fakeFS(files map[string]string) readFunc {
	return func(name string, limit int) ([]byte, error) {
		data, ok := files[name]
		if !ok {
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		}
		if len(data) > limit {
			return nil, errResponseTooLarge
		}
		return []byte(data), nil
	}
}

// envOf returns an environment holding only the variable name=value.
func envOf(name, value string) func(string) string {
	return func(key string) string {
		if key == name {
			return value
		}
		return ""
	}
}

// recorder collects warnings formatted as the commands print them.
type recorder struct {
	tool  string
	lines []string
}

func (r *recorder) warn(err error) {
	r.lines = append(r.lines, prf.Format(r.tool, "warning", err))
}

// fatal formats a parse error as the commands print it.
func fatal(tool Tool, err error) string {
	return prf.Format(tool.Name, "fatal error", err)
}

// words splits a test command line on spaces; a case that needs empty
// tokens or spaces inside one lists its tokens itself.
func words(s string) []string {
	return strings.Fields(s)
}

// parseAny parses args with the tool's parser over files, returning the
// options, the warnings and the error.
func parseAny(t *testing.T, tool Tool, args []string, env string, files map[string]string) (any, []string, error) {
	t.Helper()
	rec := &recorder{tool: tool.Name}
	read := fakeFS(files)
	environ := envOf(tool.Env, env)
	var (
		opts any
		err  error
	)
	switch tool {
	case Prep:
		opts, err = parsePrep(args, environ, rec.warn, read)
	case Profile:
		opts, err = parseProfile(args, environ, rec.warn, read)
	case Plist:
		opts, err = parsePlist(args, environ, rec.warn, read)
	default:
		t.Fatalf("unknown tool %v", tool)
	}
	return opts, rec.lines, err
}
