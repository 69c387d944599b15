// Package cli reads the command lines of prep, profile and plist and returns
// their options as typed structs ([PrepOptions], [ProfileOptions],
// [PlistOptions]); the cmd/ mains print what it returns and run the tool.
//
// # Syntax
//
// The syntax is the original's (spec original.md §2, linux.md "Commands and
// the workflow"): options begin with / or -, are case-insensitive and may be
// abbreviated down to a minimum length, in each tool's table order (/T is
// PLIST's tab-delimited report, /TR its trace); an option's argument is the
// next token; @file reads more arguments from a file; the environment
// variable named after the tool (PREP, PROFILE, PLIST) comes before the
// arguments; the rightmost of contradictory options wins. Every option also
// has a GNU long form (--function-counting, --start=FUNC) listed by --help.
//
// # How it works
//
// Parsing happens in two steps. A normaliser, driven by one option table per
// tool, reads the tokens left to right, expands response files and reports
// the original's diagnostics (PRF1101 to PRF1105, PRF1201, PRF1202, PRF1423,
// warning PRF4101) with their exact texts. It turns every option into a
// canonical GNU long option (--select=include:SPEC, --sort=count) and hands
// that argument vector to kong, which fills the grammar structs: it applies
// the last-wins groups of the profile types and PLIST's layouts and keeps
// PROFILE's program arguments apart (passthrough). Kong never sees a token
// the user typed, because its own diagnostics cannot carry PRF numbers, the
// original's first-error-wins order, response files, abbreviations in table
// order or the /IO limit (see normalize.go); and kong's string mapper, which
// turns invalid UTF-8 into U+FFFD, is replaced by one that keeps bytes.
// The --help text is written from the option tables, not by kong, so that it
// shows each option's shortest abbreviation next to its long form.
//
// # Decisions for Linux
//
// Where neither spec settles a point, this package does the following.
//
//   - A token that begins with / and holds a second / is a path (/usr/bin/ls),
//     so is any token not beginning with / or -; a lone / or - is PRF1101.
//   - An option's argument in the next token may not begin with - (PRF1103,
//     as the original: plist /pl -1); --start=-x can give one that does. One
//     beginning with / is taken unless it names an option of the tool, so
//     /D /tmp works while /OI /FC is PRF1103.
//   - An option that needs an argument as the very last token is taken as a
//     name, as the original did: prep /fc prog /ot names a second module
//     "/ot"; plist prog /c lists prog. A long option there is PRF1103.
//   - "--" ends the options, as in GNU tools; what follows is taken as typed,
//     without response files.
//   - Long options are exact and case-sensitive, as getopt_long's without
//     abbreviations. In diagnostics an option is named by its table name
//     (STACK) when written short and by its long form (--stack) when written
//     long; PRF1102 shows the token without its first character (bogus for
//     /bogus), or whole for a long one (--bogus).
//   - An empty argument is missing (PRF1103). Numbers are decimal digits
//     only, at most 2147483647 (PRF1104 otherwise); 010 is ten.
//   - Response files are split on white space without quoting, are read
//     relative to the working directory, may nest 8 levels (PRF1202) and
//     may hold 4 MiB together (PRF1011 beyond, with the reason); PRF1011
//     for a missing one adds the system's reason to the name as typed.
//   - The environment variable is split on white space and may name
//     response files. "No arguments at all" (the usage) means none on the
//     command line, whatever the variable holds.
//   - A second sort option of PLIST warns PRF4101 even when it repeats the
//     first or the first came from the environment variable; so does a
//     second /SF.
//   - PREP checks what each phase needs: PRF1421 when phase I has no
//     module, then PRF1462 and PRF1461 when phase II lacks its .pbt input or
//     output. PLIST uses the first input name and ignores the others, as
//     the original did.
//   - Every error of the Parse functions is a [UsageError] (exit status 2),
//     response-file errors included. They are reported in command-line
//     order: the first one ends the parse.
//
// The package imports internal/prf, datafile (for [datafile.Method]) and
// kong, nothing else of the project.
package cli
