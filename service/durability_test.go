package service_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/service"
)

// Issue 22, item 6: a data directory that lost or damaged a file is
// refused with a message that names what is missing and the command that
// repairs it, and that command works.

// durableRounds runs rounds of registrations and ticks, each in its own
// service (Close waits for the snapshots), so that compaction has run
// several times.
func durableRounds(t *testing.T, opts service.Options, rounds int) (campaigns, now int) {
	t.Helper()
	for r := range rounds {
		svc, err := service.New(opts)
		require.NoError(t, err)
		h := svc.Handler()
		for i := range 2 {
			body := fmt.Sprintf(`{"name":"c%d-%d","budget":100,"guaranteed":0,"sustained":1,"burst_ceiling":1,"bucket":1,"class":"opportunistic"}`, r, i)
			code := serveRaw(h, "POST", "/v1/campaigns", body)
			require.Equal(t, 201, code)
		}
		for range 3 {
			require.NoError(t, svc.Tick())
		}
		now = svc.Now()
		require.NoError(t, svc.Close())
		campaigns += 2
	}
	return campaigns, now
}

func durableOpts(t *testing.T, every int) service.Options {
	return service.Options{DataDir: t.TempDir(), Broker: testConfig(), AdminToken: adminToken, SnapshotEvery: every}
}

// reopen starts a service on the directory and reports its campaigns and
// time.
func reopen(t *testing.T, opts service.Options) (campaigns, now int) {
	t.Helper()
	e := newEnv(t, opts)
	list, err := e.admin.Campaigns(context.Background())
	require.NoError(t, err)
	n := len(list.Campaigns)
	now = e.svc.Now()
	require.NoError(t, e.svc.Close())
	return n, now
}

func TestKeepsTwoSnapshotsAndCleansTemps(t *testing.T) {
	opts := durableOpts(t, 3)
	durableRounds(t, opts, 3)
	for _, name := range []string{"bursar.snap", "bursar.snap.prev", "bursar.wal.prev", "bursar.wal"} {
		assert.FileExists(t, filepath.Join(opts.DataDir, name))
	}
	assert.NoFileExists(t, filepath.Join(opts.DataDir, "bursar.wal.old"))
	tmp := filepath.Join(opts.DataDir, ".bursar.snap.tmp-12345")
	require.NoError(t, os.WriteFile(tmp, []byte("half a snapshot"), 0o600))
	svc, err := service.New(opts)
	require.NoError(t, err)
	assert.Equal(t, []string{tmp}, svc.Report().RemovedTemps)
	require.NoError(t, svc.Close())
	assert.NoFileExists(t, tmp)
}

func TestMissingJournalRefused(t *testing.T) {
	opts := durableOpts(t, 3)
	durableRounds(t, opts, 2)
	wal := filepath.Join(opts.DataDir, "bursar.wal")
	for _, damage := range []func(){
		func() { require.NoError(t, os.Remove(wal)) },
		func() { require.NoError(t, os.WriteFile(wal, nil, 0o600)) },
	} {
		damage()
		_, err := service.New(opts)
		require.Error(t, err)
		msg := err.Error()
		assert.Contains(t, msg, wal)
		assert.Contains(t, msg, "the snapshot covers operations 1..")
		want := "bursar journal repair --data-dir " + opts.DataDir + " --new-journal --pool 512 --grace "
		require.Contains(t, msg, want)
		_, err = service.NewJournal(opts.DataDir, opts.Broker)
		require.NoError(t, err, "the command the refusal names works")
		n, _ := reopen(t, opts)
		assert.Positive(t, n, "the snapshot's campaigns are back")
	}
}

func TestDamagedHeaderRewritten(t *testing.T) {
	opts := durableOpts(t, -1)
	campaigns, now := durableRounds(t, opts, 2)
	wal := filepath.Join(opts.DataDir, "bursar.wal")
	data, err := os.ReadFile(wal)
	require.NoError(t, err)
	data[20] ^= 0x01 // inside the header's JSON
	require.NoError(t, os.WriteFile(wal, data, 0o600))
	_, err = service.New(opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "header (record 1) is damaged")
	assert.NotContains(t, err.Error(), "--cut-after 0")
	assert.Contains(t, err.Error(), "--rewrite-header --pool 512")
	rep, err := service.RewriteHeader(opts.DataDir, opts.Broker)
	require.NoError(t, err)
	assert.FileExists(t, rep.Backup)
	n, t2 := reopen(t, opts)
	assert.Equal(t, campaigns, n, "every record after the header is kept")
	assert.Equal(t, now, t2)
}

func TestDamagedSnapshotRebuilt(t *testing.T) {
	opts := durableOpts(t, 3)
	campaigns, now := durableRounds(t, opts, 3)
	flipByte(t, filepath.Join(opts.DataDir, "bursar.snap"))
	_, err := service.New(opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bursar journal repair --data-dir "+opts.DataDir+" --snapshot")
	rep, err := service.RepairSnapshot(opts.DataDir)
	require.NoError(t, err)
	assert.FileExists(t, rep.Backup)
	n, t2 := reopen(t, opts)
	assert.Equal(t, campaigns, n)
	assert.Equal(t, now, t2)
}

func TestMiddleDamageRefused(t *testing.T) {
	opts := durableOpts(t, -1)
	durableRounds(t, opts, 2)
	wal := filepath.Join(opts.DataDir, "bursar.wal")
	data, err := os.ReadFile(wal)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(data), "\n")
	require.Greater(t, len(lines), 5)
	// Cut the third record short: a truncation in the middle, with
	// intact records after it.
	lines[2] = lines[2][:len(lines[2])/2]
	require.NoError(t, os.WriteFile(wal, []byte(strings.Join(lines, "")), 0o600))
	_, err = service.New(opts)
	require.Error(t, err, "damage in the middle is not a torn tail")
	assert.Contains(t, err.Error(), "intact records")
	assert.Contains(t, err.Error(), "--cut-after")
}

// serveRaw sends one administrator request through the handler in
// process and returns the status.
func serveRaw(h http.Handler, method, path, body string) int {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

// TestShortJournalRefused: a journal cut short in the middle of its
// acknowledged records (here: to half its length, which leaves a last line
// that looks torn) is refused by the length mark, not cut as a torn
// write; the command the refusal names lets the service start.
func TestShortJournalRefused(t *testing.T) {
	opts := durableOpts(t, -1)
	durableRounds(t, opts, 2)
	wal := filepath.Join(opts.DataDir, "bursar.wal")
	data, err := os.ReadFile(wal)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(wal, data[:len(data)/2], 0o600))
	_, err = service.New(opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cut short in the middle")
	assert.Contains(t, err.Error(), "rm "+filepath.Join(opts.DataDir, "bursar.wal.len"))
	require.NoError(t, os.Remove(filepath.Join(opts.DataDir, "bursar.wal.len")))
	n, _ := reopen(t, opts)
	assert.Positive(t, n)
}
