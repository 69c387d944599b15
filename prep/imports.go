package prep

import (
	"debug/elf"
	"os"
	"path/filepath"
	"strings"

	"github.com/sourceprofiler/sprof/dwarf"
)

// Calls through the PLT (docs/linux.md, "Shared libraries"). The
// original's EXE listed its import thunks as functions, named after the
// import, with the DLL as source: `_lib_add (dlllib.dll)` counted the
// calls the EXE made into the DLL. A PLT entry is the Linux counterpart:
// each is a function of its module here, named after the symbol, its
// source the library that defines it. profiler.ini excludes those of the
// system's libraries (libc.so and the like), as the original's excluded
// the Windows import libraries; a library spec (/INC libc.so) brings them
// back.

// systemDirs are where the dynamic linker looks last for a library
// (ld.so(8)), multiarch directories first.
var systemDirs = []string{
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
	"/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
	"/lib64", "/usr/lib64", "/lib", "/usr/lib", "/usr/local/lib",
}

// importFuncs returns the PLT entries of module m as functions, each with
// the library that defines it as source; an entry whose library cannot be
// told is left out.
func importFuncs(mods []*openModule, m *openModule, exports exportCache) []dwarf.Func {
	var out []dwarf.Func
	for _, imp := range m.file.Imports {
		lib := imp.Library
		if lib == "" {
			lib = definer(mods, m, imp.Name, exports)
		}
		if lib == "" {
			continue
		}
		out = append(out, dwarf.Func{
			Name:   imp.Name,
			Entry:  imp.Entry,
			Ranges: []dwarf.Range{{Low: imp.Entry, High: imp.End}},
			Unit:   -1,
			Source: lib,
		})
	}
	return out
}

// definer names the library that defines the unversioned symbol name for
// module m: one of the modules given to PREP, else one of m's DT_NEEDED
// libraries found, as the dynamic linker would, in m's run path, beside
// the modules, or in the system's directories. "" when none does.
func definer(mods []*openModule, m *openModule, name string, exports exportCache) string {
	for _, o := range mods {
		if o != m && exports.defines(o.module.Path, name) {
			return o.module.Name
		}
	}
	var dirs []string
	for _, d := range m.file.RunPath {
		dirs = append(dirs, strings.ReplaceAll(strings.ReplaceAll(d, "${ORIGIN}", "$ORIGIN"), "$ORIGIN", filepath.Dir(m.module.Path)))
	}
	for _, o := range mods {
		dirs = append(dirs, filepath.Dir(o.module.Path))
	}
	dirs = append(dirs, systemDirs...)
	for _, lib := range m.file.Needed {
		if strings.Contains(lib, "/") {
			if exports.defines(lib, name) {
				return filepath.Base(lib)
			}
			continue
		}
		for _, d := range dirs {
			if p := filepath.Join(d, lib); exports.defines(p, name) {
				return lib
			}
		}
	}
	return ""
}

// exportCache holds the functions each library file defines, read once.
type exportCache map[string]map[string]bool

// defines reports whether the ELF file at path defines the dynamic symbol
// name (false when the file cannot be read).
func (c exportCache) defines(path, name string) bool {
	defs, ok := c[path]
	if !ok {
		defs = readExports(path)
		c[path] = defs
	}
	return defs[name]
}

// readExports returns the names of the dynamic symbols that the ELF file
// at path defines.
func readExports(path string) (defs map[string]bool) {
	defs = map[string]bool{}
	defer func() {
		if recover() != nil { // debug/elf on a hostile file
			defs = map[string]bool{}
		}
	}()
	if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
		return defs
	}
	f, err := elf.Open(path)
	if err != nil {
		return defs
	}
	defer f.Close()
	syms, _ := f.DynamicSymbols()
	for _, s := range syms {
		if t := elf.ST_TYPE(s.Info); s.Section != elf.SHN_UNDEF && (t == elf.STT_FUNC || t == elf.STT_GNU_IFUNC) {
			defs[s.Name] = true
		}
	}
	return defs
}
