package prep

import (
	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/prf"
)

// Merge is phase II (original.md §10): it reads the .pbt at in, adds the
// runs of the .pbo files in the order given, and writes the sum to out,
// atomically. Without .pbo files it copies the .pbt. in and out may be the
// same file.
//
// Errors carry the original's PRF numbers: PRF1011 and PRF1012 for a file
// that cannot be read, PRF1303 for a .pbt of another version, PRF1306 for a
// .pbo of another plan, PRF1304 for one of another profile type, PRF1013
// when out cannot be written; a run the database already holds (the same
// .pbo merged twice) is refused. A failed merge leaves out untouched. A
// .pbo from an incomplete run (the program crashed or was killed) is added
// with a warning through warn (nil drops it) that gives the run's reason.
//
// Two merges into one file at once must be serialised by the caller
// (datafile.LockDir), or one may lose the other's runs.
func Merge(in string, pbos []string, out string, warn func(*prf.Diagnostic)) error {
	_, err := merge(in, pbos, out, warn, false)
	return err
}

// MergePending is PREP /M: it adds to the .pbt at pbt the runs of the .pbo
// files that were never merged, skipping those the .pbt holds and those
// it discarded (merged into a .pbt that phase I then replaced:
// [datafile.Merged.HasMerged]), and returns the files whose runs it added.
// It fails as [Merge] does, and when no run at all is new, naming the
// first file: PRF1308 when the .pbt holds its run (the same .pbo merged
// twice), PRF1309 when the run was discarded.
func MergePending(pbt string, pbos []string, warn func(*prf.Diagnostic)) ([]string, error) {
	return merge(pbt, pbos, pbt, warn, true)
}

func merge(in string, pbos []string, out string, warn func(*prf.Diagnostic), pendingOnly bool) ([]string, error) {
	if warn == nil {
		warn = func(*prf.Diagnostic) {}
	}
	m, err := datafile.OpenMerged(in)
	if err != nil {
		return nil, prf.DataFile(err)
	}
	var added []string
	var first *datafile.Counts // of the first file skipped
	for _, path := range pbos {
		c, err := datafile.OpenCounts(path)
		if err != nil {
			return nil, prf.DataFile(err)
		}
		if pendingOnly && m.HasMerged(c.Run.ID) {
			if first == nil {
				first = c
			}
			continue
		}
		if err := m.Add(c); err != nil {
			return nil, prf.Merge(err, path, in)
		}
		added = append(added, path)
		if c.Run.Incomplete {
			warn(prf.IncompleteRun(path, c.Run.Reason))
		}
	}
	if pendingOnly && len(added) == 0 && len(pbos) > 0 {
		if m.HasRun(first.Run.ID) {
			return nil, prf.AlreadyMerged(pbos[0], in)
		}
		return nil, prf.DiscardedRun(pbos[0], in)
	}
	return added, prf.DataFile(datafile.SaveMerged(out, m))
}
