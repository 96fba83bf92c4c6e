package sweep

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// toyResult is a study result with a NaN to carry exactly.
type toyResult struct {
	Run   int
	Value float64
}

var toyCodec = StudyCodec[toyResult]{
	Encode: func(r *toyResult) ([]byte, error) {
		return json.Marshal(struct {
			Run   int        `json:"run"`
			Value ExactFloat `json:"value"`
		}{r.Run, ExactFloat(r.Value)})
	},
	Decode: func(b []byte) (toyResult, error) {
		var w struct {
			Run   int        `json:"run"`
			Value ExactFloat `json:"value"`
		}
		err := json.Unmarshal(b, &w)
		return toyResult{w.Run, float64(w.Value)}, err
	},
}

func toyPlan(costs ...float64) *StudyPlan {
	p := &StudyPlan{Command: "toy", Inputs: "shared"}
	for i, c := range costs {
		p.Runs = append(p.Runs, StudyRun{Label: "run " + strconv.Itoa(i), Inputs: "i=" + strconv.Itoa(i), Cost: c})
	}
	return p
}

// toyRun computes run i: 1/i (so run 0 is +Inf) and NaN for every third.
func toyRun(calls *atomic.Int64) func(int) (toyResult, error) {
	return func(i int) (toyResult, error) {
		calls.Add(1)
		v := 1 / float64(i)
		if i%3 == 2 {
			v = math.NaN()
		}
		return toyResult{i, v}, nil
	}
}

func sameToy(t require.TestingT, want, got []toyResult) {
	require.Len(t, got, len(want))
	for i := range want {
		require.Equal(t, want[i].Run, got[i].Run)
		require.Equal(t, math.Float64bits(want[i].Value), math.Float64bits(got[i].Value), "run %d", i)
	}
}

// TestAssignStudyShardsByHand: LPT on costs 5, 1, 4, 3, 3 over two shards
// (costliest first: 5→0, 4→1, 3→1, 3→0, 1→1) gives 8 and 8.
func TestAssignStudyShardsByHand(t *testing.T) {
	assert.Equal(t, [][]int{{0, 4}, {1, 2, 3}}, AssignStudyShards(toyPlan(5, 1, 4, 3, 3), 2))
	assert.Equal(t, [][]int{{0}, nil, nil}, AssignStudyShards(toyPlan(1), 3))
}

// TestStudyShardsMergeToTheWhole: for any costs and shard count, the
// shards partition the runs, and shard files merged give the results of
// one process bit for bit.
func TestStudyShardsMergeToTheWhole(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		costs := rapid.SliceOfN(rapid.Float64Range(0, 100), 0, 25).Draw(rt, "costs")
		n := rapid.IntRange(1, 8).Draw(rt, "n")
		p := toyPlan(costs...)
		var calls atomic.Int64
		whole, err := ExecuteStudy(context.Background(), p, toyRun(&calls), toyCodec, Options{Workers: 2})
		require.NoError(rt, err)
		shards := AssignStudyShards(p, n)
		var all []int
		var files []*StudyShardFile
		for k, ids := range shards {
			all = append(all, ids...)
			if ids == nil {
				ids = []int{}
			}
			rs, err := ExecuteStudy(context.Background(), p, toyRun(&calls), toyCodec, Options{Workers: 3, Runs: ids})
			require.NoError(rt, err)
			f, err := NewStudyShardFile("toy", []string{"--x=1"}, p, Shard{k, n}, ids, rs, toyCodec)
			require.NoError(rt, err)
			name := ShardFileName(Shard{k, n})
			back, err := DecodeStudyShardFile(name, f.Encode())
			require.NoError(rt, err)
			files = append(files, back)
		}
		slices.Sort(all)
		require.Equal(rt, len(costs), len(all))
		for i, v := range all {
			require.Equal(rt, i, v)
		}
		// Any order of the files.
		perm := rapid.Permutation(files).Draw(rt, "order")
		permNames := make([]string, len(perm))
		for i, f := range perm {
			permNames[i] = ShardFileName(Shard{f.Shard, n})
		}
		set, err := CollectStudyShards(permNames, perm)
		require.NoError(rt, err)
		merged, err := MergeStudy(set, p, toyCodec)
		require.NoError(rt, err)
		sameToy(rt, whole, merged)
	})
}

func TestMergeStudyRefusesAnotherPlanOrAssignment(t *testing.T) {
	p := toyPlan(1, 2, 3)
	var calls atomic.Int64
	rs, err := ExecuteStudy(context.Background(), p, toyRun(&calls), toyCodec, Options{})
	require.NoError(t, err)
	f, err := NewStudyShardFile("toy", nil, p, Shard{0, 1}, []int{0, 1, 2}, rs, toyCodec)
	require.NoError(t, err)
	set, err := CollectStudyShards([]string{"a"}, []*StudyShardFile{f})
	require.NoError(t, err)
	_, err = MergeStudy(set, toyPlan(1, 2, 4), toyCodec)
	require.NoError(t, err, "costs are not inputs: the same runs")
	other := toyPlan(1, 2, 3)
	other.Inputs = "another trace"
	_, err = MergeStudy(set, other, toyCodec)
	require.ErrorContains(t, err, "changed since the shards ran")

	f.Runs = f.Runs[:2]
	_, err = MergeStudy(set, p, toyCodec)
	require.ErrorContains(t, err, "a: holds 2 runs, not the 3 that shard 0/1 is assigned")

	_, err = DecodeStudyShardFile("b", []byte(`{"format":"bursar-study-shard/1","shard":0,"shards":1,"plan_runs":1,"runs":[{"run":3}]}`))
	require.ErrorContains(t, err, "b: runs[0]: run 3 does not exist")
	_, err = DecodeStudyShardFile("c", []byte(`{"format":"bursar-shard/1"}`))
	require.ErrorContains(t, err, `format "bursar-shard/1"`)
	assert.Equal(t, StudyShardFormat, ShardFileFormat(f.Encode()))
}

// TestStudyCacheHitsMissesAndCorruptEntries: a second execution computes
// nothing; a damaged entry (bad checksum, another key's entry, a result
// its codec refuses) is counted and recomputed; the results stay exact.
func TestStudyCacheHitsMissesAndCorruptEntries(t *testing.T) {
	dir := t.TempDir()
	p := toyPlan(1, 1, 1, 1, 1, 1)
	var calls atomic.Int64
	run := toyRun(&calls)
	cache, err := OpenCache(dir)
	require.NoError(t, err)
	first, err := ExecuteStudy(context.Background(), p, run, toyCodec, Options{Cache: cache})
	require.NoError(t, err)
	assert.Equal(t, CacheStats{0, 6, 0}, cache.Stats())

	cache, _ = OpenCache(dir)
	calls.Store(0)
	again, err := ExecuteStudy(context.Background(), p, run, toyCodec, Options{Cache: cache})
	require.NoError(t, err)
	assert.Equal(t, CacheStats{6, 0, 0}, cache.Stats())
	assert.Zero(t, calls.Load())
	sameToy(t, first, again)

	path := func(i int) string { k := p.RunKey(i); return filepath.Join(dir, k[:2], k+".json") }
	b0, err := os.ReadFile(path(0))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path(0), append(b0, 'x'), 0o644)) // checksum
	b2, err := os.ReadFile(path(2))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path(1), b2, 0o644)) // run 2's entry under run 1's key
	require.NoError(t, os.WriteFile(path(3), frameEntry([]byte(fmt.Sprintf(`{"key":%q,"result":{"value":"x"}}`+"\n", p.RunKey(3)))), 0o644))
	cache, _ = OpenCache(dir)
	calls.Store(0)
	third, err := ExecuteStudy(context.Background(), p, run, toyCodec, Options{Cache: cache})
	require.NoError(t, err)
	assert.Equal(t, CacheStats{3, 3, 3}, cache.Stats())
	assert.Equal(t, int64(3), calls.Load())
	sameToy(t, first, third)

	// Another program, another command or other shared inputs: other keys.
	q := toyPlan(1)
	q.Inputs = "other"
	assert.NotEqual(t, p.RunKey(0), q.RunKey(0))
	q = toyPlan(1)
	q.Command = "other"
	assert.NotEqual(t, p.RunKey(0), q.RunKey(0))
	assert.Equal(t, p.RunKey(0), toyPlan(7).RunKey(0), "the cost is not an input")
}

func TestExecuteStudyCancelledWritesNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var calls atomic.Int64
	_, err := ExecuteStudy(ctx, toyPlan(1, 2), toyRun(&calls), toyCodec, Options{Workers: 1})
	require.ErrorContains(t, err, "interrupted after 0 of 2 runs")
}
