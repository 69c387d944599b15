package profile

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// Children with memory of their own. A forked child gets a copy of the
// program's memory, PROFILE's patches and breakpoints included: before it
// runs, PROFILE writes the original bytes back into the copy (adopt), and
// lets it go unprofiled and unharmed.

// prctl(2) options (<linux/prctl.h>).
const (
	prGetDumpable = 3
	prSetDumpable = 4
)

// unpatch writes the original bytes of every breakpoint and patch into
// mem, the memory of a forked child. The breakpoints removed since the
// fork (coverage removes each at its first hit, in the program's memory)
// are still in the child's copy: they are written too.
func (p *parts) unpatch(mem interface{ WriteMem(uint64, []byte) error }) {
	p.bp.takeOut(mem, true)
	p.counters.restorePatches(mem)
}

// childMem opens the memory of child tid, stopped at its first stop, and
// returns it with the function that closes it. A child of a program that
// made itself non-dumpable (prctl(PR_SET_DUMPABLE, 0), as ssh-agent and
// gpg-agent do) is non-dumpable too, and the kernel refuses its memory to
// a tracer without privileges, through /proc and ptrace alike; the child
// is then made dumpable for the moment PROFILE opens its memory file, and
// non-dumpable again at once, before it runs: the file stays usable
// (ptrace.Mem). The prctl calls run in the child through the system call
// instruction it has just returned from (its fork or clone), since its
// memory cannot be written yet.
func (t *tracer) childMem(tid int) (taskMem, error) {
	mem, err := t.proc.openMem(tid)
	if err == nil || !errors.Is(err, os.ErrPermission) {
		return mem, err
	}
	was, err := t.syscallAgain(tid, instr.SysPrctl, prGetDumpable)
	if err != nil {
		return nil, fmt.Errorf("read whether child %d is dumpable: %w", tid, err)
	}
	if _, err := t.syscallAgain(tid, instr.SysPrctl, prSetDumpable, 1); err != nil {
		return nil, fmt.Errorf("make child %d dumpable: %w", tid, err)
	}
	mem, err = t.proc.openMem(tid)
	if was != 1 {
		// Not dumpable again, as it was (SUID_DUMP_ROOT, 2, cannot be set
		// back: 0 is as private).
		if _, rerr := t.syscallAgain(tid, instr.SysPrctl, prSetDumpable, 0); rerr != nil && err == nil {
			mem.Close()
			return nil, fmt.Errorf("make child %d non-dumpable again: %w", tid, rerr)
		}
	}
	return mem, err
}

// syscallAgain makes stopped thread tid run call with args through the
// system call instruction just before its PC, which its last system call
// ran (a new child's first stop is right after its fork or clone), and
// puts its registers back: nothing is written into its memory. The
// instruction is checked in the program's memory, of which the child's is
// a copy.
func (t *tracer) syscallAgain(tid int, call instr.Syscall, args ...uint64) (uint64, error) {
	var saved ptrace.Regs
	if err := t.proc.getRegs(tid, &saved); err != nil {
		return 0, err
	}
	inst := t.arch.SyscallInst()
	pc := saved.PC() - uint64(len(inst))
	code := make([]byte, len(inst))
	if err := t.mem.ReadMem(pc, code); err != nil {
		return 0, err
	}
	if !bytes.Equal(code, inst) {
		return 0, fmt.Errorf("no system call instruction before %#x", saved.PC())
	}
	res, err := t.parts.calls.stepSyscall(tid, saved, pc, call, args...)
	if rerr := t.proc.setRegs(tid, &saved); err == nil && rerr != nil {
		return 0, rerr
	}
	return res, err
}

// errNoCalls is syscallIn's answer where the tracer has no process to
// run a system call in (a part tested alone).
var errNoCalls = errors.New("no process to run a system call in")

// syscallIn makes stopped thread tid run call with args: through the
// system call instruction just before its PC where there is one (a new
// thread's first stop is right after its clone), which writes nothing
// in the program's memory while other threads may run; else borrowing
// the thread (injector.syscall), where the program's other threads are
// stopped or there are none.
func syscallIn(t *tracer, tid int, call instr.Syscall, args ...uint64) (uint64, error) {
	if t.proc == nil || t.mem == nil || t.parts.calls == nil {
		return 0, errNoCalls
	}
	var regs ptrace.Regs
	if err := t.proc.getRegs(tid, &regs); err != nil {
		return 0, err
	}
	inst := t.arch.SyscallInst()
	code := make([]byte, len(inst))
	if regs.PC() >= uint64(len(inst)) && t.mem.ReadMem(regs.PC()-uint64(len(inst)), code) == nil && bytes.Equal(code, inst) {
		return t.syscallAgain(tid, call, args...)
	}
	return t.parts.calls.syscall(tid, call, args...)
}
