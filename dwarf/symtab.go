package dwarf

import (
	"cmp"
	"debug/elf"
	"errors"
	"slices"
	"strconv"
	"strings"
)

// symbol is a function symbol of the ELF symbol table.
type symbol struct {
	name        string
	value, size uint64
	bind        elf.SymBind
	// group numbers the STT_FILE symbol a local symbol follows (so foo.cold
	// finds the foo of its own source file); -1 for others.
	group int
}

// symtab holds the function symbols inside executable segments, sorted by
// address, the preferred name of an address first.
type symtab struct {
	syms   []symbol
	byAddr map[uint64][]int // indexes into syms
}

// readSymbols reads the function symbols of the first table that has any:
// the binary's .symtab, the debug file's .symtab, the binary's .dynsym.
// dynamic reports that they are .dynsym's: the file is stripped.
func readSymbols(bin, dbg *elf.File, x *file) (st *symtab, dynamic bool, err error) {
	defer catch(&err, "read symbols")
	var raw []elf.Symbol
	sources := []func() ([]elf.Symbol, error){bin.Symbols}
	if dbg != nil {
		sources = append(sources, dbg.Symbols)
	}
	sources = append(sources, bin.DynamicSymbols)
	var errs []error
	for i, read := range sources {
		syms, err := read()
		if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
			errs = append(errs, err)
		}
		if len(syms) > 0 {
			raw, dynamic = syms, i == len(sources)-1
			break
		}
	}
	return newSymtab(raw, x), dynamic, errors.Join(errs...)
}

// newSymtab keeps the function symbols (STT_FUNC and STT_GNU_IFUNC, whose
// value is the resolver's code) with a size, defined, and inside an
// executable segment.
func newSymtab(raw []elf.Symbol, x *file) *symtab {
	st := &symtab{byAddr: make(map[uint64][]int)}
	group := -1
	for _, s := range raw {
		typ := elf.ST_TYPE(s.Info)
		if typ == elf.STT_FILE {
			group++
			continue
		}
		if typ != elf.STT_FUNC && typ != elf.STT_GNU_IFUNC || s.Size == 0 || s.Section == elf.SHN_UNDEF || s.Name == "" {
			continue
		}
		if !x.inExec(s.Value, s.Value+s.Size) {
			continue
		}
		sym := symbol{name: s.Name, value: s.Value, size: s.Size, bind: elf.ST_BIND(s.Info), group: -1}
		if sym.bind == elf.STB_LOCAL {
			sym.group = group
		}
		st.syms = append(st.syms, sym)
	}
	slices.SortStableFunc(st.syms, func(a, b symbol) int {
		if c := cmp.Compare(a.value, b.value); c != 0 {
			return c
		}
		return bindRank(a) - bindRank(b)
	})
	for i, s := range st.syms {
		st.byAddr[s.value] = append(st.byAddr[s.value], i)
	}
	return st
}

// bindRank orders aliases at one address: global names before weak ones
// before local ones, and fewer leading underscores first (memcpy before
// __memcpy).
func bindRank(s symbol) int {
	r := 0
	switch s.bind {
	case elf.STB_WEAK:
		r = 100
	case elf.STB_LOCAL:
		r = 200
	}
	return r + len(s.name) - len(strings.TrimLeft(s.name, "_"))
}

// at returns the symbols at addr, the preferred one first.
func (st *symtab) at(addr uint64) []symbol {
	if st == nil {
		return nil
	}
	idx := st.byAddr[addr]
	out := make([]symbol, len(idx))
	for i, j := range idx {
		out[i] = st.syms[j]
	}
	return out
}

// cloneName returns the symbol at addr that names a gcc clone of the
// function name ("helper.constprop.0", "foo.isra.0", "bar.part.0"), or name
// itself when no such symbol is there.
func (st *symtab) cloneName(addr uint64, name string) string {
	syms := st.at(addr)
	for _, s := range syms {
		if s.name == name {
			return name
		}
	}
	for _, s := range syms {
		if rest, ok := strings.CutPrefix(s.name, name+"."); ok && isCloneSuffix(rest) {
			return s.name
		}
	}
	return name
}

// mangledAt returns the mangled symbol at addr that names the function
// called plain in DWARF (a C++ "_ZL5twicei" or Rust "_ZN...5twice..." for
// "twice"), or plain when there is none. The plain name must appear in the
// mangled one as a length-prefixed component, as both manglings write it.
func (st *symtab) mangledAt(addr uint64, plain string) string {
	if plain == "" {
		return plain
	}
	component := strconv.Itoa(len(plain)) + plain
	for _, s := range st.at(addr) {
		if (strings.HasPrefix(s.name, "_Z") || strings.HasPrefix(s.name, "_R")) && strings.Contains(s.name, component) {
			return s.name
		}
	}
	return plain
}

// isCloneSuffix reports whether s looks like gcc's clone suffixes: dot
// separated words of lowercase letters and underscores, or numbers
// ("constprop.0", "isra.0", "part.1.lto_priv.0").
func isCloneSuffix(s string) bool {
	for w := range strings.SplitSeq(s, ".") {
		if w == "" {
			return false
		}
		for _, c := range w {
			if !(c >= 'a' && c <= 'z' || c == '_' || c >= '0' && c <= '9') {
				return false
			}
		}
	}
	return true
}

// symbolFuncs returns a Func for every function symbol at an address no
// function of have covers, with cold parts ("foo.cold", "foo.cold.1") joined
// to their parent.
func symbolFuncs(st *symtab, have []Func, module string) []Func {
	if st == nil || len(st.syms) == 0 {
		return nil
	}
	covered := coverage(have)
	var out []Func
	var outSyms []symbol
	for i, s := range st.syms {
		if i > 0 && st.syms[i-1].value == s.value || covered.contains(s.value) {
			continue // an alias of the previous symbol, or known from DWARF
		}
		out = append(out, Func{
			Name:     s.name,
			Entry:    s.value,
			Ranges:   []Range{{s.value, s.value + s.size}},
			Unit:     -1,
			Source:   module,
			External: s.bind != elf.STB_LOCAL,
		})
		outSyms = append(outSyms, s)
	}
	return joinCold(out, outSyms)
}

// joinCold moves every "P.cold" or "P.cold.N" function into its parent P:
// the P of the same source file (STT_FILE group) if there is one, else the
// only P. An orphan cold part stays a function of its own.
func joinCold(funcs []Func, syms []symbol) []Func {
	byName := make(map[string][]int)
	for i, s := range syms {
		byName[s.name] = append(byName[s.name], i)
	}
	drop := make([]bool, len(funcs))
	for i, s := range syms {
		parent, ok := coldParent(s.name)
		if !ok {
			continue
		}
		p := -1
		for _, j := range byName[parent] {
			if syms[j].group == s.group && s.group >= 0 {
				p = j
				break
			}
		}
		if cands := byName[parent]; p < 0 && len(cands) == 1 {
			p = cands[0]
		}
		if p < 0 || drop[p] {
			continue
		}
		funcs[p].Ranges = append(funcs[p].Ranges, funcs[i].Ranges...)
		drop[i] = true
	}
	out := funcs[:0]
	for i, f := range funcs {
		if !drop[i] {
			out = append(out, f)
		}
	}
	return out
}

// coldParent returns P for "P.cold" and "P.cold.N".
func coldParent(name string) (string, bool) {
	i := strings.LastIndex(name, ".cold")
	if i <= 0 {
		return "", false
	}
	rest := name[i+len(".cold"):]
	if rest != "" {
		n, ok := strings.CutPrefix(rest, ".")
		if !ok || n == "" || strings.Trim(n, "0123456789") != "" {
			return "", false
		}
	}
	return name[:i], true
}

// intervals is a sorted list of disjoint address ranges.
type intervals []Range

// coverage merges the ranges of funcs.
func coverage(funcs []Func) intervals {
	var all intervals
	for _, f := range funcs {
		all = append(all, f.Ranges...)
	}
	slices.SortFunc(all, func(a, b Range) int { return cmp.Compare(a.Low, b.Low) })
	out := all[:0]
	for _, r := range all {
		if n := len(out); n > 0 && r.Low <= out[n-1].High {
			out[n-1].High = max(out[n-1].High, r.High)
			continue
		}
		out = append(out, r)
	}
	return out
}

// contains reports whether addr lies in one of the intervals.
func (iv intervals) contains(addr uint64) bool {
	i, _ := slices.BinarySearchFunc(iv, addr, func(r Range, a uint64) int {
		switch {
		case r.High <= a:
			return -1
		case r.Low > a:
			return 1
		}
		return 0
	})
	return i < len(iv) && iv[i].Low <= addr && addr < iv[i].High
}
