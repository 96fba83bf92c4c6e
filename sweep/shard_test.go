package sweep

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestParseShard(t *testing.T) {
	for in, want := range map[string]Shard{"0/1": {0, 1}, "0/3": {0, 3}, "2/3": {2, 3}, " 1 / 4 ": {1, 4}} {
		got, err := ParseShard(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "3", "3/3", "-1/3", "1/0", "a/3", "1/b", "1/3/4", "0/10001"} {
		_, err := ParseShard(in)
		assert.Error(t, err, in)
	}
}

// costPlan is a plan whose runs have the costs given (storms vary the
// cost; one seed per point), for hand-worked assignments.
func costPlan(t *testing.T, storms ...int) *configs.Plan {
	t.Helper()
	p := &configs.Plan{Experiment: "hand", Seeds: []int64{7}}
	for _, n := range storms {
		s := engine.DefaultScenario()
		s.Storms = n
		p.Points = append(p.Points, configs.Point{Series: "s", Scenario: s})
	}
	return p
}

// TestAssignShardsByHand: with probe off and 3000 tasks a run costs
// 7200 × (4 + storms + 6); storms 6, 1, 1, 1, 1 cost 16, 11, 11, 11, 11
// (× 7200). LPT into 2 shards: 16 → shard 0; 11 → shard 1; 11 → shard 1
// (11 < 16); 11 → shard 0 (16 < 22); 11 → shard 1 (22 < 27). Loads
// 27 and 33; by index (0,2,4 / 1,3) they would be 38 and 22.
func TestAssignShardsByHand(t *testing.T) {
	p := costPlan(t, 6, 1, 1, 1, 1)
	_, s := p.Run(0)
	assert.Equal(t, 7200.0*16, RunCost(&s))
	got := AssignShards([]*configs.Plan{p}, 2)
	assert.Equal(t, [][]RunID{{{0, 0}, {0, 3}}, {{0, 1}, {0, 2}, {0, 4}}}, got)
}

// TestAssignShardsPartitionsAndBalances: every run is in exactly one
// shard, in plan-then-run order, the split is a function of the plans and
// n, and (the LPT bound) no shard's load exceeds the lightest one's by
// more than the costliest run.
func TestAssignShardsPartitionsAndBalances(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var plans []*configs.Plan
		for range rapid.IntRange(1, 3).Draw(rt, "plans") {
			storms := rapid.SliceOfN(rapid.IntRange(0, 8), 1, 30).Draw(rt, "storms")
			plans = append(plans, costPlan(t, storms...))
		}
		n := rapid.IntRange(1, 12).Draw(rt, "n")
		shards := AssignShards(plans, n)
		require.Len(rt, shards, n)
		assert.Equal(rt, shards, AssignShards(plans, n))
		seen := map[RunID]int{}
		maxCost, lo, hi := 0.0, math.Inf(1), 0.0
		for _, ids := range shards {
			assert.True(rt, slices.IsSortedFunc(ids, func(a, b RunID) int {
				if a.Plan != b.Plan {
					return a.Plan - b.Plan
				}
				return a.Run - b.Run
			}))
			load := 0.0
			for _, id := range ids {
				seen[id]++
				_, s := plans[id.Plan].Run(id.Run)
				load += RunCost(&s)
				maxCost = max(maxCost, RunCost(&s))
			}
			lo, hi = min(lo, load), max(hi, load)
		}
		total := 0
		for pi, p := range plans {
			total += p.NumRuns()
			for ri := range p.NumRuns() {
				assert.Equal(rt, 1, seen[RunID{pi, ri}], "run %d of plan %d", ri, pi)
			}
		}
		assert.Len(rt, seen, total)
		assert.LessOrEqual(rt, hi-lo, maxCost+1e-9)
	})
}

// TestExactFloatRoundTrips: every float64, NaN and the infinities
// included, comes back from a shard file bit for bit (NaN as a NaN).
func TestExactFloatRoundTrips(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		v := math.Float64frombits(rapid.Uint64().Draw(rt, "bits"))
		if rapid.Bool().Draw(rt, "special") {
			v = rapid.SampledFrom([]float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), math.MaxFloat64, math.SmallestNonzeroFloat64}).Draw(rt, "v")
		}
		b, err := ExactFloat(v).MarshalJSON()
		require.NoError(rt, err)
		var back ExactFloat
		require.NoError(rt, back.UnmarshalJSON(b))
		if math.IsNaN(v) {
			assert.True(rt, math.IsNaN(float64(back)), string(b))
		} else {
			assert.Equal(rt, math.Float64bits(v), math.Float64bits(float64(back)), string(b))
		}
	})
}

// quickPaper runs the quick paper grid on the given seeds.
func quickPaper(t *testing.T, seeds []int64, opt Options) ([]*configs.Plan, []*Results) {
	t.Helper()
	var plans []*configs.Plan
	for _, name := range configs.Experiments {
		c, err := configs.Default(name)
		require.NoError(t, err)
		p, err := c.Plan(true, seeds)
		require.NoError(t, err)
		plans = append(plans, p)
	}
	results, err := Execute(context.Background(), plans, opt)
	require.NoError(t, err)
	return plans, results
}

// shardFiles runs each of n shards of plans as its own Execute and
// round-trips its file through Encode and DecodeShardFile.
func shardFiles(t *testing.T, plans []*configs.Plan, n int) ([]string, []*ShardFile) {
	t.Helper()
	job := &SweepJob{Plans: plans}
	assign := job.Shards(n)
	var names []string
	var files []*ShardFile
	for i := range n {
		require.NoError(t, job.Execute(context.Background(), Options{Workers: 2, Runs: assign[i]}))
		name := ShardFileName(Shard{i, n})
		data, err := job.EncodeShard("paper", []string{"--quick=true"}, Shard{i, n}, assign[i])
		require.NoError(t, err)
		f, err := DecodeShardFile(name, data)
		require.NoError(t, err)
		names, files = append(names, name), append(files, f)
	}
	return names, files
}

// TestShardsMergeToTheUnshardedResults: 3 shards, each computed on its
// own and written as a file, merge to exactly the metrics of one Execute:
// runs.csv and latencies.json, which carry every metric, are the same
// (cmd/bursar-sweep's tests compare the reduced summary.json too).
func TestShardsMergeToTheUnshardedResults(t *testing.T) {
	plans, whole := quickPaper(t, []int64{7, 11}, Options{Workers: 2})
	names, files := shardFiles(t, plans, 3)
	// Any order of files.
	slices.Reverse(names)
	slices.Reverse(files)
	set, err := CollectShards(names, files)
	require.NoError(t, err)
	merged, err := set.Results(plans)
	require.NoError(t, err)
	assert.Equal(t, RunsCSV(whole), RunsCSV(merged))
	assert.Equal(t, LatenciesJSON(whole), LatenciesJSON(merged))
}

func TestCollectShardsNamesWhatIsWrong(t *testing.T) {
	plans, _ := quickPaper(t, []int64{7}, Options{Workers: 2})
	names, files := shardFiles(t, plans, 3)

	_, err := CollectShards(names[:1], files[:1])
	require.Error(t, err)
	assert.Contains(t, err.Error(), "2 of 3 shards missing: 1 (shard-1-of-3.json), 2 (shard-2-of-3.json)")

	_, err = CollectShards([]string{"a", "b", "c", "d"}, append(slices.Clone(files), files[1]))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "shard 1/3 is given twice: b and d")

	other := *files[2]
	other.PlanDigest = "sha256:0"
	_, err = CollectShards(names, []*ShardFile{files[0], files[1], &other})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "shard-2-of-3.json and shard-0-of-3.json are of different plans")

	other = *files[2]
	other.Args = []string{"--quick=true", "--format=svg"}
	_, err = CollectShards(names, []*ShardFile{files[0], files[1], &other})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not one sweep")

	other = *files[2]
	other.Program = "another build"
	_, err = CollectShards(names, []*ShardFile{files[0], files[1], &other})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rerun the shards with one build")

	// A plan other than the shards' (more seeds) is refused by digest.
	set, err := CollectShards(names, files)
	require.NoError(t, err)
	more, _ := quickPaper(t, []int64{7, 11}, Options{Workers: 2})
	_, err = set.Results(more)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "a config file changed since the shards ran")

	// A shard holding other runs than assigned is refused.
	other = *files[1]
	other.Runs = other.Runs[1:]
	set, err = CollectShards(names, []*ShardFile{files[0], &other, files[2]})
	require.NoError(t, err)
	_, err = set.Results(plans)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "shard-1-of-3.json: holds")
}

func TestDecodeShardFileErrors(t *testing.T) {
	for in, want := range map[string]string{
		`{`:               "not a shard file",
		`{"format": "x"}`: `format "x"`,
		`{"format": "bursar-shard/1", "shard": 3, "shards": 3}`:                      "out of range",
		`{"format": "bursar-shard/1", "shards": 1, "runs": [{"plan": 0, "run": 0}]}`: "does not exist",
		`{"format": "bursar-shard/1", "shards": 1, "extra": 1}`:                      "unknown field",
	} {
		_, err := DecodeShardFile("f.json", []byte(in))
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), want, in)
		assert.True(t, strings.HasPrefix(err.Error(), "f.json: "), err.Error())
	}
}

// FuzzDecodeShardFile: any bytes give a file or an error, never a panic,
// and a file that decodes re-encodes to one that decodes the same.
func FuzzDecodeShardFile(f *testing.F) {
	f.Add([]byte(`{"format": "bursar-shard/1", "shards": 2, "shard": 1, "plans": [{"experiment": "x", "runs": 2}], "runs": [{"plan": 0, "run": 1, "metrics": {"utilization": null, "probe_lats": [1, 2]}}]}`))
	f.Add([]byte(`{"format": "bursar-shard/1", "shards": 1, "runs": []}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		sf, err := DecodeShardFile("fuzz", data)
		if err != nil {
			return
		}
		again, err := DecodeShardFile("again", sf.Encode())
		require.NoError(t, err)
		assert.Equal(t, sf.Encode(), again.Encode())
	})
}

// FuzzParseShard: --shard either fails or gives 0 ≤ i < n ≤ MaxShards,
// which prints back as a value that parses to the same shard.
func FuzzParseShard(f *testing.F) {
	for _, s := range []string{"0/3", "2/3", "3/3", "-1/2", " 1/ 2", "1/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sh, err := ParseShard(s)
		if err != nil {
			return
		}
		require.True(t, 0 <= sh.Index && sh.Index < sh.Of && sh.Of <= MaxShards, "%q gave %v", s, sh)
		again, err := ParseShard(sh.String())
		require.NoError(t, err)
		assert.Equal(t, sh, again)
	})
}
