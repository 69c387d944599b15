package prep

import (
	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/prf"
)

// Merge is phase II (original.md §10): it reads the .pbt at in, adds the
// runs of the .pbo files in the order given, and writes the sum to out,
// atomically. Without .pbo files it copies the .pbt. in and out may be the
// same file (PREP /M).
//
// Errors carry the original's PRF numbers: PRF1011 and PRF1012 for a file
// that cannot be read, PRF1303 for a .pbt of another version, PRF1306 for a
// .pbo of another plan, PRF1304 for one of another profile type, PRF1013
// when out cannot be written; a run the database already holds (the same
// .pbo merged twice) is refused. A failed merge leaves out untouched. A
// .pbo from an incomplete run (the program crashed or was killed) is added
// with a warning through warn (nil drops it) that gives the run's reason.
func Merge(in string, pbos []string, out string, warn func(*prf.Diagnostic)) error {
	if warn == nil {
		warn = func(*prf.Diagnostic) {}
	}
	m, err := datafile.OpenMerged(in)
	if err != nil {
		return prf.DataFile(err)
	}
	for _, path := range pbos {
		c, err := datafile.OpenCounts(path)
		if err != nil {
			return prf.DataFile(err)
		}
		if err := m.Add(c); err != nil {
			return prf.Merge(err, path, in)
		}
		if c.Run.Incomplete {
			warn(prf.IncompleteRun(path, c.Run.Reason))
		}
	}
	return prf.DataFile(datafile.SaveMerged(out, m))
}
