package books

import (
	"fmt"
	"slices"
	"testing"
)

// TestPaths: paths are found from their parents', one node each however
// they are reached; Merge adds another trie's figures path by path and
// empties it; Take hands out each path with figures once, in the order
// the paths were added (a parent before its children), and empties the
// trie; a path added but never given figures is not handed out.
func TestPaths(t *testing.T) {
	p := NewPaths()
	a := p.Walk([]int{1})
	ab := p.Child(a, 2)
	if p.Walk([]int{1, 2}) != ab || p.Child(0, 1) != a || p.Len() != 3 {
		t.Fatalf("path 1 2 is node %d and %d, path 1 node %d, %d nodes: want one node for each path", ab, p.Walk([]int{1, 2}), a, p.Len())
	}
	p.Add(ab, Figure{Calls: 2, Self: 10, All: 30})
	p.Add(a, Figure{Calls: 1, Self: 5, All: 35})
	p.Add(ab, Figure{Calls: 1, Self: 4, All: 4})
	p.Walk([]int{3, 4}) // (no figures)

	q := NewPaths()
	q.Add(q.Walk([]int{1, 2, 1}), Figure{Calls: 7})
	q.Add(q.Walk([]int{1, 2}), Figure{Calls: 1, Self: 1, All: 1})
	p.Merge(q)
	if q.Len() != 1 {
		t.Errorf("merged paths left with %d nodes, want the root alone", q.Len())
	}
	c := p.clone()

	var got []string
	p.Take(func(path []int, f Figure) { got = append(got, fmt.Sprint(path, f.Calls, f.Self, f.All)) })
	want := []string{"[1] 1 5 35", "[1 2] 4 15 35", "[1 2 1] 7 0 0"}
	if !slices.Equal(got, want) {
		t.Errorf("taken %q, want %q", got, want)
	}
	p.Take(func(path []int, f Figure) { t.Errorf("path %v taken twice: %+v", path, f) })

	got = nil
	c.Take(func(path []int, f Figure) { got = append(got, fmt.Sprint(path, f.Calls, f.Self, f.All)) })
	if !slices.Equal(got, want) {
		t.Errorf("the clone's taken %q, want %q", got, want)
	}
	if (*Paths)(nil).clone() != nil {
		t.Error("no paths cloned into some")
	}
}
