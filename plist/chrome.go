package plist

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The timeline (FormatChrome) is the execution trace (profile /TRACE) as
// Trace Event JSON, the JSON Object Format of Google's Trace Event Format,
// which Perfetto's UI and chrome://tracing open (docs/exports.md "The
// timeline"):
//
//	{"traceEvents":[
//	{"name":"process_name","ph":"M","pid":1,"tid":1,"args":{"name":"prog"}},
//	{"name":"thread_name","ph":"M","pid":1,"tid":4242,"args":{"name":"thread 4242"}},
//	{"name":"thread_sort_index","ph":"M","pid":1,"tid":4242,"args":{"sort_index":0}},
//	{"name":"main","cat":"prog","ph":"X","pid":1,"tid":4242,"ts":5.000,"dur":9426.000,"args":{"self_ns":21600}},
//	...
//	],
//	"displayTimeUnit":"ns",
//	"otherData":{"program":"prog",...,"trace":"whole","calls":33}}
//
// Each thread or goroutine is a track (its tid), each call a complete event
// ("X") on it: ts and dur in microseconds with three decimals, the exact
// nanoseconds of the run's clock, so that a callee's slice lies inside its
// caller's as the integers do. The slices of a track come in the order of
// their calls, a caller before its callees: readers that sort by ts alone
// (stably) nest a callee that starts at its caller's time inside it.
//
// One case complete events cannot say: a call of no time (its call and
// return at one nanosecond, once PROFILE took its own time out) at the
// very end of its caller. Perfetto ends a slice before any that begins at
// its end, so it would show that call beside its caller, not inside. Such
// a caller (and each of its callers that ends then too) is written as a
// begin event ("B") where it is called and an end event ("E") where it
// returns, after the events of its callees: a reader closes it in that
// order.

// chromePID is the process of every track: the trace does not record the
// program's process ID.
const chromePID = 1

// errNoTrace is returned for FormatChrome without Options.Trace.
var errNoTrace = errors.New("no execution trace: profile the program with /TRACE")

// chromeWriter writes the events of a timeline.
type chromeWriter struct {
	r      *report
	w      *bufio.Writer
	b      []byte // the event being written
	events int
	// prefix has, per function, the start of its events:
	// {"name":...,"cat":...,"ph":
	prefix map[int32][]byte
	calls  []chromeCall // an owner's calls, in the order of their start
	frames []chromeFrame
	open   []int
}

// chromeCall is what a slice needs of its call that is known at its
// return.
type chromeCall struct {
	end, self  int64
	unfinished bool
	// span says the call is written as a begin and an end event ("B",
	// "E"), not a complete one: a call of no time at its end lies inside
	// it, which readers would put beside it (chromeFrame).
	span bool
}

// chromeFrame is an open call of the first walk of an owner.
type chromeFrame struct {
	call int
	// zero says that a call of no time, or a span, inside this one ended
	// at zeroAt. Should this call end then too, it is a span: a reader
	// ends a complete slice before any that begins at its end, so as one
	// it would not hold that call.
	zero   bool
	zeroAt int64
}

// chromeExport writes the timeline.
type chromeExport struct{ *report }

// writeChrome writes o.Trace as Trace Event JSON (the timeline).
func (r chromeExport) writeChrome(w *bufio.Writer) error {
	t := r.o.Trace
	if t == nil {
		return errNoTrace
	}
	order := chromeOrder(t)
	tids := chromeTIDs(t, order)
	c := &chromeWriter{r: r.report, w: w, prefix: map[int32][]byte{}}
	program := "program"
	if len(r.plan.Modules) > 0 {
		program = r.plan.Modules[0].Name
	}
	w.WriteString("{\"traceEvents\":[\n")
	c.meta("process_name", chromePID, func(b []byte) []byte {
		b = append(b, `"name":`...)
		return appendJSONString(b, program)
	})
	for k, i := range order {
		o := &t.Owners[i]
		c.meta("thread_name", tids[i], func(b []byte) []byte {
			b = append(b, `"name":`...)
			b = appendJSONString(b, o.Name())
			if o.Goroutine {
				b = append(b, `,"g":"0x`...)
				b = strconv.AppendUint(b, o.ID, 16)
				b = append(b, '"')
			}
			return b
		})
		c.meta("thread_sort_index", tids[i], func(b []byte) []byte {
			b = append(b, `"sort_index":`...)
			return strconv.AppendInt(b, int64(k), 10)
		})
	}
	calls, unfinished := 0, 0
	for _, i := range order {
		n, u, err := c.owner(&t.Owners[i], tids[i])
		if err != nil {
			return err
		}
		calls += n
		unfinished += u
	}
	w.WriteString("\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":")
	w.Write(r.chromeOtherData(program, len(order), calls, unfinished))
	w.WriteString("}\n")
	return nil
}

// chromeOrder returns the indices of t's owners in the order of their first
// event's time (owners without events last), which is the order of their
// tracks.
func chromeOrder(t *Trace) []int {
	order := make([]int, len(t.Owners))
	for i := range order {
		order[i] = i
	}
	first := func(i int) int64 {
		if at, ok := t.Owners[i].firstTime(); ok {
			return at
		}
		return math.MaxInt64
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(first(a), first(b)) })
	return order
}

// chromeTIDs returns the track (tid) of each owner: a thread's ID, and for
// a goroutine (or a thread whose ID does not fit a reader's 32 bits) a
// small number that no thread has, 1, 2, ... in the order of the tracks.
func chromeTIDs(t *Trace, order []int) []int64 {
	tids := make([]int64, len(t.Owners))
	used := map[int64]bool{}
	for _, i := range order {
		if o := &t.Owners[i]; !o.Goroutine && o.ID > 0 && o.ID <= math.MaxInt32 && !used[int64(o.ID)] {
			tids[i] = int64(o.ID)
			used[tids[i]] = true
		}
	}
	next := int64(1)
	for _, i := range order {
		if tids[i] != 0 {
			continue
		}
		for used[next] {
			next++
		}
		tids[i] = next
		used[next] = true
	}
	return tids
}

// begin starts an event: the separator after the previous one.
func (c *chromeWriter) begin() {
	c.b = c.b[:0]
	if c.events > 0 {
		c.b = append(c.b, ",\n"...)
	}
	c.events++
}

// meta writes a metadata event ("M") of track tid whose args args
// appends.
func (c *chromeWriter) meta(name string, tid int64, args func([]byte) []byte) {
	c.begin()
	b := append(c.b, `{"name":"`...)
	b = append(b, name...)
	b = append(b, `","ph":"M","pid":`...)
	b = strconv.AppendInt(b, chromePID, 10)
	b = append(b, `,"tid":`...)
	b = strconv.AppendInt(b, tid, 10)
	b = append(b, `,"args":{`...)
	b = args(b)
	c.b = append(b, "}}"...)
	c.w.Write(c.b)
}

// owner writes the slices of o's calls on track tid and returns how many
// it wrote and how many of them had not returned at the trace's end. It
// walks o twice: first for each call's return, then to write the calls in
// the order they began (and the ends of spans where they returned). It
// holds o's events and each call's end, a few words a call: the
// timeline's slices need their ends where they begin. (The listing's
// trace, WriteTrace, holds the open calls alone.)
func (c *chromeWriter) owner(o *TraceOwner, tid int64) (calls, unfinished int, err error) {
	// (Its events are held while it is written, and only its: read from
	// the file three times, they took twice as long.)
	if o, err = o.held(); err != nil {
		return 0, 0, err
	}
	// The returns that end a call (the others come with an empty stack,
	// and Walk skips them); the calls Walk returns after them are those
	// still open at the end.
	depth, matched := 0, 0
	err = o.each(func(ev TraceEvent) {
		switch {
		case !ev.Return:
			depth++
		case depth > 0:
			depth--
			matched++
		}
	})
	if err != nil {
		return 0, 0, err
	}
	c.calls, c.frames = slices.Grow(c.calls[:0], len(o.Events)/2), c.frames[:0] // (a call and its return)
	returns := 0
	err = o.Walk(func(s TraceStep) {
		if !s.Return {
			c.frames = append(c.frames, chromeFrame{call: len(c.calls)})
			c.calls = append(c.calls, chromeCall{})
			return
		}
		n := len(c.frames) - 1
		f := c.frames[n]
		c.frames = c.frames[:n]
		end := s.Call.End
		cl := chromeCall{end: end, self: s.Call.Self, unfinished: returns >= matched, span: f.zero && f.zeroAt == end}
		c.calls[f.call] = cl
		returns++
		if n > 0 && (cl.span || end == s.Call.Start) {
			c.frames[n-1].zero, c.frames[n-1].zeroAt = true, end
		}
	})
	if err != nil {
		return 0, 0, err
	}
	k := 0
	c.open = c.open[:0]
	err = o.Walk(func(s TraceStep) {
		if s.Return {
			n := len(c.open) - 1
			if cl := c.calls[c.open[n]]; cl.span {
				c.end(int32(s.Call.Func), tid, cl.end)
			}
			c.open = c.open[:n]
			return
		}
		c.open = append(c.open, k)
		c.slice(s.Call, c.calls[k], tid)
		k++
	})
	return len(c.calls), depth, err
}

// slice writes the complete event ("X") of call on track tid, or for a
// span its begin event ("B").
func (c *chromeWriter) slice(call TraceCall, cl chromeCall, tid int64) {
	c.begin()
	b := append(c.b, c.slicePrefix(int32(call.Func))...)
	if cl.span {
		b = append(b, `"B","pid":`...)
	} else {
		b = append(b, `"X","pid":`...)
	}
	b = strconv.AppendInt(b, chromePID, 10)
	b = append(b, `,"tid":`...)
	b = strconv.AppendInt(b, tid, 10)
	b = append(b, `,"ts":`...)
	b = appendMicros(b, call.Start)
	if !cl.span {
		b = append(b, `,"dur":`...)
		b = appendMicros(b, cl.end-call.Start)
	}
	b = append(b, `,"args":{"self_ns":`...)
	b = strconv.AppendInt(b, cl.self, 10)
	if cl.unfinished {
		b = append(b, `,"unfinished":true`...)
	}
	c.b = append(b, "}}"...)
	c.w.Write(c.b)
}

// end writes the end event ("E") of a span of function fn on track tid at
// time ns.
func (c *chromeWriter) end(fn int32, tid, ns int64) {
	c.begin()
	b := append(c.b, c.slicePrefix(fn)...)
	b = append(b, `"E","pid":`...)
	b = strconv.AppendInt(b, chromePID, 10)
	b = append(b, `,"tid":`...)
	b = strconv.AppendInt(b, tid, 10)
	b = append(b, `,"ts":`...)
	b = appendMicros(b, ns)
	c.b = append(b, '}')
	c.w.Write(c.b)
}

// slicePrefix returns the start of function fn's events, to their phase,
// made at its first use: its displayed name, its module as the category.
func (c *chromeWriter) slicePrefix(fn int32) []byte {
	if p, ok := c.prefix[fn]; ok {
		return p
	}
	r := c.r
	name, module := r.traceName(int(fn)), "?"
	if fn >= 0 && int(fn) < len(r.plan.Funcs) {
		name, module = r.exportName(int(fn)), r.moduleName(r.plan.Funcs[fn].Module)
	}
	p := append([]byte(nil), `{"name":`...)
	p = appendJSONString(p, name)
	p = append(p, `,"cat":`...)
	p = appendJSONString(p, module)
	p = append(p, `,"ph":`...)
	c.prefix[fn] = p
	return p
}

// chromeOtherData is the timeline's "otherData": what the trace is of, and
// whether it is whole.
func (r chromeExport) chromeOtherData(program string, tracks, calls, unfinished int) []byte {
	t := r.o.Trace
	var b bytes.Buffer
	field := func(key string, value []byte) {
		if b.Len() == 0 {
			b.WriteByte('{')
		} else {
			b.WriteByte(',')
		}
		b.Write(appendJSONString(nil, key))
		b.WriteByte(':')
		b.Write(value)
	}
	text := func(key, value string) { field(key, appendJSONString(nil, value)) }
	number := func(key string, n int64) { field(key, strconv.AppendInt(nil, n, 10)) }
	text("producer", "plist "+r.version())
	text("program", program)
	text("profile", strings.ToLower(r.plan.Method.Words()))
	if id := t.Header.RunID; len(id) > 0 {
		text("run", id.String())
		for _, run := range r.m.Runs {
			if bytes.Equal(run.ID, id) {
				text("command", run.CommandLine)
			}
		}
	}
	if !t.Header.Start.IsZero() {
		text("start", t.Header.Start.UTC().Format(time.RFC3339Nano))
	}
	number("threads", int64(tracks))
	number("calls", int64(calls))
	var state, note string
	switch st := t.Status; {
	case st.Cut:
		state = "cut"
		note = "the trace was cut at its size limit (profile --trace-limit): the calls after it are not in it"
		number("cut_limit_bytes", st.Limit)
	case st.Torn:
		state = "torn"
		note = "the trace ends in a chunk not whole (the run ended before PROFILE finished it): the calls after it are not in it"
		number("torn_at_offset", st.TornAt)
	case !st.Ended:
		state = "unfinished"
		note = "PROFILE did not finish the trace (killed, or still running): the calls after its end are not in it"
	default:
		state = "whole"
	}
	text("trace", state)
	if unfinished > 0 {
		number("unfinished_calls", int64(unfinished))
		more := strconv.Itoa(unfinished) + " calls had not returned at the trace's end: their slices end at their thread's last event (args.unfinished)"
		if note == "" {
			note = more
		} else {
			note += "; " + more
		}
	}
	if note != "" {
		text("note", note)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// appendMicros appends ns nanoseconds as microseconds with three decimals,
// exactly.
func appendMicros(b []byte, ns int64) []byte {
	u := uint64(ns)
	if ns < 0 {
		b = append(b, '-')
		u = -u
	}
	b = strconv.AppendUint(b, u/1000, 10)
	f := u % 1000
	return append(b, '.', byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
}

// appendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, bytes that are not UTF-8 replaced by U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20 || c == 0x7f:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			// Valid JSON, but not JavaScript before ES2019.
			b = append(b, `\u202`...)
			b = append(b, hex[r&15])
		default:
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}
