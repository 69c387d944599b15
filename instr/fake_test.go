package instr

import (
	"encoding/binary"
	"fmt"
	"maps"
)

// fakeRegs is a register file: 32 registers by DWARF number, the PC and
// the flags; and, where the code reads one, the system counter
// (CNTVCT_EL0), to which a64Exec adds one for every instruction it runs,
// so that times are counts of instructions. The counter is the machine's,
// not the thread's: a clone shares it, and so compares equal whatever it
// reads; nil is none. tp is the thread pointer, TPIDR_EL0, which MRS
// reads (the thread's area, for the books of goroutines).
type fakeRegs struct {
	pc    uint64
	r     [32]uint64
	flags uint64
	ticks *uint64
	tp    uint64
}

func (f *fakeRegs) PC() uint64             { return f.pc }
func (f *fakeRegs) SetPC(v uint64)         { f.pc = v }
func (f *fakeRegs) Reg(n int) uint64       { return f.r[n] }
func (f *fakeRegs) SetReg(n int, v uint64) { f.r[n] = v }
func (f *fakeRegs) Flags() uint64          { return f.flags }
func (f *fakeRegs) SetFlags(v uint64)      { f.flags = v }
func (f *fakeRegs) clone() *fakeRegs       { c := *f; return &c }

// fakeMem is a sparse address space: reading or writing a byte never
// written by poke is an error, unless lenient, when it reads 0.
type fakeMem struct {
	b       map[uint64]byte
	lenient bool
}

func newMem() *fakeMem { return &fakeMem{b: map[uint64]byte{}} }

// poke maps and writes bytes.
func (m *fakeMem) poke(addr uint64, b []byte) *fakeMem {
	for i, v := range b {
		m.b[addr+uint64(i)] = v
	}
	return m
}

// poke64 maps and writes a little-endian word.
func (m *fakeMem) poke64(addr, v uint64) *fakeMem {
	return m.poke(addr, binary.LittleEndian.AppendUint64(nil, v))
}

// peek64 reads a little-endian word, 0 where unmapped.
func (m *fakeMem) peek64(addr uint64) uint64 {
	var b [8]byte
	for i := range b {
		b[i] = m.b[addr+uint64(i)]
	}
	return binary.LittleEndian.Uint64(b[:])
}

func (m *fakeMem) clone() *fakeMem { return &fakeMem{b: maps.Clone(m.b), lenient: m.lenient} }

func (m *fakeMem) ReadMem(addr uint64, b []byte) error {
	for i := range b {
		v, ok := m.b[addr+uint64(i)]
		if !ok && !m.lenient {
			return fmt.Errorf("read %#x: unmapped", addr+uint64(i))
		}
		b[i] = v
	}
	return nil
}

func (m *fakeMem) WriteMem(addr uint64, b []byte) error {
	for i, v := range b {
		a := addr + uint64(i)
		if _, ok := m.b[a]; !ok && !m.lenient {
			return fmt.Errorf("write %#x: unmapped", a)
		}
		m.b[a] = v
	}
	return nil
}
