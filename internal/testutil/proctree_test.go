package testutil

import (
	"os/exec"
	"strings"
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
	// "(sleeping)", a state) and both sleep: a process just started may
	// still be running.
	for i := 0; i < 100; i++ {
		tree = ProcessTree(cmd.Process.Pid)
		if strings.Contains(tree, " sleep:") && !strings.Contains(tree, "State=R") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, want := range []string{"process ", " sh:", "  process ", " sleep:", "State=S", "thread ", "wchan "} {
		if !strings.Contains(tree, want) {
			t.Errorf("tree lacks %q:\n%s", want, tree)
		}
	}
	if got := ProcessTree(1 << 30); !strings.Contains(got, "?") {
		t.Errorf("a gone process: %q", got)
	}
	t.Log(tree)
}
