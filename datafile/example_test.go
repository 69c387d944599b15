package datafile_test

import (
	"fmt"

	"github.com/sourceprofiler/sprof/datafile"
)

// ExampleMerged_Add is PREP's phase II in small: a plan of function
// counting for two functions (a .pbi), the database it starts (a fresh
// .pbt), and two runs (.pbo files) added into it. Counts add up; a run
// added twice is refused.
func ExampleMerged_Add() {
	plan := &datafile.Plan{
		Method:      datafile.FuncCounting,
		Calibration: -1,
		Modules:     []datafile.Module{{Name: "prog", Path: "/src/prog", Arch: "amd64"}},
		Funcs: []datafile.Func{
			{Name: "parse", Source: "parse.o", Entry: 0x1130, Low: 0x1130, High: 0x1190},
			{Name: "main", Source: "main.o", Entry: 0x1190, Low: 0x1190, High: 0x11f0},
		},
	}
	plan.ID = datafile.PlanID(plan)
	db := datafile.NewMerged(plan)
	for i, hits := range [][]uint64{{1000, 1}, {250, 1}} {
		run := &datafile.Counts{
			PlanID: plan.ID, Method: plan.Method,
			Run:   datafile.Run{ID: datafile.Hex{byte(i + 1)}, CommandLine: fmt.Sprint("prog ", i)},
			Stats: datafile.Stats{Hits: hits},
		}
		if err := db.Add(run); err != nil {
			fmt.Println(err)
		}
		if i == 1 {
			fmt.Println(db.Add(run)) // the same run again
		}
	}
	fmt.Println(len(db.Runs), "runs")
	for i, f := range plan.Funcs {
		fmt.Printf("%s: %d hits\n", f.Name, db.Stats.Hits[i])
	}
	// Output:
	// merge: run already merged: run 02
	// 2 runs
	// parse: 1250 hits
	// main: 2 hits
}
