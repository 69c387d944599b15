package profile

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
	cmd := exec.Command(prog)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	defer syscall.Kill(pid, syscall.SIGKILL)
	out := bufio.NewScanner(outPipe)
	ask := func(q, want string) {
		t.Helper()
		fmt.Fprintln(in, q)
		if !out.Scan() || out.Text() != want {
			t.Fatalf("asked %q: %q, want %q", q, out.Text(), want)
		}
	}
	if !out.Scan() || out.Text() != "ready" {
		t.Fatalf("the server said %q, want ready", out.Text())
	}
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
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if len(tasks) != 2 {
		t.Errorf("%d threads, want 2", len(tasks))
	}
	for _, task := range tasks {
		stat, _ := os.ReadFile(task)
		if i := bytes.LastIndexByte(stat, ')'); i < 0 || i+2 >= len(stat) || stat[i+2] != 'T' {
			t.Errorf("the process is not left stopped: %s", stat)
		}
	}
	if after := testutil.CodeBytes(t, pid); !reflect.DeepEqual(after, before) {
		t.Error("the process's code is not as it was before PROFILE attached")
	}
	syscall.Kill(pid, syscall.SIGCONT)
	ask("w 10", "did 10")
	fmt.Fprintln(in, "q")
	if err := cmd.Wait(); err != nil {
		t.Errorf("the server, continued and told to quit: %v", err)
	}
}
