package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/client"
)

// TestTailDamageAndRepair: a damaged complete record at the journal's tail
// stops `bursar serve` with the exact repair command; running that command
// lets it start, without the damaged record and with everything before it.
// --recover-tail does the same in one step.
func TestTailDamageAndRepair(t *testing.T) {
	ctx := context.Background()
	dir, tok := t.TempDir(), tokenFile(t)
	args := []string{"--data-dir", dir, "--admin-token-file", tok, "--speed", "0.001"}
	p := startServe(t, cleanEnv(), args...)
	admin, err := client.New(p.url, testToken)
	require.NoError(t, err)
	for _, name := range []string{"keep", "lose"} {
		_, err = admin.Register(ctx, client.CampaignSpec{Name: name, Budget: 100, Guaranteed: 0, Sustained: 8, BurstCeiling: 16, Bucket: 1000, Class: client.ClassAgentBurst})
		require.NoError(t, err)
	}
	p.signal(t, syscall.SIGTERM)
	require.NoError(t, p.err)

	// Flip one byte inside the last record (the registration of "lose").
	wal := filepath.Join(dir, "bursar.wal")
	data, err := os.ReadFile(wal)
	require.NoError(t, err)
	i := strings.LastIndex(string(data), `"lose"`)
	require.Positive(t, i)
	data[i+2] = 'X'
	require.NoError(t, os.WriteFile(wal, data, 0o600))
	damaged := append([]byte(nil), data...)

	// inspect shows the damage and the same command, without the lock.
	out, stderr, code := run(t, cleanEnv(), "journal", "inspect", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "DAMAGED last record 3")
	assert.Contains(t, out, "bursar journal repair --data-dir "+dir+" --cut-after 2")
	assert.Contains(t, out, "register 1")
	assert.Regexp(t, `wall 20\d\d-`, out, "records carry wall-clock times")

	_, stderr, code = run(t, cleanEnv(), append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	require.Equal(t, 1, code, stderr)
	m := regexp.MustCompile(`bursar journal repair --data-dir (\S+) --cut-after (\d+)`).FindStringSubmatch(stderr)
	require.NotNil(t, m, "the refusal names the repair command: %s", stderr)
	assert.Equal(t, dir, m[1])
	assert.Equal(t, "2", m[2], "the header and the first registration are kept")

	stdout, stderr, code := run(t, cleanEnv(), "journal", "repair", "--data-dir", m[1], "--cut-after", m[2])
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "cut after record 2")

	p2 := startServe(t, cleanEnv(), args...)
	admin2, err := client.New(p2.url, testToken)
	require.NoError(t, err)
	list, err := admin2.Campaigns(ctx)
	require.NoError(t, err)
	require.Len(t, list.Campaigns, 1)
	assert.Equal(t, "keep", list.Campaigns[0].Name)
	p2.signal(t, syscall.SIGTERM)

	// The same damage, accepted with --recover-tail.
	require.NoError(t, os.WriteFile(wal, damaged, 0o600))
	p3 := startServe(t, cleanEnv(), append(args, "--recover-tail")...)
	// The log line is copied from the child's stderr by a goroutine of
	// exec's: it may arrive after the "serving on" line on stdout.
	assert.Eventually(t, func() bool { return strings.Contains(p3.stderr.String(), "damaged tail cut") }, 5*time.Second, 10*time.Millisecond,
		"%s", p3.stderr)
}

// TestInspectMiddleDamage: damage followed by intact records is named as
// damage in the middle, not a torn tail, by inspect and by serve's
// refusal.
func TestInspectMiddleDamage(t *testing.T) {
	ctx := context.Background()
	dir, tok := t.TempDir(), tokenFile(t)
	args := []string{"--data-dir", dir, "--admin-token-file", tok, "--speed", "0.001"}
	p := startServe(t, cleanEnv(), args...)
	admin, err := client.New(p.url, testToken)
	require.NoError(t, err)
	for _, name := range []string{"first", "second", "third"} {
		_, err = admin.Register(ctx, client.CampaignSpec{Name: name, Budget: 100, Guaranteed: 0, Sustained: 8, BurstCeiling: 16, Bucket: 1000, Class: client.ClassAgentBurst})
		require.NoError(t, err)
	}
	p.signal(t, syscall.SIGTERM)
	wal := filepath.Join(dir, "bursar.wal")
	data, err := os.ReadFile(wal)
	require.NoError(t, err)
	i := strings.Index(string(data), `"first"`)
	require.Positive(t, i)
	data[i+2] = 'X'
	require.NoError(t, os.WriteFile(wal, data, 0o600))
	out, stderr, code := run(t, cleanEnv(), "journal", "inspect", "--data-dir", dir, "--records", "0")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "DAMAGED record 2")
	assert.Contains(t, out, "followed by 2 intact records: damage in the middle")
	_, stderr, code = run(t, cleanEnv(), append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	require.Equal(t, 1, code)
	assert.Contains(t, stderr, "followed by 2 intact records")
	assert.Contains(t, stderr, "--cut-after 1")
}

// TestSnapshotAndKeptSegmentDamagedRebuild: the real binary on a data
// directory whose bursar.snap and bursar.wal.prev are both damaged: serve
// refuses, inspect names --snapshot-with-loss, that command rebuilds, and
// serve starts again with the campaigns from before the damage (issue 34
// §4: no combination of damage is a dead end).
func TestSnapshotAndKeptSegmentDamagedRebuild(t *testing.T) {
	ctx := context.Background()
	dir, tok := t.TempDir(), tokenFile(t)
	args := []string{"--data-dir", dir, "--admin-token-file", tok, "--speed", "0.001", "--snapshot-every", "2"}
	p := startServe(t, cleanEnv(), args...)
	admin, err := client.New(p.url, testToken)
	require.NoError(t, err)
	for i := range 8 {
		_, err = admin.Register(ctx, client.CampaignSpec{Name: fmt.Sprintf("c%d", i), Budget: 100, Sustained: 8, BurstCeiling: 16, Bucket: 1000, Class: client.ClassAgentBurst})
		require.NoError(t, err)
	}
	p.signal(t, syscall.SIGTERM)
	require.NoError(t, p.err)
	for _, name := range []string{"bursar.snap", "bursar.wal.prev"} {
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		require.NoError(t, err, "compaction keeps %s", name)
		data[len(data)-10] ^= 0x01 // inside the last record
		require.NoError(t, os.WriteFile(path, data, 0o600))
	}
	out, stderr, code := run(t, cleanEnv(), "journal", "inspect", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "bursar journal repair --data-dir "+dir+" --snapshot-with-loss")

	out, stderr, code = run(t, cleanEnv(), "journal", "repair", "--data-dir", dir, "--snapshot-with-loss")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "rebuilt from what was intact; lost: ")

	p = startServe(t, cleanEnv(), args...)
	admin, err = client.New(p.url, testToken)
	require.NoError(t, err)
	list, err := admin.Campaigns(ctx)
	require.NoError(t, err)
	assert.NotEmpty(t, list.Campaigns, "what came before the damage is back")
	assert.Less(t, len(list.Campaigns), 8, "what came after it is lost, as the repair said")
	t.Logf("repair said: %s", out)
}
