// Command goprog is the Go fixture of the dwarf tests.
package main

import (
	"fmt"
	"os"

	"example.com/goprog/shapes"
)

func main() {
	r := shapes.Rect{W: float64(len(os.Args)), H: 2}
	fmt.Println(shapes.Area(r), r.Perimeter())
}
