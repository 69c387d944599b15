package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// ProcessTree describes the process pid and its descendants as /proc
// sees them: for each process its name, state, tracer and signal masks,
// and for each of its threads the state, the kernel function it sleeps
// in, the CPU time it has used (user+system, in clock ticks: a thread
// that uses more between two looks is spinning) and its system call
// with the stack pointer and PC (/proc/pid/syscall: "running", or -1 and
// the registers of a thread stopped outside a system call). A test that finds a run hung prints it, so that the
// failure says who was waiting for whom.
func ProcessTree(pid int) string {
	var b strings.Builder
	describe(&b, pid, "")
	return b.String()
}

func describe(b *strings.Builder, pid int, indent string) {
	dir := fmt.Sprintf("/proc/%d", pid)
	fmt.Fprintf(b, "%sprocess %d %s:", indent, pid, readTrim(dir+"/comm"))
	status := readTrim(dir + "/status")
	for _, line := range strings.Split(status, "\n") {
		key, val, ok := strings.Cut(line, ":")
		switch key {
		case "State", "TracerPid", "SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt":
			if ok {
				fmt.Fprintf(b, " %s=%s", key, strings.Join(strings.Fields(val), " "))
			}
		}
	}
	b.WriteByte('\n')
	tasks, _ := filepath.Glob(dir + "/task/*")
	var children []int
	for _, task := range tasks {
		state, cpu := "?", "?"
		stat := readTrim(task + "/stat")
		if i := strings.LastIndexByte(stat, ')'); i >= 0 { // the name may hold spaces
			rest := strings.Fields(stat[i+1:])
			if len(rest) > 0 {
				state = rest[0]
			}
			if len(rest) > 12 { // utime and stime, fields 14 and 15
				var u, s int
				fmt.Sscan(rest[11], &u)
				fmt.Sscan(rest[12], &s)
				cpu = fmt.Sprint(u + s)
			}
		}
		pending := ""
		for _, line := range strings.Split(readTrim(task+"/status"), "\n") {
			if v, ok := strings.CutPrefix(line, "SigPnd:"); ok {
				pending = strings.TrimSpace(v)
			}
		}
		fmt.Fprintf(b, "%s  thread %s: state %s wchan %s pending %s cpu %s syscall %s\n",
			indent, filepath.Base(task), state, readTrim(task+"/wchan"), pending, cpu, readTrim(task+"/syscall"))
		for _, c := range strings.Fields(readTrim(task + "/children")) {
			var n int
			if _, err := fmt.Sscan(c, &n); err == nil {
				children = append(children, n)
			}
		}
	}
	sort.Ints(children)
	for _, c := range children {
		describe(b, c, indent+"  ")
	}
}

// readTrim is the file's text without surrounding space, or "?" when it
// cannot be read (the process may have gone).
func readTrim(name string) string {
	data, err := os.ReadFile(name)
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(data))
}

// CodeBytes reads every executable mapping of a file in process pid:
// its name, its addresses and its bytes.
func CodeBytes(t testing.TB, pid int) map[string][]byte {
	t.Helper()
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	code := map[string][]byte{}
	for _, line := range strings.Split(string(maps), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || !strings.Contains(f[1], "x") || !strings.HasPrefix(f[5], "/") {
			continue
		}
		var lo, hi uint64
		if _, err := fmt.Sscanf(f[0], "%x-%x", &lo, &hi); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, hi-lo)
		if _, err := mem.ReadAt(b, int64(lo)); err != nil {
			t.Fatalf("read %s: %v", line, err)
		}
		code[f[5]+"@"+f[0]] = b
	}
	return code
}

// ThreadStates returns the state of each thread of process pid, one
// letter each ('R', 'S', 'T', 't'...: /proc/PID/task/TID/stat), in the
// order of their IDs; "" for a process that is gone.
func ThreadStates(pid int) string {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	ids := make([]int, 0, len(tasks))
	for _, task := range tasks {
		var id int
		if _, err := fmt.Sscan(filepath.Base(task), &id); err == nil {
			ids = append(ids, id)
		}
	}
	sort.Ints(ids)
	var states []byte
	for _, id := range ids {
		stat := readTrim(fmt.Sprintf("/proc/%d/task/%d/stat", pid, id))
		if i := strings.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) { // the name may hold spaces
			states = append(states, stat[i+2])
		}
	}
	return string(states)
}
