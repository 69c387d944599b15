package profile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/elfid"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/profile/procmaps"
	"github.com/sourceprofiler/sprof/profile/ptrace"
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

// modules are the plan's modules in the program: the program itself,
// found in the memory map at the exec stop, and its shared libraries,
// followed through the dynamic linker's rendezvous as they are loaded
// and unloaded (see above).
type modules struct {
	arch instr.Arch
	plan *datafile.Plan
	// cfg is the run's configuration, mem, proc and regs the tracer's
	// (regs those of the thread stopped: rendezvousHit).
	cfg  *Config
	mem  *instr.Memory
	proc *process
	regs *ptrace.Regs
	// explain narrates the libraries loaded and unloaded.
	told observers
	// plant reads the code, and maps and keeps the areas next to each
	// instance; calls runs the system calls that unmap them; bp holds the
	// rendezvous's breakpoint.
	plant *planter
	calls *injector
	bp    *breakpoints
	host  moduleHost
	// libs are the plan's modules other than the program, its shared
	// libraries; loaded the instances of those mapped and planted (by
	// the instance's start), rdv the dynamic linker's rendezvous,
	// and identity whether each library file seen is the file PREP read.
	libs     []int
	loaded   map[uint64]*loaded
	rdv      rendezvous
	identity map[string]bool
}

// moduleHost is what the modules ask of the tracer: the memory map, the
// planting of an instance by every mechanism, and the forgetting, by
// every part, of what was planted in an instance unmapped, [lo, hi), and
// the areas PROFILE mapped next to it.
type moduleHost interface {
	readMaps() ([]procmaps.Mapping, error)
	plantLoaded(mi int, path string, in procmaps.Instance, maps []procmaps.Mapping) error
	unplant(lo, hi uint64, areas [][2]uint64)
}

// newModules returns the modules of t's run.
func newModules(t *tracer) *modules {
	return &modules{arch: t.arch, plan: t.plan, cfg: &t.cfg, mem: &t.mem, proc: &t.proc, regs: &t.regs, told: t.told,
		plant: t.parts.plant, calls: t.parts.calls, bp: t.parts.bp, host: t, identity: make(map[string]bool)}
}

// loaded is an instance of library mi of the plan, mapped and planted.
type loaded struct {
	mi int
	procmaps.Instance
}

// watchLibraries plants the breakpoint of the dynamic linker's
// rendezvous. A program without a dynamic linker (static) loads no
// library: PROFILE says so, and the libraries' counts stay zero.
func (m *modules) watchLibraries(maps []procmaps.Mapping) error {
	interp, err := elfid.ReadInterpreter(m.cfg.Path)
	if err == nil && interp == "" {
		err = fmt.Errorf("%s is linked statically", filepath.Base(m.cfg.Path))
	}
	var r rendezvous
	if err == nil {
		r, err = m.findRendezvous(interp, maps)
	}
	if err != nil {
		m.cfg.Warn(prf.LibrariesNotFollowed(m.libNames(), err))
		return nil
	}
	code := make([]byte, m.arch.MaxInstLen())
	if err := m.plant.readCode(r.brk, code); err != nil {
		return fmt.Errorf("read the dynamic linker's rendezvous at %#x: %w", r.brk, err)
	}
	d, err := m.arch.Displace(code, r.brk, 0)
	if err != nil || d.Emulate == nil {
		// _dl_debug_state is a bare return everywhere we know of.
		if err == nil {
			err = fmt.Errorf("%s needs an out-of-line slot", d.Inst.Text)
		}
		m.cfg.Warn(prf.LibrariesNotFollowed(m.libNames(), fmt.Errorf("the rendezvous at %#x: %w", r.brk, err)))
		return nil
	}
	bp := m.arch.Breakpoint()
	s := &site{addr: r.brk, orig: code[:len(bp)], meaning: meaning{item: -1, exit: -1, rendezvous: true}, carrying: carrying{disp: d, displaced: true}}
	if err := (*m.mem).WriteMem(r.brk, bp); err != nil {
		return fmt.Errorf("plant the rendezvous breakpoint at %#x: %w", r.brk, err)
	}
	m.bp.sites[r.brk] = s
	m.rdv = r
	m.told.note(rendezvousEvent{r, interp})
	m.loaded = map[uint64]*loaded{}
	return nil
}

// execed forgets the libraries loaded: the rendezvous went with the
// image (execHook).
func (m *modules) execed() { m.loaded = nil }

// libNames names the plan's libraries, for a warning.
func (m *modules) libNames() string {
	var names []string
	for _, mi := range m.libs {
		names = append(names, m.plan.Modules[mi].Name)
	}
	return strings.Join(names, ", ")
}

// findRendezvous finds, in the dynamic linker at path as mapped in maps,
// where _dl_debug_state and _r_debug are.
func (m *modules) findRendezvous(path string, maps []procmaps.Mapping) (rendezvous, error) {
	first, ok := procmaps.FileMapping(maps, path)
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
func (m *modules) rendezvousHit(th *thread, s *site) error {
	if !th.foreign && m.consistent() {
		// The thread is borrowed for system calls at the breakpoint's
		// own address, the PC as before the trap.
		m.regs.SetPC(s.addr)
		if err := (*m.proc).setRegs(th.tid, m.regs); err != nil {
			return fmt.Errorf("write registers of thread %d: %w", th.tid, err)
		}
		m.calls.lent = th.tid
		err := m.syncLibraries()
		m.calls.lent = 0
		if err != nil {
			return err
		}
	}
	return m.bp.displace(th, s)
}

// consistent reads r_debug's state: true when the list of objects is
// stable, or when the state cannot be read.
func (m *modules) consistent() bool {
	if m.rdv.state == 0 {
		return true
	}
	var b [4]byte
	if err := (*m.mem).ReadMem(m.rdv.state, b[:]); err != nil {
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
func (m *modules) syncLibraries() error {
	if m.loaded == nil {
		return nil // after an exec
	}
	maps, err := m.host.readMaps()
	if err != nil {
		return err
	}
	now := map[uint64]*loaded{} // by start
	for _, mi := range m.libs {
		for _, in := range m.libraryInstances(maps, mi) {
			if now[in.First.Start] == nil {
				now[in.First.Start] = &loaded{mi: mi, Instance: in}
			}
		}
	}
	for _, start := range starts(m.loaded) {
		l, n := m.loaded[start], now[start]
		if n == nil || n.mi != l.mi || n.First.Inode != l.First.Inode || n.First.Path != l.First.Path {
			if err := m.forget(l); err != nil {
				return err
			}
		}
	}
	for _, start := range starts(now) {
		if m.loaded[start] != nil {
			continue
		}
		l := now[start]
		m.loaded[start] = l
		m.told.note(libraryEvent{l, true})
		if err := m.host.plantLoaded(l.mi, l.First.Path, l.Instance, maps); err != nil {
			return fmt.Errorf("plant %s: %w", m.plan.Modules[l.mi].Name, err)
		}
	}
	return nil
}

// starts returns the starts of the instances of l, in order.
func starts(l map[uint64]*loaded) []uint64 { return slices.Sorted(maps.Keys(l)) }

// libraryInstances finds library mi in maps: every instance of a file of
// the library's name (as given to PREP, or the file that name links to;
// see fileNames) that is the file PREP read. A file of that name that
// has changed since PREP is warned about, once, and not planted.
func (m *modules) libraryInstances(maps []procmaps.Mapping, mi int) []procmaps.Instance {
	mod := &m.plan.Modules[mi]
	names := append([]string{mod.Name}, procmaps.FileNames(mod.Path)...)
	var out []procmaps.Instance
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
		first, _ := procmaps.ModuleMapping(maps, []string{filepath.Base(mp.Path)}, mp.Inode)
		same, known := m.identity[key]
		if !known {
			same, _ = checkIdentity(first.Path, mod)
			m.identity[key] = same
			if !same {
				m.cfg.Warn(prf.LibraryChanged(first.Path, m.cfg.PlanPath))
			}
		}
		if same {
			out = append(out, procmaps.Instances(maps, first, elfid.ReadLoadSpan(first.Path, m.plant.pageSize))...)
		}
	}
	return out
}

// forget drops what was planted in instance l, unmapped: its
// breakpoints and trampolines are gone with its code, and the areas
// PROFILE mapped next to it are unmapped. Its counts stay, and so does
// every other instance of its library.
func (m *modules) forget(l *loaded) error {
	delete(m.loaded, l.First.Start)
	m.told.note(libraryEvent{l, false})
	m.host.unplant(l.Lo, l.Hi, m.plant.areas[l.First.Start])
	m.plant.scan.forget(l.Lo, l.Hi)
	areas := m.plant.areas[l.First.Start]
	delete(m.plant.areas, l.First.Start)
	return m.calls.withCalls(m.calls.setupThread(), func() error {
		for _, a := range areas {
			// (An area a seccomp filter keeps PROFILE from unmapping
			// stays, unused.)
			if _, err := m.calls.syscall(m.calls.setupThread(), instr.SysMunmap, a[0], a[1]); err != nil && !errors.Is(err, errFiltered) {
				return fmt.Errorf("unmap the area of %s at %#x: %w", m.plan.Modules[l.mi].Name, a[0], err)
			}
			m.plant.ownMaps = slices.DeleteFunc(m.plant.ownMaps, func(o [2]uint64) bool { return o[0] >= a[0] && o[0] < a[0]+a[1] })
		}
		return nil
	})
}

// programInstance finds the program in the maps of its exec stop: the
// file the kernel mapped, which is the end of the chain of symbolic
// links the program's path may be (procmaps.FileMapping).
func (m *modules) programInstance(maps []procmaps.Mapping) (procmaps.Instance, bool) {
	first, ok := procmaps.FileMapping(maps, m.cfg.Path)
	if !ok {
		return procmaps.Instance{}, false
	}
	for _, in := range procmaps.Instances(maps, first, elfid.ReadLoadSpan(m.cfg.Path, m.plant.pageSize)) {
		if in.First.Start == first.Start {
			return in, true
		}
	}
	return procmaps.Instance{}, false
}
