package plist

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/prf"
)

// FuzzGenerate checks that no valid merged profile, with any options and
// in any format, makes Generate panic (the HTML page of each input is
// seeded too). The function sampling inputs are
// seeded in the formats that place their samples too (pprof, gmon.out).
func FuzzGenerate(f *testing.F) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "*.pbt.json"))
	if err != nil {
		f.Fatal(err)
	}
	for _, path := range inputs {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, []byte{}, uint8(0), 1, 0, 0, uint8(FormatText))
		f.Add(b, []byte("\t\xff\x03\x80"), uint8(0x3f), 0, 7, 16, uint8(FormatText))
		f.Add(b, []byte("<\xff&\x03"), uint8(0), 0, 0, 0, uint8(FormatHTML))
		if strings.HasPrefix(filepath.Base(path), "sampling") {
			f.Add(b, []byte{}, uint8(0), 1, 0, 0, uint8(FormatGmon))
			f.Add(b, []byte("\x04\x05\xfd\x34"), uint8(0), 1, 0, 0, uint8(FormatPprof))
		}
	}
	f.Fuzz(func(t *testing.T, text, noise []byte, flags uint8, minCount, width, length int, format uint8) {
		m := validMerged(text, noise)
		if m == nil {
			return
		}
		o := Options{
			Sort:           Sort(flags & 7),
			Tab:            flags&8 != 0,
			Mangled:        flags&16 != 0,
			FullPaths:      flags&32 != 0,
			Flat:           flags&64 != 0,
			PageWidthGiven: flags&128 != 0,
			MinCount:       minCount,
			PageWidth:      width % 1000,
			PageLength:     length % 1000,
			TabWidth:       2,
			Format:         Format(int(format) % len(formatNames)),
			Warn:           func(*prf.Diagnostic) {},
		}
		_ = Generate(io.Discard, m, o)
	})
}

// validMerged decodes the text form of a merged profile, changes it as
// noise says (JSON mutations rarely stay valid), recomputes its plan ID so
// that mutations reach Generate, and returns it when it is valid.
func validMerged(text, noise []byte) *datafile.Merged {
	var env struct{ Merged *datafile.Merged }
	if err := json.Unmarshal(text, &env); err != nil || env.Merged == nil {
		return nil
	}
	m := env.Merged
	if n := len(m.Plan.Funcs); n > 0 && len(m.Stats.Hits) == n {
		sm := &m.Stats.Sampling
		for k, b := range noise {
			i := k % n
			switch b % 8 {
			case 0:
				m.Stats.Hits[i] = uint64(b) << (b % 64)
			case 1:
				m.Plan.Funcs[i].Name += string([]byte{b})
			case 2:
				if i < len(m.Stats.FuncTime) {
					m.Stats.FuncTime[i] = int64(b) << (b % 60)
				}
			case 3:
				m.Plan.Funcs[i].Source = string(noise[k:])
			case 4:
				if i < len(sm.Samples) {
					sm.Samples[i] = uint64(b) << (b % 64)
				}
			case 5:
				if len(sm.LineSamples) > 0 {
					sm.LineSamples[k%len(sm.LineSamples)] = uint64(b) << (b % 64)
				}
			case 6:
				m.Plan.Funcs[i].Entry = ^uint64(0) >> (b % 64)
			case 7:
				f := &m.Plan.Funcs[i]
				f.Low, f.High = f.High-uint64(b), f.Low+uint64(b)<<(b%64)
			}
		}
		// The links between stacks: a stack's caller stack made another
		// one's (loops, a caller stack of another function) or none.
		if st := m.Stats.Stacks; len(st) > 0 {
			for k, b := range noise {
				s := &st[(k+int(b))%len(st)]
				switch {
				case b%3 == 0:
					s.CallerKey = st[int(b)%len(st)].Key
				case b%3 == 1:
					s.Key = uint64(b % 4)
				}
			}
		}
	}
	m.Plan.ID = datafile.PlanID(&m.Plan)
	if m.Validate() != nil {
		return nil
	}
	return m
}

// FuzzOpenTrace checks that a trace read owner by owner from its file
// (OpenTrace) walks as the same trace held whole (ReadTrace), whatever
// the bytes, and neither panics.
func FuzzOpenTrace(f *testing.F) {
	var buf bytes.Buffer
	w, _ := datafile.NewTraceWriter(&buf, datafile.TraceHeader{Funcs: 4}, 0)
	a, b := w.Owner(datafile.TraceOwner{ID: 3}), w.Owner(datafile.TraceOwner{Goroutine: true, ID: 77})
	w.Event(a, false, 1, 10)
	w.Event(b, false, 2, 11)
	w.Flush()
	w.Event(a, true, 1, 20)
	w.Event(b, false, 3, 30)
	w.Close()
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		held, err := ReadTrace(bytes.NewReader(data))
		opened, err2 := OpenTrace(bytes.NewReader(data))
		if (err == nil) != (err2 == nil) {
			t.Fatalf("ReadTrace: %v; OpenTrace: %v", err, err2)
		}
		if err != nil {
			return
		}
		defer opened.Close()
		if len(held.Owners) != len(opened.Owners) || held.Status != opened.Status {
			t.Fatalf("%d owners, %+v; opened %d, %+v", len(held.Owners), held.Status, len(opened.Owners), opened.Status)
		}
		for i := range held.Owners {
			var x, y []TraceStep
			held.Owners[i].Walk(func(s TraceStep) { x = append(x, s) })
			if err := opened.Owners[i].Walk(func(s TraceStep) { y = append(y, s) }); err != nil || !slices.Equal(x, y) {
				t.Fatalf("owner %d: %d steps, %v; held %d", i, len(y), err, len(x))
			}
		}
	})
}
