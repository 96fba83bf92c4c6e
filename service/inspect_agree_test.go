package service_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/service"
)

// inspectReport is what `bursar journal inspect` prints for dir.
func inspectReport(t *testing.T, dir string) string {
	t.Helper()
	ins, err := service.InspectDataDir(dir, 0)
	require.NoError(t, err)
	var b bytes.Buffer
	ins.Report(&b)
	return b.String()
}

func flipByte(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	data[len(data)/2] ^= 0x01
	require.NoError(t, os.WriteFile(path, data, 0o600))
}

// TestInspectAgreesWithServeOnShortTail: a journal whose last 7 bytes were
// cut off ends in what looks like a torn record, but its length mark says
// those bytes had been made durable; serve refuses it, and inspect now
// says so and names the command serve names, instead of calling it a torn
// tail the service would cut (issue 34 §4). The command works.
func TestInspectAgreesWithServeOnShortTail(t *testing.T) {
	opts := durableOpts(t, -1)
	durableRounds(t, opts, 2)
	wal := filepath.Join(opts.DataDir, "bursar.wal")
	data, err := os.ReadFile(wal)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(wal, data[:len(data)-7], 0o600))
	_, err = service.New(opts)
	require.ErrorContains(t, err, "cut short in the middle")
	out := inspectReport(t, opts.DataDir)
	assert.Contains(t, out, "SHORTENED")
	assert.Contains(t, out, "The service refuses to start")
	assert.NotContains(t, out, "the service cuts it at start")
	fix := "rm " + filepath.Join(opts.DataDir, "bursar.wal.len")
	assert.Contains(t, out, fix)
	assert.Contains(t, err.Error(), fix, "inspect and serve name the same command")
	require.NoError(t, os.Remove(filepath.Join(opts.DataDir, "bursar.wal.len")))
	assert.Contains(t, inspectReport(t, opts.DataDir), "torn last record", "without the mark it is a torn tail")
	n, _ := reopen(t, opts)
	assert.Positive(t, n, "and the service cuts it and starts")
}

// TestDamagedSnapshotAndKeptSegment: with bursar.snap and bursar.wal.prev
// both damaged, inspect names both and says the snapshot cannot be
// rebuilt (restore one from a backup), and `repair --snapshot` says the
// same instead of suggesting a --cut-after that acts on the live journal
// (issue 34 §4). With a restored bursar.wal.prev the repair works.
func TestDamagedSnapshotAndKeptSegment(t *testing.T) {
	opts := durableOpts(t, 3)
	campaigns, now := durableRounds(t, opts, 3)
	prev := filepath.Join(opts.DataDir, "bursar.wal.prev")
	good, err := os.ReadFile(prev)
	require.NoError(t, err)
	flipByte(t, filepath.Join(opts.DataDir, "bursar.snap"))
	flipByte(t, prev)

	out := inspectReport(t, opts.DataDir)
	assert.Contains(t, out, "snapshot "+filepath.Join(opts.DataDir, "bursar.snap"))
	assert.Contains(t, out, "kept segment "+prev)
	assert.Contains(t, out, "DAMAGED at record")
	assert.Contains(t, out, "bursar.wal.prev is damaged too, so the snapshot cannot be rebuilt")

	_, err = service.RepairSnapshot(opts.DataDir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "kept segment "+prev+" is damaged too")
	assert.NotContains(t, err.Error(), "--cut-after")

	// The backup of the kept segment restored: the repair rebuilds the
	// snapshot, and the service starts with everything.
	require.NoError(t, os.WriteFile(prev, good, 0o600))
	assert.Contains(t, inspectReport(t, opts.DataDir), "--snapshot")
	_, err = service.RepairSnapshot(opts.DataDir)
	require.NoError(t, err)
	n, t2 := reopen(t, opts)
	assert.Equal(t, campaigns, n)
	assert.Equal(t, now, t2)
}

// TestRebuildSnapshotWithLoss: with bursar.snap and bursar.wal.prev both
// damaged and no backup, --snapshot-with-loss rebuilds the snapshot from
// bursar.snap.prev and the intact records of bursar.wal.prev, starts an
// empty journal, and the service starts again with what came before the
// damage: inspect then finds no damage, and the loss is counted (issue
// 34 §4).
func TestRebuildSnapshotWithLoss(t *testing.T) {
	opts := durableOpts(t, 3)
	campaigns, _ := durableRounds(t, opts, 3)
	prev := filepath.Join(opts.DataDir, "bursar.wal.prev")
	flipByte(t, filepath.Join(opts.DataDir, "bursar.snap"))
	flipByte(t, prev)
	assert.Contains(t, inspectReport(t, opts.DataDir), "--snapshot-with-loss")

	rep, err := service.RebuildSnapshotWithLoss(opts.DataDir)
	require.NoError(t, err)
	assert.Greater(t, rep.FromRecord, 1)
	assert.Positive(t, rep.LostPrev+rep.LostLive, "something after the damage was given up")
	assert.Len(t, rep.Backups, 3, "the damaged snapshot, the kept segment and the live journal: %v", rep.Backups)
	for _, b := range rep.Backups {
		_, err := os.Stat(b)
		require.NoError(t, err)
	}
	out := inspectReport(t, opts.DataDir)
	assert.NotContains(t, out, "DAMAGED", out)
	n, _ := reopen(t, opts)
	assert.Positive(t, n)
	assert.LessOrEqual(t, n, campaigns)

	// A sound kept segment is not a reason to lose anything.
	_, err = service.RebuildSnapshotWithLoss(opts.DataDir)
	require.Error(t, err)
}
