package arrive

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bursar-hpc/bursar/trace"
	"github.com/bursar-hpc/bursar/tracestudy"
)

var update = flag.Bool("update", false, "rewrite testdata/reduced-summary.json from the reduced study")

// reducedStudy is the committed reduced version of the default study:
// two windows of 4 days of the embedded excerpt (half a day of warm-up
// and cool-down), the agents staying 12 h, k ≤ 2, one seed, fifo and
// fairshare both ways and the bursar line. It exercises everything the
// default study does (windows, the log's history, the arrival draw, both
// modes, the k = 0 dedupe, intervals over windows) in seconds.
func reducedStudy(t *testing.T) (*Study, *trace.Workload) {
	t.Helper()
	st := NewStudy()
	st.Policies, st.MaxK, st.Seeds, st.Stay = []string{"fifo", "fairshare", BursarLine}, 2, []int64{1}, 12*3600
	w, err := st.Lay(tracestudy.BuiltinExcerpt, trace.Options{}, 2, 4, 12*3600, 12*3600)
	require.NoError(t, err)
	require.NoError(t, st.Check())
	st.Plan()
	return st, w
}

// TestReducedSummaryReproduces: the committed reduced summary
// (testdata/reduced-summary.json) is what the code computes now, byte for
// byte; run with -update after a change that is meant to move it.
func TestReducedSummaryReproduces(t *testing.T) {
	if testing.Short() {
		t.Skip("replays the reduced study")
	}
	st, w := reducedStudy(t)
	rs, err := st.ExecutePlan(context.Background(), st.NewPlan(""), sweepOptions(2))
	require.NoError(t, err)
	s := &Summary{Trace: tracestudy.Info(w, tracestudy.ExcerptName, 0, 0), Study: st, Warmup: 12 * 3600, Cooldown: 12 * 3600, Runs: rs}
	got, err := s.marshal()
	require.NoError(t, err)
	path := filepath.Join("testdata", "reduced-summary.json")
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got), "the reduced study no longer reproduces %s (go test ./arrive -run TestReducedSummaryReproduces -update rewrites it)", path)
}

// committedSummary is results/agents-arrive/summary.json, the default
// study's committed output that README.md's findings quote.
type committedSummary struct {
	AgentPhi  float64          `json:"agent_phi"`
	Windows   []map[string]any `json:"windows"`
	Points    []jsonPoint      `json:"points"`
	Contrasts []jsonContrast   `json:"contrasts"`
}

type jsonIv struct {
	Mean, Lo, Hi *float64
	N            int
	Lower        bool `json:"lower_bound"`
}

type jsonPoint struct {
	Policy, Mode string
	K            int
	Converged    bool
	Metrics      map[string]jsonIv
}

type jsonContrast struct {
	Policy, A, B, Metric string
	K                    int
	Mean, Lo, Hi         *float64
	N, Below, Above      int
	Converged            bool
	P                    *float64 `json:"p"`
	PAdjusted            *float64 `json:"p_adjusted"`
	Adjustment           string
}

func readCommitted(t *testing.T) *committedSummary {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "results", "agents-arrive", "summary.json"))
	require.NoError(t, err)
	var s committedSummary
	require.NoError(t, json.Unmarshal(b, &s))
	return &s
}

func (s *committedSummary) contrast(t *testing.T, policy, a, b, metric string, k int) jsonContrast {
	t.Helper()
	for _, c := range s.Contrasts {
		if c.Policy == policy && c.A == a && c.B == b && c.Metric == metric && c.K == k {
			return c
		}
	}
	t.Fatalf("no contrast %s %s − %s %s at k=%d", policy, a, b, metric, k)
	return jsonContrast{}
}

func (s *committedSummary) point(t *testing.T, policy, mode string, k int) jsonPoint {
	t.Helper()
	for _, p := range s.Points {
		if p.Policy == policy && p.Mode == mode && p.K == k {
			return p
		}
	}
	t.Fatalf("no point %s %s k=%d", policy, mode, k)
	return jsonPoint{}
}

// siteBut are the site policies of before but static, the ones that let
// the agents past their own partition: the README's findings were made on
// them, and quota-fair is the quota of before (static-share the static),
// byte for byte. quota and static at their new defaults are checked
// apart.
var siteBut = []string{"fifo", "priority", "fairshare", "quota-fair", "budget"}

// TestREADMEAgentsArriveFindings checks each finding README.md ("When
// agents arrive") states against the committed default run
// (results/agents-arrive/summary.json): 4 windows of 7 days of the full
// SDSC-SP2 log, 3 seeds each, 95 % t intervals over windows.
func TestREADMEAgentsArriveFindings(t *testing.T) {
	s := readCommitted(t)
	require.Len(t, s.Windows, 4)
	const K = 8
	// Every site policy's runs converged (the findings rest on them).
	for _, p := range append([]string{"static-share"}, siteBut...) {
		for _, m := range Modes {
			for k := 0; k <= K; k++ {
				require.True(t, s.point(t, p, m, k).Converged, "%s %s k=%d", p, m, k)
			}
		}
	}
	// 1. Eight unmetered agents raise the users' mean bounded slowdown
	// under every site policy but static: in all 4 windows under
	// fairshare, quota-fair and budget, in 3 of 4 under fifo and
	// priority; only budget's interval over the 4 windows excludes 0.
	for _, p := range siteBut {
		c := s.contrast(t, p, ModeUnmetered, "k=0", "users_mean_bsld", K)
		above := 4
		if p == "fifo" || p == "priority" {
			above = 3
		}
		require.Equal(t, above, c.Above, p)
		require.Positive(t, *c.Mean, p)
		require.Equal(t, p == "budget", *c.Lo > 0, p)
	}
	// 2. One storm (k = 1): metering cuts its GPU-hours under each of
	// these policies, in all 4 windows under priority, fairshare and
	// budget (3 of 4 under fifo and quota-fair), with an interval below 0
	// under fairshare and budget.
	for _, p := range siteBut {
		c := s.contrast(t, p, ModeMetered, ModeUnmetered, "agent_gpu_hours", 1)
		below := 4
		if p == "fifo" || p == "quota-fair" {
			below = 3
		}
		require.Equal(t, below, c.Below, p)
		require.Equal(t, p == "fairshare" || p == "budget", *c.Hi < 0, p)
	}
	// ... and lowers the users' slowdown in every window under fairshare
	// and budget (intervals include 0); under quota-fair it raises it in
	// every window.
	for p, below := range map[string]int{"fairshare": 4, "budget": 4} {
		c := s.contrast(t, p, ModeMetered, ModeUnmetered, "users_mean_bsld", 1)
		require.Equal(t, below, c.Below, p)
		require.Positive(t, *c.Hi, p)
	}
	require.Equal(t, 4, s.contrast(t, "quota-fair", ModeMetered, ModeUnmetered, "users_mean_bsld", 1).Above)
	// 3. At k = 8, φ = 1, the meter still bites on the agents: it cuts
	// their GPU-hours in every window under every site policy but static
	// (an interval below 0 under fairshare, quota-fair and budget); the
	// users' slowdown falls in every window under fairshare and budget,
	// in 3 of 4 under quota-fair, 2 of 4 under priority, and rises in 3
	// of 4 under fifo; no interval of the slowdown excludes 0.
	require.Equal(t, 1.0, s.AgentPhi)
	for _, p := range siteBut {
		g := s.contrast(t, p, ModeMetered, ModeUnmetered, "agent_gpu_hours", K)
		require.Equal(t, 4, g.Below, p)
		require.Equal(t, p != "fifo" && p != "priority", *g.Hi < 0, p)
		c := s.contrast(t, p, ModeMetered, ModeUnmetered, "users_mean_bsld", K)
		below := map[string]int{"fifo": 1, "priority": 2, "fairshare": 4, "quota-fair": 3, "budget": 4}[p]
		require.Equal(t, below, c.Below, p)
		require.Less(t, *c.Lo, 0.0, p)
		require.Greater(t, *c.Hi, 0.0, p)
	}
	// 4. Under static-share the meter changes nothing the users see at
	// any k: the agents' partition (their share, 13 of 128 GPUs) holds
	// them below their envelopes. (The agents' GPU-hours agree to the
	// sums' rounding, 4e-14.)
	for k := 1; k <= K; k++ {
		for _, key := range []string{"users_mean_bsld", "agent_gpu_hours"} {
			c := s.contrast(t, "static-share", ModeMetered, ModeUnmetered, key, k)
			require.InDelta(t, 0, *c.Mean, 1e-9, "k=%d %s", k, key)
		}
	}
	// ... and the re-cut partitions, not the agents' load, move the
	// users: the same at k = 1 and k = 8 (73 denied per window against
	// 69 at k = 0, a mean bounded slowdown of 229 against 249).
	s0, s1, s8 := s.point(t, "static-share", ModeUnmetered, 0), s.point(t, "static-share", ModeUnmetered, 1), s.point(t, "static-share", ModeUnmetered, K)
	require.InDelta(t, 69, *s0.Metrics["users_denied"].Mean, 0.5)
	require.InDelta(t, 73, *s1.Metrics["users_denied"].Mean, 0.5)
	require.Equal(t, *s1.Metrics["users_mean_bsld"].Mean, *s8.Metrics["users_mean_bsld"].Mean)
	require.InDelta(t, 249, *s0.Metrics["users_mean_bsld"].Mean, 0.5)
	require.InDelta(t, 229, *s1.Metrics["users_mean_bsld"].Mean, 0.5)
	// 5. Metering at φ = 1 costs the science agent: adaptive-sci's
	// science metered is 46–83 % of unmetered at every k ≥ 3 under every
	// site policy but static and static-share, lowest at k = 8; at k = 3
	// lower in every window, every interval below 0 but priority's.
	for _, p := range siteBut {
		var at8 float64
		for k := 3; k <= K; k++ {
			un := s.point(t, p, ModeUnmetered, k).Metrics["adaptive_science"]
			met := s.point(t, p, ModeMetered, k).Metrics["adaptive_science"]
			r := *met.Mean / *un.Mean
			require.True(t, r >= 0.455 && r < 0.835, "%s k=%d: %v", p, k, r) // 46–83 %, rounded
			if k == K {
				at8 = r
			}
		}
		for k := 3; k < K; k++ {
			un := s.point(t, p, ModeUnmetered, k).Metrics["adaptive_science"]
			met := s.point(t, p, ModeMetered, k).Metrics["adaptive_science"]
			require.Greater(t, *met.Mean / *un.Mean, at8, "%s k=%d", p, k)
		}
		c := s.contrast(t, p, ModeMetered, ModeUnmetered, "adaptive_science", 3)
		require.Equal(t, 4, c.Below, p)
		require.Equal(t, p != "priority", *c.Hi < 0, p)
	}
}

// The README's finding on quota at Kueue's defaults and static's condo
// partitions, on the committed default run.
func TestREADMEAgentsArriveKueueAndCondo(t *testing.T) {
	s := readCommitted(t)
	const K = 8
	c := s.contrast(t, "quota", ModeUnmetered, "k=0", "users_mean_bsld", K)
	require.Equal(t, 4, c.Above)
	require.InDelta(t, 20.4, *c.Mean, 0.05)
	g := s.contrast(t, "quota", ModeMetered, ModeUnmetered, "agent_gpu_hours", 1)
	require.Equal(t, 4, g.Below)
	require.InDelta(t, -723, *g.Mean, 0.5)
	require.Positive(t, *g.Hi, "the interval includes 0")
	d := s.contrast(t, "quota", ModeUnmetered, "k=0", "during_mean_bsld", K)
	require.Less(t, *d.Mean, 1.5**c.Mean, "not twice the window's")
	for k := 1; k <= K; k++ {
		for _, m := range []string{ModeMetered, ModeUnmetered} {
			require.Zero(t, *s.point(t, "static", m, k).Metrics["agent_gpu_hours"].Mean, "k=%d %s", k, m)
		}
	}
}

// TestREADMEAgentsArriveWhomAndBursar: the README's "whom it hurts" and
// "bursar converges at every k" findings, on the committed default run.
func TestREADMEAgentsArriveWhomAndBursar(t *testing.T) {
	s := readCommitted(t)
	const K = 8
	// The users submitting during the stay lose more than the whole
	// window under priority, fairshare, quota and budget: about twice,
	// in every window but one of priority's.
	for _, p := range []string{"priority", "fairshare", "quota-fair", "budget"} {
		during := s.contrast(t, p, ModeUnmetered, "k=0", "during_mean_bsld", K)
		whole := s.contrast(t, p, ModeUnmetered, "k=0", "users_mean_bsld", K)
		above := 4
		if p == "priority" {
			above = 3
		}
		require.Equal(t, above, during.Above, p)
		require.Greater(t, *during.Mean, 1.5**whole.Mean, p)
	}
	require.Negative(t, *s.contrast(t, "fifo", ModeUnmetered, "k=0", "during_mean_bsld", K).Mean)
	// Bursar as the whole site policy (each group metered, a scavenger
	// for idle GPUs, the agents at φ = 1): every replay converged at
	// k = 0 and k = 8; at k = 1 to 7 some stop at the horizon, and at
	// k = 2, 5 and 6 some of the users' jobs are left unfinished (3.1,
	// 1.7 and 1.3 a window on average). The users' mean bounded
	// slowdown is 24.3 at k = 0 and 23.3 at k = 8.
	for k := 0; k <= K; k++ {
		pt := s.point(t, BursarLine, ModeMetered, k)
		require.Equal(t, k == 0 || k == K, pt.Converged, "k=%d", k)
		unf := map[int]float64{2: 3.08, 5: 1.67, 6: 1.33}[k]
		require.InDelta(t, unf, *pt.Metrics["users_unfinished"].Mean, 0.005, "k=%d", k)
	}
	require.InDelta(t, 24.3, *s.point(t, BursarLine, ModeMetered, 0).Metrics["users_mean_bsld"].Mean, 0.05)
	require.InDelta(t, 23.3, *s.point(t, BursarLine, ModeMetered, K).Metrics["users_mean_bsld"].Mean, 0.05)
	// At k = 1 metered, the users' slowdown under fairshare is within 1 %
	// of k = 0, under budget 22 % above it.
	for p, want := range map[string]float64{"fairshare": 0.005, "budget": 0.216} {
		k0 := *s.point(t, p, ModeUnmetered, 0).Metrics["users_mean_bsld"].Mean
		m1 := *s.point(t, p, ModeMetered, 1).Metrics["users_mean_bsld"].Mean
		require.InDelta(t, want, m1/k0-1, 0.005, p)
	}
}

// The README's reading of agents-arrive's contrasts (docs/studies.md
// §5.1): each carries its exact signed-rank p over the 4 windows and its
// Benjamini–Hochberg-adjusted p over every tested contrast; no raw p is
// below 2/2⁴ = 0.125, and after BH the smallest is 0.31, so every effect
// the README states is descriptive.
func TestREADMEAgentsArriveAdjusted(t *testing.T) {
	s := readCommitted(t)
	tested, minAdj := 0, 1.0
	for _, c := range s.Contrasts {
		require.Equal(t, "BH", c.Adjustment)
		if c.P == nil {
			require.Nil(t, c.PAdjusted)
			continue
		}
		tested++
		require.GreaterOrEqual(t, *c.P, 0.125, "%+v", c)
		require.GreaterOrEqual(t, *c.PAdjusted, *c.P, "%+v", c)
		minAdj = min(minAdj, *c.PAdjusted)
	}
	require.Equal(t, 912, tested, "the contrasts tested")
	require.InDelta(t, 0.31, minAdj, 0.005, "the smallest BH-adjusted p")
}
