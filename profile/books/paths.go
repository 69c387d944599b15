package books

import (
	"maps"
	"slices"
)

// Paths are figures by path of calls: a trie whose nodes are paths of
// functions, outermost first, each the path of its parent and one
// function more, the root the empty path. A book's caller stacks moved
// out of the program (nodeTable: a table full, a thread's end, the end of
// the run) gather there by path, each node found from its parent's in one
// lookup, so that the many books of one run (a goroutine's each, a
// thread's each), whose paths are mostly the same, make each path's
// stack once (Take).
type Paths struct {
	index  map[uint64]int32 // a node's parent << 32 | its function, to the node
	parent []int32
	fn     []int32
	figs   []Figure
}

// NewPaths returns paths with the root alone, node 0.
func NewPaths() *Paths {
	return &Paths{index: map[uint64]int32{}, parent: []int32{-1}, fn: []int32{-1}, figs: []Figure{{}}}
}

// Child returns the node of the path of node parent and fn, added where
// it is new.
func (t *Paths) Child(parent, fn int) int {
	key := uint64(parent)<<32 | uint64(uint32(fn))
	if n, ok := t.index[key]; ok {
		return int(n)
	}
	n := int32(len(t.parent))
	t.index[key] = n
	t.parent, t.fn, t.figs = append(t.parent, int32(parent)), append(t.fn, int32(fn)), append(t.figs, Figure{})
	return int(n)
}

// Walk returns the node of path, from the root, added where it is new.
func (t *Paths) Walk(path []int) int {
	n := 0
	for _, fn := range path {
		n = t.Child(n, fn)
	}
	return n
}

// Add adds f to the figures of node n.
func (t *Paths) Add(n int, f Figure) { t.figs[n].Add(f) }

// clone returns a copy of t (nil for nil).
func (t *Paths) clone() *Paths {
	if t == nil {
		return nil
	}
	return &Paths{index: maps.Clone(t.index), parent: slices.Clone(t.parent), fn: slices.Clone(t.fn), figs: slices.Clone(t.figs)}
}

// Len returns the number of paths, the root's included.
func (t *Paths) Len() int { return len(t.parent) }

// Merge adds the figures of u's paths to t's, and empties u.
func (t *Paths) Merge(u *Paths) {
	into := make([]int, u.Len()) // (a parent comes before its children)
	for n := 1; n < u.Len(); n++ {
		into[n] = t.Child(into[u.parent[n]], int(u.fn[n]))
		t.Add(into[n], u.figs[n])
	}
	*u = *NewPaths()
}

// Take hands the figures of each path that has some to keep, its
// functions outermost first, in the order the paths were added (a
// book's, the order of its calls: a path comes after its parent's), and
// empties t.
func (t *Paths) Take(keep func(path []int, f Figure)) {
	paths := make([][]int, t.Len())
	for n := 1; n < t.Len(); n++ {
		if t.figs[n] != (Figure{}) {
			keep(t.pathOf(paths, int32(n)), t.figs[n])
		}
	}
	*t = *NewPaths()
}

// pathOf returns the path of node n, kept in paths.
func (t *Paths) pathOf(paths [][]int, n int32) []int {
	if n == 0 {
		return nil
	}
	if paths[n] == nil {
		up := t.pathOf(paths, t.parent[n])
		paths[n] = append(up[:len(up):len(up)], int(t.fn[n]))
	}
	return paths[n]
}
