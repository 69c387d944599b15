// Package shapes holds the package functions of the Go fixture.
package shapes

// Rect is a rectangle.
type Rect struct{ W, H float64 }

// Area is a package function.
//
//go:noinline
func Area(r Rect) float64 { return r.W * r.H }

// Perimeter is a method with a pointer receiver.
//
//go:noinline
func (r *Rect) Perimeter() float64 { return 2 * (r.W + r.H) }
