package sweep

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// toyJob is a Study of the toy runs whose report keeps what it got.
func toyJob(p *StudyPlan, calls *atomic.Int64, got *[]toyResult, merged *bool) *Study[toyResult] {
	return &Study[toyResult]{Plan: p, Compute: toyRun(calls), Codec: toyCodec, Write: func(rs []toyResult, m bool) error {
		*got, *merged = rs, m
		return nil
	}}
}

// TestRunShardsThenMergeReportsTheWhole: through Run, the one runner, a
// study split into n shards (each writing its file into the folder, with
// nothing reported) and merged from the files read back (ReadShardSet)
// reports the results of one unsharded run bit for bit, as merged; a
// cache then serves every run of a rerun.
func TestRunShardsThenMergeReportsTheWhole(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		costs := rapid.SliceOfN(rapid.Float64Range(0, 100), 1, 20).Draw(rt, "costs")
		n := rapid.IntRange(1, 6).Draw(rt, "n")
		p := toyPlan(costs...)
		var calls atomic.Int64
		var whole, got []toyResult
		var merged bool
		var out bytes.Buffer
		require.NoError(rt, Run(context.Background(), toyJob(p, &calls, &whole, &merged), Dist{Workers: 2, Stdout: &out}))
		require.False(rt, merged)
		require.Len(rt, whole, len(costs))

		dir, err := os.MkdirTemp("", "shards")
		require.NoError(rt, err)
		defer os.RemoveAll(dir)
		var names []string
		for k := range n {
			sh := Shard{k, n}
			got = nil
			require.NoError(rt, Run(context.Background(), toyJob(p, &calls, &got, &merged), Dist{Workers: 2, Shard: &sh, Out: dir, Command: "toy", Stdout: &out}))
			require.Nil(rt, got, "a shard reports nothing")
			names = append(names, filepath.Join(dir, ShardFileName(sh)))
		}
		set, err := ReadShardSet(names)
		require.NoError(rt, err)
		require.Equal(rt, "toy", set.Command)
		before := calls.Load()
		require.NoError(rt, Run(context.Background(), toyJob(p, &calls, &got, &merged), Dist{Merged: set, Stdout: &out}))
		require.Equal(rt, before, calls.Load(), "a merge computes nothing")
		require.True(rt, merged)
		sameToy(rt, whole, got)
	})
}

// TestRunCachesAndCountsEveryStudyAlike: with a cache, the second Run of
// a study computes nothing and prints its hits.
func TestRunCachesAndCountsEveryStudyAlike(t *testing.T) {
	p := toyPlan(1, 2, 3, 4)
	var calls atomic.Int64
	var got []toyResult
	var merged bool
	var out bytes.Buffer
	d := Dist{Workers: 2, Cache: t.TempDir(), Stdout: &out}
	require.NoError(t, Run(context.Background(), toyJob(p, &calls, &got, &merged), d))
	require.Equal(t, int64(4), calls.Load())
	first := got
	out.Reset()
	require.NoError(t, Run(context.Background(), toyJob(p, &calls, &got, &merged), d))
	assert.Equal(t, int64(4), calls.Load(), "the rerun takes every run from the cache")
	assert.Contains(t, out.String(), "toy: cache "+d.Cache+": 4 hits, 0 misses")
	sameToy(t, first, got)
}

// TestReadShardSetRefusesMixedKinds: a sweep's shard and a study's are
// not one set.
func TestReadShardSetRefusesMixedKinds(t *testing.T) {
	dir := t.TempDir()
	study, sweep := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	p := toyPlan(1)
	f, err := NewStudyShardFile("toy", nil, p, Shard{0, 2}, []int{0}, []toyResult{{0, 1}}, toyCodec)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(study, f.Encode(), 0o600))
	require.NoError(t, os.WriteFile(sweep, []byte(`{"format": "bursar-shard/1", "shard": 1, "shards": 2, "plans": [], "runs": []}`), 0o600))
	_, err = ReadShardSet([]string{study, sweep})
	require.ErrorContains(t, err, "shards of different kinds")
}
