package cli

import (
	"bytes"
	"testing"

	"github.com/sourceprofiler/sprof/internal/prf"
)

func TestStart(t *testing.T) {
	warning := prf.Errorf(4101, "option SF overrides an earlier option")
	for _, c := range []struct {
		name           string
		args           []string
		status         int
		done           bool
		stdout, stderr string
	}{
		{"run", []string{"/nologo", "/fc", "prog"}, 0, false, "", ""},
		{"banner", []string{"/fc", "prog"}, 0, false, "", Prep.Banner()},
		{"usage", []string{"/nologo", "/?"}, 0, true, usageTexts["prep"], ""},
		{"bad option", []string{"/nologo", "/bogus"}, 2, true, "", "prep: fatal error PRF1102: bogus: invalid option\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts, err := ParsePrep(c.args, nil, nil)
			var out, errb bytes.Buffer
			status, done := Prep.Start(&out, &errb, opts.NoLogo, opts.Help, nil, err)
			if status != c.status || done != c.done || out.String() != c.stdout || errb.String() != c.stderr {
				t.Errorf("Start = %d %v, stdout %q, stderr %q; want %d %v, %q, %q",
					status, done, out.String(), errb.String(), c.status, c.done, c.stdout, c.stderr)
			}
		})
	}
	t.Run("warnings after the banner", func(t *testing.T) {
		var out, errb bytes.Buffer
		Prep.Start(&out, &errb, false, NoHelp, []error{warning}, nil)
		want := Prep.Banner() + "prep: warning PRF4101: option SF overrides an earlier option\n"
		if errb.String() != want {
			t.Errorf("stderr %q, want %q", errb.String(), want)
		}
	})
}
