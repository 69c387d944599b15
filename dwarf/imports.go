package dwarf

import (
	"debug/elf"
	"strings"
)

// Import is a function the file calls through its procedure linkage table:
// a PLT entry, the Linux counterpart of the original's import thunk (its
// `_lib_add (dlllib.dll)` rows).
type Import struct {
	// Name is the imported symbol ("lib_add", "printf").
	Name string
	// Entry and End bound its PLT entry, at link-time addresses.
	Entry, End uint64
	// Library is the shared library its symbol version names (libc.so.6
	// for printf@GLIBC_2.2.5), or "" for an unversioned symbol: which
	// library defines it is known only once the libraries are searched.
	Library string
}

// pltEntry is the size of a PLT entry on x86-64 (.plt and .plt.sec) and
// arm64.
const pltEntry = 16

// plts are the layouts of the procedure linkage tables readImports reads,
// by machine: the type of an entry's relocation (R_X86_64_JMP_SLOT,
// R_AARCH64_JUMP_SLOT), the size of the header that precedes the entries
// of a .plt (x86-64: one entry; arm64: two), and whether the entries may
// be in a second table, .plt.sec, without a header (x86-64 with IBT).
var plts = map[elf.Machine]struct {
	jumpSlot uint32
	header   uint64
	sec      bool
}{
	elf.EM_X86_64:  {uint32(elf.R_X86_64_JMP_SLOT), pltEntry, true},
	elf.EM_AARCH64: {uint32(elf.R_AARCH64_JUMP_SLOT), 2 * pltEntry, false},
}

// readImports lists the PLT entries of bin, one per R_*_JUMP_SLOT
// relocation of .rela.plt, in that order: entry k is at .plt.sec + 16k on
// x86-64 with IBT's second PLT, else at .plt + 16(k+1) (x86-64: one
// 16-byte header) or .plt + 32 + 16k (arm64: a 32-byte header). A file
// laid out otherwise (another machine, a PLT of other entry sizes) has no
// imports here.
func readImports(bin *elf.File) []Import {
	rela, plt := bin.Section(".rela.plt"), bin.Section(".plt")
	if rela == nil || plt == nil || bin.Class != elf.ELFCLASS64 {
		return nil
	}
	layout, ok := plts[bin.Machine]
	if !ok {
		return nil
	}
	jumpSlot, base, header := layout.jumpSlot, plt.Addr, layout.header
	if sec := bin.Section(".plt.sec"); sec != nil && layout.sec {
		base, header = sec.Addr, 0
	}
	data, err := rela.Data()
	if err != nil {
		return nil
	}
	syms, err := bin.DynamicSymbols()
	if err != nil {
		return nil
	}
	versions := map[string]string{} // symbol -> library, from the version needs
	if imported, err := bin.ImportedSymbols(); err == nil {
		for _, s := range imported {
			if s.Library != "" {
				versions[s.Name] = s.Library
			}
		}
	}
	end := plt.Addr + plt.Size
	if header == 0 {
		end = base + bin.Section(".plt.sec").Size
	}
	var out []Import
	const relaSize = 24 // Elf64_Rela
	for k := 0; (k+1)*relaSize <= len(data); k++ {
		info := bin.ByteOrder.Uint64(data[k*relaSize+8:])
		typ, sym := uint32(info), info>>32
		entry := base + header + uint64(k)*pltEntry
		if entry+pltEntry > end {
			break
		}
		// (Dynamic symbol n is DynamicSymbols()[n-1]: the null symbol
		// is left out.)
		if typ != jumpSlot || sym == 0 || sym > uint64(len(syms)) {
			continue
		}
		s := syms[sym-1]
		if s.Name == "" || s.Section != elf.SHN_UNDEF || elf.ST_BIND(s.Info) == elf.STB_WEAK {
			// (A weak reference, __gmon_start__ or __cxa_finalize, is the
			// start-up code's, called if there.)
			continue
		}
		out = append(out, Import{Name: s.Name, Entry: entry, End: entry + pltEntry, Library: versions[s.Name]})
	}
	return out
}

// readNeeded returns the libraries bin names in DT_NEEDED, and the
// directories of its DT_RUNPATH or DT_RPATH, as written ($ORIGIN
// unexpanded).
func readNeeded(bin *elf.File) (needed, runPath []string) {
	needed, _ = bin.ImportedLibraries()
	for _, tag := range []elf.DynTag{elf.DT_RUNPATH, elf.DT_RPATH} {
		paths, _ := bin.DynString(tag)
		for _, p := range paths {
			runPath = append(runPath, strings.Split(p, ":")...)
		}
	}
	return needed, runPath
}
