package plist

import (
	"os"
	"path/filepath"
	"strings"
)

// findSource returns the path where a source file of module mod is found,
// or "" when it is found nowhere. name is the path PREP recorded: the
// line table's, joined with its unit's compilation directory. It is
// looked for
//
//   - where it was recorded;
//   - for a relative name (a compilation directory that was itself
//     relative, as -ffile-prefix-map makes it), in each of the module's
//     unit directories (Module.CompDirs);
//   - for a name inside one of the unit directories, at the same place
//     under each of the others: a generated parser names its grammar
//     (#line "bc.y") relative to where the generator ran, which is the
//     directory of the unit's source (its srcdir) more often than where
//     the compiler ran;
//   - then in the /D directories, with its relative path and with its
//     base name.
//
// Only regular files count. The result is remembered per module and name.
func (r *report) findSource(mod int, name string) string {
	if r.sources == nil {
		r.sources = map[sourceKey]string{}
	}
	k := sourceKey{mod, name}
	if found, ok := r.sources[k]; ok {
		return found
	}
	found := ""
	for _, try := range r.sourceTries(mod, name) {
		// Only regular files: opening a FIFO would block.
		if st, err := os.Stat(try); err == nil && st.Mode().IsRegular() {
			found = try
			break
		}
	}
	r.sources[k] = found
	return found
}

// sourceKey names a source file of a module, as PREP recorded it.
type sourceKey struct {
	mod  int
	name string
}

// sourceTries are the paths findSource tries, in order.
func (r *report) sourceTries(mod int, name string) []string {
	var dirs []string
	if mod >= 0 && mod < len(r.plan.Modules) {
		dirs = r.plan.Modules[mod].CompDirs
	}
	if name == "" {
		return nil
	}
	tries := []string{name}
	var rels []string
	if !filepath.IsAbs(name) {
		rels = append(rels, name)
	} else {
		for _, dir := range dirs {
			if rel, ok := strings.CutPrefix(name, strings.TrimSuffix(dir, "/")+"/"); ok && rel != "" {
				rels = append(rels, rel)
			}
		}
	}
	for _, rel := range rels {
		for _, dir := range dirs {
			tries = append(tries, filepath.Join(dir, rel))
		}
	}
	for _, dir := range r.o.SourceDirs {
		for _, rel := range rels {
			tries = append(tries, filepath.Join(dir, rel))
		}
		tries = append(tries, filepath.Join(dir, filepath.Base(name)))
	}
	return tries
}

// exportPath is a source file's path in the formats of other tools (lcov's
// SF, which genhtml opens): where findSource finds it, made absolute, or
// else the path PREP recorded.
func (r *report) exportPath(mod int, name string) string {
	found := r.findSource(mod, name)
	if found == "" {
		return name
	}
	if abs, err := filepath.Abs(found); err == nil {
		return abs
	}
	return found
}
