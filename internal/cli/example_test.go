package cli_test

import (
	"fmt"
	"os"

	"github.com/sourceprofiler/sprof/internal/cli"
	"github.com/sourceprofiler/sprof/internal/prf"
)

// A main prints the banner unless /NOLOGO was seen, then the warnings, then
// either the error (exit status 2), the help, or runs the tool.
func Example() {
	env := func(name string) string {
		if name == "PLIST" {
			return "/nologo /sn"
		}
		return ""
	}
	var warnings []error
	opts, err := cli.ParsePlist([]string{"/sc", "--page-width=72", "prog"}, env,
		func(w error) { warnings = append(warnings, w) })
	if !opts.NoLogo {
		fmt.Fprint(os.Stderr, cli.Plist.Banner())
	}
	for _, w := range warnings {
		fmt.Println(prf.Format(cli.Plist.Name, "warning", w))
	}
	if err != nil {
		fmt.Println(prf.Format(cli.Plist.Name, "fatal error", err), cli.IsUsageError(err))
		return
	}
	if opts.Help != cli.NoHelp {
		fmt.Print(cli.Plist.HelpText(opts.Help))
		return
	}
	fmt.Println(opts.Input, opts.Sort, opts.PageWidth, opts.PageLength)

	_, err = cli.ParsePlist([]string{"/c5", "prog"}, nil, nil)
	fmt.Println(prf.Format(cli.Plist.Name, "fatal error", err), cli.IsUsageError(err))
	// Output:
	// plist: warning PRF4101: option SC overrides an earlier option
	// prog count 72 -1
	// plist: fatal error PRF1102: c5: invalid option true
}
