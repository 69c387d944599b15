package cli

import (
	"errors"
	"io"
	"os"
	"strings"

	"github.com/sourceprofiler/sprof/internal/prf"
)

// Limits of response files.
const (
	// maxNesting is how deep response files may nest (original.md §2.4):
	// a file named on the command line is level 1.
	maxNesting = 8
	// maxResponseBytes bounds the bytes read from all response files of one
	// command line together; a file read twice counts twice. Without it
	// eight files each naming the next a thousand times would expand to
	// 10^21 arguments.
	maxResponseBytes = 4 << 20
)

// errResponseTooLarge is the cause of PRF1011 when response files exceed
// maxResponseBytes.
var errResponseTooLarge = errors.New("response files exceed 4 MiB in total")

// readFunc reads a response file of at most limit bytes; a larger file gives
// errResponseTooLarge.
type readFunc func(name string, limit int) ([]byte, error)

// readFile reads a response file from the file system, never more than
// limit+1 bytes (a response file may be a FIFO or /dev/zero). A name typed
// in another case than on disk is found as [FindFile] finds it.
func readFile(name string, limit int) ([]byte, error) {
	f, err := os.Open(FindFile(name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(data) > limit {
		return nil, errResponseTooLarge
	}
	return data, nil
}

// tokenStream yields the tokens of a command line left to right: the tool's
// environment variable, then the arguments, with @file response files
// expanded when they are reached, so that diagnostics come in command-line
// order.
type tokenStream struct {
	// frames holds the unread tokens of each open level: frames[0] is the
	// environment variable and the arguments, frames[i] a response file
	// opened at level i.
	frames [][]string
	read   readFunc
	budget int // bytes of response files that may still be read
}

func newTokenStream(args []string, env string, read readFunc) *tokenStream {
	base := append(strings.Fields(env), args...)
	return &tokenStream{frames: [][]string{base}, read: read, budget: maxResponseBytes}
}

// nextRaw returns the next token as it is, without expanding response
// files; ok is false at the end.
func (s *tokenStream) nextRaw() (tok string, ok bool) {
	for len(s.frames) > 0 {
		top := len(s.frames) - 1
		if len(s.frames[top]) > 0 {
			tok = s.frames[top][0]
			s.frames[top] = s.frames[top][1:]
			return tok, true
		}
		s.frames = s.frames[:top]
	}
	return "", false
}

// next returns the next token, expanding response files; ok is false at the
// end.
func (s *tokenStream) next() (tok string, ok bool, err error) {
	for {
		tok, ok = s.nextRaw()
		if !ok || !strings.HasPrefix(tok, "@") {
			return tok, ok, nil
		}
		if err := s.open(tok[1:]); err != nil {
			return "", false, err
		}
	}
}

// rest returns every remaining token as it is: PROFILE's program arguments.
func (s *tokenStream) rest() []string {
	var out []string
	for {
		tok, ok := s.nextRaw()
		if !ok {
			return out
		}
		out = append(out, tok)
	}
}

// open pushes the tokens of response file name. The @ token was read from
// the top frame, so the file's level is the number of open frames.
func (s *tokenStream) open(name string) error {
	if name == "" {
		return prf.MissingResponseFile()
	}
	if len(s.frames) > maxNesting {
		return prf.NestedResponseFiles()
	}
	data, err := s.read(name, s.budget)
	if err != nil {
		return prf.CannotOpenResponseFile(name, err)
	}
	s.budget -= len(data)
	s.frames = append(s.frames, strings.Fields(string(data)))
	return nil
}
