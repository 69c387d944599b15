package plist

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/golden"
)

// ftimeTrace is the trace of a run of the original's ftime.c (golden/src)
// as PROFILE /TRACE would write it: its calls in the order of its source,
// with spin(n) taking n nanoseconds and every other function 100 ns of
// its own before each call it makes and after its last. It returns the
// trace and, per function of the ftime plan, the time of its own and with
// its children that the report would show.
func ftimeTrace() (*Trace, []int64, []int64) {
	// The plan's functions (original_test.go's ftime).
	const (
		spin = iota
		leaf
		mid
		shortWork
		longWork
		callerA
		callerB
		main
	)
	type step struct {
		fn   int
		spin int64 // spin's argument when fn is spin
	}
	body := map[int][]step{
		leaf:      {{spin, 200000}},
		mid:       {{spin, 100000}, {leaf, 0}},
		shortWork: {{spin, 100000}},
		longWork:  {{spin, 1000000}, {mid, 0}},
		callerA:   {{leaf, 0}, {mid, 0}},
		callerB:   {{leaf, 0}},
		main:      {{shortWork, 0}, {shortWork, 0}, {shortWork, 0}, {longWork, 0}, {callerA, 0}, {callerB, 0}, {callerB, 0}},
	}
	self, all := make([]int64, 8), make([]int64, 8)
	var evs []TraceEvent
	now := int64(5000)
	var call func(fn int, n int64)
	call = func(fn int, n int64) {
		evs = append(evs, TraceEvent{Func: int32(fn)})
		evs[len(evs)-1].Time = now
		begun := now
		if fn == spin {
			now += n
			self[fn] += n
		} else {
			for _, s := range body[fn] {
				now += 100
				self[fn] += 100
				call(s.fn, s.spin)
			}
			now += 100
			self[fn] += 100
		}
		all[fn] += now - begun
		evs = append(evs, TraceEvent{Func: int32(fn), Return: true, Time: now})
	}
	call(main, 0)
	t := &Trace{
		Header: datafile.TraceHeader{Method: datafile.FuncTiming, Funcs: 8},
		Status: datafile.TraceStatus{Ended: true},
		Owners: []TraceOwner{{TraceOwner: datafile.TraceOwner{ID: 4242}, Events: evs}},
	}
	return t, self, all
}

// TestWriteTraceGolden pins the original's trace layout (original.md
// §5.10) for the ftime trace (testdata/trace/ftime.golden, rewritten with
// -update), and checks that the times it prints add up to the report's:
// a function's "caller+=" and "callee+=" lines make its time, and its
// calls' "callee_child+=" its time with its children.
func TestWriteTraceGolden(t *testing.T) {
	tr, self, all := ftimeTrace()
	m := functions(ftime, datafile.FuncTiming, run("04:50", "ftime"))("")
	var out bytes.Buffer
	if err := WriteTrace(&out, m, tr, DefaultOptions()); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "trace", "ftime.golden"), out.Bytes())

	r := newReport(m, DefaultOptions())
	index := map[string]int{}
	for i, n := range r.names {
		index[n] = i
	}
	gotSelf, gotAll := make([]float64, len(self)), make([]float64, len(all))
	var stack []int
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if lines[2] != "*** Execution Trace ***" {
		t.Fatalf("the trace begins %q", lines[:3])
	}
	for _, line := range lines[3:] {
		depth := (len(line) - len(strings.TrimLeft(line, " "))) / 2
		line = strings.TrimLeft(line, " ")
		if rest, ok := strings.CutPrefix(line, "<--\t"); ok {
			var callee, child float64
			if _, err := fmt.Sscanf(rest, "(callee+=%f; callee_child+=%f) }", &callee, &child); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			fn := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if depth != len(stack) {
				t.Errorf("%q at depth %d, want %d", line, depth, len(stack))
			}
			gotSelf[fn] += callee
			gotAll[fn] += child
			continue
		}
		name, rest, _ := strings.Cut(line, "\t")
		var caller float64
		if _, err := fmt.Sscanf(rest, "(caller+=%f) {", &caller); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if depth != len(stack) {
			t.Errorf("%q at depth %d, want %d", line, depth, len(stack))
		}
		if len(stack) > 0 {
			gotSelf[stack[len(stack)-1]] += caller
		}
		stack = append(stack, index[name])
	}
	for fn := range self {
		// (Each figure is rounded to 10 ns.)
		if d := gotSelf[fn] - millis(self[fn]); d > 1e-4 || d < -1e-4 {
			t.Errorf("%s: the trace's own time %.5f ms, the report's %.5f", r.names[fn], gotSelf[fn], millis(self[fn]))
		}
		if d := gotAll[fn] - millis(all[fn]); d > 1e-4 || d < -1e-4 {
			t.Errorf("%s: the trace's time with children %.5f ms, the report's %.5f", r.names[fn], gotAll[fn], millis(all[fn]))
		}
	}
}

// TestWriteTraceOwners checks the sections of several threads and
// goroutines, and a trace cut with a call open (main, in thread 7): it
// returns at its owner's last event, which the section says.
func TestWriteTraceOwners(t *testing.T) {
	m := functions(ftime, datafile.FuncTiming, run("04:50", "ftime"))("")
	tr := &Trace{Owners: []TraceOwner{
		{TraceOwner: datafile.TraceOwner{ID: 7}, Events: []TraceEvent{{Func: 7, Time: 0}, {Func: 0, Time: 1000}, {Func: 0, Return: true, Time: 3000}}},
		{TraceOwner: datafile.TraceOwner{Goroutine: true, ID: 0xc000001000}, Events: []TraceEvent{{Func: 1, Time: 50}, {Func: 1, Return: true, Time: 70}}},
	}}
	var out bytes.Buffer
	if err := WriteTrace(&out, m, tr, DefaultOptions()); err != nil {
		t.Fatal(err)
	}
	want := "\n\n*** Execution Trace ***\n" +
		"\nThread 7:\n" +
		"_main\t(caller+=0.00000) {\n" +
		"  _spin\t(caller+=0.00100) {\n" +
		"  <--\t(callee+=0.00200; callee_child+=0.00200) }\n" +
		"<--\t(callee+=0.00000; callee_child+=0.00300) }\n" +
		"*** The trace ends with 1 call open: its return above is at its last event ***\n" +
		"\nGoroutine at 0xc000001000:\n" +
		"_leaf\t(caller+=0.00000) {\n" +
		"<--\t(callee+=0.00002; callee_child+=0.00002) }\n"
	if got := out.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// TestReadTrace reads back what datafile's writer wrote, owners in the
// order of their first event.
func TestReadTrace(t *testing.T) {
	var buf bytes.Buffer
	w, err := datafile.NewTraceWriter(&buf, datafile.TraceHeader{Funcs: 3}, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, b := w.Owner(datafile.TraceOwner{ID: 2}), w.Owner(datafile.TraceOwner{ID: 1})
	w.Event(a, false, 0, 10)
	w.Event(b, false, 1, 5)
	w.Event(a, true, 0, 20)
	w.Event(b, true, 1, 30)
	w.Close()
	tr, err := ReadTrace(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Owners) != 2 || tr.Owners[0].ID != 2 || tr.Owners[1].ID != 1 || !tr.Status.Ended {
		t.Fatalf("%+v", tr)
	}
	if got := tr.Owners[1].Events; len(got) != 2 || got[1] != (TraceEvent{Func: 1, Return: true, Time: 30}) {
		t.Errorf("thread 1: %+v", got)
	}
}

// TestOpenTrace: a trace of several threads and goroutines, their events
// interleaved over many chunks, with calls nested deep and a call left
// open, is listed (WriteTrace) and exported as a timeline from its file,
// owner by owner (OpenTrace), as from memory (ReadTrace), byte for byte;
// and a file cut short after the index was made is an error, not a
// trace with events missing.
func TestOpenTrace(t *testing.T) {
	var buf bytes.Buffer
	w, err := datafile.NewTraceWriter(&buf, datafile.TraceHeader{Funcs: 6}, 0)
	if err != nil {
		t.Fatal(err)
	}
	owners := []datafile.TraceOwner{{ID: 7}, {Goroutine: true, ID: 0xc000001000}, {ID: 9}}
	var states []*datafile.TraceOwnerState
	for _, o := range owners {
		states = append(states, w.Owner(o))
	}
	rng := rand.New(rand.NewPCG(5, 36))
	depth := make([]int, len(owners))
	now := int64(1000)
	for range 200_000 {
		o := rng.IntN(len(owners))
		if rng.IntN(50) == 0 {
			o = 0 // (runs of one owner, and of all)
		}
		now += int64(rng.IntN(100))
		ret := depth[o] > 0 && (depth[o] > 40 || rng.IntN(2) == 0)
		if ret {
			depth[o]--
		} else {
			depth[o]++
		}
		w.Event(states[o], ret, rng.IntN(6), now)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if buf.Len() < 5*datafile.TraceChunk {
		t.Fatalf("%d bytes: the test wants many chunks", buf.Len())
	}
	held, err := ReadTrace(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	opened, err := OpenTrace(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if len(opened.Owners) != len(owners) || opened.Status != held.Status || opened.Owners[0].Events != nil {
		t.Fatalf("opened: %d owners, status %+v, events held %v", len(opened.Owners), opened.Status, opened.Owners[0].Events != nil)
	}
	m := functions(ftime, datafile.FuncTiming, run("04:50", "ftime"))("")
	list := func(tr *Trace) string {
		var out bytes.Buffer
		if err := WriteTrace(&out, m, tr, DefaultOptions()); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	if a, b := list(held), list(opened); a != b || !strings.Contains(a, "calls open") {
		t.Errorf("the listing from the file differs from the one from memory (%d and %d bytes)", len(b), len(a))
	}
	held.Header.Funcs, opened.Header.Funcs = 6, 6
	if a, b := writeChromeTrace(t, held), writeChromeTrace(t, opened); !bytes.Equal(a, b) {
		t.Errorf("the timeline from the file differs from the one from memory (%d and %d bytes)", len(b), len(a))
	}
	cut := bytes.NewReader(buf.Bytes()[:buf.Len()/2])
	opened.Owners[0].file.r = cut
	if err := opened.Owners[0].Walk(func(TraceStep) {}); err == nil {
		t.Error("a file cut short after it was opened: no error")
	}
}

// TestOpenTraceInterleaved: where many owners share every chunk (ten
// goroutines' events in turn), the listing would read the file ten times
// over: OpenTrace spools the events instead, each owner's in blocks of
// its own, holds none, lists them the same, and Close removes the spool.
func TestOpenTraceInterleaved(t *testing.T) {
	var buf bytes.Buffer
	w, _ := datafile.NewTraceWriter(&buf, datafile.TraceHeader{Funcs: 6}, 0)
	var states []*datafile.TraceOwnerState
	for g := range 10 {
		states = append(states, w.Owner(datafile.TraceOwner{Goroutine: true, ID: 0xc000001000 + uint64(g)*0x100}))
	}
	for i := range 100_000 {
		o := states[i%10]
		w.Event(o, i/10%2 == 1, 1, int64(i))
	}
	w.Close()
	held, _ := ReadTrace(bytes.NewReader(buf.Bytes()))
	opened, err := OpenTrace(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	defer opened.Close()
	if o := &opened.Owners[3]; opened.spool == nil || len(opened.Owners) != 10 || o.n != 10_000 || o.Events != nil || len(o.blocks) < 10_000*spoolEvent/spoolBlock {
		t.Fatalf("opened: spool %v, %d owners, the fourth's %d events in %d blocks, %d held; want them spooled", opened.spool != nil, len(opened.Owners), o.n, len(o.blocks), len(o.Events))
	}
	m := functions(ftime, datafile.FuncTiming, run("04:50", "ftime"))("")
	var a, b bytes.Buffer
	if err := WriteTrace(&a, m, held, DefaultOptions()); err != nil {
		t.Fatal(err)
	}
	if err := WriteTrace(&b, m, opened, DefaultOptions()); err != nil || !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Errorf("listing from the spool: %v; it differs from ReadTrace's", err)
	}
	held.Header.Funcs, opened.Header.Funcs = 6, 6
	if a, b := writeChromeTrace(t, held), writeChromeTrace(t, opened); !bytes.Equal(a, b) {
		t.Error("the timeline from the spool differs from the one from memory")
	}
	if err := opened.Close(); err != nil {
		t.Fatal(err)
	}
	if err := opened.Owners[0].Walk(func(TraceStep) {}); err == nil {
		t.Error("the spool read after Close: no error")
	}
	// Where no spool can be made (the temporary directory is a file),
	// the events are read from the trace again: the same listing.
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", notDir)
	again, err := OpenTrace(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	b.Reset()
	if err := WriteTrace(&b, m, again, DefaultOptions()); err != nil || again.spool != nil || again.file == nil || !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Errorf("without a temporary directory: spool %v, file %v, %v; the listing differs: %v", again.spool != nil, again.file != nil, err, !bytes.Equal(a.Bytes(), b.Bytes()))
	}
}
