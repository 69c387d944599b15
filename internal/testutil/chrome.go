package testutil

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
)

// Chrome is a timeline, Trace Event JSON as plist --format=chrome writes
// it, read by [ReadChrome]: the reader of the tests, which holds it to the
// rules of the Trace Event Format that Perfetto's UI and chrome://tracing
// rely on.
type Chrome struct {
	DisplayTimeUnit string
	OtherData       map[string]any
	// Processes are the process_name metadata, by pid.
	Processes map[int64]string
	// Threads are the tracks, by sort index (those without one last),
	// then pid and tid.
	Threads []*ChromeThread
}

// ChromeThread is one track: a thread's or goroutine's slices.
type ChromeThread struct {
	PID, TID int64
	Name     string // thread_name's
	// SortIndex is thread_sort_index's, -1 for none.
	SortIndex int64
	// Slices are the complete events ("X") and the spans of begin and end
	// events ("B", "E") of the track in the order a reader nests them: by
	// start, an enclosing slice before the slices inside it.
	Slices []ChromeSlice
	events []chromeEvent // as read, before nest
}

// chromeEvent is an X, B or E event of a track.
type chromeEvent struct {
	ph    byte
	ts    int64
	slice ChromeSlice // X and B; E's Name and Args
	named bool        // E: it has a name
}

// ChromeSlice is one complete event ("X").
type ChromeSlice struct {
	Name, Cat string
	// Start and Dur are ts and dur in nanoseconds (the microseconds times
	// 1000, rounded as Perfetto does).
	Start, Dur int64
	// Depth is the number of slices that enclose it, Parent the index in
	// the track's Slices of the innermost one (-1 at depth 0).
	Depth, Parent int
	Args          map[string]any
	// Span says the slice was a begin and an end event, not a complete
	// one.
	Span bool
}

// End is when the slice ends, in nanoseconds.
func (s *ChromeSlice) End() int64 { return s.Start + s.Dur }

// Count returns the number of slices named name on all tracks.
func (c *Chrome) Count(name string) int {
	n := 0
	for _, th := range c.Threads {
		for i := range th.Slices {
			if th.Slices[i].Name == name {
				n++
			}
		}
	}
	return n
}

// ReadChrome reads data as Trace Event JSON, the JSON Object Format, and
// checks the rules its readers rely on, returning the first broken one:
//
//   - the file is one JSON object with a "traceEvents" array;
//     "displayTimeUnit", when there, is "ms" or "ns", and "otherData" an
//     object;
//   - every event is an object with a string "name", a one-letter "ph" and
//     integer "pid" and "tid" (32-bit, unsigned, as Perfetto reads them);
//   - the phases are complete events ("X"), begin and end events ("B",
//     "E") and metadata ("M"): what plist writes;
//   - X, B and E events have a number "ts" at least 0, X events a number
//     "dur" at least 0; a string "cat" and an object "args" when they are
//     there;
//   - an M event is process_name or thread_name, with a string args.name,
//     or process_sort_index or thread_sort_index, with an integer
//     args.sort_index; at most one of each per process or track;
//   - on each track (pid, tid) the slices nest, as Perfetto's slice
//     tracker reads them: the events taken by ts (those of equal ts in
//     the file's order), each X or B lies inside the innermost slice
//     still open or after it ends, never across its end; a complete
//     slice ends before any that begins at its end (so that one of no
//     duration there is beside it, not inside), a B only at its E, which
//     closes the innermost B still open (of the same name when it has
//     one) once the X events inside it have ended; every B has its E.
//     (Perfetto and catapult draw partial overlaps wrongly or drop them,
//     and an enclosing X after an X of the same ts that it encloses is
//     such an overlap.)
func ReadChrome(data []byte) (*Chrome, error) {
	top, err := chromeObject(data)
	if err != nil {
		return nil, err
	}
	r := &chromeReader{
		c:       &Chrome{Processes: map[int64]string{}},
		threads: map[chromeTrack]*ChromeThread{},
		seen:    map[string]bool{},
	}
	if err := r.header(top); err != nil {
		return nil, err
	}
	raw, ok := top["traceEvents"]
	if !ok {
		return nil, errors.New(`no "traceEvents"`)
	}
	var events []map[string]any
	if err := decodeNumbers(raw, &events); err != nil || events == nil {
		return nil, fmt.Errorf("traceEvents: not an array of objects: %v", err)
	}
	for i, ev0 := range events {
		if err := r.event(i, ev0); err != nil {
			return nil, err
		}
	}
	return r.tracks()
}

// chromeObject decodes data as one JSON object and nothing after it.
func chromeObject(data []byte) (map[string]json.RawMessage, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var top map[string]json.RawMessage
	if err := d.Decode(&top); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON object")
	}
	if top == nil {
		return nil, errors.New("not a JSON object: null")
	}
	return top, nil
}

// chromeTrack is a track's key.
type chromeTrack struct{ pid, tid int64 }

// chromeReader is ReadChrome's state: the timeline read so far, its tracks
// by key and the metadata already seen, by scope.
type chromeReader struct {
	c       *Chrome
	threads map[chromeTrack]*ChromeThread
	seen    map[string]bool
}

// header reads displayTimeUnit and otherData.
func (r *chromeReader) header(top map[string]json.RawMessage) error {
	c := r.c
	if raw, ok := top["displayTimeUnit"]; ok {
		if err := json.Unmarshal(raw, &c.DisplayTimeUnit); err != nil || (c.DisplayTimeUnit != "ms" && c.DisplayTimeUnit != "ns") {
			return fmt.Errorf("displayTimeUnit %s: not \"ms\" or \"ns\"", raw)
		}
	}
	if raw, ok := top["otherData"]; ok {
		if err := decodeNumbers(raw, &c.OtherData); err != nil || c.OtherData == nil {
			return fmt.Errorf("otherData %.40s: not an object", raw)
		}
	}
	return nil
}

// thread returns the track (pid, tid), made at its first use.
func (r *chromeReader) thread(pid, tid int64) *ChromeThread {
	k := chromeTrack{pid, tid}
	if r.threads[k] == nil {
		r.threads[k] = &ChromeThread{PID: pid, TID: tid, SortIndex: -1}
	}
	return r.threads[k]
}

// event reads event i: the fields every event has, then a slice's or a
// metadata's own.
func (r *chromeReader) event(i int, ev0 map[string]any) error {
	if ev0 == nil {
		return fmt.Errorf("event %d: not an object", i)
	}
	name, ok := ev0["name"].(string)
	if !ok {
		return fmt.Errorf("event %d: no string name", i)
	}
	ph, ok := ev0["ph"].(string)
	if !ok || len(ph) != 1 {
		return fmt.Errorf("event %d (%s): ph %v is not one letter", i, name, ev0["ph"])
	}
	pid, err := chromeID(ev0, "pid")
	if err != nil {
		return fmt.Errorf("event %d (%s): %w", i, name, err)
	}
	tid, err := chromeID(ev0, "tid")
	if err != nil {
		return fmt.Errorf("event %d (%s): %w", i, name, err)
	}
	args, hasArgs := ev0["args"].(map[string]any)
	if _, there := ev0["args"]; there && !hasArgs {
		return fmt.Errorf("event %d (%s): args is not an object", i, name)
	}
	switch ph {
	case "X", "B", "E":
		return r.slice(i, ev0, name, ph, r.thread(pid, tid), args)
	case "M":
		return r.meta(i, name, pid, tid, args)
	default:
		return fmt.Errorf("event %d (%s): phase %q, not X, B, E or M", i, name, ph)
	}
}

// slice reads event i, an X, B or E event of track th.
func (r *chromeReader) slice(i int, ev0 map[string]any, name, ph string, th *ChromeThread, args map[string]any) error {
	ev := chromeEvent{ph: ph[0], slice: ChromeSlice{Name: name, Args: args, Span: ph == "B"}, named: true}
	if cat, there := ev0["cat"]; there {
		s, ok := cat.(string)
		if !ok {
			return fmt.Errorf("event %d (%s): cat is not a string", i, name)
		}
		ev.slice.Cat = s
	}
	var err error
	if ev.ts, err = chromeTime(ev0, "ts"); err != nil {
		return fmt.Errorf("event %d (%s): %w", i, name, err)
	}
	ev.slice.Start = ev.ts
	if ph == "X" {
		if ev.slice.Dur, err = chromeTime(ev0, "dur"); err != nil {
			return fmt.Errorf("event %d (%s): %w", i, name, err)
		}
	}
	th.events = append(th.events, ev)
	return nil
}

// meta reads event i, a metadata event: a process's or a track's name or
// sort index, once each.
func (r *chromeReader) meta(i int, name string, pid, tid int64, args map[string]any) error {
	key := "name"
	if name == "process_sort_index" || name == "thread_sort_index" {
		key = "sort_index"
	} else if name != "process_name" && name != "thread_name" {
		return fmt.Errorf("event %d: metadata %q is not process_name, thread_name or a sort index", i, name)
	}
	scope := fmt.Sprintf("%s %d", name, pid)
	if name[0] == 't' {
		scope += fmt.Sprintf("/%d", tid)
	}
	if r.seen[scope] {
		return fmt.Errorf("event %d: a second %s", i, scope)
	}
	r.seen[scope] = true
	v, there := args[key]
	if !there {
		return fmt.Errorf("event %d: %s without args.%s", i, name, key)
	}
	if key == "name" {
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("event %d: %s: args.name %v is not a string", i, name, v)
		}
		if name == "process_name" {
			r.c.Processes[pid] = s
		} else {
			r.thread(pid, tid).Name = s
		}
		return nil
	}
	n, ok := v.(json.Number)
	k, err := n.Int64()
	if !ok || err != nil {
		return fmt.Errorf("event %d: %s: args.sort_index %v is not an integer", i, name, v)
	}
	if name == "thread_sort_index" {
		r.thread(pid, tid).SortIndex = k
	}
	return nil
}

// tracks nests each track's slices and returns the timeline, its tracks
// in order.
func (r *chromeReader) tracks() (*Chrome, error) {
	c := r.c
	for _, th := range r.threads {
		if err := th.nest(); err != nil {
			return nil, fmt.Errorf("track %d/%d (%s): %w", th.PID, th.TID, th.Name, err)
		}
		c.Threads = append(c.Threads, th)
	}
	slices.SortFunc(c.Threads, func(a, b *ChromeThread) int {
		ka, kb := a.SortIndex, b.SortIndex
		if ka < 0 {
			ka = math.MaxInt64
		}
		if kb < 0 {
			kb = math.MaxInt64
		}
		return cmp.Or(cmp.Compare(ka, kb), cmp.Compare(a.PID, b.PID), cmp.Compare(a.TID, b.TID))
	})
	return c, nil
}

// nest reads the track's events as Perfetto's slice tracker does, into
// its slices, checking that they nest and setting their depths and
// parents.
func (th *ChromeThread) nest() error {
	slices.SortStableFunc(th.events, func(a, b chromeEvent) int { return cmp.Compare(a.ts, b.ts) })
	type open struct {
		slice   int
		pending bool // a B before its E
	}
	var stack []open
	// closeTo ends the complete slices on top of the stack that end by
	// ts; a B still open ends only at its E.
	closeTo := func(ts int64) {
		for n := len(stack); n > 0 && !stack[n-1].pending && th.Slices[stack[n-1].slice].End() <= ts; n-- {
			stack = stack[:n-1]
		}
	}
	overlap := func(s, top *ChromeSlice) error {
		return fmt.Errorf("slice %s [%d, %d] ns overlaps %s [%d, %d] ns without nesting in it",
			s.Name, s.Start, s.End(), top.Name, top.Start, top.End())
	}
	for _, ev := range th.events {
		closeTo(ev.ts)
		n := len(stack)
		if ev.ph == 'E' {
			if n == 0 || !stack[n-1].pending {
				if n > 0 {
					return fmt.Errorf("end of %s at %d ns inside %s, which ends at %d ns", ev.slice.Name, ev.ts,
						th.Slices[stack[n-1].slice].Name, th.Slices[stack[n-1].slice].End())
				}
				return fmt.Errorf("end of %s at %d ns without its begin", ev.slice.Name, ev.ts)
			}
			s := &th.Slices[stack[n-1].slice]
			if ev.named && ev.slice.Name != s.Name {
				return fmt.Errorf("end of %s at %d ns for the begin of %s", ev.slice.Name, ev.ts, s.Name)
			}
			s.Dur = ev.ts - s.Start
			stack = stack[:n-1]
			if n > 1 && !stack[n-2].pending {
				if top := &th.Slices[stack[n-2].slice]; s.End() > top.End() {
					return overlap(s, top)
				}
			}
			continue
		}
		s := ev.slice
		s.Depth, s.Parent = n, -1
		if n > 0 {
			s.Parent = stack[n-1].slice
			if top := &th.Slices[s.Parent]; ev.ph == 'X' && !stack[n-1].pending && s.End() > top.End() {
				return overlap(&s, top)
			}
		}
		th.Slices = append(th.Slices, s)
		stack = append(stack, open{len(th.Slices) - 1, ev.ph == 'B'})
	}
	for _, o := range stack {
		if o.pending {
			return fmt.Errorf("begin of %s at %d ns without its end", th.Slices[o.slice].Name, th.Slices[o.slice].Start)
		}
	}
	th.events = nil
	return nil
}

// decodeNumbers decodes raw into v keeping numbers as json.Number.
func decodeNumbers(raw json.RawMessage, v any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	return d.Decode(v)
}

// chromeID returns ev[key] as a pid or tid.
func chromeID(ev map[string]any, key string) (int64, error) {
	n, ok := ev[key].(json.Number)
	if !ok {
		return 0, fmt.Errorf("no number %s", key)
	}
	v, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil || v < 0 || v > math.MaxUint32 {
		return 0, fmt.Errorf("%s %s is not a 32-bit unsigned integer", key, n)
	}
	return v, nil
}

// chromeTime returns ev[key], microseconds, in nanoseconds.
func chromeTime(ev map[string]any, key string) (int64, error) {
	n, ok := ev[key].(json.Number)
	if !ok {
		return 0, fmt.Errorf("no number %s", key)
	}
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) || f < 0 || f*1000 > math.MaxInt64/2 {
		return 0, fmt.Errorf("%s %s is not a time of at least 0", key, n)
	}
	return int64(math.Round(f * 1000)), nil
}
