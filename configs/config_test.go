package configs

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/bursar-hpc/bursar/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEmbeddedConfigsExpandToThePaperGrid(t *testing.T) {
	// experiments.md: (6 headroom + 5 grace) + 6 storms + 6 B × 3 series
	// points, 3 seeds each: 105 runs; --quick: one seed, three values each.
	want := map[string][2]int{"latency-price": {33, 6}, "overbooking": {18, 3}, "bucket": {54, 9}}
	full, quick := 0, 0
	for _, name := range Experiments {
		c, err := Default(name)
		require.NoError(t, err, name)
		assert.Equal(t, name, c.Experiment)
		pf, err := c.Plan(false, nil)
		require.NoError(t, err)
		pq, err := c.Plan(true, nil)
		require.NoError(t, err)
		assert.Equal(t, []int64{7, 11, 13}, pf.Seeds)
		assert.Equal(t, []int64{7}, pq.Seeds)
		assert.Equal(t, want[name], [2]int{pf.NumRuns(), pq.NumRuns()}, name)
		full += pf.NumRuns()
		quick += pq.NumRuns()
	}
	assert.Equal(t, 105, full)
	assert.Equal(t, 18, quick)
}

func TestEmbeddedConfigsSetTheExperimentsKnobs(t *testing.T) {
	lp, err := Default("latency-price")
	require.NoError(t, err)
	p, err := lp.Plan(false, nil)
	require.NoError(t, err)
	var headroom, grace []float64
	for _, pt := range p.Points {
		assert.True(t, pt.Scenario.Probe, "latency-price runs with the probe on")
		require.Len(t, pt.Swept, 1)
		switch pt.Series {
		case "headroom":
			headroom = append(headroom, pt.Swept[0].Value)
			assert.Equal(t, 60, pt.Scenario.Grace, "the headroom sweep keeps the default grace")
		case "grace":
			grace = append(grace, pt.Swept[0].Value)
			assert.Equal(t, 160, pt.Scenario.Headroom, "the grace sweep keeps the default headroom")
		}
	}
	assert.Equal(t, []float64{16, 32, 64, 128, 192, 256}, headroom)
	assert.Equal(t, []float64{15, 30, 60, 90, 120}, grace)

	b, err := Default("bucket")
	require.NoError(t, err)
	p, err = b.Plan(true, nil)
	require.NoError(t, err)
	got := map[string][]float64{}
	for _, pt := range p.Points {
		assert.False(t, pt.Scenario.Probe)
		got[pt.Series] = append(got[pt.Series], pt.Scenario.StormBucket)
		switch pt.Series {
		case "contended":
			assert.Equal(t, 3000, pt.Scenario.Tasks)
			assert.False(t, pt.Scenario.Leaky)
		case "idle-prepaid":
			assert.Equal(t, 0, pt.Scenario.Tasks)
			assert.False(t, pt.Scenario.Leaky)
		case "idle-leaky":
			assert.Equal(t, 0, pt.Scenario.Tasks)
			assert.True(t, pt.Scenario.Leaky)
		}
	}
	for _, s := range []string{"contended", "idle-prepaid", "idle-leaky"} {
		assert.Equal(t, []float64{50000, 150000, 600000}, got[s], s)
	}

	o, err := Default("overbooking")
	require.NoError(t, err)
	p, err = o.Plan(false, nil)
	require.NoError(t, err)
	for i, pt := range p.Points {
		assert.Equal(t, i+1, pt.Scenario.Storms)
		assert.True(t, pt.Scenario.Probe)
	}
}

func TestPlanOrderAndSeeds(t *testing.T) {
	c, err := Parse("t.yaml", []byte(`
experiment: order
seeds: [3, 1]
fixed: {probe: true}
grid:
  grace: [30, 60]
  headroom: [16, 32, 64]
series:
  - name: a
  - name: b
    fixed: {tasks: 10}
`))
	require.NoError(t, err)
	p, err := c.Plan(false, nil)
	require.NoError(t, err)
	require.Len(t, p.Points, 12)
	// The first axis turns slowest, series in the order written.
	assert.Equal(t, `series "a", grace=30, headroom=16`, p.Points[0].Label())
	assert.Equal(t, `series "a", grace=30, headroom=32`, p.Points[1].Label())
	assert.Equal(t, `series "a", grace=60, headroom=16`, p.Points[3].Label())
	assert.Equal(t, `series "b", grace=30, headroom=16`, p.Points[6].Label())
	assert.Equal(t, 10, p.Points[6].Scenario.Tasks)
	assert.Equal(t, 3000, p.Points[0].Scenario.Tasks)
	// Run i is point i/2 with seed i%2, in the config's seed order.
	pt, s := p.Run(3)
	assert.Same(t, &p.Points[1], pt)
	assert.Equal(t, int64(1), s.Seed)
	assert.Equal(t, 32, s.Headroom)

	p, err = c.Plan(true, []int64{5, 6, 7})
	require.NoError(t, err)
	assert.Equal(t, []int64{5, 6, 7}, p.Seeds)
	assert.Equal(t, 36, p.NumRuns())

	_, err = c.Plan(false, []int64{5, 5})
	assert.ErrorContains(t, err, "seed 5 is listed twice")
	_, err = c.Plan(false, []int64{})
	assert.ErrorContains(t, err, "no seeds")
}

func TestNoSeriesIsOneDefaultSeries(t *testing.T) {
	c, err := Parse("t.yaml", []byte("experiment: one\nseeds: [7]\n"))
	require.NoError(t, err)
	p, err := c.Plan(false, nil)
	require.NoError(t, err)
	require.Len(t, p.Points, 1)
	assert.Equal(t, "default", p.Points[0].Series)
	assert.Equal(t, engine.DefaultScenario(), p.Points[0].Scenario)
}

// TestConfigErrors checks that every mistake names the file, the line and
// the key.
func TestConfigErrors(t *testing.T) {
	cases := []struct {
		name, src string
		line      int
		key, msg  string
	}{
		{"unknown top-level key", "experiment: x\nseeds: [7]\ngird: {headroom: [1]}\n", 3, "gird", `did you mean "grid"`},
		{"unknown series key", "experiment: x\nseeds: [7]\nseries:\n  - name: a\n    fixd: {tasks: 0}\n", 5, "series[0].fixd", "unknown key"},
		{"unknown list key", "experiment: x\nseeds: {full: [7], quik: [7]}\n", 2, "seeds.quik", "unknown key"},
		{"unknown knob in fixed", "experiment: x\nseeds: [7]\nfixed:\n  headrom: 32\n", 4, "fixed.headrom", `no scenario knob named "headrom"; did you mean "headroom"`},
		{"unknown knob in a series grid", "experiment: x\nseeds: [7]\nseries:\n  - name: a\n    grid:\n      stroms: [1, 2]\n", 6, "series[0].grid.stroms", `no scenario knob named "stroms"`},
		{"seed as a knob", "experiment: x\nseeds: [7]\nfixed: {seed: 3}\n", 3, "fixed.seed", "seeds list"},
		{"string for an int knob", "experiment: x\nseeds: [7]\nfixed:\n  headroom: \"32\"\n", 4, "fixed.headroom", `headroom takes a whole number, got "32"`},
		{"fraction for an int knob", "experiment: x\nseeds: [7]\ngrid:\n  grace: [15,\n    30.5]\n", 5, "grid.grace[1]", "whole number"},
		{"number for a bool knob", "experiment: x\nseeds: [7]\nfixed: {leaky: 1}\n", 3, "fixed.leaky", "leaky takes true or false, got 1"},
		{"bool for a float knob", "experiment: x\nseeds: [7]\nfixed: {storm_bucket: true}\n", 3, "fixed.storm_bucket", "storm_bucket takes a number, got the boolean true"},
		{"list for a fixed knob", "experiment: x\nseeds: [7]\nfixed: {pool: [512]}\n", 3, "fixed.pool", "got a list"},
		{"scalar for a grid axis", "experiment: x\nseeds: [7]\ngrid: {pool: 512}\n", 3, "grid.pool", "want a list"},
		{"NaN", "experiment: x\nseeds: [7]\nfixed: {sci_rate: .nan}\n", 3, "fixed.sci_rate", "not a finite number"},
		{"negative headroom", "experiment: x\nseeds: [7]\ngrid:\n  headroom: [16, -5]\n", 4, "grid.headroom[1]", "knob headroom must not be negative, got -5"},
		{"storms beyond the pool", "experiment: x\nseeds: [7]\nseries:\n  - name: s\n    grid:\n      storms: [1, 30]\n", 6, "series[0].grid.storms[1]", "exceed the pool"},
		{"out of range in the quick list only", "experiment: x\nseeds: [7]\ngrid:\n  grace: {full: [15], quick: [-1]}\n", 4, "grid.grace.quick[0]", "grace must not be negative"},
		{"out-of-range fixed value", "experiment: x\nseeds: [7]\nfixed:\n  ticks: 0\n", 4, "fixed.ticks", "ticks must be at least 1"},
		{"negative seed", "experiment: x\nseeds: [7,\n  -1]\n", 3, "seeds[1]", "must not be negative"},
		{"duplicate seed", "experiment: x\nseeds: [7, 11, 7]\n", 2, "seeds[2]", "listed twice"},
		{"duplicate grid value", "experiment: x\nseeds: [7]\ngrid: {grace: [15, 15]}\n", 3, "grid.grace[1]", "listed twice"},
		{"duplicate key", "experiment: x\nseeds: [7]\nfixed: {grace: 15}\nfixed: {grace: 30}\n", 4, "fixed", "key given twice (first at line 3)"},
		{"duplicate series", "experiment: x\nseeds: [7]\nseries:\n  - name: a\n  - name: a\n", 5, "series[1].name", "defined twice"},
		{"series without name", "experiment: x\nseeds: [7]\nseries:\n  - fixed: {tasks: 0}\n", 4, "series[0].name", "missing"},
		{"fixed and swept", "experiment: x\nseeds: [7]\nfixed: {grace: 15}\ngrid:\n  grace: [30]\n", 5, "grid.grace", "both fixed (line 3) and swept"},
		{"series resets a swept knob", "experiment: x\nseeds: [7]\ngrid:\n  grace: [30]\nseries:\n  - name: a\n    fixed: {grace: 15}\n", 7, "series[0].fixed.grace", "swept by the top-level grid (line 4)"},
		{"missing experiment", "seeds: [7]\n", 1, "experiment", "missing"},
		{"missing seeds", "experiment: x\n", 1, "seeds", "missing"},
		{"bad experiment name", "experiment: ../etc\nseeds: [7]\n", 1, "experiment", "not a usable name"},
		{"empty list", "experiment: x\nseeds: []\n", 2, "seeds", "empty"},
		{"alias", "experiment: x\nseeds: &s [7]\ngrid: {grace: *s}\n", 3, "", "aliases"},
		{"not a mapping", "- experiment: x\n", 1, "", "want a mapping"},
		{"yaml syntax", "experiment: x\nseeds: [7]\n  grid: 1\n", 3, "", "invalid YAML"}, // the misindented line, not the one yaml.v3 names
		{"two documents", "experiment: x\nseeds: [7]\n---\nexperiment: y\n", 3, "", "second YAML document"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("cfg/exp.yaml", []byte(tc.src))
			require.Error(t, err)
			var ce *Error
			require.True(t, errors.As(err, &ce), "want a *configs.Error, got %T: %v", err, err)
			assert.Equal(t, "cfg/exp.yaml", ce.File)
			assert.Equal(t, tc.line, ce.Line, "line of %v", err)
			assert.Equal(t, tc.key, ce.Key, "key of %v", err)
			assert.Contains(t, err.Error(), tc.msg)
			prefix := "cfg/exp.yaml:" + strconv.Itoa(tc.line) + ": "
			if tc.key != "" {
				prefix += tc.key + ": "
			}
			assert.True(t, strings.HasPrefix(err.Error(), prefix), "%q should start with %q", err.Error(), prefix)
		})
	}
}

func TestOutOfRangeWrapsInvalidScenario(t *testing.T) {
	_, err := Parse("x.yaml", []byte("experiment: x\nseeds: [7]\nfixed: {pool: 100}\n"))
	require.Error(t, err)
	assert.ErrorIs(t, err, engine.ErrInvalidScenario)
}

func TestEmptyConfig(t *testing.T) {
	for _, src := range []string{"", "# only a comment\n"} {
		_, err := Parse("e.yaml", []byte(src))
		assert.ErrorContains(t, err, "e.yaml: the config is empty")
	}
}

func TestRunawayGridIsRefusedBeforeExpanding(t *testing.T) {
	src := "experiment: x\nseeds: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\ngrid:\n"
	for _, k := range []string{"headroom", "grace", "tasks", "sample_every", "storm_rate", "sci_rate"} {
		src += "  " + k + ": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n"
	}
	_, err := Parse("big.yaml", []byte(src))
	assert.ErrorContains(t, err, "more than 100000 runs")
}

func TestLoadNamesTheFile(t *testing.T) {
	_, err := Load("no/such/file.yaml")
	assert.ErrorContains(t, err, "no/such/file.yaml")
	_, err = DefaultSource("nope")
	assert.ErrorContains(t, err, "latency-price, overbooking, bucket")
}

// FuzzParse feeds the parser arbitrary bytes: it must never panic, every
// failure must be located in the file, and every config it accepts must
// expand in both modes.
func FuzzParse(f *testing.F) {
	for _, name := range Experiments {
		src, err := DefaultSource(name)
		require.NoError(f, err)
		f.Add(src)
	}
	f.Add([]byte("experiment: x\nseeds: [7]\n"))
	f.Add([]byte("experiment: x\nseeds: [7]\npolicy: {name: quota, borrowing_limit: 3}\nseries: [{name: a, policy: fifo}, {name: b}]\n"))
	f.Add([]byte("experiment: x\nseeds: {full: [7, 11], quick: [7]}\ngrid: {storms: [1, 2], leaky: [true, false]}\n"))
	f.Add([]byte("experiment: x\nseeds: [7]\nfixed: {storm_start: 6000, storm_end: 7000}\n"))
	f.Add([]byte("experiment: x\nseeds: [7]\ngrid:\n  headroom: [16, -5]\n"))
	f.Add([]byte("experiment: x\nseeds: &a [7]\nfixed: *a\n"))
	f.Add([]byte("experiment: x\nseeds: [7]\nseries: [{name: a, grid: {pool: [0x200, 1e3]}}]\n"))
	f.Add([]byte("{experiment: x, seeds: [7], fixed: {sci_bucket: .inf}}"))
	f.Add([]byte("experiment: x\nseeds: [7]\n---\n"))
	f.Add([]byte("\t- : : ["))
	f.Add([]byte("experiment: x\nseeds: [7]\nbootstrap: {seed: 18446744073709551615, resamples: 1e3}\n"))
	f.Add([]byte("experiment: x\nseeds: [7]\nbootstrap: {seed: 3, resamples: 2000}\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		c, err := Parse("fuzz.yaml", src)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for _, quick := range []bool{false, true} {
			p, err := c.Plan(quick, nil)
			if err != nil {
				t.Fatalf("accepted config does not expand (quick=%v): %v", quick, err)
			}
			if p.NumRuns() < 1 || p.NumRuns() > MaxRuns {
				t.Fatalf("plan has %d runs", p.NumRuns())
			}
			if p.Bootstrap.Resamples < 1 || p.Bootstrap.Resamples > maxResamples {
				t.Fatalf("plan has %d bootstrap resamples", p.Bootstrap.Resamples)
			}
			for i := range p.Points {
				s := p.Points[i].Scenario
				if err := s.Validate(); err != nil {
					t.Fatalf("accepted config has an invalid scenario: %v", err)
				}
			}
		}
	})
}

func TestBootstrapKey(t *testing.T) {
	c, err := Parse("b.yaml", []byte("experiment: e\nseeds: [7]\n"))
	require.NoError(t, err)
	assert.Equal(t, DefaultBootstrap, c.Bootstrap)
	p, err := c.Plan(false, nil)
	require.NoError(t, err)
	assert.Equal(t, DefaultBootstrap, p.Bootstrap)

	c, err = Parse("b.yaml", []byte("experiment: e\nseeds: [7]\nbootstrap: {seed: 42}\n"))
	require.NoError(t, err)
	assert.Equal(t, Bootstrap{Seed: 42, Resamples: DefaultBootstrap.Resamples}, c.Bootstrap)

	for _, tc := range []struct{ src, want string }{
		{"bootstrap: {seed: -1}", "b.yaml:3: bootstrap.seed: the bootstrap seed must not be negative"},
		{"bootstrap: {resamples: 0}", "b.yaml:3: bootstrap.resamples: want between 1"},
		{"bootstrap: {resamples: 2.5}", "b.yaml:3: bootstrap.resamples: want a whole number"},
		{"bootstrap: {sed: 3}", "b.yaml:3: bootstrap.sed: unknown key"},
		{"bootstrap: {seed: 18446744073709551615}", "b.yaml:3: bootstrap.seed: 18446744073709551615 is out of range"},
	} {
		_, err := Parse("b.yaml", []byte("experiment: e\nseeds: [7]\n"+tc.src+"\n"))
		assert.ErrorContains(t, err, tc.want, tc.src)
	}
}

// Seeds the caller gives (--seeds, --nseeds) that a fitting grid cannot
// take are refused as too many seeds, with how many fit; the config's
// own seeds, or a grid too big for one seed, stay the file's fault.
func TestTooManyGivenSeedsAreNotTheGridsFault(t *testing.T) {
	cfg, err := Parse("g.yaml", []byte("experiment: x\nseeds: [7]\ngrid:\n  headroom: [16, 32, 64, 128]\n"))
	require.NoError(t, err)
	seeds := make([]int64, 30_000)
	for i := range seeds {
		seeds[i] = int64(i)
	}
	_, err = cfg.Plan(false, seeds)
	var many *TooManySeedsError
	require.ErrorAs(t, err, &many)
	assert.Equal(t, TooManySeedsError{File: "g.yaml", Seeds: 30_000, Points: 4}, *many)
	assert.EqualError(t, err, "30000 seeds × the 4 grid points of g.yaml = 120000 runs, more than the 100000 one command may run; give at most 25000 seeds")
	_, err = cfg.Plan(false, seeds[:25_000])
	require.NoError(t, err, "25000 seeds × 4 points is exactly the bound")

	src := "experiment: x\nseeds: [7]\ngrid:\n"
	for _, k := range []string{"headroom", "grace", "tasks", "sample_every", "storm_rate", "sci_rate"} {
		src += "  " + k + ": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n"
	}
	_, err = Parse("big.yaml", []byte(src))
	require.Error(t, err)
	assert.NotErrorAs(t, err, &many)
	assert.ErrorContains(t, err, "big.yaml: grid: the grid expands to more than 100000 runs")
}

// A config's platform key sets the machine's nodes, their GPUs the pool
// of every run; its mistakes name the file, the line and the key.
func TestConfigPlatform(t *testing.T) {
	base := "experiment: e\nseeds: [7]\nseries:\n  - name: s\n    policy: fifo\n"
	c, err := Parse("c.yaml", []byte(base+"platform: {nodes: 64, gpus_per_node: 8}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s := c.Base(); s.Platform == nil || s.Platform.String() != "64x8" || s.Pool != 512 {
		t.Fatalf("base scenario: platform %v, pool %d; want 64x8 and 512", s.Platform, s.Pool)
	}
	_, err = Parse("c.yaml", []byte(base+"platform:\n  nodes: 64\n  gpus_per_node: -8\n"))
	if err == nil || err.Error() != "c.yaml:8: platform.gpus_per_node: -8 is not in [1, 1024]" {
		t.Fatalf("got %v", err)
	}
	// 16 × 8 GPUs cannot hold the paper's guarantees: the config is refused.
	_, err = Parse("c.yaml", []byte(base+"platform: {nodes: 16, gpus_per_node: 8}\n"))
	if err == nil || !strings.Contains(err.Error(), "exceed the pool of 128") {
		t.Fatalf("the paper's scenario on 128 GPUs: %v", err)
	}
}
