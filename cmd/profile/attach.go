package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sourceprofiler/sprof/internal/prf"
	"github.com/sourceprofiler/sprof/profile"
)

// attachProcess profiles the running process --pid names for --duration,
// or until a signal to PROFILE, and writes the .pbo. names is the
// optional PROGRAM, which names the .pbi (the process's executable by
// default); a process takes no arguments.
func attachProcess(o *options, names, args []string, diag io.Writer, warn func(*prf.Diagnostic)) (int, error) {
	switch {
	case o.pid == -1:
		return 0, prf.MissingArgument("--pid") // (--duration alone)
	case o.pid <= 0:
		return 0, prf.InvalidOption("--pid=" + strconv.Itoa(o.pid))
	}
	window, err := duration(o.duration)
	if err != nil {
		return 0, err
	}
	if len(args) > 0 {
		return 0, prf.InvalidOption(args[0] + ": a running process takes no arguments")
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", o.pid))
	if err != nil {
		return 0, prf.CannotAttach(o.pid, processError(o.pid, err))
	}
	if strings.HasSuffix(exe, " (deleted)") {
		return 0, prf.CannotAttach(o.pid, fmt.Errorf("its executable %s was deleted: the plan cannot be checked against it", strings.TrimSuffix(exe, " (deleted)")))
	}
	program := filepath.Base(exe)
	if len(names) > 0 {
		program = names[0]
	}
	return record(o, program, diag, warn, func(cfg *profile.Config) error {
		cfg.Attach = o.pid
		cfg.Duration = window
		cfg.Path = exe
		cfg.CommandLine = processCommandLine(o.pid)
		cfg.Attached = func(threads int) {
			until := "until Ctrl-C or its end"
			if window > 0 {
				until = "for " + strconv.FormatFloat(window.Seconds(), 'g', -1, 64) + " s"
			}
			fmt.Fprintf(diag, "profile: profiling process %d (%s, %d %s) %s\n", o.pid, program, threads, plural(threads, "thread", "threads"), until)
		}
		return nil
	})
}

// attaching reports whether the command line attaches to a running
// process: --pid or --duration given.
func (o *options) attaching() bool { return o.pid != -1 || o.duration != "" }

// duration reads --duration's seconds ("" for none): a number from 0.001
// to 10^9, decimals allowed.
func duration(text string) (time.Duration, error) {
	if text == "" {
		return 0, nil
	}
	s, err := strconv.ParseFloat(text, 64)
	// (A millisecond at least: a window that rounds to nothing would be
	// taken for none, and run until Ctrl-C; NaN fails every comparison.)
	if err != nil || !(s >= 0.001 && s <= 1e9) {
		return 0, prf.InvalidOption("--duration=" + text)
	}
	return time.Duration(s * float64(time.Second)), nil
}

// processError words the failure to read a process's files: the process
// is not there, or not the user's.
func processError(pid int, err error) error {
	status, serr := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	switch {
	case serr == nil && strings.Contains(string(status), "\nState:\tZ"):
		return errors.New("its main thread has exited")
	case errors.Is(err, os.ErrNotExist):
		return errors.New("no such process")
	case errors.Is(err, os.ErrPermission):
		return errors.New("its files are not yours to read")
	}
	return err
}

// processCommandLine is the process's command line as ps shows it
// (/proc/PID/cmdline), for the run record.
func processCommandLine(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(b) == 0 {
		return fmt.Sprintf("[process %d]", pid)
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	return commandLine(args[0], args[1:])
}

// plural returns one or many by n.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
