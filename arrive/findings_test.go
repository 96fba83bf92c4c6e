package arrive

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"math"
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
	AgentPhi   float64          `json:"agent_phi"`
	Windows    []map[string]any `json:"windows"`
	WindowRule struct {
		N              int `json:"n"`
		Days           float64
		Rule           string
		SeedsPerWindow int `json:"seeds_per_window"`
	} `json:"window_rule"`
	Points    []jsonPoint    `json:"points"`
	Contrasts []jsonContrast `json:"contrasts"`
	Primary   []jsonContrast `json:"primary"`
	Runs      []struct {
		Policy, Mode string
		K, Window    int
		Converged    bool
		Users        struct{ Unfinished int }
	} `json:"runs"`
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

type jsonRatio struct {
	Estimate, Lo, Hi float64
}

type jsonContrast struct {
	Policy, A, B, Metric string
	K                    int
	Statistic            string
	HL                   *float64 `json:"hodges_lehmann"`
	Lo, Hi               *float64
	AsRatio              *jsonRatio `json:"as_ratio"`
	N, Below, Above      int
	Converged            bool
	P                    *float64 `json:"p"`
	PAdjusted            *float64 `json:"p_adjusted"`
	Adjustment           string
	AgentPhi             *float64 `json:"agent_phi"`
	Finding              string
}

func readCommitted(t *testing.T) *committedSummary {
	t.Helper()
	return readSummary(t, filepath.Join("..", "results", "agents-arrive", "summary.json"))
}

// readSummary reads a committed agents-arrive summary.
func readSummary(t *testing.T, path string) *committedSummary {
	t.Helper()
	b, err := os.ReadFile(path)
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

// ratio is a log-ratio contrast's Hodges–Lehmann estimate and interval
// as ratios, checked against the README's two-decimal figures.
func ratio(t *testing.T, c jsonContrast, est, lo, hi float64) {
	t.Helper()
	require.NotNil(t, c.AsRatio, "%s %s %s k=%d is no ratio", c.Policy, c.A, c.Metric, c.K)
	require.InDelta(t, est, c.AsRatio.Estimate, 0.005, "%s %s %s k=%d estimate", c.Policy, c.A, c.Metric, c.K)
	if !math.IsNaN(lo) {
		require.InDelta(t, lo, c.AsRatio.Lo, 0.005, "%s %s %s k=%d lo", c.Policy, c.A, c.Metric, c.K)
		require.InDelta(t, hi, c.AsRatio.Hi, 0.005, "%s %s %s k=%d hi", c.Policy, c.A, c.Metric, c.K)
	}
}

// diff is a difference contrast's Hodges–Lehmann estimate and interval,
// to the README's whole units.
func diff(t *testing.T, c jsonContrast, est, lo, hi float64) {
	t.Helper()
	require.Nil(t, c.AsRatio)
	require.InDelta(t, est, *c.HL, 0.5, "%s %s %s k=%d estimate", c.Policy, c.A, c.Metric, c.K)
	if !math.IsNaN(lo) {
		require.InDelta(t, lo, *c.Lo, 0.5, "%s %s %s k=%d lo", c.Policy, c.A, c.Metric, c.K)
		require.InDelta(t, hi, *c.Hi, 0.5, "%s %s %s k=%d hi", c.Policy, c.A, c.Metric, c.K)
	}
}

var none = math.NaN()

// requirePrimaryFamily checks a committed agents-arrive summary's
// design before its numbers: 12 windows of 7 days by the rule, one seed
// each, φ = 1, and the primary family as declared (arrive.PrimaryFamily),
// each member Holm-adjusted over all 12 converged windows with its
// finding and φ beside it.
func requirePrimaryFamily(t *testing.T, s *committedSummary) {
	t.Helper()
	require.Equal(t, 12, s.WindowRule.N)
	require.Equal(t, 7.0, s.WindowRule.Days)
	require.Equal(t, "min(12, ⌊span ÷ D⌋)", s.WindowRule.Rule)
	require.Equal(t, 1, s.WindowRule.SeedsPerWindow)
	require.Len(t, s.Windows, 12)
	require.Equal(t, 1.0, s.AgentPhi)
	require.Len(t, s.Primary, len(PrimaryFamily))
	for i, f := range PrimaryFamily {
		c := s.Primary[i]
		require.True(t, f.Policy == c.Policy && f.A == c.A && f.B == c.B && f.K == c.K && f.Metric == c.Metric, "member %d: %+v", i, c)
		require.Equal(t, "Holm", c.Adjustment)
		require.Equal(t, f.Finding, c.Finding)
		require.NotNil(t, c.AgentPhi, "φ beside every finding")
		require.Equal(t, 1.0, *c.AgentPhi, "φ beside every finding")
		require.True(t, c.Converged)
		require.Equal(t, 12, c.N)
	}
}

// TestREADMEAgentsArrivePrimary checks the README's primary family
// ("When agents arrive") against the committed default run: 12 windows
// of 7 days of SDSC-SP2 by the rule, one seed each, φ = 1; each
// contrast's Hodges–Lehmann estimate and interval, the windows in its
// direction and its Holm-adjusted p, nine of ten at most 0.05.
func TestREADMEAgentsArrivePrimary(t *testing.T) {
	s := readCommitted(t)
	requirePrimaryFamily(t, s)
	for _, w := range []struct {
		i             int
		est, lo, hi   float64
		windows       int // in the finding's direction
		holm, holmTol float64
	}{
		{0, 1.10, 0.99, 1.18, 10, 0.077, 0.0005},
		{1, 2.24, 1.61, 3.23, 11, 0.0073, 0.00005},
		{2, 1.77, 1.50, 2.23, 12, 0.0049, 0.00005},
		{3, 2.94, 1.90, 4.15, 11, 0.0073, 0.00005},
		{4, -1977, -2166, -1766, 12, 0.0049, 0.00005},
		{5, -1467, -1826, -1187, 12, 0.0049, 0.00005},
		{6, 0.46, 0.29, 0.73, 11, 0.0059, 0.00005},
		{7, 0.56, 0.45, 0.85, 11, 0.042, 0.0005},
		{8, 0.70, 0.55, 0.88, 11, 0.0073, 0.00005},
		{9, -750, -926, -716, 12, 0.0049, 0.00005},
	} {
		primaryMember(t, s.Primary[w.i], w.i, w.est, w.lo, w.hi, w.windows, w.holm, w.holmTol, w.i != 0)
	}
}

// TestREADMEAgentsArriveFindings checks the README's other findings
// against the committed default run: descriptive contrasts, each with
// its Hodges–Lehmann estimate and interval and its Benjamini–Hochberg
// p.
func TestREADMEAgentsArriveFindings(t *testing.T) {
	s := readCommitted(t)
	const K = 8
	bh := func(c jsonContrast, lo, hi float64) {
		t.Helper()
		require.Equal(t, "BH", c.Adjustment, "%+v", c)
		require.True(t, *c.PAdjusted >= lo && *c.PAdjusted <= hi, "%s %s %s k=%d: BH p %v not in [%v, %v]", c.Policy, c.A, c.Metric, c.K, *c.PAdjusted, lo, hi)
	}
	// Every site policy's run converged but quota-fair's at k = 0 in
	// window 1 (one job unfinished).
	for _, r := range s.Runs {
		if r.Policy == BursarLine {
			continue
		}
		want := !(r.Policy == "quota-fair" && r.K == 0 && r.Window == 1)
		require.Equal(t, want, r.Converged, "%s %s k=%d w%d", r.Policy, r.Mode, r.K, r.Window)
	}
	// Unmetered agents: quota ×1.83 in all 12 windows, priority not shown.
	q := s.contrast(t, "quota", ModeUnmetered, "k=0", "users_mean_bsld", K)
	ratio(t, q, 1.83, 1.45, 2.48)
	require.Equal(t, 12, q.Above)
	bh(q, 0, 0.005)
	pr := s.contrast(t, "priority", ModeUnmetered, "k=0", "users_mean_bsld", K)
	ratio(t, pr, 1.10, 0.80, 1.62)
	require.Equal(t, [2]int{6, 6}, [2]int{pr.Above, pr.Below})
	bh(pr, 0.91, 0.92)
	// Whom it hurts: the stay's users lose more than the window's.
	for p, w := range map[string][3]float64{"budget": {2.40, 1.82, 3.18}, "quota": {2.34, 1.54, 3.36}, "fifo": {1.18, 1.07, 1.28}} {
		d := s.contrast(t, p, ModeUnmetered, "k=0", "during_mean_bsld", K)
		ratio(t, d, w[0], w[1], w[2])
		bh(d, 0, 0.008)
		whole := s.contrast(t, p, ModeUnmetered, "k=0", "users_mean_bsld", K)
		require.Greater(t, d.AsRatio.Estimate, whole.AsRatio.Estimate, p)
	}
	require.Equal(t, 11, s.contrast(t, "fifo", ModeUnmetered, "k=0", "during_mean_bsld", K).Above)
	// One storm: metering cuts its GPU-hours.
	for p, w := range map[string][4]float64{"quota": {-1269, -1647, -916, 12}, "quota-fair": {-919, -1219, -589, 12},
		"priority": {-967, -1350, -584, 11}, "fifo": {-365, -739, -122, 9}} {
		g := s.contrast(t, p, ModeMetered, ModeUnmetered, "agent_gpu_hours", 1)
		diff(t, g, w[0], w[1], w[2])
		require.Equal(t, int(w[3]), g.Below, p)
		bh(g, 0, 0.017)
	}
	// ... and the users' slowdown falls back only under fairshare.
	for _, p := range []string{"fifo", "priority", "quota-fair", "budget"} {
		bh(s.contrast(t, p, ModeMetered, ModeUnmetered, "users_mean_bsld", 1), 0.91, 1)
	}
	qm := s.contrast(t, "quota", ModeMetered, ModeUnmetered, "users_mean_bsld", 1)
	ratio(t, qm, 0.81, 0.65, 1.06)
	bh(qm, 0.235, 0.245)
	fs0, fs1 := s.point(t, "fairshare", ModeUnmetered, 0), s.point(t, "fairshare", ModeMetered, 1)
	require.InDelta(t, 41.9, *fs0.Metrics["users_mean_bsld"].Mean, 0.05)
	require.InDelta(t, 44.0, *fs1.Metrics["users_mean_bsld"].Mean, 0.05)
	// At k = 8: the agents' GPU-hours cut in every window under every
	// site policy but the static ones; the users' slowdown lower under
	// quota, not shown under quota-fair, priority and fifo.
	for _, p := range []string{"fifo", "priority", "fairshare", "quota", "quota-fair", "budget"} {
		g := s.contrast(t, p, ModeMetered, ModeUnmetered, "agent_gpu_hours", K)
		require.Equal(t, 12, g.Below, p)
		if p != "fairshare" && p != "budget" {
			bh(g, 0, 0.003)
		}
	}
	q8 := s.contrast(t, "quota", ModeMetered, ModeUnmetered, "users_mean_bsld", K)
	ratio(t, q8, 0.60, 0.43, 0.82)
	require.Equal(t, 11, q8.Below)
	bh(q8, 0.0185, 0.0195)
	for p, w := range map[string][3]float64{"quota-fair": {0.91, 0.105, 0.115}, "priority": {0.82, 0.55, 0.555}, "fifo": {0.96, 0.365, 0.375}} {
		c := s.contrast(t, p, ModeMetered, ModeUnmetered, "users_mean_bsld", K)
		ratio(t, c, w[0], none, none)
		bh(c, w[1], w[2])
	}
	ratio(t, s.contrast(t, "quota-fair", ModeMetered, ModeUnmetered, "users_mean_bsld", K), 0.91, 0.75, 0.98)
	// Static-share: the meter changes nothing the users see at any k,
	// to the last bit.
	for k := 1; k <= K; k++ {
		for _, key := range []string{"users_mean_bsld", "agent_gpu_hours"} {
			c := s.contrast(t, "static-share", ModeMetered, ModeUnmetered, key, k)
			require.Zero(t, c.Below+c.Above, "k=%d %s", k, key)
		}
	}
	sci := s.contrast(t, "static-share", ModeMetered, ModeUnmetered, "adaptive_science", 3)
	require.Equal(t, 12, sci.Above)
	require.InDelta(t, 2743, *sci.HL, 0.5)
	s0, s1, s8 := s.point(t, "static-share", ModeUnmetered, 0), s.point(t, "static-share", ModeUnmetered, 1), s.point(t, "static-share", ModeMetered, K)
	require.InDelta(t, 80.7, *s0.Metrics["users_denied"].Mean, 0.05)
	require.InDelta(t, 75.1, *s1.Metrics["users_denied"].Mean, 0.05)
	require.InDelta(t, 112.6, *s0.Metrics["users_mean_bsld"].Mean, 0.05)
	require.InDelta(t, 164.9, *s1.Metrics["users_mean_bsld"].Mean, 0.05)
	require.Equal(t, *s1.Metrics["users_mean_bsld"].Mean, *s8.Metrics["users_mean_bsld"].Mean)
	// The science agent: metered 52–82 % of unmetered at every k ≥ 3,
	// lowest at k = 8; at k = 3 lower in all 12 windows but one of quota's.
	for p, w := range map[string][3]float64{"fifo": {-1202, -1435, -988}, "priority": {-1079, -1386, -895},
		"quota": {-788, -864, -697}, "quota-fair": {-713, -792, -685}, "budget": {-781, -964, -715}, "fairshare": {-750, -926, -716}} {
		var at8 float64
		for k := 3; k <= K; k++ {
			r := *s.point(t, p, ModeMetered, k).Metrics["adaptive_science"].Mean / *s.point(t, p, ModeUnmetered, k).Metrics["adaptive_science"].Mean
			require.True(t, r >= 0.515 && r < 0.825, "%s k=%d: %v", p, k, r)
			if k == K {
				at8 = r
			}
		}
		for k := 3; k < K; k++ {
			r := *s.point(t, p, ModeMetered, k).Metrics["adaptive_science"].Mean / *s.point(t, p, ModeUnmetered, k).Metrics["adaptive_science"].Mean
			require.GreaterOrEqual(t, r, at8, "%s k=%d", p, k)
		}
		c := s.contrast(t, p, ModeMetered, ModeUnmetered, "adaptive_science", 3)
		diff(t, c, w[0], w[1], w[2])
		below := 12
		if p == "quota" {
			below = 11
		}
		require.Equal(t, below, c.Below, p)
		require.LessOrEqual(t, *c.PAdjusted, 0.005, p)
	}
	// Condo partitions: the agents get nothing under static.
	for k := 1; k <= K; k++ {
		for _, m := range Modes {
			require.Zero(t, *s.point(t, "static", m, k).Metrics["agent_gpu_hours"].Mean, "k=%d %s", k, m)
		}
	}
	require.InDelta(t, 78.7, *s.point(t, "static", ModeUnmetered, 0).Metrics["users_mean_bsld"].Mean, 0.05)
	require.InDelta(t, 56.6, *s.point(t, "static", ModeUnmetered, K).Metrics["users_mean_bsld"].Mean, 0.05)
}

// TestREADMEAgentsArriveBursar: the README's finding on Bursar as the
// whole site policy, on the committed default run: every replay of every
// window converges at every k (since sitemeter parks the jobs its meter
// can never hold); the users' mean bounded slowdown is 82.0 at k = 0 and
// 102.1 at k = 8, and eight agents are not shown to move it.
func TestREADMEAgentsArriveBursar(t *testing.T) {
	s := readCommitted(t)
	n := 0
	for _, r := range s.Runs {
		if r.Policy == BursarLine {
			n++
			require.True(t, r.Converged, "k=%d w%d", r.K, r.Window)
			require.Zero(t, r.Users.Unfinished, "k=%d w%d", r.K, r.Window)
		}
	}
	require.Equal(t, 12+8*12, n)
	require.InDelta(t, 82.0, *s.point(t, BursarLine, ModeMetered, 0).Metrics["users_mean_bsld"].Mean, 0.05)
	require.InDelta(t, 102.1, *s.point(t, BursarLine, ModeMetered, 8).Metrics["users_mean_bsld"].Mean, 0.05)
	c := s.contrast(t, BursarLine, ModeMetered, "k=0", "users_mean_bsld", 8)
	ratio(t, c, 1.29, 0.95, 1.93)
	require.Equal(t, 8, c.Above)
	require.InDelta(t, 0.27, *c.PAdjusted, 0.005)
	require.Equal(t, "BH", c.Adjustment)
}

// The README's reading of agents-arrive's contrasts (docs/studies.md
// §5.1): every contrast carries its exact signed-rank p over the 12
// windows, its Hodges–Lehmann interval within the range of its
// windows' values, and its p adjusted — by Holm in the primary family,
// by Benjamini–Hochberg over every other tested contrast — with φ beside
// it; on 12 windows no raw p can be below 2/2¹².
func TestREADMEAgentsArriveAdjusted(t *testing.T) {
	s := readCommitted(t)
	holm, bh := 0, 0
	for _, c := range s.Contrasts {
		require.Equal(t, 1.0, *c.AgentPhi)
		switch c.Adjustment {
		case "Holm":
			holm++
			require.NotEmpty(t, c.Finding)
		case "BH":
			bh++
			require.Empty(t, c.Finding)
		default:
			t.Fatalf("adjustment %q", c.Adjustment)
		}
		if c.P == nil {
			require.Nil(t, c.PAdjusted)
			continue
		}
		require.GreaterOrEqual(t, *c.P, 2.0/4096-1e-15, "%+v", c)
		require.GreaterOrEqual(t, *c.PAdjusted, *c.P, "%+v", c)
		if c.HL != nil {
			require.LessOrEqual(t, *c.Lo, *c.HL)
			require.GreaterOrEqual(t, *c.Hi, *c.HL)
		}
	}
	require.Equal(t, len(PrimaryFamily), holm)
	require.Equal(t, 918, bh, "the descriptive contrasts")
}

// TestKTHAgentsArrivePrimary checks the README's primary family on
// KTH-SP2 ("The same family on KTH-SP2") against the committed run,
// results/kth-sp2/agents-arrive: 12 windows of 7 days by the rule, one
// seed each, φ = 1; each contrast's Hodges–Lehmann estimate and
// interval, the windows in its direction and its Holm-adjusted p, four
// of ten at most 0.05.
func TestKTHAgentsArrivePrimary(t *testing.T) {
	s := readSummary(t, filepath.Join("..", "results", "kth-sp2", "agents-arrive", "summary.json"))
	requirePrimaryFamily(t, s)
	for _, w := range []struct {
		i           int
		est, lo, hi float64
		windows     int // in the finding's direction
		holm        float64
		shown       bool
	}{
		{0, 1.03, 0.85, 1.24, 9, 0.301, false},
		{1, 2.28, 1.37, 4.31, 10, 0.0557, false},
		{2, 2.46, 1.41, 4.55, 11, 0.0103, true},
		{3, 5.10, 1.65, 19.39, 10, 0.0557, false},
		{4, -1697, -1848, -1423, 12, 0.0049, true},
		{5, -1389, -1648, -1144, 12, 0.0049, true},
		{6, 0.52, 0.29, 0.84, 11, 0.0557, false},
		{7, 0.51, 0.26, 0.92, 9, 0.0806, false},
		{8, 0.55, 0.30, 0.93, 9, 0.0806, false},
		{9, -1072, -1128, -1018, 12, 0.0049, true},
	} {
		primaryMember(t, s.Primary[w.i], w.i, w.est, w.lo, w.hi, w.windows, w.holm, 0.0005, w.shown)
	}
}

// primaryMember checks primary contrast i against a README row: its
// Hodges–Lehmann estimate and interval, the windows in the finding's
// direction, its Holm p (to tol) and whether it is shown (p ≤ 0.05).
func primaryMember(t *testing.T, c jsonContrast, i int, est, lo, hi float64, windows int, holm, tol float64, shown bool) {
	t.Helper()
	if c.AsRatio != nil {
		ratio(t, c, est, lo, hi)
	} else {
		diff(t, c, est, lo, hi)
	}
	dir := c.Above
	if est < 0 || c.AsRatio != nil && est < 1 {
		dir = c.Below
	}
	require.Equal(t, windows, dir, "member %d", i)
	require.InDelta(t, holm, *c.PAdjusted, tol, "member %d", i)
	require.Equal(t, shown, *c.PAdjusted <= 0.05, "member %d", i)
}
