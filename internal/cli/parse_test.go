package cli

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestBytesPreserved checks that names and arguments that are not UTF-8
// (Linux file names are bytes) come back unchanged from kong.
func TestBytesPreserved(t *testing.T) {
	const odd = "caf\xe9\xff"
	t.Run("prep", func(t *testing.T) {
		o, err := ParsePrep([]string{"/inc", odd, "--start=" + odd, "/oi", odd, odd}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := prepWant(func(o *PrepOptions) {
			o.Specs, o.Start, o.OutputPBI, o.Programs = []Spec{{Include, odd}}, odd, odd, []string{odd}
		})
		if diff := cmp.Diff(want, o, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("options (-want +got):\n%s", diff)
		}
	})
	t.Run("profile", func(t *testing.T) {
		o, err := ParseProfile([]string{"/i", odd, odd, odd, "-" + odd}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := profileWant(func(o *ProfileOptions) {
			o.Input, o.Program, o.Args = odd, odd, []string{odd, "-" + odd}
		})
		if diff := cmp.Diff(want, o, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("options (-want +got):\n%s", diff)
		}
	})
	t.Run("plist", func(t *testing.T) {
		o, err := ParsePlist([]string{"--source-dir", odd, odd}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := plistWant(func(o *PlistOptions) { o.SourceDirs, o.Input = []string{odd}, odd })
		if diff := cmp.Diff(want, o, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("options (-want +got):\n%s", diff)
		}
	})
}
