package cli

import (
	"fmt"
	"io"
	"reflect"

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
		kong.Writers(io.Discard, io.Discard),
		kong.KindMapper(reflect.String, bytesMapper))
	if err != nil {
		return fmt.Errorf("build %s command-line grammar: %w", tool.Name, err)
	}
	if _, err := k.Parse(args); err != nil {
		return fmt.Errorf("parse canonical %s command line %q: %w", tool.Name, args, err)
	}
	return nil
}

// bytesMapper decodes a string value as it is. Kong's own string mapper
// passes values through encoding/json, which replaces invalid UTF-8 with
// U+FFFD: Linux file names and program arguments are bytes and must
// survive unchanged.
var bytesMapper = kong.MapperFunc(func(ctx *kong.DecodeContext, target reflect.Value) error {
	t, err := ctx.Scan.PopValue("string")
	if err != nil {
		return err
	}
	s, ok := t.Value.(string)
	if !ok {
		return fmt.Errorf("expected a string but got %v (%T)", t.Value, t.Value)
	}
	target.SetString(s)
	return nil
})

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
