package profile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/sourceprofiler/sprof/internal/elfid"
	"github.com/sourceprofiler/sprof/internal/instr"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/internal/profile/ptrace"
)

// plantAll plants the breakpoints of every module mapped at the exec stop:
// the program itself. (Shared libraries are not mapped yet at that stop.)
func (t *tracer) plantAll() error {
	maps, err := t.readMaps()
	if err != nil {
		return err
	}
	var st syscall.Stat_t
	if err := syscall.Stat(t.cfg.Path, &st); err != nil {
		return prf.CannotOpen(t.cfg.Path, err)
	}
	base := filepath.Base(t.cfg.Path)
	for mi := range t.plan.Modules {
		if m := &t.plan.Modules[mi]; m.Name != base {
			// Shared libraries are mapped after this stop, by the dynamic
			// linker or dlopen: planting there comes with a later version.
			if w := prf.LibraryNotCounted(m.Name); w != nil {
				t.cfg.Warn(w)
			}
		}
	}
	for mi := range t.plan.Modules {
		m := &t.plan.Modules[mi]
		if m.Name != base {
			continue
		}
		first, ok := moduleMapping(maps, base, st.Ino)
		if !ok {
			return fmt.Errorf("plant breakpoints: %s is not mapped in process %d", t.cfg.Path, t.pid)
		}
		bias := uint64(0)
		if m.PIE {
			bias = elfid.LoadBias(first.Start, first.Offset, m.LinkBase)
		}
		return t.plantModule(mi, bias, first.Start, maps)
	}
	return nil
}

func (t *tracer) readMaps() ([]mapping, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", t.pid))
	if err != nil {
		return nil, fmt.Errorf("read memory map: %w", err)
	}
	return parseMaps(data)
}

// plantModule plants the entry breakpoints of module mi, loaded with bias,
// whose first mapping starts at start, in a process with the given maps.
func (t *tracer) plantModule(mi int, bias, start uint64, maps []mapping) error {
	var items []int
	for i, f := range t.plan.Funcs {
		if f.Module == mi {
			items = append(items, i)
		}
	}
	if len(items) == 0 {
		return nil
	}
	slotSize := uint64(t.arch.SlotSize())
	size := (uint64(len(items))*slotSize + t.pageSize - 1) &^ (t.pageSize - 1)
	slots, err := t.mmap(slotArea(maps, start, size, t.pageSize), size)
	if err != nil {
		t.cfg.Warn(prf.NoSlots(err))
		slots = 0
	}
	code := make([]byte, t.arch.MaxInstLen())
	slotImage := make([]byte, size)
	bp := t.arch.Breakpoint()
	for n, item := range items {
		f := &t.plan.Funcs[item]
		addr := f.Entry + bias
		if _, dup := t.sites[addr]; dup {
			continue
		}
		if err := t.readCode(addr, code); err != nil {
			return fmt.Errorf("read code of %s at %#x: %w", f.Name, addr, err)
		}
		s := &site{addr: addr, item: item, orig: append([]byte(nil), code[:len(bp)]...)}
		if slots != 0 {
			s.slot = slots + uint64(n)*slotSize
		}
		// Coverage removes a breakpoint at its first hit and needs no
		// displacement, except for a vfork child, which shares the
		// program's memory: it must step over the breakpoint, not remove it.
		d, err := t.arch.Displace(code, addr, s.slot)
		if err == nil && d.Emulate == nil && slots == 0 {
			err = instr.ErrOutOfReach
		}
		switch {
		case err == nil:
			s.disp, s.displaced = d, true
			copy(slotImage[uint64(n)*slotSize:], d.Slot)
		case !t.coverage:
			t.cfg.Warn(prf.CannotProfileFunction(f.Name, t.plan.Modules[mi].Name, err))
			continue
		}
		t.sites[addr] = s
	}
	if slots != 0 {
		if err := t.mem.WriteMem(slots, slotImage); err != nil {
			return fmt.Errorf("write out-of-line slots: %w", err)
		}
	}
	for _, s := range t.sites {
		if err := t.mem.WriteMem(s.addr, bp); err != nil {
			return fmt.Errorf("plant breakpoint at %#x: %w", s.addr, err)
		}
	}
	return nil
}

// slotArea chooses where to map size bytes of slots for a module whose
// first mapping starts at start: in the free gap of the process's maps
// nearest to the module, so that a relocated instruction reaches its
// original neighbourhood (±2 GiB for RIP-relative operands on amd64,
// ±128 MiB for B on arm64), with guard pages around it. Below the module
// wins a tie: a C program's heap grows up from its end. 0 means no gap
// within reach was found, and the kernel chooses. The area is aligned to
// pageSize, the running system's page: MAP_FIXED_NOREPLACE refuses any
// other address.
func slotArea(maps []mapping, start, size, pageSize uint64) uint64 {
	guard := 16 * pageSize
	const (
		lowest = 1 << 20   // leave the lowest addresses alone
		top    = 1 << 47   // the top of user space on both architectures
		reach  = 100 << 20 // well within the shortest reach (arm64 B)
		none   = ^uint64(0)
	)
	end := start
	for _, m := range maps {
		if m.Start >= start && m.Start <= end+guard {
			end = max(end, m.End) // the module's mappings and its bss
		}
	}
	best, bestDist := uint64(0), none
	consider := func(lo, hi uint64) {
		lo = max(lo, lowest)
		if hi <= lo || hi-lo < size+2*guard {
			return
		}
		var addr, dist uint64
		switch {
		case hi <= start:
			addr = (hi - guard - size) &^ (pageSize - 1)
			dist = start - addr
		case lo >= end:
			addr = (lo + guard + pageSize - 1) &^ (pageSize - 1)
			dist = addr + size - end
		default:
			return
		}
		if dist < bestDist && dist <= reach {
			best, bestDist = addr, dist
		}
	}
	prev := uint64(0)
	for _, m := range maps {
		consider(prev, m.Start)
		prev = max(prev, m.End)
	}
	consider(prev, top)
	return best
}

// readCode reads up to len(b) bytes of code at addr; near the end of a
// mapping it reads what there is and zeroes the rest.
func (t *tracer) readCode(addr uint64, b []byte) error {
	err := t.mem.ReadMem(addr, b)
	if err == nil {
		return nil
	}
	clear(b)
	end := (addr + t.pageSize) &^ (t.pageSize - 1)
	return t.mem.ReadMem(addr, b[:min(uint64(len(b)), end-addr)])
}

// mmap maps size bytes of private, anonymous, readable and executable memory
// in the program, near hint when that is free, by injecting one mmap system
// call into the stopped main thread: the call instruction is written over the
// current instruction, single-stepped, and everything restored.
func (t *tracer) mmap(hint, size uint64) (uint64, error) {
	const (
		protRead                 = 0x1
		protExec                 = 0x4
		mapPrivate               = 0x02
		mapAnon                  = 0x20
		mapFixedNoReplace        = 0x100000
		maxErrno                 = 4095
		noFD              uint64 = ^uint64(0)
	)
	var saved ptrace.Regs
	if err := ptrace.GetRegs(t.pid, &saved); err != nil {
		return 0, err
	}
	pc := saved.PC()
	insn := t.arch.SyscallInst()
	orig := make([]byte, len(insn))
	if err := t.mem.ReadMem(pc, orig); err != nil {
		return 0, err
	}
	if err := t.mem.WriteMem(pc, insn); err != nil {
		return 0, err
	}
	restore := func() error {
		if err := t.mem.WriteMem(pc, orig); err != nil {
			return err
		}
		return ptrace.SetRegs(t.pid, &saved)
	}
	flags := uint64(mapPrivate | mapAnon)
	if hint != 0 {
		// Exactly there or nowhere (Linux 4.17): a slot elsewhere may be out
		// of reach. The kernel fails with EEXIST if the range is taken.
		flags |= mapFixedNoReplace
	}
	regs := saved
	regs.NoRestart()
	t.arch.SetSyscall(&regs, t.arch.MmapNumber(), hint, size, protRead|protExec, flags, noFD, 0)
	regs.SetPC(pc)
	if err := ptrace.SetRegs(t.pid, &regs); err != nil {
		restore()
		return 0, err
	}
	if err := ptrace.Step(t.pid); err != nil {
		restore()
		return 0, err
	}
	ws, err := ptrace.WaitFor(t.pid)
	if err != nil {
		return 0, err
	}
	if !ws.Stopped() {
		return 0, errors.New("program ended during set-up")
	}
	if err := ptrace.GetRegs(t.pid, &regs); err != nil {
		return 0, err
	}
	addr := t.arch.SyscallResult(&regs)
	if err := restore(); err != nil {
		return 0, err
	}
	if ws.StopSignal() != syscall.SIGTRAP {
		return 0, fmt.Errorf("unexpected %v during set-up", ws.StopSignal())
	}
	if addr > ^uint64(maxErrno) {
		return 0, fmt.Errorf("mmap: %w", syscall.Errno(-addr))
	}
	return addr, nil
}
