package instr

import (
	"strings"
	"testing"
)

// TestBookCodeAMD64 checks the book code of an entry and of an exit with
// the GNU disassembler.
func TestBookCodeAMD64(t *testing.T) {
	need(t, "objdump")
	b := Book{Offset: 0x1000, Frames: 4, Funcs: 8}
	entry, ok := amd64{}.BookEntryCode(b, 3)
	if !ok {
		t.Fatal("no entry code")
	}
	addrs, got := disassembleAt(t, entry.Code, 0)
	for i := range got {
		got[i] = addrs[i] + " " + got[i]
	}
	t.Logf("entry:\n%s", strings.Join(got, "\n"))
	exit, ok := amd64{}.BookExitCode(b, 3, 8)
	if !ok {
		t.Fatal("no exit code")
	}
	_, got = disassembleAt(t, exit.Code, 0)
	t.Logf("exit:\n%s", strings.Join(got, "\n"))
}
