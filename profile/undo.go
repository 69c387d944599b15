// The undo log of an attached run: every byte PROFILE writes over the
// process's code, with what it replaced, written back before PROFILE lets
// the process go (attach.go).

package profile

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/profile/procmaps"
)

// undoMemory is a process's memory that logs, for every write over the
// code of a file mapped executable (the program, its libraries, the
// dynamic linker), the bytes it replaced, so that they can be written
// back (restore). Nothing else is logged: PROFILE's own areas, its
// counters, the stacks that emulated instructions write to.
type undoMemory struct {
	instr.Memory
	// maps reads the process's memory map; known is its last reading.
	maps  func() ([]procmaps.Mapping, error)
	known []procmaps.Mapping
	log   []undoWrite
}

type undoWrite struct {
	addr uint64
	old  []byte
}

// WriteMem writes b at addr, logging what it replaces in a file's code.
func (u *undoMemory) WriteMem(addr uint64, b []byte) error {
	if !u.inFileCode(addr) {
		return u.Memory.WriteMem(addr, b)
	}
	old := make([]byte, len(b))
	if err := u.Memory.ReadMem(addr, old); err != nil {
		return err
	}
	if err := u.Memory.WriteMem(addr, b); err != nil {
		return err
	}
	u.log = append(u.log, undoWrite{addr, old})
	return nil
}

// inFileCode reports whether addr is in an executable mapping of a file,
// reading the map again for an address it does not know (a mapping made
// since).
func (u *undoMemory) inFileCode(addr uint64) bool {
	find := func() (procmaps.Mapping, bool) {
		i, found := slices.BinarySearchFunc(u.known, addr, func(m procmaps.Mapping, a uint64) int {
			switch {
			case m.End <= a:
				return -1
			case m.Start > a:
				return 1
			}
			return 0
		})
		if !found {
			return procmaps.Mapping{}, false
		}
		return u.known[i], true
	}
	m, ok := find()
	if !ok {
		if maps, err := u.maps(); err == nil {
			u.known = maps
			m, ok = find()
		}
	}
	return ok && m.Inode != 0 && strings.Contains(m.Perms, "x")
}

// forget drops the writes in [lo, hi), unmapped.
func (u *undoMemory) forget(lo, hi uint64) {
	u.log = slices.DeleteFunc(u.log, func(w undoWrite) bool { return w.addr >= lo && w.addr < hi })
}

// restore writes back what every write replaced, the last first, and
// empties the log.
func (u *undoMemory) restore() error {
	var errs []error
	for i := len(u.log) - 1; i >= 0; i-- {
		w := u.log[i]
		if err := u.Memory.WriteMem(w.addr, w.old); err != nil {
			errs = append(errs, fmt.Errorf("at %#x: %w", w.addr, err))
		}
	}
	u.log = nil
	return errors.Join(errs...)
}
