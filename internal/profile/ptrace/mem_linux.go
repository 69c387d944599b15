//go:build linux && (amd64 || arm64)

package ptrace

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// Mem is the memory of a traced process, through /proc/pid/mem: it reads and
// writes any mapping, read-only text included (the kernel writes with
// FOLL_FORCE and keeps the instruction cache coherent). The kernel checks
// the right to open that file, not each read or write: a file opened while
// the program could be traced stays usable after the program made itself
// non-dumpable (prctl(PR_SET_DUMPABLE, 0), as ssh-agent does), when opening
// it again is refused to an unprivileged tracer (and so are
// PTRACE_PEEKDATA and PTRACE_POKEDATA).
type Mem struct{ f *os.File }

// OpenMem opens the memory of process pid.
func OpenMem(pid int) (*Mem, error) {
	f, err := os.OpenFile(fmt.Sprintf("/proc/%d/mem", pid), os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	return &Mem{f: f}, nil
}

// ReadMem reads len(b) bytes at addr.
func (m *Mem) ReadMem(addr uint64, b []byte) error {
	n, err := unix.Pread(int(m.f.Fd()), b, int64(addr))
	if err != nil {
		return fmt.Errorf("read memory at %#x: %w", addr, err)
	}
	if n != len(b) {
		return fmt.Errorf("read memory at %#x: %d of %d bytes", addr, n, len(b))
	}
	return nil
}

// WriteMem writes b at addr.
func (m *Mem) WriteMem(addr uint64, b []byte) error {
	n, err := unix.Pwrite(int(m.f.Fd()), b, int64(addr))
	if err != nil {
		return fmt.Errorf("write memory at %#x: %w", addr, err)
	}
	if n != len(b) {
		return fmt.Errorf("write memory at %#x: %d of %d bytes", addr, n, len(b))
	}
	return nil
}

// Close closes the memory file.
func (m *Mem) Close() error { return m.f.Close() }

// Maps is /proc/pid/maps of a traced process, opened once and read again
// from its start at each Read: like /proc/pid/mem, the file opened before
// the program made itself non-dumpable stays readable after.
type Maps struct{ f *os.File }

// OpenMaps opens the memory map of process pid.
func OpenMaps(pid int) (*Maps, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, err
	}
	return &Maps{f: f}, nil
}

// Read returns the whole memory map as the kernel prints it now.
func (m *Maps) Read() ([]byte, error) {
	var data []byte
	buf := make([]byte, 64<<10)
	for {
		n, err := m.f.ReadAt(buf, int64(len(data)))
		data = append(data, buf[:n]...)
		if err == io.EOF || (err == nil && n == 0) {
			return data, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// Close closes the memory map.
func (m *Maps) Close() error { return m.f.Close() }
