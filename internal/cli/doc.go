// Package cli is the command-line engine of prep, profile and plist. Each
// tool declares its options once, as the rows of a [Tool]'s table (in
// cmd/<tool>/options.go); [Tool.Parse] reads a command line with it into the
// tool's own options type, and the same table gives the original's usage
// text and the --help text.
//
// # Syntax
//
// The syntax is the original's (docs/design/original.md §2, and
// docs/design/linux.md, "Commands and the workflow"): options begin with /
// or -, are case-insensitive and may be abbreviated down to a minimum
// length, in each tool's table order (/T is PLIST's tab-delimited report,
// /TR its trace); an option's argument is the next token; @file reads more
// arguments from a file; the environment variable named after the tool
// (PREP, PROFILE, PLIST) comes before the arguments; the rightmost of
// contradictory options wins. Every option also has a GNU long form
// (--function-counting, --start=FUNC) listed by --help, which may be cut
// short to a unique prefix (--nolo for --nologo).
//
// # How it works
//
// One left-to-right pass over the tokens: response files are expanded when
// they are reached, so that diagnostics come in command-line order; each
// option found is checked (its argument, a number's range, how often it was
// given) and handed to its row's Set function, which records it in the
// tool's options, so the rightmost wins by construction. The original's
// diagnostics (PRF1101 to PRF1105, PRF1201, PRF1202, PRF1423, warning
// PRF4101) come from package prf with their exact texts; the first error
// ends the parse. The pass is linear in the number of tokens.
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
//   - Long options are case-sensitive and may be cut short to any prefix
//     that no other long option of the tool begins with, as getopt_long
//     takes them: --nolo is --nologo, --form=lcov is --format=lcov. A name
//     typed whole wins over the longer names it begins (--trace, not
//     --trace-limit); a prefix of several is PRF1102, which names them. A
//     long form that holds its value (--sort=count) is cut short in its
//     name only (--so=count). The original's /X options keep their own
//     rule (a minimum length, in table order). In diagnostics an option is named by its table name
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
//     response files. "No arguments at all" (the usage on stderr, exit
//     status 2: [NoInputHelp]) means none on the command line, whatever
//     the variable holds.
//   - A second sort option of PLIST warns PRF4101 even when it repeats the
//     first or the first came from the environment variable; so does a
//     second /SF.
//   - A response file's name typed in another case than on disk is found
//     as [FindFile] finds it.
//   - Every error of [Tool.Parse] is a usage diagnostic (exit status 2, and
//     a hint to try --help), response-file errors included. They are
//     reported in command-line order: the first one ends the parse.
//
// What a tool needs of its names (PREP: a module or a merge, PLIST: an
// input) is checked by the tool, in cmd/.
//
// The package imports internal/prf, nothing else of the project.
package cli
