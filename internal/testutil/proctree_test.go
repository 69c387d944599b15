//go:build linux

package testutil

import (
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestProcessTree(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 30 & wait")
	if err := cmd.Start(); err != nil {
		t.Skip("no sh:", err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var tree string
	// Until the shell's child has become sleep (" sleep:", not
	// "(sleeping)", a state) and both sleep in a system call: a process
	// just started may still be running, or waiting for its pages (State
	// D, its thread running).
	for i := 0; i < 100; i++ {
		tree = ProcessTree(cmd.Process.Pid)
		if strings.Contains(tree, " sleep:") && !strings.Contains(tree, "State=R") &&
			!strings.Contains(tree, "State=D") && !strings.Contains(tree, "syscall running") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, want := range []string{"process ", " sh:", "  process ", " sleep:", "State=S", "thread ", "wchan "} {
		if !strings.Contains(tree, want) {
			t.Errorf("tree lacks %q:\n%s", want, tree)
		}
	}
	// sleep's thread is in its system call: nanosleep or clock_nanosleep,
	// by number, then its arguments, stack pointer and PC.
	sleeping, inSleep := 0, false
	for _, line := range strings.Split(tree, "\n") {
		if strings.Contains(line, "process ") {
			inSleep = strings.Contains(line, " sleep:")
		}
		if !inSleep || !strings.Contains(line, "thread ") {
			continue
		}
		sleeping++
		_, call, _ := strings.Cut(line, " syscall ")
		f := strings.Fields(call)
		if len(f) != 9 || (f[0] != strconv.Itoa(syscall.SYS_NANOSLEEP) && f[0] != strconv.Itoa(syscall.SYS_CLOCK_NANOSLEEP)) {
			t.Errorf("sleep's thread %q: want nanosleep's number (%d or %d), 6 arguments, SP and PC",
				line, syscall.SYS_NANOSLEEP, syscall.SYS_CLOCK_NANOSLEEP)
		}
	}
	if sleeping != 1 {
		t.Errorf("sleep has %d threads, want 1:\n%s", sleeping, tree)
	}
	if got := ProcessTree(1 << 30); !strings.Contains(got, "?") {
		t.Errorf("a gone process: %q", got)
	}
	t.Log(tree)
}

// TestProcessTreeCPU: a thread that spins shows the CPU time it used, in
// clock ticks, growing.
func TestProcessTreeCPU(t *testing.T) {
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Skip("no sh:", err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	cpu := func() int {
		tree := ProcessTree(cmd.Process.Pid)
		_, rest, ok := strings.Cut(tree, " cpu ")
		if !ok {
			t.Fatalf("no cpu in %q", tree)
		}
		n, err := strconv.Atoi(strings.Fields(rest)[0])
		if err != nil {
			t.Fatalf("cpu in %q: %v", tree, err)
		}
		return n
	}
	first := cpu()
	for i := 0; i < 200; i++ {
		if cpu() > first {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("a spinning shell used %d ticks, and no more in 10 s", first)
}

// TestThreadStates: a process's one thread reads 'S' asleep, 'T' once
// stopped by SIGSTOP, and a process reaped reads none.
func TestThreadStates(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep:", err)
	}
	pid := cmd.Process.Pid
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	until := func(want string) {
		t.Helper()
		var got string
		for range 200 {
			if got = ThreadStates(pid); got == want {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("thread states %q, want %q", got, want)
	}
	until("S")
	syscall.Kill(pid, syscall.SIGSTOP)
	until("T")
	cmd.Process.Kill()
	cmd.Wait()
	if got := ThreadStates(pid); got != "" {
		t.Errorf("a process reaped: thread states %q, want none", got)
	}
}
