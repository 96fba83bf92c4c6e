package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Small but real invocations of the three trace studies on the embedded
// excerpt: a few days, a few policies, so that each takes well under a
// second.
var studyCases = []struct {
	command string
	flags   []string
	figure  string
}{
	{"trace", []string{"--window", "21772800:21859200", "--policies", "fifo,static,quota,bursar", "--warmup", "2h", "--cooldown", "2h"}, "fig_trace.svg"},
	// Through a config (recorded for merge as an absolute path): W × m
	// cut to 2 × 2.
	{"budget-knobs", []string{"--config", "<bk.yaml>"}, "fig_budget_knobs.svg"},
	{"agents-arrive", []string{"--trace", "sdsc-sp2-excerpt", "--policies", "fifo,bursar", "--max-k", "2", "--seeds", "1,2", "--stay", "1200",
		"--window", "21772800:21859200", "--warmup", "2h", "--cooldown", "2h"}, "fig_agents_arrive.svg"},
}

// studyFiles are the outputs a merged study must write byte for byte as
// the unsharded command does (with its figure).
var studyFiles = []string{"summary.json", "runs.csv"}

// TestTraceStudiesShardsMergeByteForByte: each trace study run as 3
// shards and merged writes the summary.json, runs.csv, figure and table
// of the unsharded command.
func TestTraceStudiesShardsMergeByteForByte(t *testing.T) {
	for _, tc := range studyCases {
		t.Run(tc.command, func(t *testing.T) {
			dir := t.TempDir()
			flags := append([]string{"--quiet", "--format", "svg"}, tc.flags...)
			if i := slices.Index(flags, "<bk.yaml>"); i >= 0 {
				flags[i] = filepath.Join(dir, "bk.yaml")
				require.NoError(t, os.WriteFile(flags[i], []byte("experiment: budget-knobs\nwindow: {from: 21772800, until: 21859200}\nwarmup: 2h\ncooldown: 2h\n"+
					"windows_days: [1, 7]\nmin_runtimes_s: [0, 3600]\n"), 0o644))
			}
			whole := filepath.Join(dir, "whole")
			wholeOut, err := runSweepApp(t, append([]string{tc.command, "--out", whole}, flags...)...)
			require.NoError(t, err, wholeOut)
			shards := filepath.Join(dir, "shards")
			for i := range 3 {
				sh := strconv.Itoa(i) + "/3"
				out, err := runSweepApp(t, append([]string{tc.command, "--shard", sh, "--workers", "1", "--out", shards}, flags...)...)
				require.NoError(t, err, out)
				assert.Contains(t, out, "wrote "+filepath.Join(shards, "shard-"+strconv.Itoa(i)+"-of-3.json"))
				assert.NoFileExists(t, filepath.Join(shards, "summary.json"), "a shard writes only its shard file")
			}
			merged := filepath.Join(dir, "merged")
			mergeOut, err := runSweepApp(t, "merge", "--out", merged, shards)
			require.NoError(t, err, mergeOut)
			assertSameFiles(t, whole, merged, append(studyFiles, tc.figure)...)
			// The same console, but for the folder the "wrote … into" line names.
			assert.Equal(t, strings.ReplaceAll(wholeOut, whole, merged), mergeOut[:strings.Index(mergeOut, "merge: 3 shards of `"+tc.command)])
		})
	}
}

// TestTraceStudyMergeNamesWhatIsWrong: a missing shard is named; shards
// of a sweep and of a study, or of different flags, do not merge; a trace
// whose content changed since the shards ran is refused by its digest.
func TestTraceStudyMergeNamesWhatIsWrong(t *testing.T) {
	dir := t.TempDir()
	swf, err := os.ReadFile(filepath.Join("..", "..", "testdata", "traces", "SDSC-SP2-1998-4.2-cln.days252-280.swf"))
	require.NoError(t, err)
	traceFile := filepath.Join(dir, "log.swf")
	require.NoError(t, os.WriteFile(traceFile, swf, 0o644))
	flags := []string{"--quiet", "--trace", traceFile, "--window", "252d:255d", "--policies", "fifo,static,quota"}
	shards := filepath.Join(dir, "shards")
	for _, sh := range []string{"0/3", "2/3"} {
		out, err := runSweepApp(t, append([]string{"trace", "--shard", sh, "--out", shards}, flags...)...)
		require.NoError(t, err, out)
	}
	_, err = runSweepApp(t, "merge", shards)
	require.ErrorContains(t, err, "1 of 3 shards missing: 1 (shard-1-of-3.json)")

	other := filepath.Join(dir, "other")
	out, err := runSweepApp(t, append([]string{"trace", "--shard", "1/3", "--out", other, "--policy", "fifo"}, flags[:5]...)...)
	require.NoError(t, err, out)
	_, err = runSweepApp(t, "merge", shards, other)
	require.ErrorContains(t, err, "not one sweep")

	bucket := filepath.Join(dir, "bucket")
	out, err = runSweepApp(t, "bucket", "--quick", "--quiet", "--shard", "1/3", "--out", bucket)
	require.NoError(t, err, out)
	_, err = runSweepApp(t, "merge", shards, bucket)
	require.ErrorContains(t, err, "shards of different kinds")

	out, err = runSweepApp(t, append([]string{"trace", "--shard", "1/3", "--out", shards}, flags...)...)
	require.NoError(t, err, out)
	// The same path, other content: the replayed plan is not the shards'.
	require.NoError(t, os.WriteFile(traceFile, bytes.Replace(swf, []byte("; Note:"), []byte("; NOTE:"), 1), 0o644))
	_, err = runSweepApp(t, "merge", "--out", filepath.Join(dir, "merged"), shards)
	require.ErrorContains(t, err, "changed since the shards ran")
}

// TestInterruptedTraceStudyResumesFromTheCache is Ctrl-C then rerun for a
// trace study: the context is cancelled once some runs are cached; the
// command writes nothing; the rerun reuses them (its printed hits),
// computes the rest and writes the files of an uninterrupted run. A
// corrupt entry is counted and recomputed.
func TestInterruptedTraceStudyResumesFromTheCache(t *testing.T) {
	dir := t.TempDir()
	flags := []string{"agents-arrive", "--quiet", "--workers", "1", "--format", "svg", "--policies", "fifo,static,quota,priority",
		"--max-k", "3", "--nseeds", "3", "--stay", "1200", "--trace", "sdsc-sp2-excerpt", "--window", "21772800:21859200",
		"--warmup", "2h", "--cooldown", "2h"}
	const total = 4 * (1 + 2*3*3) // policies × (k 0 once; 2 modes × k 1 … 3 × 3 seeds)
	whole := filepath.Join(dir, "whole")
	out, err := runSweepApp(t, append(flags, "--out", whole)...)
	require.NoError(t, err, out)

	cache, resumed := filepath.Join(dir, "cache"), filepath.Join(dir, "resumed")
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer cancel()
		for {
			entries, _ := filepath.Glob(filepath.Join(cache, "*", "*.json"))
			if len(entries) >= 10 {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	var console bytes.Buffer
	app := newApp(policies.Default)
	app.Writer, app.ErrWriter = &console, &console
	err = app.RunContext(ctx, append([]string{"bursar-sweep"}, append(flags, "--cache", cache, "--out", resumed)...))
	require.Error(t, err, "the study finished before the cancel; make it longer")
	assert.Contains(t, err.Error(), "nothing reduced or written")
	assert.Regexp(t, `agents-arrive: cache .*: 0 hits, \d+ misses`, console.String())
	assert.NoFileExists(t, filepath.Join(resumed, "summary.json"))

	// One stored entry damaged: detected, recomputed.
	entries, err := filepath.Glob(filepath.Join(cache, "*", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, entries)
	data, err := os.ReadFile(entries[0])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(entries[0], bytes.Replace(data, []byte(`"result":"`), []byte(`"result":"A`), 1), 0o644))

	out, err = runSweepApp(t, append(flags, "--cache", cache, "--out", resumed)...)
	require.NoError(t, err, out)
	m := regexp.MustCompile(`agents-arrive: cache .*: (\d+) hits, (\d+) misses \((\d+) corrupt`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	hits, _ := strconv.Atoi(m[1])
	misses, _ := strconv.Atoi(m[2])
	assert.GreaterOrEqual(t, hits, 9)
	assert.Equal(t, total, hits+misses)
	assert.Equal(t, "1", m[3])
	assertSameFiles(t, whole, resumed, append(studyFiles, "fig_agents_arrive.svg")...)

	out, err = runSweepApp(t, append(flags, "--cache", cache, "--out", resumed)...)
	require.NoError(t, err, out)
	assert.Contains(t, out, strconv.Itoa(total)+" hits, 0 misses (0 corrupt entries recomputed)")
}

// TestSlurmScriptSplitsTraceStudies: slurm-script and --k8s take the trace
// studies, with their own default --out.
func TestSlurmScriptSplitsTraceStudies(t *testing.T) {
	for cmd, out := range map[string]string{
		"trace":                      "OUT=results/trace\n",
		"budget-knobs":               "OUT=results/trace/budget-knobs\n",
		"agents-arrive":              "OUT=results/agents-arrive\n",
		"trace --window 0:86400":     "OUT=results/trace-custom-",
		"agents-arrive --out /x/aa ": "OUT=/x/aa\n",
	} {
		script, err := runSweepApp(t, append([]string{"slurm-script", "--shards", "4", "--binary", "/b", "--workdir", "/w"}, strings.Fields(cmd)...)...)
		require.NoError(t, err, cmd)
		assert.Contains(t, script, out, cmd)
		assert.Contains(t, script, `exec "$BURSAR" `+strings.Fields(cmd)[0]+" ", cmd)
		assert.Contains(t, script, `--shard="${SLURM_ARRAY_TASK_ID}/4"`, cmd)
	}
	out, err := runSweepApp(t, "slurm-script", "--k8s", "--image", "registry.example/bursar:1", "--shards", "2", "trace", "--policies", "fifo")
	require.NoError(t, err, out)
	assert.Contains(t, out, "trace")
	assert.Contains(t, out, "--policies")
}

// shardDigest runs shard 9999 of 10000 of a study (no run: the study has
// fewer) and returns the plan digest its shard file records.
func shardDigest(t *testing.T, args ...string) string {
	t.Helper()
	dir := t.TempDir()
	out, err := runSweepApp(t, append(args, "--quiet", "--shard", "9999/10000", "--out", dir)...)
	require.NoError(t, err, out)
	var f struct {
		PlanDigest string `json:"plan_digest"`
		Runs       []any  `json:"runs"`
	}
	readJSONFile(t, filepath.Join(dir, "shard-9999-of-10000.json"), &f)
	require.Empty(t, f.Runs)
	return f.PlanDigest
}

// TestCommittedStudyConfigsAreTheDefaults: configs/<study>.yaml is the
// command with its defaults, run for run (the same plan digest: the same
// trace, window, pool and runs in the same order).
func TestCommittedStudyConfigsAreTheDefaults(t *testing.T) {
	for _, cmd := range []string{"trace", "budget-knobs", "agents-arrive"} {
		cfg := filepath.Join("..", "..", "configs", cmd+".yaml")
		assert.Equal(t, shardDigest(t, cmd), shardDigest(t, cmd, "--config", cfg), cmd)
	}
	// And a flag still overrides the file.
	assert.NotEqual(t, shardDigest(t, "trace"), shardDigest(t, "trace", "--config", filepath.Join("..", "..", "configs", "trace.yaml"), "--policy", "fifo"))
}

// TestStudyConfigWithFlagsOnTop: a config's trace is read relative to its
// folder and named as written; its values replace the defaults; flags
// replace its values; a config of another study is refused.
func TestStudyConfigWithFlagsOnTop(t *testing.T) {
	dir := t.TempDir()
	swf, err := os.ReadFile(filepath.Join("..", "..", "testdata", "traces", "SDSC-SP2-1998-4.2-cln.days252-280.swf"))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "logs"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "logs", "sp2.swf"), swf, 0o644))
	cfg := filepath.Join(dir, "aa.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("experiment: agents-arrive\ntrace: logs/sp2.swf\n"+
		"window: {from: 21772800, until: 21859200}\nwarmup: 2h\ncooldown: 2h\npolicies: [fifo]\nmax_k: 1\nstay: 1200\nseeds: [1]\n"), 0o644))
	out := filepath.Join(dir, "out")
	console, err := runSweepApp(t, "agents-arrive", "--config", cfg, "--policies", "fifo,static", "--quiet", "--out", out)
	require.NoError(t, err, console)
	var sum struct {
		Trace struct {
			Name  string `json:"name"`
			From  int64  `json:"window_from"`
			Until int64  `json:"window_until"`
		} `json:"trace"`
		Runs []struct {
			Policy string `json:"policy"`
			Mode   string `json:"mode"`
			K      int    `json:"k"`
		} `json:"runs"`
	}
	readJSONFile(t, filepath.Join(out, "summary.json"), &sum)
	assert.Equal(t, "logs/sp2.swf", sum.Trace.Name)
	assert.Equal(t, int64(21772800), sum.Trace.From)
	assert.Equal(t, int64(21859200), sum.Trace.Until)
	require.Len(t, sum.Runs, 6, "fifo and static (the flag) × (k 0; unmetered and metered k 1)")
	assert.Equal(t, "static", sum.Runs[5].Policy)
	assert.Equal(t, "metered", sum.Runs[5].Mode)

	_, err = runSweepApp(t, "trace", "--config", cfg, "--quiet", "--out", out)
	require.ErrorContains(t, err, "is a config of agents-arrive, not of trace")
	require.NoError(t, os.WriteFile(cfg, []byte("experiment: trace\npool: -1\n"), 0o644))
	_, err = runSweepApp(t, "trace", "--config", cfg, "--quiet", "--out", out)
	require.ErrorContains(t, err, cfg+":2: pool: want a whole number from 1")
}
