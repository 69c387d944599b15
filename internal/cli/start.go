package cli

import (
	"fmt"
	"io"

	"github.com/sourceprofiler/sprof/internal/prf"
)

// Report writes one diagnostic line of the tool to w: "prep: warning
// PRF4106: ..." or "prep: fatal error PRF1011: ...".
func (t Tool) Report(w io.Writer, severity string, err error) {
	fmt.Fprintln(w, prf.Format(t.Name, severity, err))
}

// Start does what every command does after parsing its command line: the
// banner on stderr unless noLogo, the parse warnings, then the parse error
// (exit status 2 for a bad command line, 1 otherwise) or the help text on
// stdout (status 0). It returns done when the command has nothing more to
// do, with its exit status.
func (t Tool) Start(stdout, stderr io.Writer, noLogo bool, help Help, warnings []error, err error) (status int, done bool) {
	if !noLogo {
		io.WriteString(stderr, t.Banner())
	}
	for _, w := range warnings {
		t.Report(stderr, "warning", w)
	}
	switch {
	case err != nil:
		t.Report(stderr, "fatal error", err)
		if IsUsageError(err) {
			return 2, true
		}
		return 1, true
	case help != NoHelp:
		io.WriteString(stdout, t.HelpText(help))
		return 0, true
	}
	return 0, false
}

// Collect returns a warning callback for the Parse functions that appends
// to *warnings, so that Start can print them after the banner.
func Collect(warnings *[]error) func(error) {
	return func(err error) { *warnings = append(*warnings, err) }
}
