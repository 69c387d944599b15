package plist

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"

	"github.com/sourceprofiler/sprof/datafile"
)

// A trace whose owners' events share most chunks (goroutines switching
// within their threads' events) is not read again from its file owner by
// owner, which would read the whole file once per owner: its events are
// written once to a spool, a temporary file, each owner's in blocks of its
// own, and read back from there as the listing reaches the owner. The
// memory is a block for each owner while the spool is written.

// traceSpool is the temporary file of a trace's events, removed from its
// directory as soon as it is made: it goes with its last descriptor.
type traceSpool struct {
	f *os.File
}

// spoolBlock is the size of an owner's block of events in the spool;
// spoolEvent the size of an event there (its function, whether it
// returns, its time).
const (
	spoolBlock = 4096 - 4096%spoolEvent
	spoolEvent = 4 + 1 + 8
)

// spoolTrace writes the events of t's owners, of the chunks of r up to
// the last one its first reading saw (lastChunk: a trace still being
// written has more since), to a spool, and makes each owner read its
// events from there. Where it fails, the owners are as they were.
func spoolTrace(r io.ReaderAt, t *Trace, lastChunk int64) (*traceSpool, error) {
	f, err := os.CreateTemp("", "sprof-trace-")
	if err != nil {
		return nil, fmt.Errorf("spool the trace's events: %w", err)
	}
	os.Remove(f.Name())
	sp := &traceSpool{f: f}
	index := map[datafile.TraceOwner]int{}
	for i := range t.Owners {
		index[t.Owners[i].TraceOwner] = i
	}
	bufs := make([][]byte, len(t.Owners))
	var off int64
	flush := func(i int) error {
		b := bufs[i]
		if len(b) == 0 {
			return nil
		}
		if _, err := f.WriteAt(b, off); err != nil {
			return fmt.Errorf("spool the trace's events: %w", err)
		}
		t.Owners[i].blocks = append(t.Owners[i].blocks, [2]int64{off, int64(len(b))})
		off += int64(len(b))
		bufs[i] = b[:0]
		return nil
	}
	err = func() error {
		tr, err := datafile.NewTraceReader(io.NewSectionReader(r, 0, 1<<62))
		if err != nil {
			return err
		}
		for {
			ev, err := tr.Next()
			if err == io.EOF || err == nil && tr.ChunkOffset() > lastChunk {
				break
			}
			if err != nil {
				return err
			}
			i, ok := index[ev.Owner]
			if !ok {
				continue
			}
			b := binary.LittleEndian.AppendUint32(bufs[i], uint32(int32(ev.Func)))
			b = append(b, boolByte(ev.Return))
			bufs[i] = binary.LittleEndian.AppendUint64(b, uint64(ev.Time))
			if len(bufs[i]) >= spoolBlock {
				if err := flush(i); err != nil {
					return err
				}
			}
		}
		for i := range bufs {
			if err := flush(i); err != nil {
				return err
			}
		}
		return nil
	}()
	if err != nil {
		f.Close()
		for i := range t.Owners {
			t.Owners[i].blocks = nil
		}
		return nil, err
	}
	for i := range t.Owners {
		o := &t.Owners[i]
		o.spool, o.file, o.chunks = sp, nil, nil
	}
	return sp, nil
}

// each calls fn for each of o's events, read back from the spool.
func (sp *traceSpool) each(o *TraceOwner, fn func(TraceEvent)) error {
	buf := make([]byte, spoolBlock)
	for _, b := range o.blocks {
		if int(b[1]) > len(buf) {
			buf = make([]byte, b[1])
		}
		p := buf[:b[1]]
		if _, err := sp.f.ReadAt(p, b[0]); err != nil {
			return fmt.Errorf("read the events of %s back from the spool: %w", o.Name(), err)
		}
		for ; len(p) >= spoolEvent; p = p[spoolEvent:] {
			fn(TraceEvent{
				Func:   int32(binary.LittleEndian.Uint32(p)),
				Return: p[4] != 0,
				Time:   int64(binary.LittleEndian.Uint64(p[5:])),
			})
		}
	}
	return nil
}

// boolByte is b as a byte.
func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// Close removes the spool OpenTrace wrote, if it wrote one.
func (t *Trace) Close() error {
	if t.spool != nil {
		return t.spool.f.Close()
	}
	return nil
}
