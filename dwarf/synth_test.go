package dwarf

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
)

// This file writes small ELF files by hand, for what compilers do not make
// on demand: dwz references, hostile DWARF, fuzz seeds.

// synthBase is the link address of file offset 0 of synthetic files.
const synthBase = 0x400000

// synthSection is a section of a synthetic ELF file. Allocated sections
// get the address synthBase + their file offset.
type synthSection struct {
	name    string
	typ     elf.SectionType
	flags   elf.SectionFlag
	data    []byte
	link    uint32
	info    uint32
	entsize uint64
}

// synthELF lays out an x86-64 ET_EXEC file: the header, one read-execute
// PT_LOAD from offset 0 over the allocated sections, the sections, and the
// section headers with .shstrtab last.
func synthELF(secs []synthSection) []byte {
	const ehsize, phsize, shsize = 64, 56, 64
	var shstr bytes.Buffer
	shstr.WriteByte(0)
	nameOff := make([]uint32, len(secs)+1)
	for i, s := range secs {
		nameOff[i] = uint32(shstr.Len())
		shstr.WriteString(s.name + "\x00")
	}
	nameOff[len(secs)] = uint32(shstr.Len())
	shstr.WriteString(".shstrtab\x00")
	secs = append(secs, synthSection{name: ".shstrtab", typ: elf.SHT_STRTAB, data: shstr.Bytes()})

	le := binary.LittleEndian
	body := make([]byte, ehsize+phsize)
	offs := make([]uint64, len(secs))
	var loadEnd uint64
	for i, s := range secs {
		for len(body)%16 != 0 {
			body = append(body, 0)
		}
		offs[i] = uint64(len(body))
		body = append(body, s.data...)
		if s.flags&elf.SHF_ALLOC != 0 {
			loadEnd = uint64(len(body))
		}
	}
	for len(body)%8 != 0 {
		body = append(body, 0)
	}
	shoff := uint64(len(body))
	body = append(body, make([]byte, shsize)...) // SHN_UNDEF
	for i, s := range secs {
		sh := make([]byte, shsize)
		le.PutUint32(sh[0:], nameOff[i])
		le.PutUint32(sh[4:], uint32(s.typ))
		le.PutUint64(sh[8:], uint64(s.flags))
		if s.flags&elf.SHF_ALLOC != 0 {
			le.PutUint64(sh[16:], synthBase+offs[i])
		}
		le.PutUint64(sh[24:], offs[i])
		le.PutUint64(sh[32:], uint64(len(s.data)))
		le.PutUint32(sh[40:], s.link)
		le.PutUint32(sh[44:], s.info)
		le.PutUint64(sh[48:], 1)
		le.PutUint64(sh[56:], s.entsize)
		body = append(body, sh...)
	}

	h := body[:ehsize]
	copy(h, elf.ELFMAG)
	h[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	h[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	h[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	le.PutUint16(h[16:], uint16(elf.ET_EXEC))
	le.PutUint16(h[18:], uint16(elf.EM_X86_64))
	le.PutUint32(h[20:], uint32(elf.EV_CURRENT))
	le.PutUint64(h[32:], ehsize) // phoff
	le.PutUint64(h[40:], shoff)
	le.PutUint16(h[52:], ehsize)
	le.PutUint16(h[54:], phsize)
	le.PutUint16(h[56:], 1)
	le.PutUint16(h[58:], shsize)
	le.PutUint16(h[60:], uint16(len(secs)+1))
	le.PutUint16(h[62:], uint16(len(secs))) // .shstrtab, last

	ph := body[ehsize : ehsize+phsize]
	le.PutUint32(ph[0:], uint32(elf.PT_LOAD))
	le.PutUint32(ph[4:], uint32(elf.PF_R|elf.PF_X))
	le.PutUint64(ph[16:], synthBase)
	le.PutUint64(ph[24:], synthBase)
	le.PutUint64(ph[32:], loadEnd)
	le.PutUint64(ph[40:], loadEnd)
	le.PutUint64(ph[48:], 0x1000)
	return body
}

// synthText is the code of synthetic files: 64 bytes of int3.
var synthText = bytes.Repeat([]byte{0xcc}, 64)

// synthTextAddr is the address of .text in a synthetic file whose first
// section is .text: after the ELF and program headers (120 bytes), aligned
// to 16.
const synthTextAddr = synthBase + 128

// synthSym is a function symbol of a synthetic file.
type synthSym struct {
	name        string
	value, size uint64
	global      bool
}

// symtabSections makes .symtab and .strtab; .symtab links to the section
// index strtabIndex (1-based, as ELF counts).
func symtabSections(syms []synthSym, textIndex uint16, strtabIndex uint32) []synthSection {
	le := binary.LittleEndian
	var str bytes.Buffer
	str.WriteByte(0)
	tab := make([]byte, 24) // the null symbol
	// Locals first, as ELF requires.
	var ordered []synthSym
	for _, s := range syms {
		if !s.global {
			ordered = append(ordered, s)
		}
	}
	firstGlobal := uint32(len(ordered) + 1)
	for _, s := range syms {
		if s.global {
			ordered = append(ordered, s)
		}
	}
	for _, s := range ordered {
		e := make([]byte, 24)
		le.PutUint32(e[0:], uint32(str.Len()))
		str.WriteString(s.name + "\x00")
		bind := elf.STB_LOCAL
		if s.global {
			bind = elf.STB_GLOBAL
		}
		e[4] = elf.ST_INFO(bind, elf.STT_FUNC)
		le.PutUint16(e[6:], textIndex)
		le.PutUint64(e[8:], s.value)
		le.PutUint64(e[16:], s.size)
		tab = append(tab, e...)
	}
	return []synthSection{
		{name: ".symtab", typ: elf.SHT_SYMTAB, data: tab, link: strtabIndex, info: firstGlobal, entsize: 24},
		{name: ".strtab", typ: elf.SHT_STRTAB, data: str.Bytes()},
	}
}

// uleb appends the unsigned LEB128 encoding of v.
func uleb(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			c |= 0x80
		}
		b = append(b, c)
		if v == 0 {
			return b
		}
	}
}

// DWARF constants the synthetic units use (DWARF 4 section 7.5).
const (
	dwTagCompileUnit = 0x11
	dwTagSubprogram  = 0x2e

	dwAtName           = 0x03
	dwAtLowpc          = 0x11
	dwAtHighpc         = 0x12
	dwAtLanguage       = 0x13
	dwAtAbstractOrigin = 0x31
	dwAtExternal       = 0x3f
	dwAtSpecification  = 0x47

	dwFormAddr        = 0x01
	dwFormData4       = 0x06
	dwFormData1       = 0x0b
	dwFormString      = 0x08
	dwFormRef4        = 0x13
	dwFormFlagPresent = 0x19
	dwFormGNURefAlt   = 0x1f20
	dwFormGNUStrpAlt  = 0x1f21
)

// abbrev is one abbreviation: code, tag, children, attribute/form pairs.
type abbrev struct {
	code     uint64
	tag      uint64
	children bool
	attrs    [][2]uint64
}

// encodeAbbrevs makes a .debug_abbrev section.
func encodeAbbrevs(abbrevs []abbrev) []byte {
	var b []byte
	for _, a := range abbrevs {
		b = uleb(b, a.code)
		b = uleb(b, a.tag)
		if a.children {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
		for _, af := range a.attrs {
			b = uleb(b, af[0])
			b = uleb(b, af[1])
		}
		b = append(b, 0, 0)
	}
	return append(b, 0)
}

// unit4 wraps DIE bytes into a DWARF 4 unit header (32-bit, abbrev offset
// 0, 8-byte addresses). DIE offsets in the section are 11 + their offset
// in dies.
func unit4(dies []byte) []byte {
	b := make([]byte, 11)
	binary.LittleEndian.PutUint32(b, uint32(7+len(dies)))
	binary.LittleEndian.PutUint16(b[4:], 4)
	b[10] = 8
	return append(b, dies...)
}

// le32 and le64 append little-endian integers.
func le32(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }
func le64(b []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(b, v) }

// synthDWARF makes a file with .text, the DWARF sections given and a
// symbol table.
func synthDWARF(abbrevs, info []byte, syms []synthSym) []byte {
	secs := []synthSection{
		{name: ".text", typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, data: synthText},
		{name: ".debug_abbrev", typ: elf.SHT_PROGBITS, data: abbrevs},
		{name: ".debug_info", typ: elf.SHT_PROGBITS, data: info},
	}
	if syms != nil {
		// .text is section 1; .strtab follows .symtab.
		secs = append(secs, symtabSections(syms, 1, uint32(len(secs)+2))...)
	}
	return synthELF(secs)
}
