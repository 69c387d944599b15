package prep_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/prep"
)

// ExampleBuildPlan is PREP's phase I for function counting of a C
// program, as `prep /FC /EXCALL /INC fixture.c prog` runs it: every function
// left out, then those of one source file brought back. The plan names
// each function to count and its object module (and the link-time
// address of its entry, where PROFILE plants, which the compiler chose
// and this example does not print).
func ExampleBuildPlan() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	prog := filepath.Join(dir, "prog")
	if out, err := exec.Command("cc", "-g", "-O0", "-o", prog, "testdata/fixture.c").CombinedOutput(); err != nil {
		fmt.Println(err, string(out))
		return
	}
	plan, err := prep.BuildPlan(prep.Options{
		Method:      datafile.FuncCounting,
		Programs:    []string{prog},
		Specs:       []prep.Spec{{Op: prep.ExcludeAll}, {Op: prep.Include, Text: "fixture.c"}},
		Calibration: -1,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(plan.Method, "of", len(plan.Funcs), "functions:")
	for _, f := range plan.Funcs {
		fmt.Printf("  %s (%s)\n", f.Name, f.Source)
	}
	// Output:
	// Function counting of 6 functions:
	//   helper (fixture.o)
	//   h (fixture.o)
	//   g (fixture.o)
	//   f (fixture.o)
	//   fib (fixture.o)
	//   main (fixture.o)
}
