package profile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/internal/testutil"
)

// TestNumbered checks the numbers Run gives the tracer's errors that have
// none: a denied /proc file or ptrace request, a process gone, memory
// refused, and any other failure, named with the program and the step.
func TestNumbered(t *testing.T) {
	denied := &fs.PathError{Op: "open", Path: "/proc/42/maps", Err: syscall.EACCES}
	tests := []struct {
		name string
		err  error
		code int
		want string
	}{
		{"maps denied", fmt.Errorf("read memory map: %w", denied), 1645,
			"cannot profile ./agent: access to its process was denied: read memory map: open /proc/42/maps: permission denied"},
		{"ptrace refused", fmt.Errorf("step thread 42: %w", syscall.EPERM), 1645,
			"cannot profile ./agent: access to its process was denied: step thread 42: operation not permitted"},
		{"process gone", fmt.Errorf("resume thread 42: %w", syscall.ESRCH), 1646,
			"cannot profile ./agent: its process is gone or no longer traced: resume thread 42: no such process"},
		{"no memory", fmt.Errorf("plant libfoo.so: %w", syscall.ENOMEM), 1005,
			"operating system ran out of memory: plant libfoo.so: cannot allocate memory"},
		{"not mapped", errors.New("plant breakpoints: /x/clink is not mapped in process 42"), 1644,
			"cannot profile ./agent: plant breakpoints: /x/clink is not mapped in process 42"},
		{"numbered already", prf.CannotRun("./agent", syscall.EPERM), 1443, "cannot run program ./agent: operation not permitted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := numbered("./agent", tt.err)
			if prf.Code(err) != tt.code || err.Error() != tt.want {
				t.Errorf("PRF%d %q, want PRF%d %q", prf.Code(err), err, tt.code, tt.want)
			}
			var d *prf.Diagnostic
			if errors.As(err, &d) && d.Hint == "" && prf.Code(tt.err) == 0 {
				t.Error("no hint")
			}
		})
	}
}

// TestRunErrorsNumbered runs plans PROFILE cannot carry out, through Run:
// every error is a numbered diagnostic, the program named. A plan without
// modules, or of an unknown architecture, is refused before anything reads
// it (it made PROFILE panic); a program of the plan that the process does
// not map (a script, run by its interpreter) fails the planting.
func TestRunErrorsNumbered(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "script")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(script)
	if err != nil {
		t.Fatal(err)
	}
	plan := func(mods ...datafile.Module) *datafile.Plan {
		p := &datafile.Plan{Method: datafile.FuncCounting, StartIndex: -1, Calibration: -1, Modules: mods}
		for i := range mods {
			p.Funcs = append(p.Funcs, datafile.Func{Module: i, Name: "f", Entry: 0x1000})
		}
		p.ID = datafile.PlanID(p)
		return p
	}
	scriptModule := datafile.Module{Name: "script", Path: script, Arch: runtime.GOARCH, Size: st.Size(), ModTime: st.ModTime().UnixNano()}
	tests := []struct {
		name    string
		plan    *datafile.Plan
		code    int // 0: any number
		ptrace  bool
		message string
	}{
		{"no module", plan(), 1012, false, "cannot read expected number of bytes from file x.pbi: the plan names no module"},
		{"unknown architecture", plan(datafile.Module{Name: "script", Path: script, Arch: "sparc"}), 1402, false,
			script + ": sparc programs cannot be profiled"},
		{"not mapped", plan(scriptModule), 0, true, script},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.ptrace {
				testutil.MustHavePtrace(t)
			}
			null, err := os.Open(os.DevNull)
			if err != nil {
				t.Fatal(err)
			}
			defer null.Close()
			res, err := Run(Config{Plan: tt.plan, PlanPath: "x.pbi", Path: script, Args: []string{script}, Dir: dir,
				Stdin: null, Stdout: null, Stderr: null})
			if err == nil {
				t.Fatalf("Run succeeded: %+v", res)
			}
			code := prf.Code(err)
			if code == 0 || (tt.code != 0 && code != tt.code) || !strings.Contains(err.Error(), tt.message) {
				t.Errorf("error PRF%d %q, want PRF%d naming %q", code, err, tt.code, tt.message)
			}
			t.Logf("PRF%d %v", code, err)
		})
	}
}
