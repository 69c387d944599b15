package e2e

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/internal/testutil"
)

// TestGoAttributionAgrees: caller stacks (/FT /AT) of Go programs, kept
// in-process (each goroutine's in its own book in the program, as the
// narration says, which tells where PROFILE checked the CPUs' counters
// itself: the kernel's clock source not the TSC) and with breakpoints
// (PROFILE's books, at a stop per event), are the same stacks with the same calls: the books' rules
// are one. gostacks grows 16 goroutines' stacks through a recursion
// 1,000 deep (the stacks copied while the calls are open) and recovers
// panics raised through timed frames (exits never seen); goknown moves
// goroutines between threads, blocks them, and ends some with panics
// recovered. Every stack's calls agree, and every function's.
func TestGoAttributionAgrees(t *testing.T) {
	testutil.MustHavePtrace(t)
	for _, c := range []struct {
		fixture string
		args    []string
	}{{"gostacks", nil}, {"goknown", []string{"1000"}}} {
		t.Run(c.fixture, func(t *testing.T) {
			prog := testutil.BuildGo(t, c.fixture)
			var got [2]map[string][]uint64
			var hits [2]map[string]uint64
			for i, opts := range [][]string{{"--explain"}, {"--breakpoints"}} {
				dir, r := workflowWith(t, prog, []string{"/FT", "/AT"}, opts, c.args...)
				if r.status != 0 {
					t.Fatalf("profile %v: status %d\n%s", opts, r.status, r.stderr)
				}
				if books := "with the books kept in the program, each goroutine's in a book of its own"; i == 0 && !strings.Contains(r.stderr, books) {
					t.Errorf("in-process, not %q:\n%s", books, r.stderr)
				}
				if said := strings.Contains(r.stderr, "PROFILE checked the CPUs' counters against each other itself"); i == 0 && said == testutil.CounterOneClock() {
					t.Errorf("the narration tells of PROFILE's check of the CPUs' counters: %v; want it where the counter is not one clock by the kernel's or the architecture's word (%v)", said, !testutil.CounterOneClock())
				}
				out := must(t, dir, "plist", "/nologo", "/T", c.fixture).stdout
				got[i], hits[i] = goStacks(t, out), parseTab(t, out).hits
			}
			if len(got[0]) == 0 {
				t.Fatal("no caller stacks")
			}
			for _, k := range slices.Sorted(maps.Keys(hits[1])) {
				if hits[0][k] != hits[1][k] {
					t.Errorf("%s: %d calls in-process, %d with breakpoints", k, hits[0][k], hits[1][k])
				}
			}
			keys := slices.Sorted(maps.Keys(got[0]))
			for _, k := range slices.Sorted(maps.Keys(got[1])) {
				if _, ok := got[0][k]; !ok {
					keys = append(keys, k)
				}
			}
			bad, n := 0, 0
			for _, k := range keys {
				n += len(got[1][k])
				if !slices.Equal(got[0][k], got[1][k]) {
					if bad++; bad <= 20 {
						t.Errorf("stacks %s: calls %v in-process, %v with breakpoints", k, got[0][k], got[1][k])
					}
				}
			}
			t.Logf("%d caller stacks (%d as the report names them), %d apart", n, len(keys), bad)
		})
	}
}

// goStacks reads a /T report's caller stacks (records 9, each followed by
// the functions it names in records 10) as their calls by the names,
// joined by " < ", in order: the report names at most two callers, so
// that stacks told apart by more have the same names.
func goStacks(t *testing.T, out string) map[string][]uint64 {
	t.Helper()
	stacks := map[string][]uint64{}
	var names []string
	var calls uint64
	flush := func() {
		if names != nil {
			k := strings.Join(names, " < ")
			stacks[k] = append(stacks[k], calls)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(line, "\t")
		switch f[0] {
		case "9":
			flush()
			n, err := strconv.ParseUint(f[2], 10, 64)
			if err != nil || len(f) < 3 {
				t.Fatalf("record %q: %v", line, err)
			}
			names, calls = []string{}, n
		case "10":
			if names == nil {
				t.Fatalf("record %q before a record 9", line)
			}
			names = append(names, fmt.Sprint(f[1:]))
		}
	}
	flush()
	for _, calls := range stacks {
		slices.Sort(calls)
	}
	return stacks
}
