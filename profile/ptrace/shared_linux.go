//go:build linux && (amd64 || arm64)

package ptrace

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Shared is memory PROFILE shares with the program: a memfd the program
// created and mapped, mapped here too (MapShared). What the program writes
// there is read here without stopping it, and survives the program's
// crash.
type Shared struct {
	fd  int // -1: none is kept open
	mem []byte
}

// NewShared creates size bytes of zeroed shared memory (pages are
// allocated when first written), PROFILE's alone: a stand-in for the
// program's in tests.
func NewShared(size int) (*Shared, error) {
	fd, err := unix.MemfdCreate("sprof-counters", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("size shared memory: %w", err)
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("map shared memory: %w", err)
	}
	return &Shared{fd: fd, mem: mem}, nil
}

// MapShared maps the size bytes of the memfd that stopped process pid
// holds as its file descriptor fd, through /proc/PID/fd/FD. The program
// makes the memory and PROFILE opens it, not the other way round: opening
// another process's /proc/PID/fd/N takes the right to trace it, which
// PROFILE has over the program and a program run by another user (root
// attaching to it) has not over PROFILE. The file must be a memfd of
// that size: the program's threads are stopped, but the descriptor is
// checked rather than trusted.
func MapShared(pid, fd, size int) (*Shared, error) {
	path := fmt.Sprintf("/proc/%d/fd/%d", pid, fd)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if link, err := os.Readlink(path); err != nil || !strings.HasPrefix(link, "/memfd:") {
		return nil, fmt.Errorf("%s is not the memory PROFILE asked for (%s)", path, link)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	if st.Size != int64(size) {
		return nil, fmt.Errorf("%s holds %d bytes, not %d", path, st.Size, size)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", path, err)
	}
	return &Shared{fd: -1, mem: mem}, nil
}

// Bytes is PROFILE's view of the memory.
func (s *Shared) Bytes() []byte { return s.mem }

// Close unmaps the memory (and closes the memfd NewShared made).
func (s *Shared) Close() error {
	err := unix.Munmap(s.mem)
	if s.fd >= 0 {
		if cerr := unix.Close(s.fd); err == nil {
			err = cerr
		}
	}
	return err
}

// AuxValue returns the value of entry typ of process pid's auxiliary
// vector (/proc/PID/auxv), 0 when absent.
func AuxValue(pid int, typ uint64) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/auxv", pid))
	if err != nil {
		return 0, err
	}
	for i := 0; i+16 <= len(b); i += 16 {
		k, v := le64(b[i:]), le64(b[i+8:])
		if k == typ {
			return v, nil
		}
		if k == 0 {
			break
		}
	}
	return 0, nil
}

func le64(b []byte) uint64 {
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// StackLimit returns process pid's soft limit of its main thread's stack
// (RLIMIT_STACK), how far that stack may grow.
func StackLimit(pid int) (uint64, error) {
	var rl unix.Rlimit
	if err := unix.Prlimit(pid, unix.RLIMIT_STACK, nil, &rl); err != nil {
		return 0, fmt.Errorf("stack limit of process %d: %w", pid, err)
	}
	return rl.Cur, nil
}
