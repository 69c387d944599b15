package dwarf

import "errors"

// Sentinel errors callers branch on.
var (
	// ErrNotELF: the file is not an ELF file (PREP's PRF1401).
	ErrNotELF = errors.New("not an ELF file")
	// ErrNoDWARF: the file and its debug files have no DWARF (PRF1621 for
	// line profiles; function profiles fall back to the symbol table).
	ErrNoDWARF = errors.New("no DWARF debugging information")
	// ErrNotExecutable: an ELF file that is neither an executable nor a
	// shared library (a relocatable object, a core file).
	ErrNotExecutable = errors.New("not an executable or shared library")
)

// Range is a half-open address range [Low, High) at link-time addresses.
type Range struct{ Low, High uint64 }

// Func is a function of the file.
type Func struct {
	// Name is the linkage (mangled) name when there is one, else the plain
	// name. Go functions use their symbol name ("main.main", "pkg.(*T).M").
	Name string
	// Entry is the address of the first instruction (DW_AT_low_pc of the
	// range that holds the entry, or the symbol's value).
	Entry uint64
	// Ranges are all the function's ranges, the entry range first; a function
	// split by the compiler (foo and foo.cold) is one Func with two ranges.
	Ranges []Range
	// Unit indexes File.Units, or is -1 for a function outside every
	// unit, known only from the symbol table (C run-time start-up code,
	// static archives built without -g). A function of a split unit whose
	// .dwo could not be read also comes from the symbol table but keeps
	// its unit, marked [Unit.SymbolsOnly]: it is the program's own code.
	Unit int
	// Source is the unit the function belongs to, as reports name it: the
	// object module of C and C++ ("parse.o" for src/parse.c), the Go package
	// path, the Rust crate; the file's base name for symbol-table functions.
	Source string
	// DeclFile and DeclLine locate the declaration, when known.
	DeclFile string
	DeclLine int
	// External is false for static (file-local) functions.
	External bool
}

// Unit is a compilation unit.
type Unit struct {
	// Name is DW_AT_name as recorded; Path joins it with CompDir.
	Name     string
	CompDir  string
	Path     string
	Language string // "c", "c++", "go", "rust", "asm", or ""
	Producer string
	// DWO is the file a split unit (gcc -gsplit-dwarf) was read from, its
	// .dwo file or the program's .dwp package; "" for other units.
	DWO string
	// SymbolsOnly is set for a split unit whose .dwo could not be read (a
	// warning says why): only its skeleton is known, and its functions come
	// from the symbol table, without declarations. Name is then the line
	// table's primary source file (DWARF 5), or "" (DWARF 4), and Language
	// and Producer are "". Its line rows are still there: the line table is
	// in the program.
	SymbolsOnly bool
}

// LineRow is one row of the line table.
type LineRow struct {
	Addr uint64
	File string // full path
	Line int
	// Unit indexes File.Units.
	Unit int
	// Stmt is set for a statement row (the line table's is_stmt: "a
	// recommended breakpoint location", DWARF 5 section 6.2.2).
	Stmt bool
}

// File is an opened ELF file with what PREP needs of it.
type File struct {
	Path string
	// Arch is the GOARCH spelling of the machine ("amd64", "arm64"), or the
	// ELF machine name for others.
	Arch string
	// PIE is true for ET_DYN files (PIE executables, shared libraries).
	PIE    bool
	Shared bool // a shared library (ET_DYN without PT_INTERP) rather than an executable
	// BuildID is the GNU build ID, or nil.
	BuildID []byte
	// LinkBase is the link-time address of file offset 0 ([elfid.LinkBase]).
	LinkBase uint64
	// DebugFile is the separate debug file used, or "".
	DebugFile string
	// HasDWARF reports whether functions and lines came from DWARF.
	HasDWARF bool
	// ExportsOnly reports that the file has neither DWARF nor a symbol
	// table (stripped, with no debug file found): its functions are
	// those of its dynamic symbol table, the ones it exports, and its
	// other code is not known.
	ExportsOnly bool
	Funcs       []Func
	Units       []Unit
	// Imports are the functions it calls through its PLT; Needed and
	// RunPath its DT_NEEDED libraries and the directories of its
	// DT_RUNPATH (or DT_RPATH), as written.
	Imports []Import
	Needed  []string
	RunPath []string
	// Warnings collects non-fatal problems met while reading (dwz
	// references, ranges outside any executable segment...).
	Warnings []string

	impl *file // the open ELF and DWARF, for Code and Lines
}
