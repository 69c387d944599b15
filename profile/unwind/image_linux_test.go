package unwind_test

import (
	"bytes"
	"debug/elf"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/profile/procmaps"
	"github.com/sourceprofiler/sprof/profile/unwind"
)

// vdsoImage returns this process's vDSO, as the kernel maps it into
// every process, and where it is mapped.
func vdsoImage(t testing.TB) ([]byte, uint64) {
	t.Helper()
	data, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skip(err)
	}
	maps, err := procmaps.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range maps {
		if m.Path == "[vdso]" {
			mem, err := os.Open("/proc/self/mem")
			if err != nil {
				t.Skip(err)
			}
			defer mem.Close()
			image := make([]byte, m.End-m.Start)
			if _, err := mem.ReadAt(image, int64(m.Start)); err != nil {
				t.Skip(err)
			}
			return image, m.Start
		}
	}
	t.Skip("no vDSO")
	return nil, 0
}

// TestFromImage loads the call frame information of this process's vDSO
// from its image in memory, at its run-time addresses: every function
// the vDSO exports is covered, at its address in the mapping (where the
// kernel built it with CFI: Debian's arm64 vDSO has none).
func TestFromImage(t *testing.T) {
	image, start := vdsoImage(t)
	m, err := unwind.FromImage(image, start, hostArch(t))
	if errors.Is(err, unwind.ErrNoCFI) {
		t.Skipf("the vDSO has no call frame information: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.NewFile(bytes.NewReader(image))
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	var base uint64
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			base = p.Vaddr
			break
		}
	}
	n := 0
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 || !strings.HasPrefix(s.Name, "__vdso_") && !strings.HasPrefix(s.Name, "__kernel_") {
			continue
		}
		n++
		if pc := start + s.Value - base; !m.Covers(pc) {
			t.Errorf("%s at %#x: not covered", s.Name, pc)
		}
	}
	if n == 0 {
		t.Error("no function of the vDSO found")
	}
	t.Logf("%d functions, %d FDEs", n, m.FDEs())
}

// FuzzFromImage feeds bytes as an ELF image: a malformed one is an
// error, never a panic.
func FuzzFromImage(f *testing.F) {
	if image, err := os.ReadFile("/proc/self/exe"); err == nil && len(image) < 64<<20 {
		f.Add(image[:min(len(image), 4096)])
	}
	f.Add([]byte("\x7fELF\x02\x01\x01"))
	f.Fuzz(func(t *testing.T, image []byte) {
		for _, arch := range []unwind.Arch{unwind.AMD64, unwind.ARM64} {
			if m, err := unwind.FromImage(image, 0x7f0000000000, arch); (m == nil) == (err == nil) {
				t.Fatalf("module %v and error %v", m, err)
			}
		}
	})
}
