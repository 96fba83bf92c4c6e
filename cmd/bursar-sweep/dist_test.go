package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bursar-hpc/bursar/internal/testlong"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mergedFiles are the outputs that merge must write exactly as the
// unsharded command does.
var mergedFiles = []string{"summary.json", "runs.csv", "latencies.json", "runs.parquet"}

func assertSameFiles(t *testing.T, wantDir, gotDir string, names ...string) {
	t.Helper()
	for _, name := range names {
		want, err := os.ReadFile(filepath.Join(wantDir, name))
		require.NoError(t, err, name)
		got, err := os.ReadFile(filepath.Join(gotDir, name))
		require.NoError(t, err, name)
		assert.True(t, string(want) == string(got), "%s differs between %s and %s", name, wantDir, gotDir)
	}
}

// TestPaperThreeShardsMergeByteForByte is the acceptance test run
// in process: `paper` as 3 shards and `merge` writes the same
// summary.json, runs.csv, latencies.json and runs.parquet as `paper`, and
// prints the same tables.
func TestPaperThreeShardsMergeByteForByte(t *testing.T) {
	dir := t.TempDir()
	flags := []string{"--quick", "--nseeds", "2", "--quiet", "--format", "svg"}
	whole := filepath.Join(dir, "whole")
	wholeOut, err := runSweepApp(t, append([]string{"paper", "--out", whole}, flags...)...)
	require.NoError(t, err, wholeOut)

	shards := filepath.Join(dir, "shards")
	for i := range 3 {
		out, err := runSweepApp(t, append([]string{"paper", "--shard", []string{"0/3", "1/3", "2/3"}[i], "--workers", "1", "--out", shards}, flags...)...)
		require.NoError(t, err, out)
		assert.Contains(t, out, "wrote "+filepath.Join(shards, []string{"shard-0-of-3.json", "shard-1-of-3.json", "shard-2-of-3.json"}[i]))
		// A shard writes nothing else.
		_, err = os.Stat(filepath.Join(shards, "summary.json"))
		assert.True(t, os.IsNotExist(err))
	}
	merged := filepath.Join(dir, "merged")
	mergeOut, err := runSweepApp(t, "merge", "--out", merged, shards)
	require.NoError(t, err, mergeOut)
	assertSameFiles(t, whole, merged, append(mergedFiles, "fig_bucket.svg", "fig_overbooking.svg", "fig_latency_price.svg")...)
	// The same tables (the timing line aside).
	table := func(s string) string { return s[:strings.Index(s, "paper: ")] }
	assert.Equal(t, table(wholeOut), table(mergeOut))
	assert.Contains(t, mergeOut, "merge: 3 shards of `paper --quick=true --nseeds=2 --format=svg`")
}

func TestMergeNamesMissingShardsAndOtherPlans(t *testing.T) {
	dir := t.TempDir()
	for _, sh := range []string{"0/3", "2/3"} {
		out, err := runSweepApp(t, "bucket", "--quick", "--quiet", "--shard", sh, "--out", dir)
		require.NoError(t, err, out)
	}
	_, err := runSweepApp(t, "merge", dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "1 of 3 shards missing: 1 (shard-1-of-3.json)")

	other := t.TempDir()
	out, err := runSweepApp(t, "bucket", "--quick", "--nseeds", "2", "--quiet", "--shard", "1/3", "--out", other)
	require.NoError(t, err, out)
	_, err = runSweepApp(t, "merge", dir, other)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not one sweep")

	_, err = runSweepApp(t, "merge", t.TempDir())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "holds no shard files")

	_, err = runSweepApp(t, "paper", "--quick", "--shard", "3/3")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `--shard "3/3"`)
}

// TestSweepConfigShardsAndCache: the generic sweep command shards and
// merges too (its --config recorded as an absolute path), and --cache
// prints its counts: everything missed the first time, hit the second.
func TestSweepConfigShardsAndCache(t *testing.T) {
	testlong.Skip(t, "a sweep sharded, merged and cached end to end")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sr.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(sweepExample), 0o644))
	cache := filepath.Join(dir, "cache")
	whole := filepath.Join(dir, "whole")
	out, err := runSweepApp(t, "sweep", "--config", cfg, "--quick", "--quiet", "--cache", cache, "--out", whole)
	require.NoError(t, err, out)
	assert.Contains(t, out, "storm-rate: cache "+cache+": 0 hits, 6 misses (0 corrupt entries recomputed)")
	out, err = runSweepApp(t, "sweep", "--config", cfg, "--quick", "--quiet", "--cache", cache, "--out", whole)
	require.NoError(t, err, out)
	assert.Contains(t, out, "6 hits, 0 misses")

	shards := filepath.Join(dir, "shards")
	for _, sh := range []string{"0/2", "1/2"} {
		out, err := runSweepApp(t, "sweep", "--config", cfg, "--quick", "--quiet", "--shard", sh, "--out", shards)
		require.NoError(t, err, out)
	}
	merged := filepath.Join(dir, "merged")
	out, err = runSweepApp(t, "merge", "--out", merged, shards)
	require.NoError(t, err, out)
	assertSameFiles(t, whole, merged, mergedFiles...)

	// A changed config no longer matches the shards' plan.
	require.NoError(t, os.WriteFile(cfg, []byte(strings.Replace(sweepExample, "[32, 64, 128]", "[32, 64, 96]", 1)), 0o644))
	_, err = runSweepApp(t, "merge", "--out", merged, shards)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "a config file changed since the shards ran")
}

// TestInterruptedPaperResumesFromTheCache is Ctrl-C then rerun through
// the command: the context is cancelled once some runs are in the cache;
// the command writes nothing and says so; the rerun reuses those runs
// (its printed hits), computes the rest and writes the files of an
// uninterrupted run.
func TestInterruptedPaperResumesFromTheCache(t *testing.T) {
	testlong.Skip(t, "the paper interrupted and resumed from its cache")
	dir := t.TempDir()
	flags := []string{"paper", "--quick", "--nseeds", "10", "--quiet", "--workers", "2"}
	whole := filepath.Join(dir, "whole")
	out, err := runSweepApp(t, append(flags, "--out", whole)...)
	require.NoError(t, err, out)

	cache, resumed := filepath.Join(dir, "cache"), filepath.Join(dir, "resumed")
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer cancel()
		for {
			entries, _ := filepath.Glob(filepath.Join(cache, "*", "*.json"))
			if len(entries) >= 20 {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	var console bytes.Buffer
	app := newApp(policies.Default)
	app.Writer, app.ErrWriter = &console, &console
	err = app.RunContext(ctx, append([]string{"bursar-sweep"}, append(flags, "--cache", cache, "--out", resumed)...))
	require.Error(t, err, "the sweep finished before the cancel; make it longer")
	assert.Contains(t, err.Error(), "nothing reduced or written")
	assert.Regexp(t, `paper: cache .*: 0 hits, \d+ misses`, console.String())
	_, err = os.Stat(filepath.Join(resumed, "summary.json"))
	assert.True(t, os.IsNotExist(err))

	out, err = runSweepApp(t, append(flags, "--cache", cache, "--out", resumed)...)
	require.NoError(t, err, out)
	m := regexp.MustCompile(`paper: cache .*: (\d+) hits, (\d+) misses`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	hits, _ := strconv.Atoi(m[1])
	misses, _ := strconv.Atoi(m[2])
	assert.GreaterOrEqual(t, hits, 20)
	assert.Equal(t, 180, hits+misses)
	assert.Positive(t, misses)
	assertSameFiles(t, whole, resumed, mergedFiles...)
}
