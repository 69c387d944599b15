package datafile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTextGolden checks the text dumps of the test values against
// testdata/NAME.txt and reads them back.
func TestTextGolden(t *testing.T) {
	for _, tv := range testValues(t) {
		t.Run(tv.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteText(&b, tv.v); err != nil {
				t.Fatalf("write text: %v", err)
			}
			golden(t, tv.name+".txt", b.Bytes())
			got, err := ReadText(bytes.NewReader(b.Bytes()))
			if err != nil {
				t.Fatalf("read text: %v", err)
			}
			if d := cmp.Diff(tv.v, got); d != "" {
				t.Errorf("read text of write text differs (-want +got):\n%s", d)
			}
		})
	}
}

// TestTextMatchesBinary checks that a golden text dump and the golden
// binary file of the same name hold equal values.
func TestTextMatchesBinary(t *testing.T) {
	names, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no text goldens: %v", err)
	}
	for _, name := range names {
		t.Run(filepath.Base(name), func(t *testing.T) {
			text, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			bin, err := os.ReadFile(strings.TrimSuffix(name, ".txt") + ".golden")
			if err != nil {
				t.Fatal(err)
			}
			fromText, err := ReadText(bytes.NewReader(text))
			if err != nil {
				t.Fatalf("read text: %v", err)
			}
			fromBin, err := Read(bytes.NewReader(bin))
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if d := cmp.Diff(fromBin, fromText); d != "" {
				t.Errorf("text and binary differ (-binary +text):\n%s", d)
			}
		})
	}
}

func TestReadTextErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"not json", "MS-PROF/KR", "invalid character"},
		{"unknown field", `{"Kind":"pbo","Version":1,"Counts":{"Method":521},"Extra":1}`, "unknown field"},
		{"version", `{"Kind":"pbo","Version":2,"Counts":{"Method":521}}`, "version 2, want 1"},
		{"kind mismatch", `{"Kind":"pbi","Version":1,"Counts":{"Method":521}}`, `kind "pbi" does not match`},
		{"bad plan id", `{"Kind":"pbo","Version":1,"Counts":{"PlanID":"abc","Method":521}}`, "want 32 hexadecimal digits"},
		{"bad build id", `{"Kind":"pbi","Version":1,"Plan":{"Modules":[{"BuildID":"xyz"}]}}`, `hex string "xyz"`},
		{"invalid counts", `{"Kind":"pbo","Version":1,"Counts":{"Method":999}}`, "invalid counts: unknown method 999"},
		{"invalid plan", `{"Kind":"pbi","Version":1,"Plan":{"Method":521,"StartIndex":-1}}`, "invalid plan: id 00000000000000000000000000000000 does not match"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := ReadText(strings.NewReader(tt.in))
			if v != nil {
				t.Errorf("got a value %T with error %v", v, err)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestTextEmptyDiscarded checks that an empty list of discarded runs reads
// as none, as in the binary form, so that the text round-trips.
func TestTextEmptyDiscarded(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "merged-fc-fresh.txt"))
	if err != nil {
		t.Fatal(err)
	}
	const end = "\"Stacks\": null\n    }\n  }\n}\n"
	if !strings.HasSuffix(string(b), end) {
		t.Fatalf("merged-fc-fresh.txt does not end with %q", end)
	}
	text := strings.TrimSuffix(string(b), end) + "\"Stacks\": null\n    },\n    \"Discarded\": []\n  }\n}\n"
	v, err := ReadText(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if d := v.(*Merged).Discarded; d != nil {
		t.Errorf("discarded %#v, want nil", d)
	}
}
