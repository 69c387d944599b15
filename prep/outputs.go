package prep

import (
	"bytes"
	"os"
	"slices"
	"strings"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/prf"
)

// WriteOutputs writes the .pbi of plan to pbiPath and a fresh .pbt, never
// profiled, to pbtPath, each atomically. A .pbt at pbtPath that holds runs
// is replaced all the same, as the original did, with a warning through
// warn (nil drops it) that they are discarded. When that .pbt is of the
// same plan, the new one remembers its runs ([datafile.Merged.Supersede]):
// their .pbo files, still on disk, hold no run to merge, so that PROFILE
// writes over them and PREP /M leaves them out.
//
// Phase I starts the profile afresh, also for the runs waiting to be
// merged: runFiles (nil for none) lists the run files of the database
// (base.pbo, then base.pbo.2... as PROFILE writes them), and every run
// in them is discarded with the database it was made for (clearRuns).
// The directory of pbtPath is locked ([datafile.LockDir]) from the read
// of the old .pbt to the write of the new one, so that a merge at the
// same time lands before (and its run is remembered) or after, and a
// PROFILE's choice of its file before or after. Errors carry PRF1013.
func WriteOutputs(plan *datafile.Plan, pbiPath, pbtPath string, runFiles func() []string, warn func(*prf.Diagnostic)) error {
	if warn == nil {
		warn = func(*prf.Diagnostic) {}
	}
	unlock, err := datafile.LockDir(pbtPath)
	if err != nil {
		return prf.CannotWrite(pbtPath, err)
	}
	defer unlock()
	fresh := datafile.NewMerged(plan)
	if old, err := datafile.OpenMerged(pbtPath); err == nil {
		if len(old.Runs) > 0 {
			warn(prf.RunsDiscarded(pbtPath, len(old.Runs)))
		}
		fresh.Supersede(old)
	}
	var cleared, removed []string
	if runFiles != nil {
		cleared, removed = clearRuns(fresh, runFiles())
	}
	if err := datafile.SavePlan(pbiPath, plan); err != nil {
		return prf.DataFile(err)
	}
	if err := datafile.SaveMerged(pbtPath, fresh); err != nil {
		return prf.DataFile(err)
	}
	for _, path := range removed {
		os.Remove(path)
	}
	if len(cleared) > 0 {
		warn(prf.RunFilesCleared(cleared, removed, pbtPath))
	}
	return nil
}

// clearRuns discards the runs of the run files given (base.pbo first,
// then the numbered ones) from the database fresh, which phase I is
// about to write: a run of fresh's plan that is still to be merged
// joins its discarded runs ([datafile.Merged.Discarded]), so that PREP /M
// does not merge it into the new profile nor PROFILE keep it, and every
// numbered file (PROFILE wrote it only to keep a run for PREP /M: none
// is left to merge, and one of another plan would stop PREP /M) is to be
// removed. base.pbo stays, as the original left it. It returns the files
// whose runs it discarded and, of those, the ones to remove, once fresh
// is written. A file that is not a .pbo it can read is left alone.
func clearRuns(fresh *datafile.Merged, runs []string) (cleared, removed []string) {
	for _, path := range runs {
		c, err := datafile.OpenCounts(path)
		if err != nil {
			continue
		}
		numbered := !strings.HasSuffix(path, ".pbo")
		pending := fresh.Pending(c)
		if pending {
			fresh.Discarded = append(fresh.Discarded, bytes.Clone(c.Run.ID))
		}
		if pending || numbered {
			cleared = append(cleared, path)
		}
		if numbered {
			removed = append(removed, path)
		}
	}
	return slices.Clip(cleared), removed
}
