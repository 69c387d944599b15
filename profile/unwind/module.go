package unwind

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/go-delve/delve/pkg/dwarf/frame"
)

// Module is the call frame information of one ELF file as mapped in a
// process: its FDEs at run-time addresses, sorted, with their CFA programs
// made ready for delve's interpreter. A Module is built once per mapped
// file and read by any number of unwinds at once.
type Module struct {
	Path  string
	Arch  Arch
	Bias  uint64 // run-time address minus link-time address
	fdes  frame.FrameDescriptionEntries
	cache rowCache
}

// ErrNoCFI is returned by [Load] for a file with neither .eh_frame nor
// .debug_frame.
var ErrNoCFI = errors.New("no call frame information")

// Load reads the call frame information of the ELF file at path, loaded
// with the given bias (run-time minus link-time addresses): .eh_frame and,
// when present, .debug_frame, which may cover functions .eh_frame does
// not. The file must be of arch.
func Load(path string, bias uint64, arch Arch) (*Module, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load CFI: %w", err)
	}
	defer f.Close()
	m, err := FromELF(f, bias, arch)
	if err != nil {
		return nil, fmt.Errorf("load CFI of %s: %w", path, err)
	}
	m.Path = path
	return m, nil
}

// LoadMapping is [Load] of the ELF file at path as a process maps it: the
// mapping that begins at run-time address start holds the file's bytes
// from offset on (as /proc/PID/maps shows them), which gives the bias
// from the program header of the loadable segment they are in.
func LoadMapping(path string, start, offset uint64, arch Arch) (*Module, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load CFI: %w", err)
	}
	defer f.Close()
	bias, err := mappingBias(f.Progs, start, offset)
	if err != nil {
		return nil, fmt.Errorf("load CFI of %s: %w", path, err)
	}
	m, err := FromELF(f, bias, arch)
	if err != nil {
		return nil, fmt.Errorf("load CFI of %s: %w", path, err)
	}
	m.Path = path
	return m, nil
}

// FromImage is [Load] of an ELF image held in memory, as a process maps
// it from start: the vDSO, which the kernel maps into every process and
// no file holds (its image read from the process's memory).
func FromImage(image []byte, start uint64, arch Arch) (m *Module, err error) {
	defer func() {
		if r := recover(); r != nil { // (debug/elf, on a malformed image)
			m, err = nil, fmt.Errorf("load CFI of an image: malformed ELF: %v", r)
		}
	}()
	f, err := elf.NewFile(bytes.NewReader(image))
	if err != nil {
		return nil, fmt.Errorf("load CFI of an image: %w", err)
	}
	defer f.Close()
	bias, err := mappingBias(f.Progs, start, 0)
	if err != nil {
		return nil, fmt.Errorf("load CFI of an image: %w", err)
	}
	return FromELF(f, bias, arch)
}

// mappingBias returns the bias of a file whose bytes from offset on are
// mapped at start, executable: the executable loadable segment holding
// that offset is mapped from its start rounded down to a page (of at
// most maxPage bytes), its p_vaddr at p_offset's place (the kernel's
// load_elf_binary and the dynamic linker both map it so).
func mappingBias(progs []*elf.Prog, start, offset uint64) (uint64, error) {
	const maxPage = 64 << 10
	for _, p := range progs {
		if p.Type != elf.PT_LOAD || p.Flags&elf.PF_X == 0 || p.Filesz == 0 {
			continue
		}
		if offset >= p.Off&^(maxPage-1) && offset < p.Off+p.Filesz {
			// start maps offset: p_vaddr is at start + (p_offset - offset).
			return start + (p.Off - offset) - p.Vaddr, nil
		}
	}
	return 0, fmt.Errorf("no executable segment holds file offset %#x", offset)
}

// archMachines are the ELF machines of the architectures.
var archMachines = map[Arch]elf.Machine{AMD64: elf.EM_X86_64, ARM64: elf.EM_AARCH64}

// FromELF is [Load] of an open ELF file.
func FromELF(f *elf.File, bias uint64, arch Arch) (*Module, error) {
	want := archMachines[arch]
	if want == 0 {
		return nil, fmt.Errorf("unknown architecture %v", arch)
	}
	if f.Machine != want || f.Class != elf.ELFCLASS64 || f.ByteOrder != binary.LittleEndian {
		return nil, fmt.Errorf("machine %v %v, want %v (%v)", f.Machine, f.Class, want, arch)
	}
	var sections []Section
	for _, name := range []string{".eh_frame", ".debug_frame"} {
		s := f.Section(name)
		if s == nil || s.Type == elf.SHT_NOBITS {
			continue
		}
		data, err := s.Data()
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		sections = append(sections, Section{Data: data, EH: name == ".eh_frame", Addr: s.Addr})
	}
	if len(sections) == 0 {
		return nil, ErrNoCFI
	}
	return Parse(sections, bias, arch)
}

// Section is the content of a CFI section: .eh_frame (EH, at the link-time
// address Addr, which its PC-relative pointers need) or .debug_frame.
type Section struct {
	Data []byte
	EH   bool
	Addr uint64
}

// Parse builds a module from the content of its CFI sections. Bad CFI is
// an error, never a panic.
func Parse(sections []Section, bias uint64, arch Arch) (*Module, error) {
	if _, ok := arch.regs(); !ok {
		return nil, fmt.Errorf("unknown architecture %v", arch)
	}
	m := &Module{Arch: arch, Bias: bias}
	for _, s := range sections {
		name, addr := ".debug_frame", uint64(0)
		if s.EH {
			name, addr = ".eh_frame", s.Addr
			if addr == 0 {
				return nil, fmt.Errorf("parse %s: section address 0", name)
			}
		}
		fdes, err := parseFrame(s.Data, bias, addr)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", name, err)
		}
		if !s.EH {
			fdes = fixVersion4(fdes)
		}
		m.fdes = m.fdes.Append(fdes) // sorted: FDEForPC searches
	}
	prepare(m.fdes, arch)
	return m, nil
}

// parseFrame is delve's frame.Parse, kept from panicking.
func parseFrame(data []byte, bias, ehAddr uint64) (fdes frame.FrameDescriptionEntries, err error) {
	defer func() {
		if r := recover(); r != nil {
			fdes, err = nil, fmt.Errorf("malformed CFI: %v", r)
		}
	}()
	return frame.Parse(data, binary.LittleEndian, bias, addrSize, ehAddr)
}

// fixVersion4 mends the CIEs of version 4 of a .debug_frame (DWARF 4 and
// 5, which clang writes): they hold an address size and a segment
// selector size after the augmentation, which delve does not read, so
// that its code alignment factor is the address size, its data alignment
// factor the segment selector size, its return address column the code
// alignment factor, and its initial instructions begin with the data
// alignment factor and the return address column. The FDEs of a CIE it
// cannot mend (a segment selector, a cut CIE) are dropped.
func fixVersion4(fdes frame.FrameDescriptionEntries) frame.FrameDescriptionEntries {
	bad := map[*frame.CommonInformationEntry]bool{}
	done := map[*frame.CommonInformationEntry]bool{}
	for _, fde := range fdes {
		cie := fde.CIE
		if cie.Version != 4 || done[cie] || bad[cie] {
			continue
		}
		b := cie.InitialInstructions
		daf, i, ok1 := sleb(b, 0)
		ra, i, ok2 := uleb(b, i)
		if !ok1 || !ok2 || cie.CodeAlignmentFactor != addrSize || cie.DataAlignmentFactor != 0 {
			bad[cie] = true
			continue
		}
		cie.CodeAlignmentFactor, cie.DataAlignmentFactor = cie.ReturnAddressRegister, daf
		cie.ReturnAddressRegister, cie.InitialInstructions = ra, b[i:]
		done[cie] = true
	}
	if len(bad) == 0 {
		return fdes
	}
	var kept frame.FrameDescriptionEntries
	for _, fde := range fdes {
		if !bad[fde.CIE] {
			kept = append(kept, fde)
		}
	}
	return kept
}

// prepare rewrites the CFA programs of the CIEs and FDEs for delve
// (cfi.go).
func prepare(fdes frame.FrameDescriptionEntries, arch Arch) {
	cies := map[*frame.CommonInformationEntry]map[uint64][]byte{}
	for _, fde := range fdes {
		rules, ok := cies[fde.CIE]
		if !ok {
			rules = cieRules(fde.CIE.InitialInstructions)
			cies[fde.CIE] = rules
			fde.CIE.InitialInstructions = rewriteCFA(fde.CIE.InitialInstructions, nil, arch)
		}
		fde.Instructions = rewriteCFA(fde.Instructions, rules, arch)
	}
}

// FDEs returns the number of functions (FDEs) the module describes.
func (m *Module) FDEs() int { return len(m.fdes) }

// Covers reports whether the module has CFI for the run-time address pc.
func (m *Module) Covers(pc uint64) bool {
	_, err := m.fdes.FDEForPC(pc)
	return err == nil
}

// find returns the FDE covering pc, or nil.
func (m *Module) find(pc uint64) *frame.FrameDescriptionEntry {
	fde, err := m.fdes.FDEForPC(pc)
	if err != nil {
		return nil
	}
	return fde
}

// establish runs the FDE's CFA program up to pc, kept from panicking
// (delve panics on a program cut short).
func establish(fde *frame.FrameDescriptionEntry, pc uint64) (fc *frame.FrameContext, err error) {
	defer func() {
		if r := recover(); r != nil {
			fc, err = nil, fmt.Errorf("malformed CFA program: %v", r)
		}
	}()
	return fde.EstablishFrame(pc)
}
