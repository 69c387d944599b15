package plist

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/sourceprofiler/sprof/datafile"
)

// suiteOf is the line coverage, with branches, of one test program of a
// large suite: a library of libFiles files of 100 lines each, linked into
// every program, and 10 files of the program's own. Each file holds 5
// functions of 20 lines, each line one site of 16 bytes, and a branch on
// every fifth line; the program k runs every line whose number is not a
// multiple of k+2, and its branches go the ways of their line's parity.
func suiteOf(b *testing.B, k, libFiles int) *datafile.Merged {
	name := fmt.Sprintf("test_%d", k)
	m := &datafile.Merged{Plan: datafile.Plan{Method: datafile.LineCoverage, StartIndex: -1,
		Modules: []datafile.Module{{Name: name}}}}
	for f := range libFiles + 10 {
		file := fmt.Sprintf("/src/lib/f%d.c", f)
		if f >= libFiles {
			file = fmt.Sprintf("/src/%s/f%d.c", name, f-libFiles)
		}
		m.Plan.Modules[0].Files = append(m.Plan.Modules[0].Files, file)
		for n := 1; n <= 100; n++ {
			at := uint64(len(m.Plan.Lines)+1) * 16
			if n%20 == 1 {
				m.Plan.Funcs = append(m.Plan.Funcs, datafile.Func{Name: fmt.Sprintf("fn_%d_%d", f, n), Entry: at, Low: at, High: at + 20*16, File: file, Line: n})
			}
			ran := uint64(0)
			if n%(k+2) != 0 {
				ran = 1
			}
			if n%5 == 0 {
				m.Plan.Branches = append(m.Plan.Branches, datafile.Branch{Line: len(m.Plan.Lines), Addr: at + 8, Target: at + 16})
				m.Stats.Branches = append(m.Stats.Branches, ran*uint64(n%2), ran)
			}
			m.Plan.Lines = append(m.Plan.Lines, datafile.Line{File: f, Line: n, Addrs: []uint64{at}})
			m.Stats.Hits = append(m.Stats.Hits, ran)
		}
	}
	m.Runs = []datafile.Run{{Time: 1795600000, CommandLine: name}}
	m.Overheads = []int64{0}
	m.Plan.ID = datafile.PlanID(&m.Plan)
	if err := m.Validate(); err != nil {
		b.Fatal(err)
	}
	return m
}

// BenchmarkCombined combines the coverage of a suite of 40 test programs
// (plist --combine), each of a library of 300 files and 10 files of its
// own (31,000 lines, 6,200 branches a program), and writes its lcov
// tracefile and its summary.
func BenchmarkCombined(b *testing.B) {
	var suite []*datafile.Merged
	for k := range 40 {
		suite = append(suite, suiteOf(b, k, 300))
	}
	var size int
	for b.Loop() {
		c := NewCombined()
		for _, m := range suite {
			if err := c.Add(m, m.Plan.Modules[0].Name+".pbt", DefaultOptions()); err != nil {
				b.Fatal(err)
			}
		}
		var buf bytes.Buffer
		if err := c.WriteLcov(&buf); err != nil {
			b.Fatal(err)
		}
		if err := c.WriteSummary(io.Discard); err != nil {
			b.Fatal(err)
		}
		size = buf.Len()
	}
	b.ReportMetric(float64(size)/1e6, "MB")
}
