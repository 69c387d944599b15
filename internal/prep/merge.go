package prep

import (
	"fmt"

	"github.com/sourceprofiler/sprof/datafile"
)

// Merge is phase II (original.md §10): it reads the .pbt at in, adds the
// runs of the .pbo files in the order given, and writes the sum to out,
// atomically. Without .pbo files it copies the .pbt. in and out may be the
// same file (PREP /M).
//
// Errors carry the original's PRF numbers: PRF1011 and PRF1012 for a file
// that cannot be read, PRF1303 for a .pbt of another version, PRF1306 for a
// .pbo of another plan, PRF1304 for one of another profile type, PRF1013
// when out cannot be written. A failed merge leaves out untouched. A .pbo
// from an incomplete run (the program crashed or was killed) is added with
// a warning through warn (nil drops it) that gives the run's reason.
func Merge(in string, pbos []string, out string, warn func(error)) error {
	if warn == nil {
		warn = func(error) {}
	}
	m, err := datafile.OpenMerged(in)
	if err != nil {
		return err
	}
	for _, path := range pbos {
		c, err := datafile.OpenCounts(path)
		if err != nil {
			return err
		}
		if err := m.Add(c); err != nil {
			return datafile.MergeError(err, path)
		}
		if c.Run.Incomplete {
			warn(incompleteRun(path, c.Run.Reason))
		}
	}
	return datafile.SaveMerged(out, m)
}

// incompleteRun is the warning for a .pbo whose run did not end normally.
// The original had no such runs, so it has no PRF number.
func incompleteRun(path, reason string) error {
	if reason == "" {
		reason = "reason unknown"
	}
	return fmt.Errorf("%s holds an incomplete run (%s): its counts stop where the run stopped", path, reason)
}
