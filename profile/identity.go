package profile

import (
	"bytes"
	"os"

	"github.com/sourceprofiler/sprof/datafile"
	"github.com/sourceprofiler/sprof/internal/elfid"
)

// checkIdentity reports whether the file at path is still the file PREP read
// for module m: same build ID (when the module has one), size and
// modification time. A program relinked since PREP gives false.
func checkIdentity(path string, m *datafile.Module) (bool, error) {
	st, err := os.Stat(path)
	if err != nil {
		return false, err
	}
	if st.Size() != m.Size || st.ModTime().UnixNano() != m.ModTime {
		return false, nil
	}
	if len(m.BuildID) == 0 {
		return true, nil
	}
	id, err := elfid.ReadBuildID(path)
	if err != nil {
		return false, err
	}
	return bytes.Equal(id, m.BuildID), nil
}
