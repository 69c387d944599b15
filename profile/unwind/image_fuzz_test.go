package unwind_test

import (
	"os"
	"testing"

	"github.com/sourceprofiler/sprof/profile/unwind"
)

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
