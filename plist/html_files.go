package plist

import (
	"cmp"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
)

// The line profile's summary by directory and file (the page's "Files"
// section), as genhtml's index has it: each directory's row, then its
// files', with the lines profiled, those that ran and their share, for
// counting their share of all the hits, and for branch coverage the
// ways of their branches, those taken and their share.

// htmlFileRow is a row of the summary: a directory's (Dir) or a file's.
// Href links a file to its annotated source, where it was found.
type htmlFileRow struct {
	Dir                    bool
	Name, Title, Href      string
	Lines, Run             int
	Cover, Hits, HitsShare string
	// Ways, Taken and WaysCover are the branches' (pg.Branches).
	Ways, Taken int
	WaysCover   string
}

// fileTally is what the summary adds up of a file's or a directory's
// lines: how many, how many ran, their hits; and of their branches, the
// ways and those taken.
type fileTally struct {
	lines, run  int
	hits        uint64
	ways, taken int
}

func (t *fileTally) add(u fileTally) {
	t.lines, t.run, t.hits = t.lines+u.lines, t.run+u.run, t.hits+u.hits
	t.ways, t.taken = t.ways+u.ways, t.taken+u.taken
}

// htmlFiles fills the summary of the profile's lines, by the path prep
// recorded for their source file: a line is a line of a path (its sites
// in several modules, a header's, add up), and it ran where any of its
// sites did; total is the hits of every line.
func (r htmlExport) htmlFiles(pg *htmlPage, total uint64) {
	type pathLine struct {
		path string
		line int
	}
	counts := map[pathLine]uint64{}
	first := map[string][2]int{} // (a path's first module and file, for its link)
	for i := range r.plan.Lines {
		l := &r.plan.Lines[i]
		path := r.lineFile(l)
		counts[pathLine{path, l.Line}] += r.hits(i)
		if _, ok := first[path]; !ok {
			first[path] = [2]int{l.Module, l.File}
		}
	}
	files := map[string]*fileTally{}
	for k, n := range counts {
		t := files[k.path]
		if t == nil {
			t = &fileTally{}
			files[k.path] = t
		}
		t.lines++
		t.hits += n
		if n > 0 {
			t.run++
		}
	}
	r.htmlFileBranches(files)
	byDir := map[string][]string{}
	for path := range files {
		dir := filepath.Dir(path)
		byDir[dir] = append(byDir[dir], path)
	}
	row := func(name, title string, t fileTally) htmlFileRow {
		row := htmlFileRow{Name: name, Title: title, Lines: t.lines, Run: t.run,
			Cover: fixed(percent(float64(t.run), float64(t.lines)), 1)}
		if !pg.Coverage {
			row.Hits = strconv.FormatUint(t.hits, 10)
			row.HitsShare = fixed(percent(float64(t.hits), float64(total)), 1)
		}
		if pg.Branches {
			row.Ways, row.Taken, row.WaysCover = t.ways, t.taken, "-" // (no branch: no share)
			if t.ways > 0 {
				row.WaysCover = fixed(percent(float64(t.taken), float64(t.ways)), 1)
			}
		}
		return row
	}
	for _, dir := range slices.Sorted(maps.Keys(byDir)) {
		paths := byDir[dir]
		slices.SortFunc(paths, func(a, b string) int { return cmp.Compare(filepath.Base(a), filepath.Base(b)) })
		var sum fileTally
		for _, p := range paths {
			sum.add(*files[p])
		}
		d := row(dir, dir, sum)
		d.Dir = true
		pg.Files = append(pg.Files, d)
		for _, p := range paths {
			f := row(filepath.Base(p), p, *files[p])
			if at := first[p]; pg.found[at] {
				f.Href = "#" + fileAnchor(at[0], at[1])
			}
			pg.Files = append(pg.Files, f)
		}
	}
}

// fileAnchor is the id of a file of the annotated source.
func fileAnchor(mod, file int) string { return "F" + strconv.Itoa(mod) + "-" + strconv.Itoa(file) }
