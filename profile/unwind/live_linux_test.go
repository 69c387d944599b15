//go:build linux && (amd64 || arm64)

package unwind_test

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sourceprofiler/sprof/internal/elfid"
	"github.com/sourceprofiler/sprof/internal/testutil"
	"github.com/sourceprofiler/sprof/profile/procmaps"
	"github.com/sourceprofiler/sprof/profile/unwind"
)

// stackCopy is how much of the stack the snapshots copy from SP, as a
// sampler asks the kernel for (PERF_SAMPLE_STACK_USER).
const stackCopy = 64 << 10

// snapshot is a stopped thread as a sample would give it, with the
// modules mapped in its process.
type snapshot struct {
	regs    unwind.Regs
	stack   unwind.Stack
	modules []*liveModule
	vdso    uint64 // where the vDSO is mapped: no file, no module
	vdsoEnd uint64
	vdsoImg []byte // its bytes, as a sampler could read them
}

// liveModule is a module of the snapshot's process and its functions.
type liveModule struct {
	path  string
	lo    uint64      // its first mapping's start
	spans [][2]uint64 // its mappings (the vDSO may lie between two)
	mod   *unwind.Module
	syms  []elf.Symbol
}

// moduleOf finds the module of pc.
func (s *snapshot) moduleOf(pc uint64) *unwind.Module {
	if lm := s.live(pc); lm != nil {
		return lm.mod
	}
	return nil
}

func (s *snapshot) live(pc uint64) *liveModule {
	for _, lm := range s.modules {
		for _, sp := range lm.spans {
			if pc >= sp[0] && pc < sp[1] {
				return lm
			}
		}
	}
	return nil
}

// name names the function of a frame's PC (a caller's at its return
// address minus one), "?" for none.
func (s *snapshot) name(pc uint64, caller bool) string {
	if caller {
		pc--
	}
	lm := s.live(pc)
	if lm == nil {
		return "?"
	}
	addr := pc - lm.mod.Bias
	for _, sym := range lm.syms {
		if elf.ST_TYPE(sym.Info) == elf.STT_FUNC && addr >= sym.Value && addr < sym.Value+sym.Size {
			return sym.Name
		}
	}
	return "?"
}

// names names the frames of an unwind.
func (s *snapshot) names(pcs []uint64) []string {
	var out []string
	for i, pc := range pcs {
		out = append(out, s.name(pc, i > 0))
	}
	return out
}

// takeSnapshot runs the unwind fixture prog under ptrace with args until
// it stops on its breakpoint, and takes its registers, a copy of its
// stack and its modules, as a sampler would.
func takeSnapshot(t testing.TB, prog string, args ...string) *snapshot {
	t.Helper()
	testutil.MustHavePtrace(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := exec.Command(prog, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", prog, err)
	}
	pid := cmd.Process.Pid
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil || !ws.Stopped() {
		t.Fatalf("wait for exec: %v %v", ws, err)
	}
	for deliver := 0; ; {
		if err := unix.PtraceCont(pid, deliver); err != nil {
			t.Fatalf("cont: %v", err)
		}
		if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil {
			t.Fatalf("wait: %v", err)
		}
		if !ws.Stopped() {
			t.Fatalf("fixture ended before its breakpoint: %v", ws)
		}
		if ws.StopSignal() == unix.SIGTRAP {
			break // the breakpoint
		}
		deliver = int(ws.StopSignal()) // SIGUSR1: to the handler
	}
	s := &snapshot{}
	var err error
	if s.regs, err = sampleRegs(pid); err != nil {
		t.Fatalf("registers: %v", err)
	}
	maps := readMaps(t, pid)
	s.stack = readStack(t, pid, maps, s.regs.SP)
	s.modules = loadModules(t, maps)
	for _, m := range maps {
		if m.Path == "[vdso]" {
			s.vdso, s.vdsoEnd = m.Start, m.End
			s.vdsoImg = readMem(t, pid, m.Start, m.End-m.Start)
		}
	}
	return s
}

func readMaps(t testing.TB, pid int) []procmaps.Mapping {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	maps, err := procmaps.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return maps
}

// readStack copies stackCopy bytes of the stack from sp, or to the end of
// its mapping.
func readStack(t testing.TB, pid int, maps []procmaps.Mapping, sp uint64) unwind.Stack {
	t.Helper()
	end := sp + stackCopy
	for _, m := range maps {
		if sp >= m.Start && sp < m.End {
			end = min(end, m.End)
		}
	}
	return unwind.Stack{Addr: sp, Data: readMem(t, pid, sp, end-sp)}
}

// readMem reads n bytes of the process's memory at addr.
func readMem(t testing.TB, pid int, addr, n uint64) []byte {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data := make([]byte, n)
	if _, err := f.ReadAt(data, int64(addr)); err != nil {
		t.Fatalf("read memory at %#x: %v", addr, err)
	}
	return data
}

// loadModules loads the CFI of each file mapped, with its load bias from
// its first mapping.
func loadModules(t testing.TB, maps []procmaps.Mapping) []*liveModule {
	t.Helper()
	byPath := map[string]*liveModule{}
	var order []string
	for _, m := range maps {
		if len(m.Path) == 0 || m.Path[0] != '/' {
			continue
		}
		lm, ok := byPath[m.Path]
		if !ok {
			f, err := elf.Open(m.Path)
			if err != nil {
				continue
			}
			bias := elfid.LoadBias(m.Start, m.Offset, elfid.LinkBase(f))
			mod, err := unwind.FromELF(f, bias, hostArch(t))
			syms, _ := f.Symbols()
			dyn, _ := f.DynamicSymbols()
			f.Close()
			if err != nil {
				t.Logf("%s: %v", m.Path, err)
				continue
			}
			lm = &liveModule{path: m.Path, lo: m.Start, mod: mod, syms: append(syms, dyn...)}
			byPath[m.Path] = lm
			order = append(order, m.Path)
		}
		lm.spans = append(lm.spans, [2]uint64{m.Start, m.End})
	}
	sort.Strings(order)
	var out []*liveModule
	for _, p := range order {
		out = append(out, byPath[p])
	}
	return out
}

func hostArch(t testing.TB) unwind.Arch {
	switch runtime.GOARCH {
	case "amd64":
		return unwind.AMD64
	case "arm64":
		return unwind.ARM64
	}
	t.Skipf("no unwinding on %s", runtime.GOARCH)
	return 0
}

// gdbFrames returns the functions of gdb's backtrace of prog stopped on
// its breakpoint (gdb stops at main), or nil without gdb.
func gdbFrames(t *testing.T, prog string, args ...string) []string {
	t.Helper()
	gdb, err := exec.LookPath("gdb")
	if err != nil {
		return nil
	}
	cmdArgs := append([]string{"-nx", "-batch", "-ex", "run", "-ex", "bt", "--args", prog}, args...)
	out, err := exec.Command(gdb, cmdArgs...).CombinedOutput()
	if err != nil {
		t.Logf("gdb: %v\n%s", err, out)
		return nil
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.HasPrefix(f[0], "#") || f[1] == "trap" {
			continue // trap is inlined: gdb shows inlined frames, an unwind physical ones
		}
		if len(f) >= 4 && f[2] == "in" {
			names = append(names, f[3])
		} else {
			names = append(names, f[1])
		}
	}
	t.Logf("gdb bt: %s", strings.Join(names, " <- "))
	return names
}
