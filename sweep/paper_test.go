package sweep

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// paperPlans expands the embedded paper configs.
func paperPlans(tb testing.TB, quick bool) []*configs.Plan {
	tb.Helper()
	var plans []*configs.Plan
	for _, name := range configs.Experiments {
		c, err := configs.Default(name)
		require.NoError(tb, err)
		p, err := c.Plan(quick, nil)
		require.NoError(tb, err)
		plans = append(plans, p)
	}
	return plans
}

// The full paper grid (105 runs on seeds 7, 11, 13) runs once per test
// binary and every test that needs it shares it.
var (
	paperOnce    sync.Once
	paperResults []*Results
	paperReduced *Paper
	paperErr     error
)

func fullPaper(t *testing.T) ([]*Results, *Paper) {
	t.Helper()
	paperOnce.Do(func() {
		var plans []*configs.Plan
		for _, name := range configs.Experiments {
			c, err := configs.Default(name)
			if err != nil {
				paperErr = err
				return
			}
			p, err := c.Plan(false, []int64{7, 11, 13})
			if err != nil {
				paperErr = err
				return
			}
			plans = append(plans, p)
		}
		paperResults, paperErr = Execute(context.Background(), plans, Options{Workers: 4})
		if paperErr == nil {
			paperReduced, paperErr = ReducePaper(paperResults)
		}
	})
	require.NoError(t, paperErr)
	return paperResults, paperReduced
}

// TestPublishedFindings checks the paper's claims (experiments.md) on
// seeds 7, 11 and 13 with the faithful engine. The bounds are the
// published ones; do not loosen them to make a regression pass.
func TestPublishedFindings(t *testing.T) {
	_, p := fullPaper(t)
	s := &p.Summary

	t.Run("latency is grace + 2 s across the grace sweep", func(t *testing.T) {
		require.Len(t, s.Grace, 5)
		for _, g := range s.Grace {
			assert.Equal(t, float64(g.Grace)+2, float64(g.ProbeP50), "grace %v", g.Grace)
		}
	})
	t.Run("headroom buys utilization loss, not latency", func(t *testing.T) {
		require.Len(t, s.Headroom, 6)
		for _, h := range s.Headroom {
			if h.Headroom <= 192 {
				assert.GreaterOrEqual(t, float64(h.ProbeP50), 55.0, "headroom %v", h.Headroom)
				assert.LessOrEqual(t, float64(h.ProbeP50), 65.0, "headroom %v", h.Headroom)
			}
		}
		first, last := s.Headroom[0], s.Headroom[len(s.Headroom)-1]
		require.Equal(t, Number(16), first.Headroom)
		require.Equal(t, Number(256), last.Headroom)
		drop := 100 * float64(first.Utilization-last.Utilization)
		assert.GreaterOrEqual(t, drop, 10.0, "utilization points lost from headroom 16 to 256")
		assert.LessOrEqual(t, drop, 15.0, "utilization points lost from headroom 16 to 256")
	})
	t.Run("the guaranteed victim has no violation at any φ", func(t *testing.T) {
		require.Len(t, s.Overbooking, 6)
		for _, o := range s.Overbooking {
			assert.Equal(t, Number(0), o.VictimViolations, "storms %d", o.NStorms)
		}
		assert.Equal(t, 0, p.Overbooking.Violations)
		assert.InDelta(t, 7.125, float64(s.Overbooking[5].Phi), 1e-12)
	})
	t.Run("grant-time checks leak burst, prepaid leases pin it to B", func(t *testing.T) {
		require.Len(t, s.Bucket, 6)
		b := s.Bucket[0]
		require.Equal(t, Number(25000), b.StormB)
		assert.Greater(t, float64(b.ExcessIdleLeaky), 150000.0)
		assert.InDelta(t, 25000, float64(b.ExcessIdlePrepaid), 0.05*25000)
	})
}

func writeAll(t *testing.T, dir string, results []*Results) map[string][]byte {
	t.Helper()
	p, err := ReducePaper(results)
	require.NoError(t, err)
	require.NoError(t, WriteData(dir, results, p.Summary.JSON()))
	out := map[string][]byte{}
	for _, name := range []string{SummaryFile, RunsFile, LatenciesFile} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		out[name] = b
	}
	return out
}

// TestOutputsDoNotDependOnWorkers runs the quick paper grid with 1 and 4
// workers (and one per run, so that finish order is as scrambled as it
// gets): every data file must be byte-identical.
func TestOutputsDoNotDependOnWorkers(t *testing.T) {
	var files []map[string][]byte
	for _, workers := range []int{1, 4, 18} {
		results, err := Execute(context.Background(), paperPlans(t, true), Options{Workers: workers})
		require.NoError(t, err)
		files = append(files, writeAll(t, t.TempDir(), results))
	}
	for _, name := range []string{SummaryFile, RunsFile, LatenciesFile} {
		assert.Equal(t, string(files[0][name]), string(files[1][name]), "%s: 1 vs 4 workers", name)
		assert.Equal(t, string(files[0][name]), string(files[2][name]), "%s: 1 vs 18 workers", name)
	}
}

func TestSummaryHasExactlyTheDocumentedKeys(t *testing.T) {
	_, p := fullPaper(t)
	var doc map[string][]map[string]any
	require.NoError(t, json.Unmarshal(p.Summary.JSON(), &doc))
	// The keys of experiments.md, then each estimate's 95 % interval
	// (_lo, _hi), the censor flag and pooled count of a probe percentile,
	// and n, the seeds behind the row.
	want := map[string][]string{
		"headroom": {"headroom", "utilization", "utilization_lo", "utilization_hi",
			"probe_p50", "probe_p50_lo", "probe_p50_hi", "probe_p50_censored", "probe_n", "n"},
		"grace": {"grace", "probe_p50", "probe_p50_lo", "probe_p50_hi", "probe_p50_censored", "probe_n", "n"},
		"overbooking": {"n_storms", "phi", "victim_p95_in", "victim_p95_in_lo", "victim_p95_in_hi",
			"victim_violations", "victim_violations_lo", "victim_violations_hi",
			"probe_p50_in", "probe_p50_in_lo", "probe_p50_in_hi", "probe_p50_in_censored", "probe_n_in", "n"},
		"bucket": {"storm_B", "excess_contended", "excess_contended_lo", "excess_contended_hi",
			"excess_idle_prepaid", "excess_idle_prepaid_lo", "excess_idle_prepaid_hi",
			"excess_idle_leaky", "excess_idle_leaky_lo", "excess_idle_leaky_hi", "n"},
		"bootstrap": {"experiment", "seed", "resamples"},
	}
	assert.Len(t, doc, len(want))
	for key, fields := range want {
		rows, ok := doc[key]
		require.True(t, ok, "summary lacks %s", key)
		for _, row := range rows {
			var got []string
			for k := range row {
				got = append(got, k)
			}
			assert.ElementsMatch(t, fields, got, key)
		}
	}
	// The documented order, too: a reader diffing two summaries sees the
	// same layout.
	js := string(p.Summary.JSON())
	assert.Less(t, strings.Index(js, `"headroom"`), strings.Index(js, `"grace"`))
	assert.Less(t, strings.Index(js, `"grace"`), strings.Index(js, `"overbooking"`))
	assert.Less(t, strings.Index(js, `"overbooking"`), strings.Index(js, `"bucket"`))
}

func TestNaNIsNullInSummary(t *testing.T) {
	nan := Number(math.NaN())
	s := Summary{Grace: []GraceRow{{Grace: 15, ProbeP50Cols: ProbeP50Cols{ProbeP50: nan, ProbeP50Lo: nan, ProbeP50Hi: nan}}}}
	assert.JSONEq(t, `{"grace": [{"grace": 15, "probe_p50": null, "probe_p50_lo": null, "probe_p50_hi": null,
		"probe_p50_censored": false, "probe_n": 0, "n": 0}]}`, string(s.JSON()))
}

func TestRunsCSVIsTidy(t *testing.T) {
	results, _ := fullPaper(t)
	data := RunsCSV(results)
	rows, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, 1+105, "a header and one row per run")
	header := rows[0]
	assert.Equal(t, []string{"experiment", "run", "series"}, header[:3])
	seedCol := slices.Index(header, "seed")
	require.Positive(t, seedCol)
	assert.Equal(t, len(engine.Knobs)+2, seedCol, "every knob but the seed, then the seed")
	assert.Equal(t, engine.ScalarKeys, header[seedCol+1:])
	for i := range engine.Knobs {
		assert.Contains(t, header, engine.Knobs[i].Name)
	}
	counts := map[string]int{}
	for _, row := range rows[1:] {
		require.Len(t, row, len(header))
		counts[row[0]+"/"+row[2]]++
		for j, cell := range row[1:] {
			col := header[j+1]
			if col == "series" || cell == "" {
				continue
			}
			if col == "leaky" || col == "probe" {
				assert.Contains(t, []string{"true", "false"}, cell, col)
				continue
			}
			_, err := strconv.ParseFloat(cell, 64)
			assert.NoError(t, err, "column %s", col)
			assert.NotContains(t, cell, "e", "column %s: plain digits, no exponent", col)
		}
	}
	assert.Equal(t, map[string]int{
		"latency-price/headroom": 18, "latency-price/grace": 15, "overbooking/overbooking": 18,
		"bucket/contended": 18, "bucket/idle-prepaid": 18, "bucket/idle-leaky": 18,
	}, counts)
	// The probe is off in the bucket experiment: its victim percentiles
	// exist, and NaN cells (none expected in the paper) would be empty.
	assert.NotContains(t, string(data), "NaN")
	assert.NotContains(t, string(data), "null")
}

func TestLatenciesJSONHoldsTheRawLists(t *testing.T) {
	results, _ := fullPaper(t)
	var runs []struct {
		Experiment  string             `json:"experiment"`
		Run         int                `json:"run"`
		Series      string             `json:"series"`
		Knobs       map[string]float64 `json:"knobs"`
		Seed        int64              `json:"seed"`
		ProbeLats   []int              `json:"probe_lats"`
		ProbeLatsIn []int              `json:"probe_lats_in"`
	}
	require.NoError(t, json.Unmarshal(LatenciesJSON(results), &runs))
	require.Len(t, runs, 105)
	k := 0
	for _, r := range results {
		for i := range r.Metrics {
			got := runs[k]
			k++
			assert.Equal(t, r.Plan.Experiment, got.Experiment)
			assert.Equal(t, i, got.Run)
			assert.Equal(t, r.Metrics[i].ProbeLats, got.ProbeLats)
			assert.Equal(t, r.Metrics[i].ProbeLatsIn, got.ProbeLatsIn)
			_, s := r.Plan.Run(i)
			assert.Equal(t, s.Seed, got.Seed)
		}
	}
	assert.Equal(t, map[string]float64{"headroom": 16}, runs[0].Knobs)
}

func TestGenericSummary(t *testing.T) {
	c, err := configs.Parse("g.yaml", []byte(`
experiment: tiny
seeds: [7, 11]
fixed: {probe: true, ticks: 900}
grid: {leaky: [false, true]}
`))
	require.NoError(t, err)
	p, err := c.Plan(false, nil)
	require.NoError(t, err)
	results, err := Execute(context.Background(), []*configs.Plan{p}, Options{Workers: 2})
	require.NoError(t, err)
	var doc struct {
		Experiment string  `json:"experiment"`
		Quick      bool    `json:"quick"`
		Seeds      []int64 `json:"seeds"`
		Points     []struct {
			Series  string                         `json:"series"`
			Knobs   map[string]any                 `json:"knobs"`
			Metrics map[string]map[string]*float64 `json:"metrics"`
			P50     *float64                       `json:"probe_p50"`
		} `json:"points"`
	}
	raw := GenericSummary(results[0])
	require.NoError(t, json.Unmarshal(raw, &doc))
	assert.Equal(t, "tiny", doc.Experiment)
	assert.Equal(t, []int64{7, 11}, doc.Seeds)
	require.Len(t, doc.Points, 2)
	assert.Equal(t, map[string]any{"leaky": true}, doc.Points[1].Knobs)
	assert.Len(t, doc.Points[0].Metrics, len(engine.ScalarKeys))
	u := doc.Points[0].Metrics["utilization"]
	require.NotNil(t, u["mean"])
	assert.LessOrEqual(t, *u["min"], *u["mean"])
	assert.LessOrEqual(t, *u["mean"], *u["max"])
	// No storm window in 900 ticks: the in-window victim percentiles are
	// NaN, written null.
	assert.Nil(t, doc.Points[0].Metrics["victim_p95_in"]["mean"])
	// In runs.csv a NaN is an empty cell.
	rows, err := csv.NewReader(bytes.NewReader(RunsCSV(results))).ReadAll()
	require.NoError(t, err)
	col := slices.Index(rows[0], "victim_p95_in")
	require.Positive(t, col)
	assert.Equal(t, "", rows[1][col])
	// Keys in metric order, not sorted.
	assert.Less(t, bytes.Index(raw, []byte(`"victim_p50_in"`)), bytes.Index(raw, []byte(`"adaptive_spent"`)))
	assert.Less(t, bytes.Index(raw, []byte(`"cold"`)), bytes.Index(raw, []byte(`"utilization"`)))
}

func TestCancelBeforeStartRunsNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := 0
	res, err := Execute(ctx, paperPlans(t, true), Options{Workers: 2, Progress: func(int, int) { ran++ }})
	assert.Nil(t, res)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, ran)
}

func TestCancelMidwayStopsPromptlyWithoutResults(t *testing.T) {
	plans := paperPlans(t, false)
	ctx, cancel := context.WithCancelCause(context.Background())
	stopped := errors.New("interrupt")
	done := 0
	start := time.Now()
	res, err := Execute(ctx, plans, Options{Workers: 2, Progress: func(d, total int) {
		done = d
		if d == 3 {
			cancel(stopped)
		}
	}})
	assert.Nil(t, res, "no partial results")
	assert.ErrorIs(t, err, stopped)
	assert.ErrorContains(t, err, "interrupted after")
	// At most the runs already in flight finish after the cancel.
	assert.LessOrEqual(t, done, 3+2)
	assert.Less(t, time.Since(start), 30*time.Second)
}

func TestWriteDataAfterCancelWritesNothing(t *testing.T) {
	// The commands only write after Execute succeeds; this pins the
	// contract that a cancelled Execute gives nothing to write.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Execute(ctx, paperPlans(t, true), Options{})
	require.Error(t, err)
	assert.Nil(t, res)
}

func TestProgressPlainLines(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf, false, "paper", 10)
	now := p.start
	p.now = func() time.Time { return now }
	for d := 1; d <= 10; d++ {
		now = now.Add(500 * time.Millisecond)
		p.Update(d, 10)
	}
	p.Finish()
	// Every 2 s of the 5 s, and the last one.
	assert.Equal(t, "paper: 4/10 runs (40%), 2.0 s\npaper: 8/10 runs (80%), 4.0 s\npaper: 10/10 runs (100%), 5.0 s\n", buf.String())
}

// On a terminal: one line rewritten after a carriage return, at most
// every 100 ms but always at the end, its count, rate and time left, and
// cleared when the sweep finishes; an abandoned bar stays, ended by a
// line break.
func TestProgressBarOnTerminal(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf, true, "paper", 4)
	now := p.start
	p.now = func() time.Time { return now }
	for d := 1; d <= 4; d++ {
		now = now.Add(60 * time.Millisecond)
		p.Update(d, 4)
	}
	out := buf.String()
	frames := strings.Split(out, "\r")[1:]
	// Drawn at 0, then at 120 ms (2 of 4), then at the end (4 of 4); the
	// updates 60 ms after a redraw are skipped.
	require.Len(t, frames, 3, "%q", out)
	assert.Equal(t, "paper   0% [                              ] 0/4 runs", frames[0])
	assert.Equal(t, "paper  50% [===============               ] 2/4 runs, 16.7 runs/s, 0 s left", frames[1])
	assert.Equal(t, "paper 100% [==============================] 4/4 runs, 16.7 runs/s"+strings.Repeat(" ", 10), frames[2])
	p.Finish()
	assert.True(t, strings.HasSuffix(buf.String(), "\r"+strings.Repeat(" ", len(frames[2])-10)+"\r"), "%q", buf.String())
	assert.NotContains(t, buf.String(), "\n")

	buf.Reset()
	p = NewProgress(&buf, true, "paper", 4)
	p.Update(1, 4)
	p.Abandon()
	assert.True(t, strings.HasSuffix(buf.String(), "\n"))
}

// BenchmarkPaper is the full paper grid: 105 runs on every CPU and the
// reductions, without figures.
func BenchmarkPaper(b *testing.B) {
	plans := paperPlans(b, false)
	for b.Loop() {
		results, err := Execute(context.Background(), plans, Options{})
		if err != nil {
			b.Fatal(err)
		}
		p, err := ReducePaper(results)
		if err != nil {
			b.Fatal(err)
		}
		_ = p.Summary.JSON()
		_ = RunsCSV(results)
		_ = LatenciesJSON(results)
	}
}

// TestCommittedPaperSummary: the reproduced results/paper/summary.json in
// the repository is exactly what `bursar-sweep paper` gives today, so the
// published figures can never silently drift from the code. After a change
// that moves a number on purpose, regenerate with `make figures`.
func TestCommittedPaperSummary(t *testing.T) {
	_, p := fullPaper(t)
	committed, err := os.ReadFile(filepath.Join("..", "results", "paper", "summary.json"))
	require.NoError(t, err)
	require.Equal(t, string(committed), string(p.Summary.JSON()),
		"results/paper/summary.json is stale. If the change of numbers is intended, regenerate it with "+
			"`make figures` (= `go run ./cmd/bursar-sweep paper --out results/paper`: the embedded configs, "+
			"seeds 7, 11, 13, no --quick) and commit summary.json and the figures; a run with other seeds, "+
			"--quick or --config writes into results/paper-<variant>/ and must not replace these files")
}
