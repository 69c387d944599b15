package unwind_test

import (
	"os"
	"testing"

	"github.com/sourceprofiler/sprof/internal/testutil"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testutil.Cleanup()
	os.Exit(code)
}
