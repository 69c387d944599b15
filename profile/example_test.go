package profile_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/prep"
	"github.com/sourceprofiler/sprof/profile"
)

// source is the program ExampleRun profiles: fib(10) calls fib 177 times
// in all, square once for each of its five rounds.
const source = `#include <stdio.h>
__attribute__((noinline)) int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
__attribute__((noinline)) int square(int x) { return x * x; }
int main(void) {
	int s = 0;
	for (int i = 0; i < 5; i++)
		s += square(i);
	printf("%d %d\n", fib(10), s);
	return 0;
}
`

// ExampleRun is the workflow's middle step: PREP's plan of function
// counting for a C program (prep /FC prog), PROFILE's run of the
// program under it, and the counts of the run, which `profile prog`
// writes into prog.pbo for `prep /M` to add into prog.pbt.
func ExampleRun() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	prog := filepath.Join(dir, "prog")
	if err := os.WriteFile(prog+".c", []byte(source), 0o644); err != nil {
		fmt.Println(err)
		return
	}
	if out, err := exec.Command("cc", "-g", "-O0", "-o", prog, prog+".c").CombinedOutput(); err != nil {
		fmt.Println(err, string(out))
		return
	}
	plan, err := prep.BuildPlan(prep.Options{Method: datafile.FuncCounting, Programs: []string{prog}, Calibration: -1})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := profile.Run(profile.Config{Plan: plan, PlanPath: prog + ".pbi", Path: prog, Args: []string{"prog"}, Stdout: os.Stdout})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("exit status", res.Status())
	for i, f := range plan.Funcs {
		if f.Source == "prog.o" {
			fmt.Printf("%s: %d calls\n", f.Name, res.Counts.Stats.Hits[i])
		}
	}
	// Output:
	// 55 30
	// exit status 0
	// fib: 177 calls
	// square: 5 calls
	// main: 1 calls
}
