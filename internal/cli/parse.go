package cli

import (
	"fmt"
	"io"

	"github.com/alecthomas/kong"
)

// parseTool runs the normaliser and kong over one command line, filling
// grammar (a pointer to the tool's kong struct). The result is valid for
// noLogo even when err is not nil.
func parseTool(cfg *config, grammar any, args []string, env func(string) string, read readFunc, warn func(error)) (*normalized, error) {
	envValue := ""
	if env != nil {
		envValue = env(cfg.tool.Env)
	}
	n, err := normalize(cfg, args, envValue, read, warn)
	if err != nil {
		return n, err
	}
	return n, parseKong(cfg.tool, grammar, n.kongArgs())
}

// parseKong parses a canonical argument vector into grammar. The normaliser
// only produces vectors kong accepts, so an error here is a bug of this
// package, not a usage error.
func parseKong(tool Tool, grammar any, args []string) error {
	k, err := kong.New(grammar,
		kong.Name(tool.Name),
		kong.NoDefaultHelp(),
		kong.Exit(func(int) {}),
		kong.Writers(io.Discard, io.Discard))
	if err != nil {
		return fmt.Errorf("build %s command-line grammar: %w", tool.Name, err)
	}
	if _, err := k.Parse(args); err != nil {
		return fmt.Errorf("parse canonical %s command line %q: %w", tool.Name, args, err)
	}
	return nil
}

// helpOf returns the help a command line asked for: --help wins over /?
// when it comes later, as kong's last-wins group "help" decided.
func helpOf(usage, long bool) Help {
	switch {
	case long:
		return LongHelp
	case usage:
		return UsageHelp
	}
	return NoHelp
}
