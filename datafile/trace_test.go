package datafile

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var testTraceHeader = TraceHeader{
	PlanID: ID{1, 2, 3},
	RunID:  Hex{9, 8, 7, 6},
	Method: FuncTiming,
	Start:  time.Unix(1700000000, 123),
	Funcs:  5,
}

// readAllTrace reads every event of the trace in b.
func readAllTrace(t *testing.T, b []byte) ([]TraceEvent, TraceStatus) {
	t.Helper()
	r, err := NewTraceReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var evs []TraceEvent
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return evs, r.Status()
		}
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
}

// TestTraceRoundTrip writes the events of two threads and a goroutine,
// interleaved, over many chunks, and reads them back as they were.
func TestTraceRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewTraceWriter(&buf, testTraceHeader, 0)
	if err != nil {
		t.Fatal(err)
	}
	owners := []TraceOwner{{ID: 100}, {ID: 101}, {Goroutine: true, ID: 0xc000002380}}
	states := []*TraceOwnerState{w.Owner(owners[0]), w.Owner(owners[1]), w.Owner(owners[2])}
	var want []TraceEvent
	clock := []int64{0, 5, 1 << 40}
	for i := range 100000 {
		o := (i / 7) % 3
		clock[o] += int64(i % 13)
		ev := TraceEvent{Owner: owners[o], Return: i%2 == 1, Func: i % 5, Time: clock[o]}
		w.Event(states[o], ev.Return, ev.Func, ev.Time)
		want = append(want, ev)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if buf.Len() < 3*TraceChunk {
		t.Fatalf("%d bytes: the test wants several chunks", buf.Len())
	}
	r, err := NewTraceReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if h := r.Header(); !h.Start.Equal(testTraceHeader.Start) || h.PlanID != testTraceHeader.PlanID ||
		!bytes.Equal(h.RunID, testTraceHeader.RunID) || h.Method != FuncTiming || h.Funcs != 5 {
		t.Errorf("header %+v, want %+v", h, testTraceHeader)
	}
	got, st := readAllTrace(t, buf.Bytes())
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if st != (TraceStatus{Ended: true}) {
		t.Errorf("status %+v, want ended", st)
	}
	if w.Events() != uint64(len(want)) || w.Written() != int64(buf.Len()) {
		t.Errorf("writer: %d events, %d bytes; want %d, %d", w.Events(), w.Written(), len(want), buf.Len())
	}
	// Each chunk read again alone, from its offset, gives its events.
	r, _ = NewTraceReader(bytes.NewReader(buf.Bytes()))
	byChunk := map[int64][]TraceEvent{}
	var offsets []int64
	for {
		ev, err := r.Next()
		if err != nil {
			break
		}
		if off := r.ChunkOffset(); len(offsets) == 0 || offsets[len(offsets)-1] != off {
			offsets = append(offsets, off)
		}
		byChunk[r.ChunkOffset()] = append(byChunk[r.ChunkOffset()], ev)
	}
	if len(offsets) < 3 {
		t.Fatalf("%d chunks", len(offsets))
	}
	for _, off := range slices.Backward(offsets) {
		var again []TraceEvent
		err := ReadTraceChunk(bytes.NewReader(buf.Bytes()), off, r.Header(), func(ev TraceEvent) error {
			again = append(again, ev)
			return nil
		})
		if err != nil || !slices.Equal(again, byChunk[off]) {
			t.Errorf("chunk at %d read alone: %d events, %v; want %d", off, len(again), err, len(byChunk[off]))
		}
	}
	if err := ReadTraceChunk(bytes.NewReader(buf.Bytes()[:offsets[1]-3]), offsets[0], r.Header(), func(TraceEvent) error { return nil }); !errors.Is(err, ErrTruncated) {
		t.Errorf("a chunk cut short: %v, want %v", err, ErrTruncated)
	}
	// An offset that is no chunk's start is an error, no events.
	var fe *FormatError
	n := 0
	if err := ReadTraceChunk(bytes.NewReader(buf.Bytes()), offsets[1]+1, r.Header(), func(TraceEvent) error { n++; return nil }); !errors.As(err, &fe) || n != 0 {
		t.Errorf("a chunk read from inside another: %d events, %v; want a format error", n, err)
	}
}

// TestTraceCut checks the size limit: the trace stops at a chunk's end
// within the limit, says so, and the events before are whole.
func TestTraceCut(t *testing.T) {
	var buf bytes.Buffer
	const limit = 3 * TraceChunk
	w, err := NewTraceWriter(&buf, testTraceHeader, limit)
	if err != nil {
		t.Fatal(err)
	}
	o := w.Owner(TraceOwner{ID: 1})
	for i := range 1000000 {
		w.Event(o, i%2 == 1, 0, int64(i))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !w.Cut() || buf.Len() > limit {
		t.Fatalf("cut %v, %d bytes for a limit of %d", w.Cut(), buf.Len(), limit)
	}
	evs, st := readAllTrace(t, buf.Bytes())
	if !st.Cut || st.Limit != limit || !st.Ended || st.Torn {
		t.Errorf("status %+v, want cut at %d and ended", st, limit)
	}
	if len(evs) < 10000 {
		t.Fatalf("%d events before the cut", len(evs))
	}
	for i, ev := range evs {
		if ev.Time != int64(i) || ev.Return != (i%2 == 1) {
			t.Fatalf("event %d: %+v", i, ev)
		}
	}
}

// TestTraceTorn reads traces that end where a run that died would leave
// them: every cut of the file within its last chunks gives the events of
// the whole chunks before it, and says the trace is torn, never fails.
func TestTraceTorn(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewTraceWriter(&buf, testTraceHeader, 0)
	if err != nil {
		t.Fatal(err)
	}
	o := w.Owner(TraceOwner{ID: 1})
	var ends []int // the file's length after each chunk
	for i := range 30000 {
		w.Event(o, false, 1, int64(i))
		if i%10000 == 9999 {
			w.Flush()
			ends = append(ends, buf.Len())
		}
	}
	whole := buf.Bytes()
	for _, n := range []int{ends[0] + 1, ends[1] - 1, ends[1] - 4, ends[2] - 2} {
		evs, st := readAllTrace(t, whole[:n])
		want := 10000
		if n > ends[1] {
			want = 20000
		}
		if len(evs) != want || !st.Torn || st.Ended {
			t.Errorf("cut at %d: %d events, status %+v; want %d, torn", n, len(evs), st, want)
		}
	}
	// A damaged chunk ends the trace as a torn one does.
	damaged := bytes.Clone(whole)
	damaged[ends[1]+10] ^= 0xff
	if evs, st := readAllTrace(t, damaged); len(evs) != 20000 || !st.Torn || st.TornAt != int64(ends[1]) {
		t.Errorf("damaged: %d events, status %+v", len(evs), st)
	}
	// The file as written, without an end: the run is not over.
	if evs, st := readAllTrace(t, whole); len(evs) != 30000 || st.Torn || st.Ended {
		t.Errorf("unfinished: %d events, status %+v", len(evs), st)
	}
}

// TestTraceBad checks what a reader refuses.
func TestTraceBad(t *testing.T) {
	if _, err := NewTraceReader(bytes.NewReader([]byte("MS-PROF/KR\x05\x00"))); !errors.Is(err, ErrTraceSignature) {
		t.Errorf("another data file: %v", err)
	}
	if _, err := NewTraceReader(bytes.NewReader([]byte("MS-PR"))); !errors.Is(err, ErrTruncated) {
		t.Errorf("a short file: %v", err)
	}
	if _, err := NewTraceReader(bytes.NewReader([]byte("MS-PROF/TR\x02\x00"))); !errors.Is(err, ErrVersion) {
		t.Errorf("another version: %v", err)
	}
	var buf bytes.Buffer
	w, _ := NewTraceWriter(&buf, testTraceHeader, 0)
	w.Event(w.Owner(TraceOwner{ID: 1}), false, 7, 0) // of 5 functions
	w.Close()
	r, err := NewTraceReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var fe *FormatError
	if _, err := r.Next(); !errors.As(err, &fe) {
		t.Errorf("a function out of range: %v", err)
	}
}

// FuzzTrace checks that the trace reader never panics, and that a trace
// written from what it read reads back the same.
func FuzzTrace(f *testing.F) {
	var buf bytes.Buffer
	w, _ := NewTraceWriter(&buf, testTraceHeader, 0)
	o, g := w.Owner(TraceOwner{ID: 3}), w.Owner(TraceOwner{Goroutine: true, ID: 77})
	w.Event(o, false, 1, 10)
	w.Event(g, false, 2, 11)
	w.Event(o, true, 1, 20)
	w.Flush()
	w.Event(g, true, 2, 30)
	w.Close()
	f.Add(buf.Bytes())
	f.Add([]byte("MS-PROF/TR\x01\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewTraceReader(bytes.NewReader(data))
		if err != nil {
			return
		}
		var out bytes.Buffer
		w, err := NewTraceWriter(&out, r.Header(), 0)
		if err != nil {
			t.Fatal(err)
		}
		states := map[TraceOwner]*TraceOwnerState{}
		last := map[TraceOwner]int64{}
		var evs []TraceEvent
		byChunk := map[int64][]TraceEvent{}
		for len(evs) < 1<<16 {
			ev, err := r.Next()
			if err != nil {
				break
			}
			byChunk[r.ChunkOffset()] = append(byChunk[r.ChunkOffset()], ev)
			s := states[ev.Owner]
			if s == nil {
				s = w.Owner(ev.Owner)
				states[ev.Owner] = s
			}
			// (The writer keeps an owner's time from going back.)
			ev.Time = max(ev.Time, last[ev.Owner])
			last[ev.Owner] = ev.Time
			w.Event(s, ev.Return, ev.Func, ev.Time)
			evs = append(evs, ev)
		}
		w.Close()
		// Each chunk read again alone gives its events, and then its end
		// or the error that ended the first reading.
		for off, want := range byChunk {
			var again []TraceEvent
			ReadTraceChunk(bytes.NewReader(data), off, r.Header(), func(ev TraceEvent) error {
				again = append(again, ev)
				return nil
			})
			if len(again) < len(want) || !slices.Equal(again[:len(want)], want) {
				t.Fatalf("chunk at %d read alone: %d events, want %d first", off, len(again), len(want))
			}
		}
		r2, err := NewTraceReader(&out)
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range evs {
			got, err := r2.Next()
			if err != nil || got != want {
				t.Fatalf("event %d: %+v, %v; want %+v", i, got, err, want)
			}
		}
	})
}

// BenchmarkTraceEvent is what an event costs PROFILE's books under
// /TRACE: encoding it, and its share of writing its chunk (to io.Discard).
func BenchmarkTraceEvent(b *testing.B) {
	w, err := NewTraceWriter(io.Discard, testTraceHeader, 0)
	if err != nil {
		b.Fatal(err)
	}
	o := w.Owner(TraceOwner{ID: 1})
	now := int64(0)
	for i := 0; b.Loop(); i++ {
		now += 37
		w.Event(o, i&1 == 1, i&3, now)
	}
}
