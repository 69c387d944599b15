package dwarf

import (
	"bytes"
	"compress/zlib"
	"debug/elf"
	"encoding/binary"
	"strings"
	"testing"
)

// Abbreviations of the synthetic units.
var synthAbbrevs = encodeAbbrevs([]abbrev{
	{1, dwTagCompileUnit, true, [][2]uint64{{dwAtName, dwFormString}, {dwAtLanguage, dwFormData1}}},
	{2, dwTagSubprogram, false, [][2]uint64{{dwAtName, dwFormString}, {dwAtLowpc, dwFormAddr}, {dwAtHighpc, dwFormData4}, {dwAtExternal, dwFormFlagPresent}}},
	{3, dwTagSubprogram, false, [][2]uint64{{dwAtName, dwFormGNUStrpAlt}, {dwAtLowpc, dwFormAddr}, {dwAtHighpc, dwFormData4}}},
	{4, dwTagSubprogram, false, [][2]uint64{{dwAtAbstractOrigin, dwFormGNURefAlt}, {dwAtLowpc, dwFormAddr}, {dwAtHighpc, dwFormData4}}},
	{5, dwTagSubprogram, false, [][2]uint64{{dwAtSpecification, dwFormRef4}, {dwAtLowpc, dwFormAddr}, {dwAtHighpc, dwFormData4}}},
})

// cuDIE is the unit DIE of the synthetic units: "a.c", DW_LANG_C99. It is
// 6 bytes long, so the first DIE after it is at offset 11+6 = 17.
func cuDIE() []byte { return append([]byte{1}, "a.c\x00\x0c"...) }

// subDIE is a named subprogram at [low, low+size) (abbreviation 2).
func subDIE(b []byte, name string, low uint64, size uint32) []byte {
	b = append(b, 2)
	b = append(b, name+"\x00"...)
	return le32(le64(b, low), size)
}

// altDIE is a subprogram whose name (abbreviation 3) or abstract origin
// (abbreviation 4) lies in a dwz alternate file.
func altDIE(b []byte, code byte, altOff uint32, low uint64, size uint32) []byte {
	b = append(b, code)
	return le32(le64(le32(b, altOff), low), size)
}

// specDIE is a subprogram with a DW_AT_specification to the DIE at ref.
func specDIE(b []byte, ref uint32, low uint64, size uint32) []byte {
	b = append(append(b, 5), 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(b[len(b)-4:], ref)
	return le32(le64(b, low), size)
}

// dwzFile has three functions: one named in the file, one whose name and
// one whose abstract origin lie in a dwz alternate file; its symbol table
// names all three.
func dwzFile() []byte {
	const T = synthTextAddr
	dies := cuDIE()
	dies = subDIE(dies, "good", T, 8)
	dies = altDIE(dies, 3, 0x10, T+8, 8)
	dies = altDIE(dies, 4, 0x20, T+16, 8)
	dies = append(dies, 0)
	return synthDWARF(synthAbbrevs, unit4(dies), []synthSym{
		{"good", T, 8, true},
		{"alt_named", T + 8, 8, true},
		{"alt_origin", T + 16, 8, false},
	})
}

// TestDWZ checks that references into a dwz alternate file, which the
// standard library leaves unresolved, give a warning and names from the
// symbol table, never empty or wrong names; the rest of the DIE (unit,
// ranges) is kept.
func TestDWZ(t *testing.T) {
	const T = synthTextAddr
	f, err := newFile(bytes.NewReader(dwzFile()), "dwz", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !f.HasDWARF || len(f.Units) != 1 || f.Units[0].Language != "c" {
		t.Fatalf("HasDWARF %v units %+v", f.HasDWARF, f.Units)
	}
	if len(f.Warnings) != 1 || !strings.Contains(f.Warnings[0], "uses dwz") || !strings.Contains(f.Warnings[0], "unsupported") {
		t.Errorf("warnings %q, want one saying dwz is unsupported", f.Warnings)
	}
	want := []Func{
		{Name: "good", Entry: T, Ranges: []Range{{T, T + 8}}, Unit: 0, Source: "a.o", External: true},
		{Name: "alt_named", Entry: T + 8, Ranges: []Range{{T + 8, T + 16}}, Unit: 0, Source: "a.o", External: true},
		{Name: "alt_origin", Entry: T + 16, Ranges: []Range{{T + 16, T + 24}}, Unit: 0, Source: "a.o"},
	}
	checkFuncs(t, f.Funcs, want)
}

// checkFuncs compares functions field by field.
func checkFuncs(t *testing.T, got, want []Func) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d functions %+v, want %d %+v", len(got), got, len(want), want)
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Name != w.Name || g.Entry != w.Entry || !rangesEqual(g.Ranges, w.Ranges) || g.Unit != w.Unit || g.Source != w.Source || g.External != w.External {
			t.Errorf("function %d: %+v, want %+v", i, g, w)
		}
	}
}

func rangesEqual(a, b []Range) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// hostileFile has specification cycles, a function the linker dropped,
// one outside every segment, and one good function, "ok" at
// synthTextAddr+32.
func hostileFile() []byte {
	const T = synthTextAddr
	dies := cuDIE()
	// A specification cycle: the DIE at 17 refers to itself, and the two
	// after it to each other.
	dies = specDIE(dies, 17, T, 4)
	second := uint32(11 + len(dies))
	dies = specDIE(dies, second+17, T+4, 4)
	dies = specDIE(dies, second, T+8, 4)
	// A function the linker dropped, and one outside every segment.
	dies = subDIE(dies, "ghost", 0, 16)
	dies = subDIE(dies, "far", 0x900000, 16)
	dies = subDIE(dies, "ok", T+32, 8)
	dies = append(dies, 0)
	return synthDWARF(synthAbbrevs, unit4(dies), nil)
}

func TestHostileDWARF(t *testing.T) {
	const T = synthTextAddr
	f, err := newFile(bytes.NewReader(hostileFile()), "hostile", nil)
	if err != nil {
		t.Fatal(err)
	}
	// The cycles end nameless, so they are left out; with no symbol table
	// nothing covers them.
	checkFuncs(t, f.Funcs, []Func{{Name: "ok", Entry: T + 32, Ranges: []Range{{T + 32, T + 40}}, Unit: 0, Source: "a.o", External: true}})
	if len(f.Warnings) != 1 || !strings.Contains(f.Warnings[0], `1 ranges outside every executable segment ignored (first in "far")`) {
		t.Errorf("warnings %q, want one about far", f.Warnings)
	}
}

// bombFile has a zlib .debug_info of a few stored bytes that claims to
// inflate to 1 TiB.
func bombFile() []byte {
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write([]byte{0})
	zw.Close()
	chdr := make([]byte, 24) // Elf64_Chdr
	binary.LittleEndian.PutUint32(chdr, uint32(elf.COMPRESS_ZLIB))
	binary.LittleEndian.PutUint64(chdr[8:], 1<<40)
	binary.LittleEndian.PutUint64(chdr[16:], 1)
	return synthELF([]synthSection{
		{name: ".text", typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, data: synthText},
		{name: ".debug_info", typ: elf.SHT_PROGBITS, flags: elf.SHF_COMPRESSED, data: append(chdr, z.Bytes()...)},
	})
}

func TestCompressionBomb(t *testing.T) {
	f, err := newFile(bytes.NewReader(bombFile()), "bomb", nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.HasDWARF || len(f.Warnings) != 1 || !strings.Contains(f.Warnings[0], "implausible") {
		t.Errorf("HasDWARF %v, warnings %q; want false and one about the size", f.HasDWARF, f.Warnings)
	}
}
