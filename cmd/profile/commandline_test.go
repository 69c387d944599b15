package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestRecordedCommandLine: the command line of a run record is one line
// that a shell reads back as the words typed: a word with a control
// character is written $'...', with the character escaped (a newline in
// an argument wrote a line of its own into every report, where it could
// pass for records), a word with what the shell interprets in double
// quotes, the others as they are. bash reads each back, where it is
// installed.
func TestRecordedCommandLine(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"prog", "a", "b c"}, `prog a "b c"`},
		{[]string{"prog", "", `say "hi" $HOME \ ` + "`x`"}, `prog "" "say \"hi\" \$HOME \\ \` + "`x\\`" + `"`},
		{[]string{"prog", "one\ntwo"}, `prog $'one\ntwo'`},
		{[]string{"prog", "tab\there", "cr\r", "esc\x1b[2J", "del\x7f"}, `prog $'tab\there' $'cr\r' $'esc\x1b[2J' $'del\x7f'`},
		{[]string{"prog", "it's\n\\"}, `prog $'it\'s\n\\'`},
		{[]string{"./a\nb", "x"}, `$'./a\nb' x`},
	}
	bash, _ := exec.LookPath("bash")
	for _, tt := range tests {
		got := commandLine(tt.args[0], tt.args[1:])
		if got != tt.want {
			t.Errorf("commandLine(%q) = %s, want %s", tt.args, got, tt.want)
		}
		if strings.ContainsFunc(got, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			t.Errorf("commandLine(%q) = %q holds a control character", tt.args, got)
		}
		if bash == "" {
			continue
		}
		out, err := exec.Command(bash, "-c", `eval "set -- $1"; printf '%s\0' "$@"`, "bash", got).Output()
		if words := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00"); err != nil || !slices.Equal(words, tt.args) {
			t.Errorf("bash reads %s back as %q (%v), want %q", got, words, err, tt.args)
		}
	}
}
