package datafile

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"time"
)

// An execution trace (.pbx) is every call and return of the profiled
// functions in one run, in each thread or goroutine, with its time: what
// PROFILE /TRACE writes and PLIST /TRACE prints. Unlike the other data
// files it is written as the run goes, so that a run that ends badly (the
// program crashes, PROFILE is killed, the disk fills) keeps what came
// before: it is a header and a sequence of chunks, each with its own
// checksum, and a reader stops at the first chunk that is not whole.
//
// # Layout, trace format version 1
//
// All integers are little-endian; uvarint is as in the other files.
//
//	header   signature "MS-PROF/TR" (10 bytes), version u16 (1),
//	         length uvarint, body, CRC-32C of the body u32
//	body     plan ID (16 bytes), run ID length uvarint and bytes,
//	         method uvarint, start (Unix nanoseconds) varint,
//	         functions uvarint
//	chunk    'C' (u8), length uvarint (at most 16 MiB), payload,
//	         CRC-32C of the payload u32
//
// A payload is a sequence of operations, each an op byte and its operands:
//
//	1 owner    flags u8 (bit 0: a goroutine), id uvarint (the thread's ID,
//	           or the goroutine's g address): the owner of the events
//	           that follow
//	2 call     function uvarint, time uvarint
//	3 return   function uvarint, time uvarint
//	4 cut      limit uvarint: the trace was cut at limit bytes, later
//	           events are not in it
//	5 end      the run ended and the trace is whole
//
// A call or return needs an owner earlier in its chunk. Its time is in
// nanoseconds of the run's clock (the time PROFILE held the threads taken
// out), given as the distance from the event before it, or from 0 for
// the first event after an owner operation: each owner operation starts
// its owner's time again, and each chunk reads on its own. An owner's events are in the order of its time;
// the owners' events interleave in no order of time.

// TraceVersion is the trace format version this package writes and reads.
const TraceVersion = 1

const (
	traceSignature = "MS-PROF/TR"
	// TraceChunk is the size at which a [TraceWriter] writes a chunk.
	TraceChunk = 64 << 10
	// maxTraceChunk bounds a chunk's payload for a reader.
	maxTraceChunk = 16 << 20
	traceChunkTag = 'C'
)

// The operations of a chunk's payload.
const (
	traceOwner  = 1
	traceCall   = 2
	traceReturn = 3
	traceCut    = 4
	traceEnd    = 5
)

// TraceHeader says whose trace a .pbx is.
type TraceHeader struct {
	// PlanID and RunID are those of the plan and of the run's .pbo.
	PlanID ID
	RunID  Hex
	Method Method
	// Start is when the run started, and Funcs the number of functions
	// of the plan (a call's function indexes Plan.Funcs).
	Start time.Time
	Funcs int
}

// TraceOwner is the thread or goroutine whose stack an event is on.
type TraceOwner struct {
	Goroutine bool
	// ID is the thread's ID, or the address of the goroutine's g.
	ID uint64
}

// TraceEvent is a call or a return of a profiled function.
type TraceEvent struct {
	Owner  TraceOwner
	Return bool
	Func   int
	// Time is in nanoseconds of the run's clock.
	Time int64
}

// TraceOwnerState is a [TraceWriter]'s state of one owner: its events go
// through it, so that the writer finds the owner without a lookup.
type TraceOwnerState struct {
	owner TraceOwner
	gen   uint64 // the chunk its last event was written in
	last  int64  // the time of that event
}

// TraceWriter writes a .pbx as the run goes: [TraceWriter.Event] adds to
// a chunk in memory, written whole when it is full, when
// [TraceWriter.Flush] is called, and at [TraceWriter.Close]. Past the size
// limit it writes a cut and drops the rest. Its first write error stops it
// and is returned by Close.
type TraceWriter struct {
	w io.Writer
	// buf holds the chunk being made, n bytes of it; it has room for an
	// owner and an event past TraceChunk.
	buf     []byte
	n       int
	frame   []byte
	cur     *TraceOwnerState
	gen     uint64
	limit   int64
	written int64
	events  uint64
	// stopped is set once the trace was cut or a write failed.
	stopped bool
	cut     bool
	err     error
}

// maxTraceEvent bounds the bytes of an owner and an event.
const maxTraceEvent = 2 + 2*binary.MaxVarintLen64 + 1 + 2*binary.MaxVarintLen64

// NewTraceWriter writes h to w and returns a writer of the events after
// it, which stops at limit bytes in all (0: no limit).
func NewTraceWriter(w io.Writer, h TraceHeader, limit int64) (*TraceWriter, error) {
	var p payload
	p.id(h.PlanID)
	p.bytes(h.RunID)
	p.uvarint(uint64(h.Method))
	p.varint(h.Start.UnixNano())
	p.int(h.Funcs)
	head := append([]byte(traceSignature), 0, 0)
	binary.LittleEndian.PutUint16(head[len(traceSignature):], TraceVersion)
	head = binary.AppendUvarint(head, uint64(len(p.b)))
	head = append(head, p.b...)
	head = binary.LittleEndian.AppendUint32(head, crc32.Checksum(p.b, castagnoli))
	if _, err := w.Write(head); err != nil {
		return nil, err
	}
	return &TraceWriter{w: w, buf: make([]byte, TraceChunk+maxTraceEvent), limit: limit, written: int64(len(head)), gen: 1}, nil
}

// Owner returns the state through which the events of o are written.
func (t *TraceWriter) Owner(o TraceOwner) *TraceOwnerState {
	return &TraceOwnerState{owner: o}
}

// Event adds a call (ret false) or a return of function fn by o at time
// now (never before o's last). It is on the path of every event PROFILE
// books: it writes into the chunk's buffer, which always has room for
// one more, without growing it.
func (t *TraceWriter) Event(o *TraceOwnerState, ret bool, fn int, now int64) {
	if t.stopped {
		return
	}
	if o != t.cur || o.gen != t.gen {
		t.switchTo(o)
	}
	b := t.buf[t.n:]
	b[0] = traceCall
	if ret {
		b[0] = traceReturn
	}
	i := 1 + binary.PutUvarint(b[1:], uint64(fn))
	dt := uint64(0)
	if now > o.last {
		dt = uint64(now - o.last)
		o.last = now
	}
	i += binary.PutUvarint(b[i:], dt)
	t.n += i
	t.events++
	if t.n >= TraceChunk {
		t.Flush()
	}
}

// switchTo makes o the owner of the events that follow in the chunk.
func (t *TraceWriter) switchTo(o *TraceOwnerState) {
	b := t.buf[t.n:]
	b[0], b[1] = traceOwner, 0
	if o.owner.Goroutine {
		b[1] = 1
	}
	t.n += 2 + binary.PutUvarint(b[2:], o.owner.ID)
	t.cur, o.gen, o.last = o, t.gen, 0
}

// Flush writes the events added since the last chunk as one.
func (t *TraceWriter) Flush() {
	if t.n == 0 || t.stopped {
		return
	}
	if t.limit > 0 && t.written+int64(t.n)+16 > t.limit {
		t.n = 0
		t.cut, t.stopped = true, true
		t.chunk([]byte{traceCut}, uint64(t.limit))
		return
	}
	t.chunk(t.buf[:t.n])
	t.n = 0
	t.gen++
	t.cur = nil
}

// chunk writes payload, and n as an operand when given, as one chunk in one
// write.
func (t *TraceWriter) chunk(payload []byte, n ...uint64) {
	for _, v := range n {
		payload = binary.AppendUvarint(payload, v)
	}
	f := append(t.frame[:0], traceChunkTag)
	f = binary.AppendUvarint(f, uint64(len(payload)))
	f = append(f, payload...)
	f = binary.LittleEndian.AppendUint32(f, crc32.Checksum(payload, castagnoli))
	t.frame = f
	if _, err := t.w.Write(f); err != nil {
		t.err, t.stopped = err, true
		return
	}
	t.written += int64(len(f))
}

// Cut reports whether the trace was cut at its size limit.
func (t *TraceWriter) Cut() bool { return t.cut }

// Events returns the number of events added before the trace was cut or
// failed (those of the last chunk, dropped by a cut, included).
func (t *TraceWriter) Events() uint64 { return t.events }

// Written returns the bytes written so far.
func (t *TraceWriter) Written() int64 { return t.written }

// Close writes what is left and the end of the trace, and returns the
// first write error. (The file itself is the caller's to close.)
func (t *TraceWriter) Close() error {
	t.Flush()
	if t.err == nil {
		t.chunk([]byte{traceEnd})
	}
	t.stopped = true
	return t.err
}

// TraceStatus says how a trace ended.
type TraceStatus struct {
	// Ended is set when the trace is whole: the run ended and PROFILE
	// wrote all of it (within the limit).
	Ended bool
	// Cut is set when the trace reached its size limit, Limit bytes.
	Cut   bool
	Limit int64
	// Torn is set when the file ends in a chunk that is not whole (a run
	// that ended before PROFILE could finish it) or one that fails its
	// checksum: the events before it are read, none after.
	Torn bool
	// TornAt is the file offset of that chunk.
	TornAt int64
}

// TraceReader reads a .pbx, event by event.
type TraceReader struct {
	r     *bufio.Reader
	h     TraceHeader
	off   int64
	chunk []byte
	d     decoder
	owner TraceOwner
	owned bool
	// now is the owner's time: its times are deltas from the one
	// before, from 0 at each switch of owner (TraceWriter.switchTo).
	now    int64
	status TraceStatus
	done   bool
	// chunkAt is the file offset of the chunk being read; single ends
	// the trace after one chunk (ReadTraceChunk).
	chunkAt int64
	single  bool
}

// ErrTraceSignature means the input is not an execution trace.
var ErrTraceSignature = errors.New("not an execution trace")

// NewTraceReader reads the header of the trace in r.
func NewTraceReader(r io.Reader) (*TraceReader, error) {
	t := &TraceReader{r: bufio.NewReaderSize(r, 1<<16)}
	var sig [len(traceSignature) + 2]byte
	if n, err := io.ReadFull(t.r, sig[:]); err != nil {
		if string(sig[:min(n, len(traceSignature))]) != traceSignature[:min(n, len(traceSignature))] {
			return nil, ErrTraceSignature
		}
		return nil, fmt.Errorf("%w: %d bytes, the header has more", ErrTruncated, n)
	}
	if string(sig[:len(traceSignature)]) != traceSignature {
		return nil, ErrTraceSignature
	}
	if v := binary.LittleEndian.Uint16(sig[len(traceSignature):]); v != TraceVersion {
		return nil, fmt.Errorf("%w %d, want %d", ErrVersion, v, TraceVersion)
	}
	t.off = int64(len(sig))
	body, err := t.frame(1 << 16)
	if err != nil {
		return nil, fmt.Errorf("read the header: %w", err)
	}
	d := decoder{buf: body, base: int64(len(sig)) + 1}
	t.h.PlanID = d.id()
	t.h.RunID = d.bytes()
	t.h.Method = d.method()
	t.h.Start = time.Unix(0, d.varint())
	t.h.Funcs = d.int()
	if d.ok() && d.remaining() != 0 {
		d.fail("%d bytes after the header", d.remaining())
	}
	if d.err != nil {
		return nil, fmt.Errorf("read the header: %w", d.err)
	}
	return t, nil
}

// frame reads a length, that many bytes (at most max) and their checksum.
func (t *TraceReader) frame(max int) ([]byte, error) {
	n, err := binary.ReadUvarint(t.r)
	if err != nil {
		return nil, traceEOF(err)
	}
	if n > uint64(max) {
		return nil, &FormatError{Off: t.off, Msg: fmt.Sprintf("length %d exceeds %d", n, max)}
	}
	t.off += int64(uvarintLen(n))
	if cap(t.chunk) < int(n)+4 {
		t.chunk = make([]byte, int(n)+4)
	}
	b := t.chunk[:n+4]
	if _, err := io.ReadFull(t.r, b); err != nil {
		return nil, traceEOF(err)
	}
	t.off += int64(len(b))
	if crc32.Checksum(b[:n], castagnoli) != binary.LittleEndian.Uint32(b[n:]) {
		return nil, ErrChecksum
	}
	return b[:n], nil
}

// traceEOF turns the end of the input inside a frame into ErrTruncated.
func traceEOF(err error) error {
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return ErrTruncated
	}
	return err
}

func uvarintLen(v uint64) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

// Header returns the trace's header.
func (t *TraceReader) Header() TraceHeader { return t.h }

// Status says how the trace ended; it is complete once Next returned
// io.EOF.
func (t *TraceReader) Status() TraceStatus { return t.status }

// Next returns the next event, io.EOF after the last. A trace that ends
// early, in a chunk not whole or damaged, ends there (Status says so);
// malformed content in a whole chunk is a [*FormatError].
func (t *TraceReader) Next() (TraceEvent, error) {
	for {
		if t.done {
			return TraceEvent{}, io.EOF
		}
		if t.d.remaining() == 0 || t.d.err != nil {
			if err := t.nextChunk(); err != nil {
				return TraceEvent{}, err
			}
			continue
		}
		d := &t.d
		at := d.off
		switch op := d.u8(); op {
		case traceOwner:
			flags := d.u8()
			if flags > 1 {
				d.failAt(at, "owner flags %#x", flags)
				return TraceEvent{}, d.err
			}
			t.owner = TraceOwner{Goroutine: flags == 1, ID: d.uvarint()}
			t.owned = true
			t.now = 0
		case traceCall, traceReturn:
			fn, dt := d.uvarint(), d.uvarint()
			switch {
			case d.err != nil:
			case !t.owned:
				d.failAt(at, "an event before its owner")
			case fn >= uint64(t.h.Funcs):
				d.failAt(at, "function %d of %d", fn, t.h.Funcs)
			case dt > 1<<62 || t.now > 1<<62-int64(dt):
				d.failAt(at, "time overflows")
			}
			if d.err != nil {
				return TraceEvent{}, d.err
			}
			t.now += int64(dt)
			return TraceEvent{Owner: t.owner, Return: op == traceReturn, Func: int(fn), Time: t.now}, nil
		case traceCut:
			limit := d.uvarint()
			if d.err != nil {
				return TraceEvent{}, d.err
			}
			t.status.Cut, t.status.Limit = true, int64(min(limit, 1<<62))
		case traceEnd:
			t.status.Ended = true
			t.done = true
		default:
			if d.err == nil {
				d.failAt(at, "unknown operation %d", op)
			}
			return TraceEvent{}, d.err
		}
		if d.err != nil {
			return TraceEvent{}, d.err
		}
	}
}

// ChunkOffset returns the file offset of the chunk of the last event
// Next returned: each chunk can be read again alone (ReadTraceChunk).
func (t *TraceReader) ChunkOffset() int64 { return t.chunkAt }

// ReadTraceChunk calls each for every event of the chunk at file offset
// off (a ChunkOffset) of the trace in r, whose header is h: a chunk's
// events need nothing of the chunks before it.
func ReadTraceChunk(r io.ReaderAt, off int64, h TraceHeader, each func(TraceEvent) error) error {
	t := &TraceReader{r: bufio.NewReaderSize(io.NewSectionReader(r, off, 1<<62), 1<<16), h: h, off: off,
		chunkAt: off, single: true}
	for {
		ev, err := t.Next()
		if err == io.EOF {
			if t.status.Torn {
				return fmt.Errorf("chunk at offset %d: %w", off, ErrTruncated)
			}
			return nil
		}
		if err != nil {
			return err
		}
		if err := each(ev); err != nil {
			return err
		}
	}
}

// nextChunk reads the next chunk into t.d; at the input's end, or at a
// chunk not whole, it ends the trace.
func (t *TraceReader) nextChunk() error {
	at := t.off
	if t.single && at != t.chunkAt {
		t.done = true
		return io.EOF
	}
	tag, err := t.r.ReadByte()
	if err == io.EOF {
		t.done = true
		return io.EOF
	}
	if err != nil {
		return err
	}
	t.off++
	if tag != traceChunkTag {
		return &FormatError{Off: at, Msg: fmt.Sprintf("chunk tag %#x", tag)}
	}
	body, err := t.frame(maxTraceChunk)
	if errors.Is(err, ErrTruncated) || errors.Is(err, ErrChecksum) {
		t.status.Torn, t.status.TornAt = true, at
		t.done = true
		return io.EOF
	}
	if err != nil {
		return err
	}
	t.d = decoder{buf: body, base: t.off - int64(len(body)) - 4}
	t.chunkAt = at
	t.owned = false
	t.now = 0
	return nil
}
