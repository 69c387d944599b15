package profile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/profile/ptrace"
)

// The run sequence (target.go) over a fake process: a program PROFILE
// starts (launch) and a process it attaches to (attachment), each got
// from the fake instead of the kernel, go through the same sequence,
// each with its own ends, and its own clean-up when a step fails.

// fakeTarget returns a tracer of plan, counted with breakpoints, whose
// program, the file prog, holds leafCode at leafAt, mapped there (mapped
// false: not mapped, which planting refuses); its main thread is stopped
// at leafAt. The tracer has no process yet: a target gets it.
func fakeTarget(t *testing.T, plan *datafile.Plan, mapped bool) (*tracer, *fakeProcess, *fakeMem, *[]string) {
	t.Helper()
	code := append(slices.Clone(leafCode), make([]byte, 0x1000-64-len(leafCode))...)
	path := filepath.Join(t.TempDir(), "prog")
	if err := os.WriteFile(path, code, 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	tr, mem, warnings := fakeTracerAt(plan, code, leafAt)
	fp := traceFake(tr, mem, 0)
	fp.reg(fakePID).SetPC(leafAt)
	fp.maps = fmt.Sprintf("%x-%x rw-p 00000000 00:00 0 [stack]\n", stackAt, stackAt+0x1000)
	if mapped {
		fp.maps = fmt.Sprintf("%x-%x r-xp 00000000 08:01 %d %s\n", leafAt, leafAt+0x1000, st.Sys().(*syscall.Stat_t).Ino, path) + fp.maps
	}
	tr.proc, tr.pid, tr.maps, tr.mem = nil, 0, nil, nil
	clear(tr.threads)
	tr.parts.plant.mapArea = tr.parts.plant.mmap
	tr.cfg.Path, tr.cfg.Now, tr.cfg.Breakpoints = path, time.Now, true
	return tr, fp, mem, warnings
}

// fakeLaunch is the launch target of tr whose program starts as fp.
func fakeLaunch(tr *tracer, fp *fakeProcess) *launch {
	l := newLaunch(tr)
	l.startProcess = func(string, []string, []string, string, []*os.File) (process, int, error) { return fp, fakePID, nil }
	return l
}

// fakeAttachment is the attachment of tr to fp, one thread.
func fakeAttachment(tr *tracer, fp *fakeProcess) *attachment {
	a := newAttachment(tr)
	tr.cfg.Attach = fakePID
	a.attachProcess = func(int) (process, []int, map[int]bool, error) { return fp, []int{fakePID}, nil, nil }
	return a
}

// sequence returns the requests of fp's record whose verbs are in
// verbs, in order.
func sequence(fp *fakeProcess, verbs ...string) []string {
	var out []string
	for _, c := range fp.calls {
		verb, _, _ := strings.Cut(c, " ")
		if slices.Contains(verbs, verb) {
			out = append(out, c)
		}
	}
	return out
}

// checkSequence compares what of fp's record has verbs with want.
func checkSequence(t *testing.T, fp *fakeProcess, want []string, verbs ...string) {
	t.Helper()
	if got := sequence(fp, verbs...); !slices.Equal(got, want) {
		t.Errorf("requests:\n\t%s\nwant:\n\t%s\n(all: %q)", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"), fp.calls)
	}
}

// runVerbs are the requests that show the run sequence's steps: the
// memory opened, the main thread's signals held, the system calls of
// planting (the area beside the program, mapAt), the switch to
// PTRACE_SEIZE, the threads let go, interrupted, detached or killed,
// the waits.
var runVerbs = []string{"openMem", "setSigMask", "syscall", "seize", "cont", "interrupt", "detach", "kill", "wait"}

// mapAt is the system call that maps the area beside the program.
const mapAt = "syscall 8388608 mmap(0x3f0000, 0x1000) = 0x3f0000"

// TestRunLaunch: a program PROFILE starts, stopped at its exec, whose
// main thread ends at once. The sequence opens its memory, plants f's
// breakpoint, switches to PTRACE_SEIZE tracing, lets the program go and
// waits for its end; it is neither killed nor detached, and its end is
// the run's.
func TestRunLaunch(t *testing.T) {
	plan := leafFuncs(datafile.FuncCounting)
	plan.Funcs[0].Entry = leafAt + 11
	tr, fp, mem, warnings := fakeTarget(t, plan, true)
	var planted bool
	fp.script = endOfRun()
	fp.script[0].do = func() { planted = mem.b[11] == 0xcc }
	res, err := tr.runTarget(fakeLaunch(tr, fp))
	if err != nil {
		t.Fatal(err)
	}
	if !planted || tr.parts.bp.sites[leafAt+11] == nil {
		t.Errorf("f's breakpoint not planted before the program ran")
	}
	if !res.Exited || res.Counts == nil || res.Counts.Run.Incomplete || len(fp.script) != 0 {
		t.Errorf("result %+v (counts %+v), %d events left; want the program's end, complete", res, res.Counts, len(fp.script))
	}
	checkSequence(t, fp, []string{"openMem 8388608", mapAt, "seize 8388608", "cont 8388608 0",
		"wait sleeping", "cont 8388608 0", "wait sleeping"}, runVerbs...)
	if len(*warnings) != 0 {
		t.Errorf("warnings %q", *warnings)
	}
}

// TestRunLaunchFails: when a step of the sequence fails (the program is
// not in its memory map, which planting refuses), the program is killed
// and reaped, never let go, and the run's error is the step's.
func TestRunLaunchFails(t *testing.T) {
	tr, fp, _, _ := fakeTarget(t, leafFuncs(datafile.FuncCounting), false)
	_, err := tr.runTarget(fakeLaunch(tr, fp))
	if err == nil || !strings.Contains(err.Error(), "not mapped") {
		t.Errorf("error %v, want the program not mapped", err)
	}
	checkSequence(t, fp, []string{"openMem 8388608", "kill 8388608 0 SIGKILL", "wait sleeping"}, runVerbs...)
}

// TestRunAttachFails: a process PROFILE attached to is never killed.
// When planting fails, the main thread gets its signal mask back and
// every thread is detached; when the run fails once the threads run
// (here the process is lost), they are interrupted first, and the code
// PROFILE wrote is written back before they are detached.
func TestRunAttachFails(t *testing.T) {
	t.Run("planting", func(t *testing.T) {
		tr, fp, _, _ := fakeTarget(t, leafFuncs(datafile.FuncCounting), false)
		fp.masks[fakePID] = 0x1000
		_, err := tr.runTarget(fakeAttachment(tr, fp))
		if err == nil || !strings.Contains(err.Error(), "not mapped") {
			t.Errorf("error %v, want the program not mapped", err)
		}
		checkSequence(t, fp, []string{"openMem 8388608", "setSigMask 8388608 0xffffffffffffffff",
			"setSigMask 8388608 0x1000", "detach 8388608 0"}, runVerbs...)
		if !tr.attach.detached {
			t.Errorf("the process not let go")
		}
	})
	t.Run("maps", func(t *testing.T) {
		// (Its memory opened, its map not: let go without the map, no
		// panic reading it.)
		tr, fp, _, _ := fakeTarget(t, leafFuncs(datafile.FuncCounting), false)
		fp.mapsErr = errors.New("permission denied")
		_, err := tr.runTarget(fakeAttachment(tr, fp))
		if err == nil || !strings.Contains(err.Error(), "permission denied") || !tr.attach.detached {
			t.Errorf("error %v, detached %v: want the map refused and the process let go", err, tr.attach.detached)
		}
	})
	t.Run("running", func(t *testing.T) {
		plan := leafFuncs(datafile.FuncCounting)
		plan.Funcs[0].Entry = leafAt + 11
		tr, fp, mem, _ := fakeTarget(t, plan, true)
		_, err := tr.runTarget(fakeAttachment(tr, fp))
		if err == nil || !strings.Contains(err.Error(), "lost the program") {
			t.Errorf("error %v, want the program lost", err)
		}
		if tr.parts.bp.sites[leafAt+11] == nil || mem.b[11] != leafCode[11] {
			t.Errorf("f's ret %#x; want it planted, then written back", mem.b[11])
		}
		checkSequence(t, fp, []string{"openMem 8388608", "setSigMask 8388608 0xffffffffffffffff", mapAt, "setSigMask 8388608 0x0",
			"cont 8388608 0", "wait quitting", "interrupt 8388608", "wait quitting", "detach 8388608 0"}, runVerbs...)
	})
}

// TestRunAttach: an attached run whose window ends (a signal to PROFILE)
// with the process running. The sequence holds the main thread's
// signals while it plants, lets the threads go with its mask back,
// tells Config.Attached, and at the window's end interrupts every
// thread, writes the code back and detaches them, still running. The
// counts cover the window.
func TestRunAttach(t *testing.T) {
	plan := leafFuncs(datafile.FuncCounting)
	plan.Funcs[0].Entry = leafAt + 11
	tr, fp, mem, warnings := fakeTarget(t, plan, true)
	signals := make(chan os.Signal, 1)
	tr.cfg.Signals = signals
	threads := 0
	tr.cfg.Attached = func(n int) { threads = n }
	a := fakeAttachment(tr, fp)
	var planted bool
	fp.script = []fakeEvent{
		// (The window ends as the thread stops, for an interrupt of
		// PROFILE's own. The signal is sent here, not before the run:
		// sent before, the window could end before the first wait.)
		{tid: fakePID, ws: trapEvent(ptrace.EventStop), do: func() {
			planted = mem.b[11] == 0xcc
			signals <- syscall.SIGINT
			<-a.quit
		}},
		{tid: fakePID, ws: trapEvent(ptrace.EventStop)},
	}
	res, err := tr.runTarget(a)
	if err != nil {
		t.Fatal(err)
	}
	if !planted || mem.b[11] != leafCode[11] {
		t.Errorf("f's ret %#x, planted %v; want it planted in the window, written back after", mem.b[11], planted)
	}
	if threads != 1 || !a.detached || !a.windowEnded || len(fp.script) != 0 {
		t.Errorf("Attached told %d threads, detached %v, window ended %v, %d events left; want 1, the process let go at the window's end", threads, a.detached, a.windowEnded, len(fp.script))
	}
	if r := res.Counts.Run; !r.Incomplete || !strings.Contains(r.Reason, "until PROFILE received SIGINT") {
		t.Errorf("run %+v, want it incomplete, the counts covering the window", r)
	}
	checkSequence(t, fp, []string{"openMem 8388608", "setSigMask 8388608 0xffffffffffffffff", mapAt, "setSigMask 8388608 0x0",
		"cont 8388608 0", "wait quitting", "cont 8388608 0", "wait quitting", "interrupt 8388608", "wait quitting",
		"detach 8388608 0"}, runVerbs...)
	if len(*warnings) != 0 {
		t.Errorf("warnings %q", *warnings)
	}
}
