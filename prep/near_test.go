package prep

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/sourceprofiler/sprof/internal/prf"
)

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b  string
		limit int
		want  int
	}{
		{"gcd", "gcd", 3, 0},
		{"gdc", "gcd", 3, 1}, // a swap is one edit
		{"is_prme", "is_prime", 3, 1},
		{"kitten", "sitting", 5, 3},
		{"", "abc", 5, 3},
		{"abc", "", 5, 3},
		{"ca", "abc", 5, 3}, // optimal string alignment: no edit of a swapped pair
		{"kitten", "sitting", 2, 3},
		{"aaaaaaaa", "bbbbbbbb", 1, 2},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b, tt.limit); got != tt.want {
			t.Errorf("editDistance(%q, %q, %d) = %d, want %d", tt.a, tt.b, tt.limit, got, tt.want)
		}
	}
}

func TestNearNames(t *testing.T) {
	primes := []string{"main", "is_prime", "sieve", "count_naive", "gcd", "coprime", "unused"}
	tests := []struct {
		typed string
		names []string
		want  []string
	}{
		{"is_prme", primes, []string{"is_prime"}},
		{"gdc", primes, []string{"gcd"}},
		{"IS_PRIME", primes, []string{"is_prime"}},
		{"mian", primes, []string{"main"}},
		{"sive", primes, []string{"sieve"}},
		{"prime", primes, []string{"coprime"}}, // 2 edits, is_prime's 3 beyond a 5-byte name's 2
		{"prim", primes, nil},                  // 1 edit at most for 4 bytes
		{"xyz", primes, nil},
		{"", primes, nil},
		// The nearest first, in byte order, at most three, none more than
		// one edit farther than the nearest.
		{"fob", []string{"foo", "fib", "fob2", "fo", "bar", "fxbx"}, []string{"fib", "fo", "fob2"}},
		{"fobar", []string{"foobar", "fob", "xxbar", "fo"}, []string{"foobar", "fob", "xxbar"}},
		{"counter", []string{"Counter", "counted", "encounter"}, []string{"Counter", "counted"}},
		{"countr", []string{"counter", "c"}, []string{"counter"}},
		{"abcdefghijklm", []string{"abcdefghijklmnopq", "abcdefghi"}, []string{"abcdefghi", "abcdefghijklmnopq"}},
		{"abcdefghijklm", []string{"abcdefghijklmnopqr"}, nil}, // five edits: beyond four
	}
	for _, tt := range tests {
		if got := nearNames(tt.typed, slices.Values(tt.names)); !cmp.Equal(got, tt.want, cmpopts.EquateEmpty()) {
			t.Errorf("nearNames(%q) = %q, want %q", tt.typed, got, tt.want)
		}
	}
}

// TestNeverMatchedNear checks the hint of PRF4106 for each kind of
// specification, on the test candidates: the names near the one typed,
// none for a glob or a name far from all.
func TestNeverMatchedNear(t *testing.T) {
	tests := []struct {
		spec, hint string
	}{
		{"fibb", "did you mean fib?"},
		{"hepler", "did you mean helper?"},
		{"Counter::bmp", "did you mean Counter::bump?"},
		{"Counter::bump(itn)", "did you mean Counter::bump(int)?"},
		{"main.mian", "did you mean main.main?"},
		{"utl.o", "did you mean util.o?"},
		{"prog.cc", "did you mean prog.c?"},
		{"/src/lib/utl.cpp", "did you mean /src/lib/util.cpp?"},
		{"libfo.so.1", "did you mean libfoo.so.1?"},
		{"f*bb", ""},
		{"zzzzzzzz", ""},
		{"libc.a", ""}, // an archive names no file of the candidates
	}
	for _, tt := range tests {
		p, err := parseSpec(Spec{Op: Exclude, Text: tt.spec})
		if err != nil {
			t.Fatal(err)
		}
		var got []*prf.Diagnostic
		applySpecs(testCandidates(), []pattern{p}, func(d *prf.Diagnostic) { got = append(got, d) })
		if tt.spec == "libc.a" {
			if len(got) != 0 {
				t.Errorf("%s: warnings %v, want none", tt.spec, got)
			}
			continue
		}
		if len(got) != 1 || got[0].Code != 4106 {
			t.Errorf("%s: warnings %v, want PRF4106", tt.spec, got)
		} else if got[0].Hint != tt.hint {
			t.Errorf("%s: hint %q, want %q", tt.spec, got[0].Hint, tt.hint)
		}
	}
}
