package profile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/elfid"
	"github.com/sourceprofiler/sprof/internal/prf"
)

// Shared libraries (docs/linux.md, "Shared libraries"). A
// library of the plan is not mapped at the exec stop: the dynamic linker
// maps the program's DT_NEEDED libraries a little later, and dlopen
// others at any time. The dynamic linker tells debuggers about both
// through its rendezvous: it calls an empty function, _dl_debug_state
// (r_debug's r_brk), after each change to its list of objects, the new
// objects mapped but not yet relocated, their constructors not yet run.
// PROFILE keeps a breakpoint there; at each hit it reads the memory map
// again, plants the libraries of the plan newly mapped, and forgets those
// unmapped (dlclose), so that a second dlopen plants them again, where
// they land then. The counts are kept by item: they add up over loads.

// rtConsistent is r_debug's r_state when the list of objects is stable
// (<link.h>: RT_CONSISTENT 0, RT_ADD 1, RT_DELETE 2); the state word is
// at offset 24 of struct r_debug on a 64-bit system.
const (
	rtConsistent = 0
	rStateOffset = 24
)

// rendezvous is the dynamic linker's breakpoint: the address of
// _dl_debug_state, and of r_debug's state word (0: unknown).
type rendezvous struct {
	brk, state uint64
}

// loaded is an instance of library mi of the plan, mapped and planted.
type loaded struct {
	mi int
	instance
}

// watchLibraries plants the breakpoint of the dynamic linker's
// rendezvous. A program without a dynamic linker (static) loads no
// library: PROFILE says so, and the libraries' counts stay zero.
func (t *tracer) watchLibraries(maps []mapping) error {
	interp, err := elfid.ReadInterpreter(t.cfg.Path)
	if err == nil && interp == "" {
		err = fmt.Errorf("%s is linked statically", filepath.Base(t.cfg.Path))
	}
	var r rendezvous
	if err == nil {
		r, err = t.findRendezvous(interp, maps)
	}
	if err != nil {
		t.cfg.Warn(prf.LibrariesNotFollowed(t.libNames(), err))
		return nil
	}
	code := make([]byte, t.arch.MaxInstLen())
	if err := t.readCode(r.brk, code); err != nil {
		return fmt.Errorf("read the dynamic linker's rendezvous at %#x: %w", r.brk, err)
	}
	d, err := t.arch.Displace(code, r.brk, 0)
	if err != nil || d.Emulate == nil {
		// _dl_debug_state is a bare return everywhere we know of.
		if err == nil {
			err = fmt.Errorf("%s needs an out-of-line slot", d.Inst.Text)
		}
		t.cfg.Warn(prf.LibrariesNotFollowed(t.libNames(), fmt.Errorf("the rendezvous at %#x: %w", r.brk, err)))
		return nil
	}
	bp := t.arch.Breakpoint()
	s := &site{addr: r.brk, orig: code[:len(bp)], meaning: meaning{item: -1, exit: -1, rendezvous: true}, carrying: carrying{disp: d, displaced: true}}
	if err := t.mem.WriteMem(r.brk, bp); err != nil {
		return fmt.Errorf("plant the rendezvous breakpoint at %#x: %w", r.brk, err)
	}
	t.bp.sites[r.brk] = s
	t.rdv = r
	t.explain.rendezvous(r, interp)
	t.loaded = map[uint64]*loaded{}
	return nil
}

// libNames names the plan's libraries, for a warning.
func (t *tracer) libNames() string {
	var names []string
	for _, mi := range t.libs {
		names = append(names, t.plan.Modules[mi].Name)
	}
	return strings.Join(names, ", ")
}

// findRendezvous finds, in the dynamic linker at path as mapped in maps,
// where _dl_debug_state and _r_debug are.
func (t *tracer) findRendezvous(path string, maps []mapping) (rendezvous, error) {
	first, ok := fileMapping(maps, path)
	if !ok {
		return rendezvous{}, fmt.Errorf("the dynamic linker %s is not mapped", path)
	}
	found, err := elfid.ReadRendezvous(path)
	if err != nil {
		return rendezvous{}, err
	}
	bias := elfid.LoadBias(first.Start, first.Offset, found.LinkBase)
	r := rendezvous{brk: found.Brk + bias}
	if found.RDebug != 0 {
		// (musl has no r_debug state word worth reading: every stop is
		// then a sync.)
		r.state = found.RDebug + bias + rStateOffset
	}
	return r, nil
}

// rendezvousHit handles a thread stopped at the rendezvous: once the
// dynamic linker's list is consistent, the plan's libraries are planted
// or forgotten as the memory map says. The thread then returns from
// _dl_debug_state.
func (t *tracer) rendezvousHit(th *thread, s *site) error {
	if !th.foreign && t.consistent() {
		// The thread is borrowed for system calls at the breakpoint's
		// own address, the PC as before the trap.
		t.regs.SetPC(s.addr)
		if err := t.proc.setRegs(th.tid, &t.regs); err != nil {
			return fmt.Errorf("write registers of thread %d: %w", th.tid, err)
		}
		t.rendezvousThread = th.tid
		err := t.syncLibraries()
		t.rendezvousThread = 0
		if err != nil {
			return err
		}
	}
	return t.bp.displace(th, s)
}

// consistent reads r_debug's state: true when the list of objects is
// stable, or when the state cannot be read.
func (t *tracer) consistent() bool {
	if t.rdv.state == 0 {
		return true
	}
	var b [4]byte
	if err := t.mem.ReadMem(t.rdv.state, b[:]); err != nil {
		return true
	}
	return binary.LittleEndian.Uint32(b[:]) == rtConsistent
}

// syncLibraries plants the instances of the plan's libraries that are
// mapped and not planted, and forgets those planted that are no longer
// mapped where they were. Each instance is planted and forgotten on its
// own: a library loaded twice at once (dlmopen of a library already
// loaded, a copy of it at another path) has both planted, counting into
// the same items, and the dlclose of one leaves the other as it was.
func (t *tracer) syncLibraries() error {
	if t.loaded == nil {
		return nil // after an exec
	}
	maps, err := t.readMaps()
	if err != nil {
		return err
	}
	now := map[uint64]*loaded{} // by start
	for _, mi := range t.libs {
		for _, in := range t.libraryInstances(maps, mi) {
			if now[in.first.Start] == nil {
				now[in.first.Start] = &loaded{mi: mi, instance: in}
			}
		}
	}
	for _, start := range starts(t.loaded) {
		l, n := t.loaded[start], now[start]
		if n == nil || n.mi != l.mi || n.first.Inode != l.first.Inode || n.first.Path != l.first.Path {
			if err := t.forget(l); err != nil {
				return err
			}
		}
	}
	for _, start := range starts(now) {
		if t.loaded[start] != nil {
			continue
		}
		l := now[start]
		t.loaded[start] = l
		t.explain.library(l, true)
		if err := t.plantLoaded(l.mi, l.first.Path, l.instance, maps); err != nil {
			return fmt.Errorf("plant %s: %w", t.plan.Modules[l.mi].Name, err)
		}
		if t.counters != nil {
			t.counters.sortTramps()
		}
	}
	return nil
}

// starts returns the starts of the instances of l, in order.
func starts(l map[uint64]*loaded) []uint64 {
	out := make([]uint64, 0, len(l))
	for start := range l {
		out = append(out, start)
	}
	slices.Sort(out)
	return out
}

// libraryInstances finds library mi in maps: every instance of a file of
// the library's name (as given to PREP, or the file that name links to;
// see fileNames) that is the file PREP read. A file of that name that
// has changed since PREP is warned about, once, and not planted.
func (t *tracer) libraryInstances(maps []mapping, mi int) []instance {
	m := &t.plan.Modules[mi]
	names := append([]string{m.Name}, fileNames(m.Path)...)
	var out []instance
	done := map[string]bool{}
	for _, mp := range maps {
		if mp.Inode == 0 || !slices.Contains(names, filepath.Base(mp.Path)) {
			continue
		}
		key := fmt.Sprintf("%s\x00%d", mp.Path, mp.Inode)
		if done[key] {
			continue
		}
		done[key] = true
		first, _ := moduleMapping(maps, []string{filepath.Base(mp.Path)}, mp.Inode)
		same, known := t.identity[key]
		if !known {
			same, _ = checkIdentity(first.Path, m)
			t.identity[key] = same
			if !same {
				t.cfg.Warn(prf.LibraryChanged(first.Path, t.cfg.PlanPath))
			}
		}
		if same {
			out = append(out, instances(maps, first, elfid.ReadLoadSpan(first.Path, t.pageSize))...)
		}
	}
	return out
}

// forget drops what was planted in instance l, unmapped: its
// breakpoints and trampolines are gone with its code, and the areas
// PROFILE mapped next to it are unmapped. Its counts stay, and so does
// every other instance of its library.
func (t *tracer) forget(l *loaded) error {
	if t.sampling != nil {
		t.sampling.forget(l.lo, l.hi, t.areas[l.first.Start])
	}
	delete(t.loaded, l.first.Start)
	t.explain.library(l, false)
	in := func(a uint64) bool { return a >= l.lo && a < l.hi }
	for _, m := range t.mechanisms() {
		m.forget(l.lo, l.hi)
	}
	if t.counters != nil {
		t.counters.forget(l.lo, l.hi)
	}
	t.scan.forget(l.lo, l.hi)
	t.watch.written = slices.DeleteFunc(t.watch.written, func(w written) bool { return in(w.addr) })
	if t.attach != nil && t.attach.undo != nil {
		t.attach.undo.forget(l.lo, l.hi)
	}
	areas := t.areas[l.first.Start]
	delete(t.areas, l.first.Start)
	return t.withCalls(t.setupThread(), func() error {
		for _, a := range areas {
			// (An area a seccomp filter keeps PROFILE from unmapping
			// stays, unused.)
			if _, err := t.syscall(t.setupThread(), instr.SysMunmap, a[0], a[1]); err != nil && !errors.Is(err, errFiltered) {
				return fmt.Errorf("unmap the area of %s at %#x: %w", t.plan.Modules[l.mi].Name, a[0], err)
			}
			t.ownMaps = slices.DeleteFunc(t.ownMaps, func(o [2]uint64) bool { return o[0] >= a[0] && o[0] < a[0]+a[1] })
		}
		return nil
	})
}
