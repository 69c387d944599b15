package datafile

import (
	"bytes"
	"fmt"
	"testing"
)

// bigPlan returns a function counting plan of n functions in two modules.
func bigPlan(n int) *Plan {
	p := &Plan{Method: FuncCounting, StartIndex: -1, Calibration: -1, Modules: testModules()}
	p.Funcs = make([]Func, n)
	for i := range p.Funcs {
		p.Funcs[i] = Func{
			Module: i % 2,
			Name:   fmt.Sprintf("_ZN7project6module8functionE%d", i),
			Source: fmt.Sprintf("unit%d.o", i/100),
			Entry:  0x401000 + uint64(i)*0x40,
			File:   fmt.Sprintf("src/unit%d.c", i/100),
			Line:   10 + i%1000,
		}
	}
	p.ID = PlanID(p)
	return p
}

func BenchmarkWritePlan(b *testing.B) {
	p := bigPlan(100000)
	var buf bytes.Buffer
	if err := WritePlan(&buf, p); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := WritePlan(&buf, p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadPlan(b *testing.B) {
	var buf bytes.Buffer
	if err := WritePlan(&buf, bigPlan(100000)); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadPlan(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPlanID(b *testing.B) {
	p := bigPlan(100000)
	b.ReportAllocs()
	for b.Loop() {
		PlanID(p)
	}
}
