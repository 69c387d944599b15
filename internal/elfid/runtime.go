package elfid

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"slices"
	"strings"
)

// What PROFILE reads of an ELF file at run time, beside its identity: the
// span an instance of it takes, its dynamic linker, the dynamic linker's
// rendezvous, and where its functions start. PROFILE plants from the plan;
// these are the facts of the files on the machine that run the program,
// which the plan cannot hold (the dynamic linker is not the program's), or
// which PROFILE needs only in some runs (function starts, for timing
// in-process). Each reader takes an open file; the Read functions open
// one by path.

// LoadSpan returns the bytes the loadable segments of f span, from the
// page of the first to the end of the last's memory rounded up to a page
// of the given size: what the dynamic linker reserves for an instance of
// the file. It returns 0 for a file without loadable segments.
func LoadSpan(f *elf.File, page uint64) uint64 {
	if page == 0 || page&(page-1) != 0 {
		return 0
	}
	lo, hi := ^uint64(0), uint64(0)
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			lo, hi = min(lo, p.Vaddr&^(page-1)), max(hi, p.Vaddr+p.Memsz)
		}
	}
	if hi <= lo || hi-lo > ^uint64(0)-page {
		return 0
	}
	return (hi - lo + page - 1) &^ (page - 1)
}

// ReadLoadSpan is [LoadSpan] of the file at path, 0 when it cannot be
// read.
func ReadLoadSpan(path string, page uint64) uint64 {
	f, err := elf.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	return LoadSpan(f, page)
}

// maxInterp bounds the name of a dynamic linker read from PT_INTERP.
const maxInterp = 4096

// Interpreter returns the dynamic linker f names (PT_INTERP), or "" for a
// file without one (linked statically).
func Interpreter(f *elf.File) (string, error) {
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b, err := io.ReadAll(io.LimitReader(p.Open(), maxInterp))
		if err != nil {
			return "", fmt.Errorf("read the interpreter's name: %w", err)
		}
		return string(bytes.TrimRight(b, "\x00")), nil
	}
	return "", nil
}

// ReadInterpreter is [Interpreter] of the file at path.
func ReadInterpreter(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return Interpreter(f)
}

// OwnThreadPointer reports whether the program at path leaves its
// thread pointer alone: linked statically (no dynamic linker to set it)
// and without thread-local storage (PT_TLS: no C library's threads, whose
// TLS it points to). A Go program built without cgo is one.
func OwnThreadPointer(path string) (bool, error) {
	f, err := elf.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	return ownThreadPointer(f), nil
}

// ownThreadPointer is [OwnThreadPointer] of f.
func ownThreadPointer(f *elf.File) bool {
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_TLS {
			return false
		}
	}
	return true
}

// Rendezvous is where a dynamic linker tells a debugger of the libraries it
// loads (glibc's <link.h>): Brk, the link-time address of the empty
// function _dl_debug_state it calls after each change, and RDebug, of the
// r_debug structure whose state says whether the list is consistent (0:
// not found). LinkBase is the file's [LinkBase], for the load bias.
type Rendezvous struct {
	Brk, RDebug, LinkBase uint64
}

// rendezvousNames are the names _dl_debug_state goes by in the symbol
// tables (the versioned one in some builds).
var rendezvousNames = []string{"_dl_debug_state", "_dl_debug_state@@GLIBC_PRIVATE"}

// FindRendezvous finds the rendezvous in the symbol tables of f, a
// dynamic linker.
func FindRendezvous(f *elf.File) (Rendezvous, error) {
	syms, _ := f.DynamicSymbols()
	more, _ := f.Symbols()
	r := Rendezvous{LinkBase: LinkBase(f)}
	for _, s := range append(syms, more...) {
		switch {
		case s.Value == 0:
		case slices.Contains(rendezvousNames, s.Name) && elf.ST_TYPE(s.Info) == elf.STT_FUNC:
			r.Brk = s.Value
		case s.Name == "_r_debug" && elf.ST_TYPE(s.Info) == elf.STT_OBJECT:
			r.RDebug = s.Value
		}
	}
	if r.Brk == 0 {
		return Rendezvous{}, fmt.Errorf("no _dl_debug_state")
	}
	return r, nil
}

// ReadRendezvous is [FindRendezvous] of the dynamic linker at path.
func ReadRendezvous(path string) (Rendezvous, error) {
	f, err := elf.Open(path)
	if err != nil {
		return Rendezvous{}, err
	}
	defer f.Close()
	r, err := FindRendezvous(f)
	if err != nil {
		return Rendezvous{}, fmt.Errorf("the dynamic linker %s: %w", path, err)
	}
	return r, nil
}

// FuncStarts returns the link-time addresses where the functions of f
// start, from its symbol tables, sorted and without repeats. A function's
// cold part ("f.cold", "f.cold.1": GCC's code of f placed apart, which f
// jumps to with its registers live) is not one.
func FuncStarts(f *elf.File) []uint64 {
	return funcAddrs(f, func(s elf.Symbol) (uint64, bool) { return s.Value, !strings.Contains(s.Name, ".cold") })
}

// ReadFuncStarts is [FuncStarts] of the file at path, none when it cannot
// be read.
func ReadFuncStarts(path string) []uint64 { return readFuncAddrs(path, FuncStarts) }

// FuncEnds returns the link-time addresses where the functions of f end
// (a function symbol's value plus its size), from its symbol tables,
// sorted and without repeats: where the alignment fill before the next
// function may begin.
func FuncEnds(f *elf.File) []uint64 {
	return funcAddrs(f, func(s elf.Symbol) (uint64, bool) { return s.Value + s.Size, s.Size != 0 })
}

// ReadFuncEnds is [FuncEnds] of the file at path, none when it cannot be
// read.
func ReadFuncEnds(path string) []uint64 { return readFuncAddrs(path, FuncEnds) }

// funcAddrs returns the addresses pick gives of the defined function
// symbols of f's symbol tables that it keeps, sorted and without repeats.
func funcAddrs(f *elf.File, pick func(elf.Symbol) (uint64, bool)) []uint64 {
	syms, _ := f.Symbols()
	dyn, _ := f.DynamicSymbols()
	var out []uint64
	for _, s := range append(syms, dyn...) {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 {
			continue
		}
		if a, ok := pick(s); ok {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// readFuncAddrs is of, of the file at path: none when it cannot be read.
func readFuncAddrs(path string, of func(*elf.File) []uint64) []uint64 {
	f, err := elf.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	return of(f)
}

// maxPointerScan bounds the bytes of one section CodePointers reads.
const maxPointerScan = 256 << 20

// CodePointers returns the link-time addresses in f's executable
// segments that f's data may hold as pointers to code: places where an
// indirect jump or call may land that no decoding of the code finds (a
// switch's table of absolute addresses, a computed goto's table such as
// Lua's disptab, a function pointer). In a position-independent file
// every such pointer has a relocation, and they are the relocations'
// targets (the addend of a relative relocation, the value of a defined
// symbol plus the addend of an absolute one); in a file of fixed
// addresses they are every aligned 8-byte word of its allocated data
// whose value falls in an executable segment. Sorted, without repeats.
// It may hold numbers that only look like pointers; it misses none
// that a relocation or a data word holds. Tables of offsets (a PIE's
// switch tables) are not pointers: the code scan finds those.
func CodePointers(f *elf.File) []uint64 {
	var exec [][2]uint64
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && p.Vaddr+p.Memsz > p.Vaddr {
			exec = append(exec, [2]uint64{p.Vaddr, p.Vaddr + p.Memsz})
		}
	}
	inCode := func(a uint64) bool {
		for _, r := range exec {
			if a >= r[0] && a < r[1] {
				return true
			}
		}
		return false
	}
	var out []uint64
	add := func(a uint64) {
		if inCode(a) {
			out = append(out, a)
		}
	}
	if f.Type == elf.ET_DYN {
		relocTargets(f, add)
	} else {
		dataWords(f, add)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// relocTargets calls add with the target of each relocation of f (RELA
// sections of 64-bit files) that names an address: a relative one's
// addend, or a defined dynamic symbol's value plus the addend.
func relocTargets(f *elf.File, add func(uint64)) {
	if f.Class != elf.ELFCLASS64 {
		return
	}
	syms, _ := f.DynamicSymbols() // (index 0, the null symbol, is left out)
	for _, s := range f.Sections {
		if s.Type != elf.SHT_RELA || s.Size > maxPointerScan {
			continue
		}
		data, err := s.Data()
		if err != nil {
			continue
		}
		for len(data) >= 24 {
			info, addend := f.ByteOrder.Uint64(data[8:]), f.ByteOrder.Uint64(data[16:])
			data = data[24:]
			sym := info >> 32
			switch {
			case sym == 0:
				add(addend) // relative, IRELATIVE: B + A
			case int(sym) <= len(syms) && syms[sym-1].Section != elf.SHN_UNDEF:
				add(syms[sym-1].Value + addend)
			}
		}
	}
}

// dataWords calls add with every aligned 8-byte word of f's allocated
// sections that hold data.
func dataWords(f *elf.File, add func(uint64)) {
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 || s.Flags&elf.SHF_EXECINSTR != 0 || s.Type == elf.SHT_NOBITS || s.Size > maxPointerScan {
			continue
		}
		data, err := s.Data()
		if err != nil {
			continue
		}
		for off := (8 - s.Addr%8) % 8; off+8 <= uint64(len(data)); off += 8 {
			add(f.ByteOrder.Uint64(data[off:]))
		}
	}
}

// ReadCodePointers is [CodePointers] of the file at path, none when it
// cannot be read.
func ReadCodePointers(path string) (ptrs []uint64) {
	f, err := elf.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	defer func() {
		if recover() != nil {
			ptrs = nil // (debug/elf has panicked on hostile headers)
		}
	}()
	return CodePointers(f)
}

// IsGo reports whether f was built by Go's toolchain: it has Go's build
// information (.go.buildinfo) or its function table (.gopclntab).
func IsGo(f *elf.File) bool {
	return f.Section(".go.buildinfo") != nil || f.Section(".gopclntab") != nil
}

// ReadIsGo is [IsGo] of the file at path, false when it cannot be read.
func ReadIsGo(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	return IsGo(f)
}
