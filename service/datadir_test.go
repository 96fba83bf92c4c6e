package service_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/service"
)

// startIn starts a service on data directory dir and reports its error.
func startIn(t *testing.T, dir string) error {
	t.Helper()
	svc, err := service.New(service.Options{Broker: testConfig(), AdminToken: adminToken, DataDir: dir})
	if err == nil {
		require.NoError(t, svc.Close())
	}
	return err
}

// TestUntrustedDataDirRefused: the service refuses a data directory
// others could tamper with, each time with an error naming the path and
// the fix, and writes nothing through a link planted in one (issue 34
// §2: a 0777 directory of another user with bursar.wal a link was used
// as is by a server run as root, which wrote its journal into the link's
// target).
func TestUntrustedDataDirRefused(t *testing.T) {
	base := t.TempDir() // under /tmp: a root-owned sticky ancestor, accepted

	t.Run("a planted link", func(t *testing.T) {
		dir := filepath.Join(base, "linked")
		require.NoError(t, os.Mkdir(dir, 0o700))
		target := filepath.Join(base, "elsewhere")
		require.NoError(t, os.WriteFile(target, []byte("precious\n"), 0o600))
		require.NoError(t, os.Symlink(target, filepath.Join(dir, "bursar.wal")))
		err := startIn(t, dir)
		require.Error(t, err)
		assert.ErrorContains(t, err, filepath.Join(dir, "bursar.wal")+" is a symbolic link")
		assert.ErrorContains(t, err, "rm ")
		got, rerr := os.ReadFile(target)
		require.NoError(t, rerr)
		assert.Equal(t, "precious\n", string(got), "nothing written through the link")
	})
	t.Run("a planted link to the snapshot", func(t *testing.T) {
		dir := filepath.Join(base, "linked-snap")
		require.NoError(t, os.Mkdir(dir, 0o700))
		require.NoError(t, os.Symlink("/etc/hostname", filepath.Join(dir, "bursar.snap")))
		assert.ErrorContains(t, startIn(t, dir), "bursar.snap is a symbolic link")
	})
	t.Run("world-writable", func(t *testing.T) {
		dir := filepath.Join(base, "open")
		require.NoError(t, os.Mkdir(dir, 0o700))
		require.NoError(t, os.Chmod(dir, 0o777))
		err := startIn(t, dir)
		assert.ErrorContains(t, err, "the data directory "+dir+" is writable by its group or by all (mode 0777)")
		assert.ErrorContains(t, err, "chmod go-w "+dir)
	})
	t.Run("group-writable", func(t *testing.T) {
		dir := filepath.Join(base, "group")
		require.NoError(t, os.Mkdir(dir, 0o700))
		require.NoError(t, os.Chmod(dir, 0o770))
		assert.ErrorContains(t, startIn(t, dir), "(mode 0770)")
	})
	t.Run("a writable ancestor", func(t *testing.T) {
		parent := filepath.Join(base, "shared")
		require.NoError(t, os.Mkdir(parent, 0o700))
		require.NoError(t, os.Chmod(parent, 0o777)) // not sticky
		dir := filepath.Join(parent, "data")
		require.NoError(t, os.Mkdir(dir, 0o700))
		err := startIn(t, dir)
		assert.ErrorContains(t, err, "a directory above the data directory "+parent+" is writable by its group or by all (mode 0777)")
		// Created by the service under it: refused the same way.
		assert.ErrorContains(t, startIn(t, filepath.Join(parent, "new")), parent+" is writable")
	})
	t.Run("owned by another user", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to give a directory to another user")
		}
		dir := filepath.Join(base, "foreign")
		require.NoError(t, os.Mkdir(dir, 0o700))
		require.NoError(t, os.Chown(dir, 65534, 65534))
		err := startIn(t, dir)
		assert.ErrorContains(t, err, "the data directory "+dir+" is owned by uid 65534, not by this server's user (uid 0)")
		assert.ErrorContains(t, err, "chown 0 "+dir)
	})
	t.Run("trusted", func(t *testing.T) {
		dir := filepath.Join(base, "mine")
		require.NoError(t, startIn(t, dir), "created 0700 under a sticky root-owned /tmp")
		st, err := os.Stat(dir)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), st.Mode().Perm())
		require.NoError(t, startIn(t, dir), "and started again")
	})
}

// TestRepairRefusesUntrustedDataDir: the repair commands write to the
// data directory and check it as the service does.
func TestRepairRefusesUntrustedDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "open")
	require.NoError(t, startIn(t, dir))
	require.NoError(t, os.Chmod(dir, 0o777))
	_, err := service.RepairJournal(dir, 1)
	assert.ErrorContains(t, err, "chmod go-w")
	_, err = service.RepairSnapshot(dir)
	assert.ErrorContains(t, err, "chmod go-w")
}
