// Package dwarf reads what PREP needs from an ELF file: its identity (build
// ID, type, machine, load layout), its functions with all their address
// ranges, linkage names and compilation units, and its line table. It reads
// DWARF 4 and 5 from gcc, clang, Go and rustc, compressed sections included,
// follows separate debug files (build ID, .gnu_debuglink with CRC, or named
// directly) and split DWARF (.dwo files and .dwp packages), ignores
// functions the linker dropped, and falls back to the ELF symbol table when
// there is no DWARF.
//
// The standard library's debug/dwarf is imported as stddwarf; its types stay
// out of this package's API. This package imports nothing of the project
// but internal/elfid.
//
// # Split DWARF
//
// A program built with gcc -gsplit-dwarf keeps in its own .debug_info only a
// skeleton of each unit (DWARF 5 section 3.1.2: DW_TAG_skeleton_unit; with
// -gdwarf-4, gcc's GNU extension: a DW_TAG_compile_unit with
// DW_AT_GNU_dwo_name). What is read from where:
//
//   - from the program: the skeleton (the .dwo file's name, DW_AT_dwo_name,
//     and the directory it is relative to, DW_AT_comp_dir; the unit's DWO ID,
//     in the DWARF 5 unit header or DW_AT_GNU_dwo_id; the unit's ranges), the
//     line table (DW_AT_stmt_list: line rows, and the file names
//     DW_AT_decl_file counts in, as gdb reads them), the addresses
//     (.debug_addr from DW_AT_addr_base or DW_AT_GNU_addr_base), and for
//     DWARF 4 the range lists (.debug_ranges from DW_AT_GNU_ranges_base);
//   - from the unit's .dwo file, or the program's package prog.dwp (dwp,
//     llvm-dwp; DWARF 5 section 7.3.5, or the GNU version 2 index), chosen
//     by DWO ID: the unit's DIEs (functions, names, linkage names,
//     specifications and abstract origins, declarations, language,
//     producer), its strings (.debug_str_offsets.dwo and .debug_str.dwo) and
//     for DWARF 5 its range lists (.debug_rnglists.dwo).
//
// The package is looked for first, as prog.dwp beside the program (and
// beside the file a symbolic link names). A .dwo file is looked for at
// DW_AT_dwo_name taken in DW_AT_comp_dir (a relative DW_AT_comp_dir, as
// -fdebug-prefix-map=$PWD=. makes, in the program's directory, never in the
// current directory), then in the program's directory under its name and
// its base name: a build tree moved with its objects is found. A file whose
// DWO ID is not the skeleton's is from another build and is refused.
//
// When a split unit cannot be read (no file, not a regular file, not ELF, a
// machine other than the program's, another build's DWO ID, truncated or
// malformed DWARF), a warning names the file and the reason, and the unit's
// functions come from the symbol table: they keep the unit
// ([Unit.SymbolsOnly]) and a Source (the object named after the line
// table's primary file, or after the .dwo file for DWARF 4), so they count
// as the program's own code, not as code without debugging information.
// Their line rows are still there.
//
// Limits: debug/dwarf reads split units only through the workarounds of
// buildSplit (sections sliced at the skeleton's bases, the GNU forms
// rewritten to DWARF 5's); type units (-fdebug-types-section) are not read,
// as PREP needs no types; gdb's debug-file-directory is not searched for
// .dwo files; a DWARF 4 unit that falls back has no unit name.
//
// # Security
//
// The files read may be hostile: every length and offset read from them is
// checked against the data before use, compressed sections may inflate to
// a bounded ratio only, and panics of debug/elf and debug/dwarf become
// errors (FuzzOpen, FuzzSplitDWARF). A .dwo file or package that cannot be
// used costs its unit its DWARF, never the program its other units.
package dwarf
