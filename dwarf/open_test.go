package dwarf

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	good := synthDWARF(synthAbbrevs, unit4(append(subDIE(cuDIE(), "f", synthTextAddr, 4), 0)), nil)
	relocatable := bytes.Clone(good)
	binary.LittleEndian.PutUint16(relocatable[16:], uint16(elf.ET_REL))
	core := bytes.Clone(good)
	binary.LittleEndian.PutUint16(core[16:], uint16(elf.ET_CORE))
	files := map[string][]byte{
		"text":        []byte("#!/bin/sh\necho hello\n"),
		"empty":       nil,
		"magic-only":  []byte(elf.ELFMAG),
		"truncated":   good[:100],
		"relocatable": relocatable,
		"core":        core,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goodPath := filepath.Join(dir, "good")
	if err := os.WriteFile(goodPath, good, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "directory"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		want error
	}{
		{"text", ErrNotELF},
		{"empty", ErrNotELF},
		{"magic-only", ErrNotELF},
		{"truncated", ErrNotELF},
		{"relocatable", ErrNotExecutable},
		{"core", ErrNotExecutable},
		{"directory", syscall.EISDIR},
		{"missing", fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name)
			f, err := Open(path)
			if !errors.Is(err, tt.want) || f != nil {
				t.Fatalf("Open(%s) = %v, %v; want nil, %v", tt.name, f, err, tt.want)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name %s", err, path)
			}
			// The same file named as a debug file is refused alike.
			if f, err := OpenWithDebug(goodPath, path); !errors.Is(err, tt.want) || f != nil {
				t.Errorf("OpenWithDebug(good, %s) = %v, %v; want nil, %v", tt.name, f, err, tt.want)
			}
		})
	}
}

func TestCode(t *testing.T) {
	const T = synthTextAddr
	data := synthDWARF(synthAbbrevs, unit4(append(subDIE(cuDIE(), "f", T, 4), 0)), nil)
	path := filepath.Join(t.TempDir(), "synth")
	if err := os.WriteFile(path, data, 0o755); err != nil {
		t.Fatal(err)
	}
	f := open(t, path)
	exec := f.ExecRanges()
	end := uint64(synthTextAddr + len(synthText)) // the segment ends with .text
	if len(exec) != 1 || exec[0] != (Range{synthBase, end}) {
		t.Fatalf("ExecRanges = %x, want [%#x %#x)", exec, synthBase, end)
	}
	if f.LinkBase != synthBase || f.PIE || f.Shared || f.BuildID != nil {
		t.Errorf("LinkBase %#x PIE %v Shared %v BuildID %x", f.LinkBase, f.PIE, f.Shared, f.BuildID)
	}
	tests := []struct {
		addr uint64
		n    int
		ok   bool
	}{
		{T, 4, true},
		{T, 0, true},
		{end - 4, 4, true},
		{end - 4, 5, false}, // crosses the segment's end
		{end, 1, false},
		{synthBase - 1, 1, false},
		{T, -1, false},
		{^uint64(0), 2, false},
	}
	for _, tt := range tests {
		code, err := f.Code(tt.addr, tt.n)
		if (err == nil) != tt.ok {
			t.Errorf("Code(%#x, %d) = % x, %v; want ok %v", tt.addr, tt.n, code, err, tt.ok)
			continue
		}
		if tt.ok && (len(code) != tt.n || tt.addr >= T && !bytes.Equal(code, synthText[:tt.n])) {
			t.Errorf("Code(%#x, %d) = % x", tt.addr, tt.n, code)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Code(T, 1); err == nil {
		t.Error("Code after Close succeeded")
	}
}

// TestGoarch spells machines as GOARCH does, one of two spellings by
// class or byte order, and a machine GOARCH has none for as debug/elf.
func TestGoarch(t *testing.T) {
	for _, c := range []struct {
		machine elf.Machine
		class   elf.Class
		data    elf.Data
		want    string
	}{
		{elf.EM_X86_64, elf.ELFCLASS64, elf.ELFDATA2LSB, "amd64"},
		{elf.EM_AARCH64, elf.ELFCLASS64, elf.ELFDATA2LSB, "arm64"},
		{elf.EM_386, elf.ELFCLASS32, elf.ELFDATA2LSB, "386"},
		{elf.EM_RISCV, elf.ELFCLASS64, elf.ELFDATA2LSB, "riscv64"},
		{elf.EM_RISCV, elf.ELFCLASS32, elf.ELFDATA2LSB, "EM_RISCV"},
		{elf.EM_PPC64, elf.ELFCLASS64, elf.ELFDATA2LSB, "ppc64le"},
		{elf.EM_PPC64, elf.ELFCLASS64, elf.ELFDATA2MSB, "ppc64"},
		{elf.EM_SPARCV9, elf.ELFCLASS64, elf.ELFDATA2MSB, "EM_SPARCV9"},
	} {
		f := &elf.File{FileHeader: elf.FileHeader{Machine: c.machine, Class: c.class, Data: c.data}}
		if got := goarch(f); got != c.want {
			t.Errorf("goarch(%v, %v, %v) = %q, want %q", c.machine, c.class, c.data, got, c.want)
		}
	}
}
