package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"image/color"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bursar-hpc/bursar/policy"
	"github.com/bursar-hpc/bursar/policy/baseline"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/policy/registry"
	"github.com/stretchr/testify/require"
)

// The toy policy of issue 36's "Done when": defined only in this file,
// added to the registry the command line is built from, it runs in every
// study that names policies — the agent scenario's comparison, the trace
// replay and a generic sweep — with no other change anywhere.

const toyName = "random"

// toyKnobs are the toy's settings: the seed of its order.
type toyKnobs struct {
	Seed int `json:"seed"`
}

var toySlot = registry.Slot[toyKnobs](toyName)

// toyPolicy is "random order with EASY": every pass orders the pending
// requests by a hash of the seed and the request id (so the same seed
// gives the same order, whatever the history), then runs fifo's EASY pass
// over that order.
var toyPolicy = registry.Descriptor{
	Name: toyName,
	Doc:  "a toy: the pending requests in a seeded random order, with EASY backfilling",
	Knobs: registry.KnobSet{
		Default: toySlot.Default(func() toyKnobs { return toyKnobs{Seed: 1} }),
		Keys:    []registry.Knob{toySlot.IntKnob("seed", 0, "seed must be ≥ 0, got %d", func(k *toyKnobs) *int { return &k.Seed })},
	},
	New: func(cfg policy.Config, k registry.Knobs) (policy.Allocator, error) {
		return baseline.New(cfg, &randomRule{Seed: uint64(toySlot.Get(k).Seed)})
	},
	Cost:  1,
	Style: registry.Style{Color: color.RGBA{R: 0x88, G: 0x22, B: 0x55, A: 0xff}, Dashes: []float64{2, 1}, Marker: registry.Diamond},
}

// randomRule is the toy's baseline.Rule.
type randomRule struct {
	baseline.Base
	Seed  uint64
	queue baseline.Queue
	easy  baseline.EASY
}

func (*randomRule) Name() string { return toyName }

func (r *randomRule) Admit(k *baseline.Core) {
	k.AdmitEASY(&r.easy, r.queue.Build(k, func(a, b *baseline.Request) int {
		return cmp.Or(cmp.Compare(mix(r.Seed, a.ID), mix(r.Seed, b.ID)), cmp.Compare(a.ID, b.ID))
	}), nil)
}

// mix is SplitMix64's finaliser of seed and id: a fixed pseudo-random
// rank per request.
func mix(seed uint64, id int) uint64 {
	z := seed*0x9E3779B97F4A7C15 + uint64(id)
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// runToyApp runs the command line built from reg and returns its console.
func runToyApp(t *testing.T, reg *registry.Registry, args ...string) string {
	t.Helper()
	var console bytes.Buffer
	app := newApp(reg)
	app.Writer, app.ErrWriter = &console, &console
	require.NoError(t, app.Run(append([]string{"bursar-sweep"}, args...)), console.String())
	return console.String()
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// summaryText is the summary.json of an output folder.
func summaryText(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	require.True(t, json.Valid(b))
	return string(b)
}

func TestToyPolicyRunsInCompareTraceAndSweep(t *testing.T) {
	reg := policies.Default.With(toyPolicy)
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		return p
	}

	// compare: the agent scenario under fifo and the toy, one seed.
	cmpCfg := write("compare.yaml", "experiment: compare\nseeds: [7]\nseries:\n"+
		"  - {name: fifo, policy: fifo}\n  - {name: random, policy: {name: random, seed: 3}}\n")
	out := filepath.Join(dir, "compare")
	console := runToyApp(t, reg, "compare", "--config", cmpCfg, "--workers", "1", "--quiet", "--out", out)
	require.Contains(t, console, "random")
	seed3 := summaryText(t, out)
	require.Contains(t, seed3, `"random"`)
	// The seed is the toy's knob, read from the file: another seed is
	// another order, and another outcome.
	cmpCfg4 := write("compare4.yaml", strings.Replace(string(must(os.ReadFile(cmpCfg))), "seed: 3", "seed: 4", 1))
	out4 := filepath.Join(dir, "compare4")
	runToyApp(t, reg, "compare", "--config", cmpCfg4, "--workers", "1", "--quiet", "--out", out4)
	require.True(t, seed3 != summaryText(t, out4), "seeds 3 and 4 gave the same comparison")

	// trace: three days of the embedded excerpt (no fair-start forks) under fifo and the toy; the
	// toy's order is not submit order, so its waits differ from fifo's.
	trace := func(name string, extra ...string) string {
		out := filepath.Join(dir, name)
		runToyApp(t, reg, append([]string{"trace", "--window", "21773058:22032258", "--policies", "fifo,random", "--fair-sample", "0",
			"--workers", "1", "--quiet", "--out", out}, extra...)...)
		return summaryText(t, out)
	}
	a := trace("trace-a")
	require.Contains(t, a, `"random"`)
	require.FileExists(t, filepath.Join(dir, "trace-a", "fig_trace.png"))
	var sum struct {
		Estimates []struct {
			Label   string `json:"label"`
			Metrics map[string]struct {
				Mean *float64 `json:"mean"`
			} `json:"metrics"`
		} `json:"estimates"`
	}
	require.NoError(t, json.Unmarshal([]byte(a), &sum))
	jobs := map[string]float64{}
	for _, e := range sum.Estimates {
		if m := e.Metrics["jobs"].Mean; m != nil {
			jobs[e.Label] = *m
		}
	}
	require.Positive(t, jobs[toyName], "the toy's replay measured no job")
	require.Equal(t, jobs["fifo"], jobs[toyName], "the same window's jobs under both")
	// Deterministic: the same command twice writes the same summary.
	require.Equal(t, a, trace("trace-b"))

	// sweep: a generic grid with the toy as the config's policy, its seed
	// a knob of the file.
	swCfg := write("sweep.yaml", "experiment: toy-sweep\nseeds: [7]\npolicy: {name: random, seed: 5}\n"+
		"grid:\n  storm_bucket: [50000, 150000]\n")
	out = filepath.Join(dir, "sweep")
	runToyApp(t, reg, "sweep", "--config", swCfg, "--workers", "1", "--quiet", "--out", out)
	require.Contains(t, summaryText(t, out), "storm_bucket")

	// agents-arrive: the toy as the site's policy, three days of the excerpt,
	// one agent staying half a day at one seed.
	out = filepath.Join(dir, "arrive")
	runToyApp(t, reg, "agents-arrive", "--trace", "sdsc-sp2-excerpt", "--windows", "1x3d", "--stay", "12h", "--max-k", "1", "--nseeds", "1",
		"--policies", "random", "--workers", "1", "--quiet", "--out", out)
	require.Contains(t, summaryText(t, out), `"random"`)

	// Without the toy in its registry, the command line refuses the name.
	app := newApp(policies.Default)
	app.Writer, app.ErrWriter = &bytes.Buffer{}, &bytes.Buffer{}
	err := app.Run([]string{"bursar-sweep", "trace", "--policies", "random", "--quiet", "--out", filepath.Join(dir, "no")})
	require.ErrorContains(t, err, `unknown policy "random"`)
}
