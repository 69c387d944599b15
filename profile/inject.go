// Injection: running system calls in the program on PROFILE's behalf (an
// mmap for a module's area, a munmap when it goes) by borrowing a stopped
// thread, and choosing where an area goes.

package profile

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/profile/procmaps"
	"github.com/sourceprofiler/sprof/profile/ptrace"
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
func slotArea(maps []procmaps.Mapping, start, end, size, pageSize uint64) uint64 {
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

// injector runs system calls in the program on PROFILE's behalf, in a
// stopped thread it borrows. Its process, its memory and the program's
// main thread are the tracer's (set when the process is obtained): it
// reads them through pointers, and while it borrows a thread for a run of
// calls, the memory every part reads is its borrowedMem.
type injector struct {
	arch instr.Arch
	proc *process
	pid  *int
	mem  *instr.Memory
	warn func(*prf.Diagnostic)
	// explain narrates a seccomp filter suspended (seccomp.go).
	told observers
	// attached reports whether PROFILE attached to the process (the
	// suspension of a filter differs: seccomp.go), and consumed tells
	// the ptrace sampler and a sweep that thread tid's pending interrupt
	// stopped a step (stepOnce).
	attached func() bool
	consumed func(tid int)
	// held reports whether the signal thread tid took as it was stepped
	// (ws its signal-delivery stop) is held for it, the step made again
	// without it (attachment.heldStop).
	held func(tid int, ws ptrace.WaitStatus) bool
	// lent is the thread stopped at the dynamic linker's rendezvous,
	// which PROFILE borrows for its system calls meanwhile (modules.go),
	// or 0.
	lent int
	// run is the thread borrowed for a run of system calls (a planting's
	// pages, their unmapping), or nil (withCalls).
	run *borrowed
	// seccomp is what the calls know of the program's seccomp filters
	// (seccomp.go).
	seccomp seccompState
}

// newInjector returns the injector of t's process.
func newInjector(t *tracer) *injector {
	return &injector{arch: t.arch, proc: &t.proc, pid: &t.pid, mem: &t.mem, warn: t.cfg.Warn, told: t.told,
		attached: func() bool { return t.attach != nil },
		consumed: func(tid int) {
			if t.parts.sampling != nil {
				t.parts.sampling.consumed(tid)
			}
			if th := t.threads[tid]; th != nil {
				t.parts.interrupted(th)
			}
		},
		held: func(tid int, ws ptrace.WaitStatus) bool { return t.attach != nil && t.attach.heldStop(tid, ws) }}
}

// mmap(2)'s protections and flags, as PROFILE asks for them in the
// program (<sys/mman.h>), and the descriptor of an anonymous mapping.
const (
	protRead          = 0x1
	protRW            = 0x3
	protExec          = 0x4
	mapShared         = 0x01
	mapPrivate        = 0x02
	mapFixed          = 0x10
	mapAnon           = 0x20
	mapFixedNoReplace = 0x100000
	noFD              = ^uint64(0)
)

// mmap maps size bytes of private, anonymous, readable and executable memory
// in the program, near hint when that is free.
func (j *injector) mmap(hint, size uint64) (uint64, error) {
	flags := uint64(mapPrivate | mapAnon)
	if hint != 0 {
		// Exactly there or nowhere (Linux 4.17): a slot elsewhere may be out
		// of reach. The kernel fails with EEXIST if the range is taken.
		flags |= mapFixedNoReplace
	}
	return j.syscall(j.setupThread(), instr.SysMmap, hint, size, protRead|protExec, flags, noFD, 0)
}

// setupThread is the stopped thread PROFILE borrows for its system calls:
// the main thread at the start, the thread at the rendezvous later.
func (j *injector) setupThread() int {
	if j.lent != 0 {
		return j.lent
	}
	return *j.pid
}

// borrow writes code over the current instruction of stopped thread tid,
// for the tracer's own use of the thread, and returns the thread's
// registers as they were and the function that puts the instruction and
// the registers back.
func (j *injector) borrow(tid int, code []byte) (ptrace.Regs, func() error, error) {
	var saved ptrace.Regs
	if err := (*j.proc).getRegs(tid, &saved); err != nil {
		return saved, nil, err
	}
	pc := saved.PC()
	orig := make([]byte, len(code))
	if err := (*j.mem).ReadMem(pc, orig); err != nil {
		return saved, nil, err
	}
	if err := (*j.mem).WriteMem(pc, code); err != nil {
		return saved, nil, err
	}
	restore := func() error {
		if err := (*j.mem).WriteMem(pc, orig); err != nil {
			return err
		}
		return (*j.proc).setRegs(tid, &saved)
	}
	return saved, restore, nil
}

// inject makes stopped thread tid run one system call: the system call
// instruction is written over its current instruction, single-stepped,
// and the instruction and registers restored. It returns the call's result,
// or its errno as an error.
func (j *injector) inject(tid int, call instr.Syscall, args ...uint64) (uint64, error) {
	saved, restore, err := j.borrow(tid, j.arch.SyscallInst())
	if err != nil {
		return 0, err
	}
	res, err := j.stepSyscall(tid, saved, saved.PC(), call, args...)
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
// through j.syscall meanwhile, and puts it back after. f must not write
// the program's code (the thread's instruction is the system call's).
func (j *injector) withCalls(tid int, f func() error) error {
	if j.run != nil {
		return f()
	}
	var regs ptrace.Regs
	orig := make([]byte, len(j.arch.SyscallInst()))
	if err := (*j.proc).getRegs(tid, &regs); err != nil || (*j.mem).ReadMem(regs.PC(), orig) != nil {
		return f() // (each call borrows it, and fails, on its own)
	}
	saved, restore, err := j.borrow(tid, j.arch.SyscallInst())
	if err != nil {
		return f()
	}
	filtered, err := j.unfiltered(tid)
	if err != nil {
		if rerr := restore(); rerr != nil {
			return rerr
		}
		return f()
	}
	mem := *j.mem
	*j.mem = borrowedMem{Memory: mem, pc: saved.PC(), orig: orig}
	j.run = &borrowed{tid: tid, saved: saved, restore: func() error { filtered(); return restore() }}
	ferr := f()
	*j.mem = mem
	rerr := j.run.restore()
	j.run = nil
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
func (j *injector) syscall(tid int, call instr.Syscall, args ...uint64) (uint64, error) {
	if c := j.run; c != nil && c.tid == tid {
		return j.stepCall(tid, c.saved, c.saved.PC(), call, args...)
	}
	return j.inject(tid, call, args...)
}

// stepOnce single-steps stopped thread tid and waits for its stop. An
// interrupt that was pending (the ptrace sampler's, sent as the thread
// stopped) stops it before the instruction runs, as an EventStop: the
// step is made again.
func (j *injector) stepOnce(tid int) (ptrace.WaitStatus, error) {
	for {
		if err := (*j.proc).step(tid); err != nil {
			return 0, err
		}
		ws, err := (*j.proc).waitFor(tid, 0)
		if err == nil && j.held(tid, ws) {
			continue
		}
		if err != nil || !ws.Stopped() || ws.StopSignal() != syscall.SIGTRAP || ws.Event() != ptrace.EventStop || ws.GroupStop() {
			return ws, err
		}
		j.consumed(tid)
	}
}

// stepSyscall makes stopped thread tid, whose registers are saved, run
// the system call instruction at pc as call with args, single-stepped,
// and returns the call's result, or its errno as an error. The caller
// puts the registers back. A seccomp filter of the thread's own is
// suspended for the call, and where it cannot be, the call is not made
// (errFiltered: seccomp.go).
func (j *injector) stepSyscall(tid int, saved ptrace.Regs, pc uint64, call instr.Syscall, args ...uint64) (uint64, error) {
	filtered, err := j.unfiltered(tid)
	if err != nil {
		return 0, err
	}
	defer filtered()
	return j.stepCall(tid, saved, pc, call, args...)
}

// stepCall is stepSyscall in a thread whose filter, if any, is
// suspended already.
func (j *injector) stepCall(tid int, saved ptrace.Regs, pc uint64, call instr.Syscall, args ...uint64) (uint64, error) {
	const maxErrno = 4095
	regs := saved
	regs.NoRestart()
	j.arch.SetSyscall(&regs, j.arch.SyscallNumber(call), args...)
	regs.SetPC(pc)
	if err := (*j.proc).setRegs(tid, &regs); err != nil {
		return 0, err
	}
	ws, err := j.stepOnce(tid)
	if err != nil {
		return 0, err
	}
	if !ws.Stopped() {
		return 0, errors.New("program ended during set-up")
	}
	if err := (*j.proc).getRegs(tid, &regs); err != nil {
		return 0, err
	}
	if ws.StopSignal() != syscall.SIGTRAP {
		return 0, fmt.Errorf("unexpected %v during set-up", ws.StopSignal())
	}
	if ws.Event() == ptrace.EventExit {
		// (Killed for the call, by a filter PROFILE took for one that
		// allows it: its exit stop, not the step's.)
		return 0, fmt.Errorf("thread %d was killed by its system call %d", tid, j.arch.SyscallNumber(call))
	}
	res := j.arch.SyscallResult(&regs)
	if res > ^uint64(maxErrno) {
		return 0, syscall.Errno(-res)
	}
	return res, nil
}

// borrowed returns the registers saved of a thread PROFILE borrows, made
// ready for code of PROFILE's: no system call restarts when the thread
// goes on (it may have been stopped in one), and, in a process PROFILE
// attached to, the stack starts below the red zone of the function the
// thread was stopped in. The saved registers, put back, restart it.
func (j *injector) borrowed(saved ptrace.Regs) ptrace.Regs {
	regs := saved
	regs.NoRestart()
	if j.attached() {
		j.arch.SetSP(&regs, (j.arch.SP(&regs)-j.arch.RedZone()-64)&^15)
	}
	return regs
}
