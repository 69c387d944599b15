// Package prep is phase I and phase II of the profiler. Phase I turns ELF
// files (read with package dwarf) into a [datafile.Plan]: which functions or
// lines to profile, after the default selections of profiler.ini and
// tools.ini and the /INC, /EXC and /EXCALL specifications, with every site
// checked to lie on an instruction boundary (package instr). Phase II adds
// the runs of .pbo files into a .pbt.
//
// # Selection
//
// Every function of every module starts selected. The specifications then
// apply in order: the defaults of profiler.ini, those of tools.ini, then the
// command line's from left to right ([DefaultSpecs], [Options].Specs). An
// exclusion removes the functions its specification matches, an inclusion
// adds them back, /EXCALL removes everything. A specification of the user's
// (tools.ini or the command line) that matches no function of any module
// gives warning PRF4106, naming it without its line ranges. Matching is
// case-sensitive, as Linux file names are.
//
// A specification's shape says what it names; the first rule that applies
// wins:
//
//  1. A parenthesis opens line ranges when the text before it has a source
//     extension (below) or is empty, or when the text after it is made only of
//     digits, '-', ',' and blanks and the name is not a C++ qualified name
//     ("::"). That is a source file with ranges: "parse.c(3-41,50-67)",
//     "lcount.c(21)", "parse.c(0-0)" (0-0 means every line). The ranges are
//     decimal line numbers up to 65535, comma-separated, single numbers or
//     lo-hi pairs, closed by the last character; anything else is fatal
//     PRF1422, "syntax error in /EXC or /INC specification", showing the text
//     before the parenthesis (the whole text when that is empty). A reversed
//     range (30-20) is valid and selects nothing.
//  2. Any other text with a parenthesis is a function name: parameters
//     ("Counter::bump(int)", "bump()") or a Go receiver ("main.(*T).M").
//  3. A last path element ending in ".so" or ".so.N..." ("libfoo.so",
//     "libc.so.6", "lib*.so*") is a shared library. It matches every function
//     of a module whose file name matches it, with or without the version
//     ("libc.so" matches libc.so.6); with a slash it matches the module's
//     path or a trailing part of it.
//  4. ".a" is a static archive ("libc.a", "*.a"). Archive members carry no
//     DWARF on common distributions and an executable does not record which
//     archive its code came from, so an archive specification matches every
//     function known only from the symbol table of a module that has DWARF,
//     whatever the archive's name: the statically linked C library, libgcc,
//     the C run-time's startup objects, assembly. The default profiler.ini
//     excludes "*.a"; "/INC libc.a" brings that code back, as "/INC libc.lib"
//     did in the original. (Code of the program's own that was compiled
//     without -g into a program with DWARF is matched too.) In a module
//     without DWARF, an archive specification matches nothing.
//  5. ".o" or ".obj" is an object module ("parse.o", "crt*.o"): it matches
//     the functions whose unit (Func.Source) it names. The unit of a C or C++
//     function is its compilation unit's object name ("src/parse.c" gives
//     "parse.o").
//  6. A source extension is a source file, all of its lines. Extensions:
//     c h i ii cc cp cpp cxx c++ C CPP hh hpp hxx h++ H inl ipp tcc go rs s S
//     sx asm m mm f for f77 f90 f95 f03 f08 F FOR F90 y l yy ll cu cuh zig.
//  7. Anything else is a function name ("main", "_ZN7Counter4bumpEi",
//     "Counter::bump", "std::*", "runtime.*"), which also names the Go
//     package or Rust crate of a function ("runtime", "internal/*", "std").
//
// A function name matches a function's stored (linkage, mangled) name or a
// demangled form of it: with parameters ("Counter::bump(int)"), without them
// ("Counter::bump", matching every overload), and without template
// arguments ("std::vector::size"); Rust names without their hash. A bare
// name also matches the unit of Go and Rust functions (their package path or
// crate), never the object of a C function: "fcount2" does not match
// fcount2.o, as in the original.
//
// Source files are matched, for function profiles, against the file that
// declares the function (DW_AT_decl_file): by base name, or with a slash by
// the whole path or a trailing part of it ("src/parse.c"). With line ranges,
// a function is matched when its declaration line falls in one of them: this
// is the Linux meaning of ranges in a function profile, where the original's
// matched nothing. Functions without a declaration (symbol table only) match
// no source specification.
//
// Every form takes the wildcards * (any run of characters, '/' and ':'
// included) and ? (one character). There is no escape: a literal * (C++
// operator*) is matched by the wildcard too. A name that looks like a file
// is a file: write a Go function "main.c" as "main.c*".
//
// # Defaults
//
// The built-in profiler.ini (this package's profiler.ini, embedded) leaves
// only the program's own code, as the original's did: it excludes the C
// run-time's startup code by name (_start, _init, frame_dummy...) and object
// (crt1.o...), statically linked archives (*.a), the Go runtime and standard
// library by function name ("fmt.*", "internal/*", "type:*"...), the Rust
// standard crates (std, core, alloc, compiler_builtins...) and the C++
// standard library ("std::*", "__gnu_cxx::*", "__cxa_*"). Its
// specifications never give PRF4106. What they leave out of the code
// with debugging information of Go, Rust and C++ is counted in the plan
// (datafile.Plan.LeftOut), for the report's header.
//
// # Line profiles
//
// A line profile selects line by line, as the original's did: a source
// file with line ranges selects the lines in them, an object module or a
// library the lines of its code, and any other specification (a
// function's name, a Go package, a Rust crate) the lines of the code of
// the functions it selects, so that the defaults leave the same code out
// of line and function profiles. A bare source file selects no line.
//
// # Phase I
//
// [BuildPlan] reads up to eight programs, the main program first. A program
// named twice is read once. Functions are listed in module order, then by
// entry address; the functions of a module are those of package dwarf:
// DWARF subprograms and the symbol table's functions that DWARF does not
// cover. The entry of every selected function is decoded: one that does not
// decode, or that is a trap instruction, is dropped with warning PRF4525
// ("cannot profile function %s in file %s") naming its address. PRF1521
// ("no functions marked for profiling") is fatal only when no module has a
// function left; it names the main program. A feature this version lacks
// (whatever prf.Unavailable lists: nothing today) is refused with PRF1001.
//
// # Phase II
//
// [Merge] adds .pbo files into a .pbt with the semantics of
// [datafile.Merged.Add], writing the result atomically.
package prep
