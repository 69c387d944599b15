package plist

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/prf"
)

// Trace is an execution trace (.pbx): each thread's or goroutine's calls
// and returns, in the order of its time. OpenTrace reads it from its file
// owner by owner, as it is written out, in memory that depends on the
// owners and the file's chunks, not on the events; ReadTrace holds it
// whole.
type Trace struct {
	Header datafile.TraceHeader
	Status datafile.TraceStatus
	// Owners are the threads and goroutines, in the order of their first
	// event in the file.
	Owners []TraceOwner
	// file is what OpenTrace reads from, nil for a trace held whole;
	// spool, where it wrote the events of owners that share most chunks.
	file  *traceFile
	spool *traceSpool
}

// traceFile is a trace's file, its owners' events read again from it.
type traceFile struct {
	r io.ReaderAt
	h datafile.TraceHeader
}

// TraceOwner is one thread's or goroutine's events: held in Events (a
// trace ReadTrace read, or one built), or in the chunks of the file at
// chunks (OpenTrace), n of them, the first at time first.
type TraceOwner struct {
	datafile.TraceOwner
	Events []TraceEvent
	file   *traceFile
	chunks []int64
	first  int64
	n      int // events
	// spool and blocks hold them instead where the owners share most
	// chunks (trace_spool.go).
	spool  *traceSpool
	blocks [][2]int64
}

// TraceEvent is a call (Return false) or a return of function Func at
// Time, in nanoseconds of the run's clock.
type TraceEvent struct {
	Func   int32
	Return bool
	Time   int64
}

// ReadTrace reads the trace in r whole. A trace that ends early (a run
// that ended badly) is read to its last whole chunk; Status says so.
func ReadTrace(r io.Reader) (*Trace, error) {
	return readTrace(r, func(t *Trace, o *TraceOwner, ev datafile.TraceEvent, _ int64) {
		o.Events = append(o.Events, TraceEvent{Func: int32(ev.Func), Return: ev.Return, Time: ev.Time})
	})
}

// OpenTrace reads the trace in r once for its owners, the chunks that
// hold each one's events and its status, and then each owner's events
// again from r when they are asked for (TraceOwner.Walk): a trace of
// millions of events (16 bytes each, held) is listed in the memory of
// its deepest call. Where the owners' events share chunks so much that
// the listing would read the file more than maxChunkReads times over,
// they are written to a spool and read back from there (Close removes
// it). A trace that ends early is read to its last whole chunk; Status
// says so.
func OpenTrace(r io.ReaderAt) (*Trace, error) {
	var file *traceFile
	t, err := readTrace(io.NewSectionReader(r, 0, 1<<62), func(t *Trace, o *TraceOwner, ev datafile.TraceEvent, chunk int64) {
		if file == nil {
			file = &traceFile{r: r, h: t.Header}
		}
		if o.file == nil {
			o.file, o.first = file, ev.Time
		}
		if n := len(o.chunks); n == 0 || o.chunks[n-1] != chunk {
			o.chunks = append(o.chunks, chunk)
		}
		o.n++
	})
	if t == nil || err != nil {
		return t, err
	}
	t.file = file
	// Each owner's listing reads every chunk it has events in. Where
	// owners share most chunks (goroutines switching within a thread's
	// events), that is the whole file once per owner: the events are
	// spooled instead, read once more.
	chunks, refs := map[int64]bool{}, 0
	for i := range t.Owners {
		refs += len(t.Owners[i].chunks)
		for _, c := range t.Owners[i].chunks {
			chunks[c] = true
		}
	}
	if refs <= maxChunkReads*len(chunks) {
		return t, nil
	}
	last := int64(-1)
	for c := range chunks {
		last = max(last, c)
	}
	// (Where no spool can be written, no temporary directory, the events
	// are read from the file again, owner by owner: slower, nothing lost.)
	if sp, err := spoolTrace(r, t, last); err == nil {
		t.spool, t.file = sp, nil
	}
	return t, nil
}

// maxChunkReads is how many times, on average, OpenTrace lets a listing
// read each chunk of a trace before it spools the events instead.
const maxChunkReads = 4

// readTrace reads the trace in r, giving each event, its owner and the
// offset of its chunk to add.
func readTrace(r io.Reader, add func(t *Trace, o *TraceOwner, ev datafile.TraceEvent, chunk int64)) (*Trace, error) {
	tr, err := datafile.NewTraceReader(r)
	if err != nil {
		return nil, err
	}
	t := &Trace{Header: tr.Header()}
	index := map[datafile.TraceOwner]int{}
	for {
		ev, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		i, ok := index[ev.Owner]
		if !ok {
			i = len(t.Owners)
			index[ev.Owner] = i
			t.Owners = append(t.Owners, TraceOwner{TraceOwner: ev.Owner})
		}
		add(t, &t.Owners[i], ev, tr.ChunkOffset())
	}
	t.Status = tr.Status()
	return t, nil
}

// each calls fn for each of o's events, in order: those held, or those
// of its chunks read again.
func (o *TraceOwner) each(fn func(TraceEvent)) error {
	if o.spool != nil {
		return o.spool.each(o, fn)
	}
	if o.file == nil {
		for _, ev := range o.Events {
			fn(ev)
		}
		return nil
	}
	for _, off := range o.chunks {
		err := datafile.ReadTraceChunk(o.file.r, off, o.file.h, func(ev datafile.TraceEvent) error {
			if ev.Owner == o.TraceOwner {
				fn(TraceEvent{Func: int32(ev.Func), Return: ev.Return, Time: ev.Time})
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("read the events of %s again: %w", o.Name(), err)
		}
	}
	return nil
}

// held returns o with its events held: o itself, or a copy with the
// events of its chunks read again.
func (o *TraceOwner) held() (*TraceOwner, error) {
	if o.file == nil && o.spool == nil {
		return o, nil
	}
	h := &TraceOwner{TraceOwner: o.TraceOwner, Events: make([]TraceEvent, 0, o.n)}
	err := o.each(func(ev TraceEvent) { h.Events = append(h.Events, ev) })
	return h, err
}

// firstTime returns the time of o's first event; false when it has none.
func (o *TraceOwner) firstTime() (int64, bool) {
	if o.file != nil || o.spool != nil {
		return o.first, o.n > 0
	}
	if len(o.Events) > 0 {
		return o.Events[0].Time, true
	}
	return 0, false
}

// Name names the owner in a report: "thread 4242", "goroutine at 0x...".
func (o *TraceOwner) Name() string {
	if o.Goroutine {
		return fmt.Sprintf("goroutine at %#x", o.ID)
	}
	return fmt.Sprintf("thread %d", o.ID)
}

// TraceCall is one call of a trace, found by walking its owner's events
// (Walk).
type TraceCall struct {
	Func  int
	Depth int // 0 for a call no profiled caller made
	// Start and End are the times of the call and of its return.
	Start, End int64
	// Self is the call's time less its profiled callees'.
	Self int64
}

// TraceStep is what one event of an owner's trace means.
type TraceStep struct {
	Return bool
	// Call is the call begun or returned from; at a call its End and
	// Self are not known yet.
	Call TraceCall
	// Before is the time spent since the owner's previous event by the
	// frame below the call (its caller, or no function at depth 0): the
	// original's "caller+=" at a call, "callee+=" at a return, where the
	// returning call was that frame.
	Before int64
	// Unfinished marks a return the trace does not have: a call still
	// open where the trace ends (cut, or not whole), closed at the owner's
	// last event.
	Unfinished bool
}

// Walk calls step for each event of o, in order, with its call's depth and
// times. A return that is not of the innermost open call (a damaged
// trace) returns from it anyway; calls still open at the end (a trace
// that was cut) return at the owner's last event. Its memory is the
// depth of the calls; its error, one reading the events again
// (OpenTrace).
func (o *TraceOwner) Walk(step func(TraceStep)) error {
	type open struct {
		call    TraceCall
		resumed int64 // when its own time last began
	}
	var stack []open
	last, _ := o.firstTime()
	ret := func(now int64, unfinished bool) {
		n := len(stack) - 1
		top := &stack[n]
		top.call.End = now
		before := now - top.resumed
		top.call.Self += before
		step(TraceStep{Return: true, Call: top.call, Before: before, Unfinished: unfinished})
		stack = stack[:n]
		if n > 0 {
			stack[n-1].resumed = now
		}
	}
	err := o.each(func(ev TraceEvent) {
		now := max(ev.Time, last)
		if ev.Return {
			if len(stack) > 0 {
				ret(now, false)
			}
		} else {
			before := now - last
			if n := len(stack); n > 0 {
				before = now - stack[n-1].resumed
				stack[n-1].call.Self += before
			}
			c := TraceCall{Func: int(ev.Func), Depth: len(stack), Start: now}
			step(TraceStep{Call: c, Before: before})
			stack = append(stack, open{call: c, resumed: now})
		}
		last = now
	})
	if err != nil {
		return err
	}
	for len(stack) > 0 {
		ret(last, true)
	}
	return nil
}

// WriteTrace writes the trace of m's run in the original's layout
// (original.md §5.10), after a report: "*** Execution Trace ***", then per
// call its function, indented o.TabWidth columns a level, and what its
// caller's own time grew by since the last event; per return what the
// callee's own time grew by and the call's time with its children, in
// milliseconds. Several threads or goroutines give a section each, headed
// by its name.
func WriteTrace(w io.Writer, m *datafile.Merged, t *Trace, o Options) error {
	r := newReport(m, o)
	bw := bufio.NewWriter(w)
	bw.WriteString("\n\n*** Execution Trace ***\n")
	step := max(o.TabWidth, 0)
	for i := range t.Owners {
		ow := &t.Owners[i]
		if len(t.Owners) > 1 {
			fmt.Fprintf(bw, "\n%s:\n", capitalised(ow.Name()))
		}
		open := 0
		err := ow.Walk(func(s TraceStep) {
			bw.WriteString(strings.Repeat(" ", s.Call.Depth*step))
			if s.Return {
				fmt.Fprintf(bw, "<--\t(callee+=%5.5f; callee_child+=%5.5f) }\n", millis(s.Before), millis(s.Call.End-s.Call.Start))
				if s.Unfinished {
					open++
				}
				return
			}
			fmt.Fprintf(bw, "%s\t(caller+=%5.5f) {\n", r.traceName(s.Call.Func), millis(s.Before))
		})
		if err != nil {
			bw.Flush()
			return err
		}
		if open > 0 {
			// (Not the original's: its traces were never cut.)
			what := fmt.Sprintf("%d calls open: their returns above are", open)
			if open == 1 {
				what = "1 call open: its return above is"
			}
			fmt.Fprintf(bw, "*** The trace ends with %s at its last event ***\n", what)
		}
	}
	return bw.Flush()
}

// traceName is function fn's displayed name, with its source where
// another function has the same (exportName: a call through the PLT, then
// the library's function), [prf.Printable], or a placeholder for an
// index the plan does not have.
func (r *report) traceName(fn int) string {
	if fn >= 0 && fn < len(r.names) {
		return prf.Printable(r.exportName(fn))
	}
	return fmt.Sprintf("function %d", fn)
}

func capitalised(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
