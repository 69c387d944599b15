package plist_test

import (
	"fmt"
	"os"
	"time"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/plist"
)

// ExampleGenerate prints the tab-delimited records of a merged profile
// (a .pbt, here in its text form), as plist /T prints them: the
// profile's header, the program's statistics, a record 6 for each
// function (its module, its object, hits, time, and name).
func ExampleGenerate() {
	f, err := os.Open("testdata/coverage.pbt.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	v, err := datafile.ReadText(f)
	if err != nil {
		fmt.Println(err)
		return
	}
	m := v.(*datafile.Merged)
	o := plist.DefaultOptions()
	o.Tab = true
	o.Now = time.Date(2026, time.March, 5, 9, 7, 3, 0, time.UTC) // (dates in its location)
	if err := plist.Generate(os.Stdout, m, o); err != nil {
		fmt.Println(err)
	}
	// Output:
	// 0	168	Microsoft 32-bit PLIST Version 1.00
	// 1	524	Profile: Function coverage, sorted by name
	// 2	0.000	0.000	4
	// 3	10	13	10
	// 4	2026 Mar 05 08:07	prog
	// 6	prog	counter.o	1	0.000	0.000	Counter::Counter()
	// 6	prog	counter.o	1	0.000	0.000	Counter::bump(int)
	// 6	prog	counter.o	1	0.000	0.000	Counter::value() const
	// 6	prog	prog	0	0.000	0.000	_start
	// 6	prog	main.o	0	0.000	0.000	helper
	// 6	prog	main.o	1	0.000	0.000	main
	// 6	prog	counter.o	1	0.000	0.000	max<int>(int, int)
	// 6	prog	main.o	1	0.000	0.000	twice(double)
	// 6	prog	main.o	1	0.000	0.000	twice(int)
	// 6	libcalc.so.1	libcalc.so.1	1	0.000	0.000	calc_version
	// 6	libcalc.so.1	mycalc	1	0.000	0.000	mycalc::add
	// 6	libcalc.so.1	mycalc	0	0.000	0.000	mycalc::helper
	// 6	libcalc.so.1	mycalc	1	0.000	0.000	mycalc::mul
}
