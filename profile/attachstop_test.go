package profile

import (
	"os"
	"os/exec"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/internal/testutil"
)

// TestAttachStoppedDuringSetUp: a SIGSTOP sent to a process just before
// PROFILE attached, still on its way when PROFILE had stopped every
// thread, reaches the first thread PROFILE steps in its set-up. PROFILE
// refuses the process as it refuses one already stopped (PRF1651), its
// code written back, and leaves it stopped, as the SIGSTOP asked: every
// thread 'T'. Continued, it works as before. (Seen in TestAttachStopped,
// 1 attach in some hundreds: PROFILE, which had taken the SIGSTOP for a
// failure of its set-up, went on with breakpoints and profiled a stopped
// process until Ctrl-C.)
func TestAttachStoppedDuringSetUp(t *testing.T) {
	testutil.MustHavePtrace(t)
	prog := testutil.BuildC(t, "epolltick", "-O2")
	srv := testutil.Serve(t, exec.Command(prog), time.Minute)
	pid := srv.PID()
	// (Before the server is told to quit: a test that fails leaves it
	// stopped.)
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) })
	before := testutil.CodeBytes(t, pid)
	testHookSeized = func(pid int) { syscall.Kill(pid, syscall.SIGSTOP) }
	defer func() { testHookSeized = nil }()
	done := make(chan error, 1)
	go func() {
		_, err := Run(Config{
			Plan: planFor(t, prog, datafile.FuncCounting, "work"), Path: prog, Attach: pid,
			Stdout: os.Stdout, Stderr: os.Stderr,
			Warn: func(d *prf.Diagnostic) {
				// (PRF4648: a CPU that cannot count in-process, ARMv8.0,
				// counts with breakpoints.)
				if d.Code != 4648 {
					t.Errorf("warning: %v", d)
				}
			},
		})
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		// (Killed, the process ends the run.)
		syscall.Kill(pid, syscall.SIGKILL)
		<-done
		t.Fatal("PROFILE still profiling the stopped process after a minute")
	}
	const want = "it was stopped (SIGSTOP) as PROFILE attached"
	if prf.Code(err) != 1651 || !strings.Contains(err.Error(), want) {
		t.Fatalf("profile --pid of a process stopped as PROFILE attached: %v, want PRF1651 %q", err, want)
	}
	if states := testutil.ThreadStates(pid); states != "TT" {
		t.Errorf("its two threads %q, want both left stopped (TT)", states)
	}
	if after := testutil.CodeBytes(t, pid); !reflect.DeepEqual(after, before) {
		t.Error("the process's code is not as it was before PROFILE attached")
	}
	syscall.Kill(pid, syscall.SIGCONT)
	srv.Ask(t, "w 10", "did 10")
}
