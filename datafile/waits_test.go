package datafile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWaitsRoundTrip checks that the waits of a run and of a database
// read back as written, from the binary and the text forms, and that
// counts whose run did not measure them read back with Waits nil.
func TestWaitsRoundTrip(t *testing.T) {
	unmeasured := testCounts(FuncTiming, false)
	noWaits(unmeasured)
	for _, tv := range []testValue{
		{"counts", testCounts(FuncTiming, false)},
		{"merged", testMerged(t, FuncTiming)},
		{"counts without waits", unmeasured},
	} {
		t.Run(tv.name, func(t *testing.T) {
			got, err := Read(bytes.NewReader(encode(t, tv.v)))
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if d := cmp.Diff(tv.v, got); d != "" {
				t.Errorf("binary round trip differs (-want +got):\n%s", d)
			}
			var text bytes.Buffer
			if err := WriteText(&text, tv.v); err != nil {
				t.Fatal(err)
			}
			if measured := strings.Contains(text.String(), `"Waits"`); measured != (statsOf(tv.v).Waits != nil) {
				t.Errorf("the text says waits measured %v", measured)
			}
			got, err = ReadText(&text)
			if err != nil {
				t.Fatalf("read text: %v", err)
			}
			if d := cmp.Diff(tv.v, got); d != "" {
				t.Errorf("text round trip differs (-want +got):\n%s", d)
			}
		})
	}
}

// statsOf returns the statistics of counts or a database.
func statsOf(v any) *Stats {
	switch v := v.(type) {
	case *Counts:
		return &v.Stats
	case *Merged:
		return &v.Stats
	}
	return nil
}

// countsParts returns the string table, the sections before the
// statistics, and the payload of the statistics of c's .pbo, without
// the waits, the samples in PROFILE's code, the sampled stacks'
// numbers and the kernel's samples at its end, and the waits as written
// (version 10 ends with them).
func countsParts(c *Counts) (strs, head, stats, waits []byte) {
	e := encodeCounts(c)
	strs, rest := e.parts()
	h := newEncoder(4)
	h.section(secCounts, func(w *payload) {
		w.id(c.PlanID)
		w.uvarint(uint64(c.Method))
	})
	h.runs([]Run{c.Run}, []int64{c.Overhead})
	head = rest[:len(h.body)]
	sec := rest[len(head)+1:]
	n, k := binary.Uvarint(sec)
	stats = sec[k : k+int(n)]
	var w payload
	w.waits(&c.Stats)
	sm := &c.Stats.Sampling
	end := len(stats) - len(uv(sm.Overhead)) - len(uv(sm.Stacks)) - len(uv(sm.StacksCut)) -
		len(uv(sm.Kernel)) - len(uv(uint64(len(sm.KernelSamples)))) - len(uv(uint64(len(sm.KernelChildSamples)))) -
		len(uv(uint64(len(c.Stats.Branches)))) - len(uv(uint64(len(c.Stats.Unprobed))))
	return strs, head, stats[:end-len(w.b)], w.b
}

// withVersion returns file with its version set to v, reframed.
func withVersion(file []byte, v uint16) []byte {
	b := bytes.Clone(file)
	binary.LittleEndian.PutUint16(b[10:], v)
	return reframe(b[:len(b)-4])
}

// TestWaitsSection checks the end of section 8 in version 10 and the
// files of version 9, which end before it: Waits reads as nil.
func TestWaitsSection(t *testing.T) {
	c := testCounts(FuncTiming, false)
	strs, head, stats, waits := countsParts(c)
	// (Version 10: the statistics end with the waits.)
	file := func(stats ...[]byte) []byte {
		return withVersion(frameFile(KindCounts, strs, head, sec(secStats, stats...)), 10)
	}
	if got, err := ReadCounts(bytes.NewReader(file(stats, waits))); err != nil || cmp.Diff(c, got) != "" {
		t.Fatalf("the parts do not make the file: %v", err)
	}
	// Version 9: the same statistics without the waits.
	v9, err := ReadCounts(bytes.NewReader(withVersion(file(stats), 9)))
	want := testCounts(FuncTiming, false)
	noWaits(want)
	if err != nil {
		t.Fatalf("version 9: %v", err)
	}
	if d := cmp.Diff(want, v9); d != "" {
		t.Errorf("version 9 differs (-want +got):\n%s", d)
	}
	// Two stacks, and the waits of one.
	oneStack := bytes.Clone(waits)
	at := bytes.LastIndex(oneStack, append(uv(2), sv(c.Stats.Stacks[0].Wait)...))
	oneStack = append(append(oneStack[:at], uv(1)...), sv(1)...)
	oneStack = append(oneStack, sv(1)...)
	for _, tt := range []struct {
		name string
		in   []byte
		want string
	}{
		{"version 9 with waits", withVersion(file(stats, waits), 9), "unread bytes at the end of the section"},
		{"version 10 without waits", file(stats), "unexpected end of section"},
		{"bad bool", file(stats, []byte{2}), "bool 2 is neither 0 nor 1"},
		{"waits of too few stacks", file(stats, oneStack), "waits of 1 stacks for 2 stacks"},
		{"waits cut short", file(stats, waits[:len(waits)-1]), "unexpected end of section"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v, err := ReadCounts(bytes.NewReader(tt.in))
			var fe *FormatError
			if v != nil || !errors.As(err, &fe) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, %v; want a format error %q", v != nil, err, tt.want)
			}
		})
	}
}

// TestMergeWaits checks the merge rules of the waits: a database without
// runs takes the first run's, runs that measured them add up, and a run
// that did not leaves the database without waits for good.
func TestMergeWaits(t *testing.T) {
	measured := func(second bool) *Counts { return testCounts(FuncTiming, second) }
	unmeasured := func(second bool) *Counts {
		c := testCounts(FuncTiming, second)
		noWaits(c)
		return c
	}
	merge := func(t *testing.T, runs ...*Counts) *Merged {
		t.Helper()
		m := NewMerged(testPlan(FuncTiming))
		for _, c := range runs {
			if err := m.Add(c); err != nil {
				t.Fatalf("add: %v", err)
			}
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("the database: %v", err)
		}
		return m
	}
	t.Run("first run", func(t *testing.T) {
		c := measured(false)
		m := merge(t, c)
		if d := cmp.Diff(c.Stats.Waits, m.Stats.Waits); d != "" {
			t.Errorf("waits (-run +database):\n%s", d)
		}
		m.Stats.Waits.FuncWait[0]++
		if c.Stats.Waits.FuncWait[0] != 2000000 {
			t.Errorf("the database shares the run's waits")
		}
	})
	t.Run("measured and measured", func(t *testing.T) {
		if d := cmp.Diff(testMerged(t, FuncTiming), merge(t, measured(false), measured(true))); d != "" {
			t.Errorf("(-want +got):\n%s", d)
		}
	})
	for _, tt := range []struct {
		name string
		runs []*Counts
	}{
		{"unmeasured first", []*Counts{unmeasured(false), measured(true)}},
		{"unmeasured second", []*Counts{measured(false), unmeasured(true)}},
		{"unmeasured in the middle", []*Counts{measured(false), unmeasured(true),
			func() *Counts { c := measured(false); c.Run.ID = Hex{3}; return c }()}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := merge(t, tt.runs...)
			if m.Stats.Waits != nil {
				t.Errorf("waits %+v, want nil", m.Stats.Waits)
			}
			for i, s := range m.Stats.Stacks {
				if s.Wait != 0 || s.ChildWait != 0 {
					t.Errorf("stack %d: waits %d and %d", i, s.Wait, s.ChildWait)
				}
			}
			// The rest adds up as without the waits.
			want := merge(t, unmeasured(false), unmeasured(true))
			if len(tt.runs) == 2 && cmp.Diff(want.Stats, m.Stats) != "" {
				t.Errorf("the figures differ (-want +got):\n%s", cmp.Diff(want.Stats, m.Stats))
			}
		})
	}
}

// TestMergeWaitsOverflow checks that waits whose sums would overflow are
// refused. (A wait is at most its time, and the times are checked first:
// this holds for the sums' own sake.)
func TestMergeWaitsOverflow(t *testing.T) {
	const maxTime = 1<<63 - 1
	a := &WaitStats{FuncWait: []int64{maxTime}, ChildWait: []int64{0}, InsideWait: 1}
	b := &WaitStats{FuncWait: []int64{1}, ChildWait: []int64{0}, InsideWait: maxTime}
	if err := checkWaitSums(a, b); !errors.Is(err, ErrOverflow) || !strings.Contains(err.Error(), "function wait of function 0") {
		t.Errorf("function waits: %v", err)
	}
	a.FuncWait[0], a.ChildWait[0], b.ChildWait[0] = 0, 1, maxTime
	if err := checkWaitSums(a, b); !errors.Is(err, ErrOverflow) || !strings.Contains(err.Error(), "child wait of function 0") {
		t.Errorf("child waits: %v", err)
	}
	b.ChildWait[0] = 0
	if err := checkWaitSums(a, b); !errors.Is(err, ErrOverflow) || !strings.Contains(err.Error(), "inside or outside wait") {
		t.Errorf("inside waits: %v", err)
	}
	a.InsideWait, b.InsideWait, a.OutsideWait, b.OutsideWait = 0, 0, maxTime, 1
	if err := checkWaitSums(a, b); !errors.Is(err, ErrOverflow) || !strings.Contains(err.Error(), "inside or outside wait") {
		t.Errorf("outside waits: %v", err)
	}
	a.OutsideWait = 0
	if err := checkWaitSums(a, nil); err != nil {
		t.Errorf("a run without waits: %v", err)
	}
	for _, s := range []Stack{{Wait: 1}, {ChildWait: 1}} {
		s.Callers = []int{-1}
		big := Stack{Callers: []int{-1}, Wait: maxTime, ChildWait: maxTime}
		if _, err := mergeStacks([]Stack{big}, []Stack{s}); !errors.Is(err, ErrOverflow) {
			t.Errorf("stack waits %d and %d: %v", s.Wait, s.ChildWait, err)
		}
	}
}
