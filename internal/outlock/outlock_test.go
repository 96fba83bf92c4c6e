//go:build unix

package outlock

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTakeIsExclusive: a second take of a held folder fails at once,
// naming the holder; after the release the lock file is gone and the
// folder can be taken again. (flock(2) locks of two open files conflict
// in one process as between two.)
func TestTakeIsExclusive(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	l, err := Take(dir, "bursar-sweep paper")
	require.NoError(t, err)
	_, err = Take(dir, "bursar-sweep run")
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrBusy))
	assert.Contains(t, err.Error(), "bursar-sweep paper (pid ")
	assert.Contains(t, err.Error(), "give another --out")
	l.Release()
	_, err = os.Stat(filepath.Join(dir, File))
	assert.True(t, os.IsNotExist(err), "the lock file is removed")
	l2, err := Take(dir, "bursar-sweep run")
	require.NoError(t, err)
	l2.Release()
	l2.Release() // twice is fine
}

// TestStaleLockFileIsTaken: a lock file left by a killed run (nobody
// holds its flock) does not block the folder.
func TestStaleLockFileIsTaken(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, File), []byte("bursar-sweep paper (pid 1)\n"), 0o644))
	l, err := Take(dir, "bursar-sweep run")
	require.NoError(t, err)
	l.Release()
}
