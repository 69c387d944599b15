package profile

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/sourceprofiler/sprof/instr"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// fakeProcess is a traced program without a kernel, for the tests of a
// stop's path through the tracer: a memory (fakeMem), the registers of
// each thread, and a script of the events its waits return. It records
// every request the tracer makes of it, in order (calls), and plays the
// kernel where a test needs one: a single step over the system call
// instruction runs the call (mmap and munmap map and unmap areas of the
// memory) and stops the thread after it, as the kernel does.
//
// Its thread IDs are the test's; tests use IDs above the kernel's
// largest (pid_max is at most 2^22), so that what the tracer still reads
// of /proc by itself finds no such thread.
type fakeProcess struct {
	arch instr.Arch
	mem  *fakeMem
	// maps is the memory map's text, as /proc/PID/maps prints it;
	// mapsErr, when set, is openMaps' error.
	maps    string
	mapsErr error
	regs    map[int]*ptrace.Regs
	// script are the events the waits return, in order: wait takes the
	// first, waitFor(tid) the first of tid.
	script []fakeEvent
	calls  []string

	// What the kernel tells of the tasks: their process (tgid; a task
	// not named is a process of its own), the tasks with memory of their
	// own (a fork's child: sameMemory is false) and that memory (openMem),
	// the message of each one's last event, the siginfo of the signal it
	// is stopped for, whether it is in a system call, its signal mask.
	tgids    map[int]int
	separate map[int]*fakeMem
	msgs     map[int]uint64
	gone     map[int]bool // threads whose event message is lost: killed while stopped
	infos    map[int]ptrace.RawSigInfo
	inCall   map[int]bool
	masks    map[int]uint64
	// cpu is each thread's time on a CPU, as its schedstat says (a
	// thread not named has none: cpuTime fails, as for a thread gone).
	cpu map[int]int64
	// nextArea is where an mmap without an address maps.
	nextArea uint64
	// pointers are the thread pointers a test gives threads (none:
	// threadPointer fails, as where the kernel has no TLS regset).
	pointers map[int]uint64
}

// fakeEvent is a change of a thread that a wait returns: its status, and
// where it stopped (pc, and sp, when not 0). do runs as the wait takes
// it, before the thread moves: it sees the process as the tracer left it
// at the stop before, and may change it (the program maps a library).
type fakeEvent struct {
	tid    int
	ws     ptrace.WaitStatus
	pc, sp uint64
	do     func()
}

// newFakeProcess is a process of arch over mem.
func newFakeProcess(arch instr.Arch, mem *fakeMem) *fakeProcess {
	return &fakeProcess{
		arch: arch, mem: mem, regs: map[int]*ptrace.Regs{},
		tgids: map[int]int{}, separate: map[int]*fakeMem{}, msgs: map[int]uint64{}, gone: map[int]bool{},
		infos: map[int]ptrace.RawSigInfo{}, inCall: map[int]bool{}, masks: map[int]uint64{}, cpu: map[int]int64{},
		nextArea: 0x7e00_0000_0000,
	}
}

// The statuses of wait4 (<sys/wait.h>), for scripts.

// stoppedBy is a thread stopped by sig.
func stoppedBy(sig syscall.Signal) ptrace.WaitStatus { return ptrace.WaitStatus(0x7f | int(sig)<<8) }

// trapEvent is a thread stopped at ptrace event ev (ptrace.EventClone...).
func trapEvent(ev int) ptrace.WaitStatus {
	return stoppedBy(syscall.SIGTRAP) | ptrace.WaitStatus(ev<<16)
}

// exitedWith is a thread that exited with code.
func exitedWith(code int) ptrace.WaitStatus { return ptrace.WaitStatus(code << 8) }

// reg returns the registers of thread tid, made at first use: a test
// gives a thread registers, or a stop of the script does.
func (f *fakeProcess) reg(tid int) *ptrace.Regs {
	r := f.regs[tid]
	if r == nil {
		r = &ptrace.Regs{}
		f.regs[tid] = r
	}
	return r
}

// note records a request.
func (f *fakeProcess) note(format string, args ...any) {
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

// acts returns the requests that change the process (not its readings),
// in order.
func (f *fakeProcess) acts() []string {
	var out []string
	for _, c := range f.calls {
		verb, _, _ := strings.Cut(c, " ")
		switch verb {
		case "setRegs", "setThreadPointer", "cont", "step", "interrupt", "listen", "detach", "detachStopped",
			"seize", "kill", "setSigInfo", "setSigMask", "suspendSeccomp", "syscall":
			out = append(out, c)
		}
	}
	return out
}

// getRegs and setRegs fail, as the kernel's, for a thread that never
// stopped (no registers).
func (f *fakeProcess) getRegs(tid int, r *ptrace.Regs) error {
	f.note("getRegs %d", tid)
	if f.regs[tid] == nil {
		return syscall.ESRCH
	}
	*r = *f.regs[tid]
	return nil
}

func (f *fakeProcess) setRegs(tid int, r *ptrace.Regs) error {
	f.note("setRegs %d pc=%#x", tid, r.PC())
	if f.regs[tid] == nil {
		return syscall.ESRCH
	}
	*f.regs[tid] = *r
	return nil
}

func (f *fakeProcess) threadPointer(tid int) (uint64, error) {
	f.note("threadPointer %d", tid)
	if p, ok := f.pointers[tid]; ok {
		return p, nil
	}
	return 0, fmt.Errorf("thread pointer: %w", syscall.ENOTSUP)
}

func (f *fakeProcess) setThreadPointer(tid int, v uint64) error {
	f.note("setThreadPointer %d %#x", tid, v)
	return nil
}

func (f *fakeProcess) cont(tid int, sig syscall.Signal) error {
	f.note("cont %d %s", tid, fakeSig(sig))
	return nil
}

// step single-steps thread tid: over the system call instruction, the
// call is made and the thread stops after it; elsewhere the script says
// where the thread stops.
func (f *fakeProcess) step(tid int) error {
	f.note("step %d", tid)
	r := f.reg(tid)
	inst := f.arch.SyscallInst()
	code := make([]byte, len(inst))
	if f.mem.ReadMem(r.PC(), code) == nil && string(code) == string(inst) {
		f.syscall(tid, r)
		r.SetPC(r.PC() + uint64(len(inst)))
		f.script = append([]fakeEvent{{tid: tid, ws: stoppedBy(syscall.SIGTRAP)}}, f.script...)
	}
	return nil
}

// syscall runs the system call thread tid's registers r ask for, as the
// kernel would: mmap maps an area of zeroes in the memory (where asked,
// if free), munmap unmaps one; any other call fails with ENOSYS.
func (f *fakeProcess) syscall(tid int, r *ptrace.Regs) {
	nr, args, result := fakeABI(f.arch)
	a := func(i int) uint64 { return r.Reg(args[i]) }
	res := negErrno(syscall.ENOSYS)
	switch r.Reg(nr) {
	case f.arch.SyscallNumber(instr.SysMmap):
		addr, size := a(0), a(1)
		if f.mem.areas == nil {
			f.mem.areas = map[uint64][]byte{}
		}
		if addr == 0 {
			addr, f.nextArea = f.nextArea, f.nextArea+(size+0xffff)&^0xffff
		}
		res = addr
		if _, err := f.mem.span(addr, 1); err == nil {
			res = negErrno(syscall.EEXIST)
		} else {
			f.mem.areas[addr] = make([]byte, size)
		}
		f.note("syscall %d mmap(%#x, %#x) = %#x", tid, a(0), size, res)
	case f.arch.SyscallNumber(instr.SysMunmap):
		delete(f.mem.areas, a(0))
		res = 0
		f.note("syscall %d munmap(%#x, %#x)", tid, a(0), a(1))
	default:
		f.note("syscall %d %d", tid, r.Reg(nr))
	}
	r.SetReg(result, res)
}

// negErrno is a system call's result for error e.
func negErrno(e syscall.Errno) uint64 { return -uint64(e) }

// fakeABI finds where arch's system calls take their number, arguments
// and result among the DWARF numbers of the registers, from what
// SetSyscall writes and SyscallResult reads.
func fakeABI(arch instr.Arch) (nr int, args [6]int, result int) {
	const mark = 0x5eed_0000
	var r ptrace.Regs
	arch.SetSyscall(&r, mark, mark+1, mark+2, mark+3, mark+4, mark+5, mark+6)
	var probe ptrace.Regs
	for n := range 64 {
		switch v := r.Reg(n); {
		case v == mark:
			nr = n
		case v > mark && v <= mark+6:
			args[v-mark-1] = n
		}
		probe.SetReg(n, mark+uint64(n))
	}
	return nr, args, int(arch.SyscallResult(&probe) - mark)
}

func (f *fakeProcess) interrupt(tid int) error { f.note("interrupt %d", tid); return nil }
func (f *fakeProcess) listen(tid int) error    { f.note("listen %d", tid); return nil }

func (f *fakeProcess) detach(tid int, sig syscall.Signal) error {
	f.note("detach %d %s", tid, fakeSig(sig))
	return nil
}

func (f *fakeProcess) detachStopped(tids []int) { f.note("detachStopped %v", tids) }
func (f *fakeProcess) waitStopped(tids []int)   { f.note("waitStopped %v", tids) }
func (f *fakeProcess) seize(pid int) error      { f.note("seize %d", pid); return nil }

func (f *fakeProcess) kill(tgid, tid int, sig syscall.Signal) error {
	f.note("kill %d %d %s", tgid, tid, fakeSig(sig))
	return nil
}

// wait returns the script's next event; none left, the kernel's ECHILD.
func (f *fakeProcess) wait(w waitPolicy) (int, ptrace.WaitStatus, error) {
	f.note("wait %s", [...]string{"sleeping", "yielding", "idling", "ticking", "quitting", "polling"}[w.kind])
	if w.quit != nil {
		select {
		case <-w.quit:
			return 0, 0, ptrace.ErrQuit
		default:
		}
	}
	if len(f.script) == 0 {
		return 0, 0, syscall.ECHILD
	}
	return f.deliver(0)
}

// waitFor returns the script's next event of thread tid.
func (f *fakeProcess) waitFor(tid int, yield time.Duration) (ptrace.WaitStatus, error) {
	f.note("waitFor %d", tid)
	i := slices.IndexFunc(f.script, func(e fakeEvent) bool { return e.tid == tid })
	if i < 0 {
		return 0, syscall.ECHILD
	}
	_, ws, err := f.deliver(i)
	return ws, err
}

// deliver takes event i out of the script: the thread is where it says.
func (f *fakeProcess) deliver(i int) (int, ptrace.WaitStatus, error) {
	e := f.script[i]
	f.script = slices.Delete(f.script, i, i+1)
	if e.do != nil {
		e.do()
	}
	r := f.reg(e.tid) // (a thread that stops has registers)
	if e.pc != 0 {
		r.SetPC(e.pc)
	}
	if e.sp != 0 {
		f.arch.SetSP(r, e.sp)
	}
	return e.tid, e.ws, nil
}

func (f *fakeProcess) eventMsg(tid int) (uint64, error) {
	f.note("eventMsg %d", tid)
	if f.gone[tid] {
		return 0, syscall.ESRCH // (killed while stopped at the event)
	}
	return f.msgs[tid], nil
}

func (f *fakeProcess) sigInfo(tid int) (ptrace.SigInfo, error) {
	f.note("sigInfo %d", tid)
	b := f.infos[tid]
	le := func(off int) int32 {
		return int32(uint32(b[off]) | uint32(b[off+1])<<8 | uint32(b[off+2])<<16 | uint32(b[off+3])<<24)
	}
	return ptrace.SigInfo{Signo: le(0), Code: le(8), Pid: le(16), Status: le(24)}, nil
}

func (f *fakeProcess) rawSigInfo(tid int) (ptrace.RawSigInfo, error) {
	f.note("rawSigInfo %d", tid)
	return f.infos[tid], nil
}

func (f *fakeProcess) setSigInfo(tid int, info ptrace.RawSigInfo) error {
	f.note("setSigInfo %d signo=%d", tid, info[0])
	f.infos[tid] = info
	return nil
}

func (f *fakeProcess) sigMask(tid int) (uint64, error) {
	f.note("sigMask %d", tid)
	return f.masks[tid], nil
}

func (f *fakeProcess) setSigMask(tid int, mask uint64) error {
	f.note("setSigMask %d %#x", tid, mask)
	f.masks[tid] = mask
	return nil
}

func (f *fakeProcess) signals(tid int, set sigSet) uint64 {
	if set == sigBlocked {
		return f.masks[tid]
	}
	return 0
}

func (f *fakeProcess) attach(pid int) ([]int, map[int]bool, error) {
	f.note("attach %d", pid)
	return nil, nil, syscall.EPERM
}

// sameMemory: tasks share the program's memory unless one has its own;
// a process of the machine (an ID the kernel gives, which an attach
// finds in /proc) shares none with the fake's.
func (f *fakeProcess) sameMemory(a, b int) (bool, error) {
	if a < fakePID || b < fakePID {
		return false, nil
	}
	f.note("sameMemory %d %d", a, b)
	return f.separate[a] == nil && f.separate[b] == nil, nil
}

func (f *fakeProcess) tgid(tid int) int {
	if g, ok := f.tgids[tid]; ok {
		return g
	}
	return tid
}

func (f *fakeProcess) inSyscall(tgid, tid int) bool { return f.inCall[tid] }

func (f *fakeProcess) seccomp(tid int) (ptrace.Seccomp, error) {
	return ptrace.Seccomp{Filters: -1}, nil
}

func (f *fakeProcess) suspendSeccomp(tid int, attached, on bool) error {
	f.note("suspendSeccomp %d %v", tid, on)
	return nil
}

// openMem opens the memory of task tid: its own where it has one (a
// fork's child), else the program's.
func (f *fakeProcess) openMem(tid int) (taskMem, error) {
	f.note("openMem %d", tid)
	if m := f.separate[tid]; m != nil {
		return fakeTaskMem{m}, nil
	}
	return fakeTaskMem{f.mem}, nil
}

func (f *fakeProcess) openMaps(pid int) (memoryMap, error) {
	if f.mapsErr != nil {
		return nil, f.mapsErr
	}
	return fakeMapsFile{f}, nil
}

func (f *fakeProcess) mapShared(tid, fd, size int) (*ptrace.Shared, error) {
	return nil, syscall.ENOSYS
}

func (f *fakeProcess) auxValue(pid int, typ uint64) (uint64, error) { return 0, nil }
func (f *fakeProcess) stackLimit(pid int) (uint64, error)           { return 8 << 20, nil }

func (f *fakeProcess) cpuTime(tgid, tid int) (int64, error) {
	if ns, ok := f.cpu[tid]; ok {
		return ns, nil
	}
	return 0, syscall.ENOENT
}

func (f *fakeProcess) pacMask(int) uint64 { return 0 }

func (f *fakeProcess) openSampler(tid int, o ptrace.SamplerOptions) (*ptrace.Sampler, error) {
	return nil, syscall.ENOSYS
}

// fakeTaskMem is a task's memory, opened.
type fakeTaskMem struct{ *fakeMem }

func (fakeTaskMem) Close() error { return nil }

// fakeMapsFile is the memory map, opened: its text as it is at each Read.
type fakeMapsFile struct{ f *fakeProcess }

func (m fakeMapsFile) Read() ([]byte, error) { return []byte(m.f.maps), nil }
func (fakeMapsFile) Close() error            { return nil }

// fakeSig names a signal in the record of the requests ("0" for none).
func fakeSig(sig syscall.Signal) string {
	if sig == 0 {
		return "0"
	}
	return signalName(sig)
}
