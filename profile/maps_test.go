package profile

import (
	"strings"
	"testing"
)

// TestReadMapsNotOpen: a memory map that could not be opened (an attach
// whose /proc/PID/maps was refused after its memory was opened) is an
// error to whoever reads it, as the detach does, not a panic.
func TestReadMapsNotOpen(t *testing.T) {
	tr := &tracer{}
	if m, err := tr.readMaps(); err == nil || m != nil || !strings.Contains(err.Error(), "memory map: not open") {
		t.Errorf("readMaps of no map: %v, %v; want the error that it is not open", m, err)
	}
}
