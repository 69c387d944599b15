// Injection: running system calls in the program on PROFILE's behalf (an
// mmap for a module's area, a munmap when it goes) by borrowing a stopped
// thread, and choosing where an area goes.

package profile

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/sourceprofiler/sprof/internal/instr"
	"github.com/sourceprofiler/sprof/internal/profile/ptrace"
)

// slotArea chooses where to map size bytes of slots for a module whose
// instance spans [start, end) (its segments and bss): in the free gap of
// the process's maps nearest to the module, so that a relocated
// instruction reaches its original neighbourhood (±2 GiB for RIP-relative
// operands on amd64, ±128 MiB for B on arm64), with guard pages around
// it. Below the module wins a tie: a C program's heap grows up from its
// end. 0 means no gap within reach was found, and the kernel chooses. The
// area is aligned to pageSize, the running system's page:
// MAP_FIXED_NOREPLACE refuses any other address.
func slotArea(maps []mapping, start, end, size, pageSize uint64) uint64 {
	guard := 16 * pageSize
	const (
		lowest = 1 << 20   // leave the lowest addresses alone
		top    = 1 << 47   // the top of user space on both architectures
		reach  = 100 << 20 // well within the shortest reach (arm64 B)
		none   = ^uint64(0)
	)
	// (Its bss may go on in an anonymous mapping past the segments'
	// span as the file says it; not what happens to lie next to it, the
	// counters, another library.)
	for _, m := range maps {
		if m.Start == end && m.Path == "" {
			end = m.End
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

// mmap maps size bytes of private, anonymous, readable and executable memory
// in the program, near hint when that is free.
func (t *tracer) mmap(hint, size uint64) (uint64, error) {
	const (
		protRead                 = 0x1
		protExec                 = 0x4
		mapPrivate               = 0x02
		mapAnon                  = 0x20
		mapFixedNoReplace        = 0x100000
		noFD              uint64 = ^uint64(0)
	)
	flags := uint64(mapPrivate | mapAnon)
	if hint != 0 {
		// Exactly there or nowhere (Linux 4.17): a slot elsewhere may be out
		// of reach. The kernel fails with EEXIST if the range is taken.
		flags |= mapFixedNoReplace
	}
	addr, err := t.syscall(t.setupThread(), instr.SysMmap, hint, size, protRead|protExec, flags, noFD, 0)
	if err == nil {
		t.ownMaps = append(t.ownMaps, [2]uint64{addr, size})
	}
	return addr, err
}

// setupThread is the stopped thread PROFILE borrows for its system calls:
// the main thread at the start, the thread at the rendezvous later.
func (t *tracer) setupThread() int {
	if t.rendezvousThread != 0 {
		return t.rendezvousThread
	}
	return t.pid
}

// borrow writes code over the current instruction of stopped thread tid,
// for the tracer's own use of the thread, and returns the thread's
// registers as they were and the function that puts the instruction and
// the registers back.
func (t *tracer) borrow(tid int, code []byte) (ptrace.Regs, func() error, error) {
	var saved ptrace.Regs
	if err := ptrace.GetRegs(tid, &saved); err != nil {
		return saved, nil, err
	}
	pc := saved.PC()
	orig := make([]byte, len(code))
	if err := t.mem.ReadMem(pc, orig); err != nil {
		return saved, nil, err
	}
	if err := t.mem.WriteMem(pc, code); err != nil {
		return saved, nil, err
	}
	restore := func() error {
		if err := t.mem.WriteMem(pc, orig); err != nil {
			return err
		}
		return ptrace.SetRegs(tid, &saved)
	}
	return saved, restore, nil
}

// inject makes stopped thread tid run one system call: the system call
// instruction is written over its current instruction, single-stepped,
// and the instruction and registers restored. It returns the call's result,
// or its errno as an error.
func (t *tracer) inject(tid int, call instr.Syscall, args ...uint64) (uint64, error) {
	saved, restore, err := t.borrow(tid, t.arch.SyscallInst())
	if err != nil {
		return 0, err
	}
	res, err := t.stepSyscall(tid, saved, saved.PC(), call, args...)
	if rerr := restore(); err == nil && rerr != nil {
		return 0, rerr
	}
	return res, err
}

// borrowed is a stopped thread borrowed for a run of system calls: its
// instruction and registers saved, its seccomp filter suspended, once;
// each call then costs a step. A planting maps a page for every few
// punned jumps, some thousands in a large program.
type borrowed struct {
	tid   int
	saved ptrace.Regs
	// restore puts the thread's instruction, registers and filter back.
	restore func() error
}

// withCalls runs f with thread tid borrowed for the system calls made
// through t.syscall meanwhile, and puts it back after. f must not write
// the program's code (the thread's instruction is the system call's).
func (t *tracer) withCalls(tid int, f func() error) error {
	if t.calls != nil {
		return f()
	}
	var regs ptrace.Regs
	orig := make([]byte, len(t.arch.SyscallInst()))
	if err := ptrace.GetRegs(tid, &regs); err != nil || t.mem.ReadMem(regs.PC(), orig) != nil {
		return f() // (each call borrows it, and fails, on its own)
	}
	saved, restore, err := t.borrow(tid, t.arch.SyscallInst())
	if err != nil {
		return f()
	}
	filtered, err := t.unfiltered(tid)
	if err != nil {
		if rerr := restore(); rerr != nil {
			return rerr
		}
		return f()
	}
	mem := t.mem
	t.mem = borrowedMem{Memory: mem, pc: saved.PC(), orig: orig}
	t.calls = &borrowed{tid: tid, saved: saved, restore: func() error { filtered(); return restore() }}
	ferr := f()
	t.mem = mem
	rerr := t.calls.restore()
	t.calls = nil
	return errors.Join(ferr, rerr)
}

// borrowedMem is the program's memory while a thread is borrowed for a
// run of calls: read, the bytes at its PC are the program's own, not the
// system call instruction written over them.
type borrowedMem struct {
	instr.Memory
	pc   uint64
	orig []byte
}

func (m borrowedMem) ReadMem(addr uint64, b []byte) error {
	if err := m.Memory.ReadMem(addr, b); err != nil {
		return err
	}
	end := addr + uint64(len(b))
	for i, v := range m.orig {
		if a := m.pc + uint64(i); a >= addr && a < end {
			b[a-addr] = v
		}
	}
	return nil
}

// syscall makes stopped thread tid run one system call: in the run of
// calls it is borrowed for (withCalls), or borrowed for this one alone
// (inject).
func (t *tracer) syscall(tid int, call instr.Syscall, args ...uint64) (uint64, error) {
	if c := t.calls; c != nil && c.tid == tid {
		return t.stepCall(tid, c.saved, c.saved.PC(), call, args...)
	}
	return t.inject(tid, call, args...)
}

// stepOnce single-steps stopped thread tid and waits for its stop. An
// interrupt that was pending (the ptrace sampler's, sent as the thread
// stopped) stops it before the instruction runs, as an EventStop: the
// step is made again.
func (t *tracer) stepOnce(tid int) (ptrace.WaitStatus, error) {
	for {
		if err := ptrace.Step(tid); err != nil {
			return 0, err
		}
		ws, err := ptrace.WaitFor(tid)
		if err == nil && t.stopOnAttach(tid, ws) {
			continue
		}
		if err != nil || !ws.Stopped() || ws.StopSignal() != syscall.SIGTRAP || ws.Event() != ptrace.EventStop || ws.GroupStop() {
			return ws, err
		}
		if t.sampling != nil {
			t.sampling.consumed(tid)
		}
	}
}

// stopOnAttach takes, in the set-up of a process PROFILE attached to, a
// SIGSTOP that thread tid dequeued as it was stepped (ws its
// signal-delivery stop): sent before PROFILE attached, it was pending
// then. The step is made again without it, the signal held for the
// thread, and the process refused once set up (attachedRun).
func (t *tracer) stopOnAttach(tid int, ws ptrace.WaitStatus) bool {
	a, th := t.attach, t.threads[tid]
	if a == nil || a.running || th == nil || !ws.Stopped() || ws.StopSignal() != syscall.SIGSTOP || ws.Event() != 0 || ws.GroupStop() {
		return false
	}
	a.stopped, th.pendingSig = true, syscall.SIGSTOP
	return true
}

// stepSyscall makes stopped thread tid, whose registers are saved, run
// the system call instruction at pc as call with args, single-stepped,
// and returns the call's result, or its errno as an error. The caller
// puts the registers back. A seccomp filter of the thread's own is
// suspended for the call, and where it cannot be, the call is not made
// (errFiltered: seccomp.go).
func (t *tracer) stepSyscall(tid int, saved ptrace.Regs, pc uint64, call instr.Syscall, args ...uint64) (uint64, error) {
	filtered, err := t.unfiltered(tid)
	if err != nil {
		return 0, err
	}
	defer filtered()
	return t.stepCall(tid, saved, pc, call, args...)
}

// stepCall is stepSyscall in a thread whose filter, if any, is
// suspended already.
func (t *tracer) stepCall(tid int, saved ptrace.Regs, pc uint64, call instr.Syscall, args ...uint64) (uint64, error) {
	const maxErrno = 4095
	regs := saved
	regs.NoRestart()
	t.arch.SetSyscall(&regs, t.arch.SyscallNumber(call), args...)
	regs.SetPC(pc)
	if err := ptrace.SetRegs(tid, &regs); err != nil {
		return 0, err
	}
	ws, err := t.stepOnce(tid)
	if err != nil {
		return 0, err
	}
	if !ws.Stopped() {
		return 0, errors.New("program ended during set-up")
	}
	if err := ptrace.GetRegs(tid, &regs); err != nil {
		return 0, err
	}
	if ws.StopSignal() != syscall.SIGTRAP {
		return 0, fmt.Errorf("unexpected %v during set-up", ws.StopSignal())
	}
	if ws.Event() == ptrace.EventExit {
		// (Killed for the call, by a filter PROFILE took for one that
		// allows it: its exit stop, not the step's.)
		return 0, fmt.Errorf("thread %d was killed by its system call %d", tid, t.arch.SyscallNumber(call))
	}
	res := t.arch.SyscallResult(&regs)
	if res > ^uint64(maxErrno) {
		return 0, syscall.Errno(-res)
	}
	return res, nil
}
