package arrive

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot"
	"pgregory.net/rapid"

	"github.com/bursar-hpc/bursar/engine"
	"github.com/bursar-hpc/bursar/figures"
	"github.com/bursar-hpc/bursar/policy/policies"
	"github.com/bursar-hpc/bursar/sweep"
	"github.com/bursar-hpc/bursar/trace"
	"github.com/bursar-hpc/bursar/tracestudy"
)

// excerptDay is the embedded excerpt's first day (day 252 of SDSC-SP2),
// in seconds after the log's start.
const excerptDay = 252 * tracestudy.Day

// smallStudy is a study on days [from, from + days) of the embedded
// excerpt, one window, warm-up and cool-down of warm seconds each.
func smallStudy(t testing.TB, pols []string, maxK int, seeds []int64, days, stay, warm int64) *Study {
	t.Helper()
	st := NewStudy()
	st.Policies, st.MaxK, st.Seeds, st.Stay = pols, maxK, seeds, stay
	_, err := st.Lay("", trace.Options{From: excerptDay, Until: excerptDay + days*tracestudy.Day}, 0, 0, warm, warm)
	require.NoError(t, err)
	require.NoError(t, st.Check())
	st.Plan()
	return st
}

// Hand-worked §6.14: q × pool / 512 × agent_scale rounded down, at least 1.
func TestScaleHandWorked(t *testing.T) {
	for _, c := range []struct {
		q, pool int
		scale   float64
		want    int
	}{
		{384, 128, 1, 96}, {16, 128, 1, 4}, {64, 100, 1, 12}, {1, 128, 1, 1}, {3, 128, 1, 1}, {384, 512, 1, 384}, {384, 1024, 1, 768},
		{16, 8, 1, 1}, {384, 128, 0.5, 48}, {16, 128, 2, 8}, {64, 100, 0.5, 6}, {16, 128, 0.1, 1},
	} {
		require.Equal(t, c.want, ScaleGPUs(c.q, c.pool, c.scale), "ScaleGPUs(%d, %d, %v)", c.q, c.pool, c.scale)
	}
	for _, c := range []struct {
		x     float64
		pool  int
		scale float64
		want  float64
	}{{64, 128, 1, 16}, {150000, 128, 1, 37500}, {128, 100, 1, 25}, {300000, 100, 1, 58593}, {0.5, 512, 1, 1}, {150000, 128, 0.5, 18750}} {
		require.Equal(t, c.want, ScaleRate(c.x, c.pool, c.scale), "ScaleRate(%g, %d, %v)", c.x, c.pool, c.scale)
	}
	// The SDSC-SP2 pool (128): the paper's storm (g 16, R 64, burst 384,
	// B 150000, target 384) becomes g 4, R 16, burst 96, B 37500, target 96.
	cast, err := Cast(4, 128, 3600, 1)
	require.NoError(t, err)
	require.Equal(t, []string{"storm-1", "naive-sci-1", "adaptive-sci-1", "storm-2"},
		[]string{cast[0].Name, cast[1].Name, cast[2].Name, cast[3].Name})
	s := cast[0]
	require.Equal(t, []float64{4, 16, 96, 37500, 96}, []float64{float64(s.Guaranteed), s.Sustained, float64(s.BurstCeiling), s.Bucket, float64(s.GPUs)})
	require.Equal(t, engine.Window{Start: 1, End: 3600}, s.Window)
	// adaptive-sci: g 64 → 16, R 128 → 32, burst 384 → 96, B 300000 →
	// 75000, wants 384/64/32 → 96/16/8, opportunistic 96/64 → 24/16.
	a := cast[2]
	require.Equal(t, []int{16, 96, 96, 16, 8, 24, 16}, []int{a.Guaranteed, a.BurstCeiling, a.GPUs, a.MinGPUs, a.StarvedGPUs, a.OpportunisticMax, a.OpportunisticKeep})
	require.Equal(t, []float64{32, 75000}, []float64{a.Sustained, a.Bucket})
	require.Equal(t, 256/4, cast[1].GPUs)
	require.Equal(t, 2, a.Stream)
	// Eight agents at agent_scale 2 guarantee 3 × 8 + 5 × 32 = 184 GPUs of
	// 128: refused, naming the knob.
	_, err = Cast(8, 128, 3600, 2)
	require.ErrorContains(t, err, "agent_scale 2 guarantee 184 GPUs, more than the pool of 128")
}

func TestScaleProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		q := rapid.IntRange(0, 100000).Draw(t, "q")
		pool := rapid.IntRange(1, 1<<20).Draw(t, "pool")
		scale := rapid.Float64Range(0.01, MaxAgentScale).Draw(t, "scale")
		got := ScaleGPUs(q, pool, scale)
		exact := float64(q) * float64(pool) / PaperPool * scale
		if got < 1 {
			t.Fatalf("ScaleGPUs(%d, %d, %v) = %d < 1", q, pool, scale, got)
		}
		if got > 1 && float64(got) > exact {
			t.Fatalf("ScaleGPUs(%d, %d, %v) = %d rounds up (%v)", q, pool, scale, got, exact)
		}
		if float64(got+1) <= exact {
			t.Fatalf("ScaleGPUs(%d, %d, %v) = %d drops a whole GPU (%v)", q, pool, scale, got, exact)
		}
		if r := ScaleRate(float64(q), pool, scale); r != float64(got) {
			t.Fatalf("ScaleRate(%d, %d, %v) = %g, ScaleGPUs %d", q, pool, scale, r, got)
		}
	})
}

// Hand-worked §6.14: with agent_share 0.1 and four agents, the users'
// groups keep 0.9 of their entitlements and the agents' group is 0.1,
// 0.025 each.
func TestEntitlementsHandWorked(t *testing.T) {
	st := smallStudy(t, []string{"fifo"}, 0, []int64{1}, 2, 3600, 3600)
	w := st.Loads[0]
	cast, err := Cast(4, w.Pool, 3600, 1)
	require.NoError(t, err)
	scaled := WithAgentShare(w, 0.1)
	e := Entitlements(scaled, cast, 0.1)
	require.NoError(t, e.Validate())
	require.Len(t, e.Groups, len(w.Groups)+1)
	for g := range w.Groups {
		require.InDelta(t, 0.9*w.Groups[g].Share, e.Groups[g].Share, 1e-15)
	}
	ag := e.Groups[len(e.Groups)-1]
	require.Equal(t, AgentsGroup, ag.Name)
	require.InDelta(t, 0.1, ag.Share, 1e-15)
	for i, m := range ag.Members {
		require.Equal(t, cast[i].Name, m.Name)
		require.Equal(t, 0.025, m.Share)
	}
	// The workload itself is not changed, and k = 0 keeps its shares.
	require.NotEqual(t, w.Groups[0].Share, scaled.Groups[0].Share)
	require.Equal(t, w.Entitlements(), Entitlements(w, nil, 0.1))
}

// The agents arrive after the warm-up and stay among the measured
// submits, at a time the seed and the window draw; a stay that does not
// fit is an error that says so.
func TestArrivalProperties(t *testing.T) {
	w, err := tracestudy.Load("", trace.Options{From: excerptDay, Until: excerptDay + 7*tracestudy.Day})
	require.NoError(t, err)
	rapid.Check(t, func(t *rapid.T) {
		warm := rapid.Int64Range(0, 2*tracestudy.Day).Draw(t, "warm")
		win := tracestudy.Window{Index: rapid.IntRange(0, 9).Draw(t, "index"), From: excerptDay, Until: excerptDay + 7*tracestudy.Day}
		require.NoError(t, win.Measure(warm, warm))
		stay := rapid.Int64Range(2, 4*tracestudy.Day).Draw(t, "stay")
		seed := rapid.Int64().Draw(t, "seed")
		at, err := Arrival(win, w, stay, seed)
		lo := max(win.MeasureFrom, w.Jobs[0].Submit)
		if lo > win.MeasureUntil-stay {
			require.ErrorContains(t, err, "does not fit")
			return
		}
		require.NoError(t, err)
		require.GreaterOrEqual(t, at, lo)
		require.LessOrEqual(t, at+stay, win.MeasureUntil)
		again, _ := Arrival(win, w, stay, seed)
		require.Equal(t, at, again)
	})
	// Different seeds (and windows) arrive at different times.
	win := tracestudy.Window{From: excerptDay, Until: excerptDay + 7*tracestudy.Day}
	require.NoError(t, win.Measure(tracestudy.Day, tracestudy.Day))
	seen := map[int64]bool{}
	for sd := int64(1); sd <= 5; sd++ {
		at, err := Arrival(win, w, 2*tracestudy.Day, sd)
		require.NoError(t, err)
		seen[at] = true
	}
	require.Greater(t, len(seen), 3)
}

// k = 0 is the trace study's run of the same window under the same policy
// (the same history, the same measured interval): the same users'
// metrics, counts and ticks.
func TestNoAgentsIsTheTraceStudyRun(t *testing.T) {
	pols := []string{"fifo", "priority", "static", "fairshare", "quota", "budget", "bursar"}
	st := smallStudy(t, pols, 0, []int64{1}, 3, 3600, 12*3600)
	for i, sp := range st.Specs {
		require.Zero(t, sp.K)
		r, err := st.Run(i)
		require.NoError(t, err)
		ts := tracestudy.Spec{Policy: sp.Policy, Knobs: policies.TraceKnobs()}
		var hist = tracestudy.History(st.Recorded, st.Loads[0], st.Options, tracestudy.Lookback(ts))
		plain, _, err := tracestudy.RunWindow(st.Loads[0], st.Windows[0], ts, tracestudy.RunOptions{History: hist})
		require.NoError(t, err)
		require.Equal(t, plain.Summary.All, r.Users.Stats, sp.Policy)
		require.Equal(t, []int{plain.Summary.Jobs, plain.Summary.Served, plain.Summary.Denied, plain.Summary.Unfinished},
			[]int{r.Users.Jobs, r.Users.Served, r.Users.Denied, r.Users.Unfinished}, sp.Policy)
		require.Equal(t, plain.Ticks, r.Ticks, "%s: the agents' site must skip as the plain replay does", sp.Policy)
		require.Equal(t, plain.Preemptions, r.Preemptions, sp.Policy)
		require.Equal(t, plain.Summary.Converged, r.Converged, sp.Policy)
		require.Empty(t, r.Agents)
		require.Len(t, r.During, 1)
	}
}

// The same study gives the same results with one worker or four, and
// again.
func TestDeterministicAcrossWorkers(t *testing.T) {
	st := smallStudy(t, []string{"fifo", "bursar", "quota"}, 3, []int64{1, 2}, 2, 1800, 6*3600)
	one, err := st.Execute(context.Background(), 1, nil)
	require.NoError(t, err)
	four, err := st.Execute(context.Background(), 4, nil)
	require.NoError(t, err)
	again, err := st.Execute(context.Background(), 4, nil)
	require.NoError(t, err)
	// Compared through the exact codec: NaN (no job during a stay) is
	// not equal to itself.
	enc := func(rs []Result) []string {
		out := make([]string, len(rs))
		for i := range rs {
			b, err := Codec.Encode(&rs[i])
			require.NoError(t, err)
			out[i] = string(b)
		}
		return out
	}
	require.Equal(t, enc(one), enc(four))
	require.Equal(t, enc(one), enc(again))
}

// envelopeAllows is the most GPU-seconds the meter lets an agent hold in
// a stay: its bucket plus max(R, g) every second.
func envelopeAllows(c *engine.Campaign, stay int64) float64 {
	return c.Bucket + max(c.Sustained, float64(c.Guaranteed))*float64(stay)
}

// Wherever the agents' demand exceeds their envelopes — unmetered, an
// agent held more GPU-seconds than its envelope allows in the stay — the
// metered agents' GPU-seconds differ from the unmetered ones, and no
// metered agent holds more than its envelope allows (plus the guarantee a
// lease granted just before its bucket ran dry may carry for its length).
func TestMeteringBitesWhereDemandExceedsTheEnvelope(t *testing.T) {
	if testing.Short() {
		t.Skip("replays two days under six policies")
	}
	const stay = 4 * 3600
	st := smallStudy(t, []string{"fifo", "priority", "static", "fairshare", "quota", "budget"}, 3, []int64{1}, 2, stay, 6*3600)
	cast, err := Cast(3, st.Loads[0].Pool, stay, 1)
	require.NoError(t, err)
	rs, err := st.Execute(context.Background(), 2, nil)
	require.NoError(t, err)
	exceeded := 0
	for _, p := range st.Policies {
		var un, met *Result
		for i := range rs {
			if rs[i].Policy == p && rs[i].K == 3 {
				switch rs[i].Mode {
				case ModeUnmetered:
					un = &rs[i]
				case ModeMetered:
					met = &rs[i]
				}
			}
		}
		require.NotNil(t, un, p)
		require.NotNil(t, met, p)
		over := false
		var unGS, metGS int64
		for i := range cast {
			unGS += un.Agents[i].GPUSeconds
			metGS += met.Agents[i].GPUSeconds
			if float64(un.Agents[i].GPUSeconds) > envelopeAllows(&cast[i], stay) {
				over = true
			}
			lease := float64(cast[i].Lease) * float64(cast[i].BurstCeiling)
			require.LessOrEqual(t, float64(met.Agents[i].GPUSeconds), envelopeAllows(&cast[i], stay)+lease, "%s %s", p, cast[i].Name)
			require.Zero(t, un.Agents[i].Refused, "%s: nobody meters an unmetered agent", p)
		}
		if over {
			exceeded++
			require.NotEqual(t, unGS, metGS, "%s: the agents' demand exceeds their envelopes, yet metering changed nothing", p)
			require.Positive(t, agentSum(met, func(a *AgentResult) float64 { return float64(a.Refused) }), p)
		}
	}
	require.Positive(t, exceeded, "no policy let the agents exceed their envelopes: the test tests nothing")
}

// Results through the shard and cache codec write the same files as the
// computed ones.
func TestCodecRoundTripIsExact(t *testing.T) {
	st := smallStudy(t, []string{"fifo", "bursar"}, 2, []int64{1, 2}, 2, 1200, 6*3600)
	rs, err := st.Execute(context.Background(), 2, nil)
	require.NoError(t, err)
	back := make([]Result, len(rs))
	for i := range rs {
		b, err := Codec.Encode(&rs[i])
		require.NoError(t, err)
		back[i], err = Codec.Decode(b)
		require.NoError(t, err)
		again, err := Codec.Encode(&back[i])
		require.NoError(t, err)
		require.Equal(t, string(b), string(again))
	}
	a, b := t.TempDir(), t.TempDir()
	info := tracestudy.Info(st.Loads[0], "x", 0, 0)
	files, err := Write(a, figures.SVG, &Summary{Trace: info, Study: st, Runs: rs})
	require.NoError(t, err)
	_, err = Write(b, figures.SVG, &Summary{Trace: info, Study: st, Runs: back})
	require.NoError(t, err)
	for _, f := range files {
		x, _ := os.ReadFile(filepath.Join(a, f))
		y, _ := os.ReadFile(filepath.Join(b, f))
		require.True(t, bytes.Equal(x, y), f)
	}
	// The bursar line's agents are metered once, by the broker: the
	// site's gate refuses none of their requests.
	for i := range rs {
		if rs[i].Policy == BursarLine {
			for _, a := range rs[i].Agents {
				require.Zero(t, a.Refused, "%s under bursar: metered twice", a.Name)
			}
		}
	}
	p := st.NewPlan("")
	require.Len(t, p.Runs, len(st.Specs))
	require.Equal(t, "fifo k=0 w0 days 252–254", p.Runs[0].Label)
	require.Equal(t, "fifo unmetered k=1 seed 1 w0 days 252–254", p.Runs[1].Label)
}

// The plan: k = 0 once per window (both modes, every seed), each site
// policy in both modes, the bursar line metered only.
func TestPlanDedupesNoAgents(t *testing.T) {
	st := NewStudy()
	st.Windows = make([]tracestudy.Window, 4)
	for i := range st.Windows {
		st.Windows[i].Index = i
	}
	st.Plan()
	st.Seeds = []int64{1, 2, 3}
	st.Plan()
	// 8 site policies (the variants static-share and quota-fair among them) × (4 + 2 × 8 × 4 × 3) + bursar × (4 + 8 × 4 × 3).
	require.Len(t, st.Specs, 8*(4+2*8*4*3)+(4+8*4*3))
	seen := map[Spec]bool{}
	for _, sp := range st.Specs {
		require.False(t, seen[sp], "%v twice", sp)
		seen[sp] = true
		if sp.K == 0 {
			require.Equal(t, Spec{Policy: sp.Policy, Window: sp.Window}, sp)
		}
		if sp.Policy == BursarLine && sp.K > 0 {
			require.Equal(t, ModeMetered, sp.Mode)
		}
	}
}

// Off the defaults: over agent_scale, agent_share, k, the stay and the
// window, every run accounts for every job, the agents hold no more than
// the pool in their stay, their counts add up, and the points carry an
// interval per metric.
func TestKnobsRapid(t *testing.T) {
	if testing.Short() {
		t.Skip("replays")
	}
	base := smallStudy(t, []string{"fifo"}, 0, []int64{1}, 3, 3600, 6*3600)
	rapid.Check(t, func(rt *rapid.T) {
		st := *base
		st.Policies = []string{rapid.SampledFrom([]string{"fifo", "static", "quota", "fairshare", "bursar"}).Draw(rt, "policy")}
		st.MaxK = rapid.IntRange(0, 4).Draw(rt, "k")
		st.AgentScale = rapid.Float64Range(0.05, 1.2).Draw(rt, "agent_scale")
		st.AgentShare = rapid.Float64Range(0.01, 0.9).Draw(rt, "agent_share")
		st.Stay = rapid.Int64Range(2, 3*3600).Draw(rt, "stay")
		days := rapid.Int64Range(1, 3).Draw(rt, "days")
		warm := rapid.Int64Range(0, 4*3600).Draw(rt, "warm")
		from := excerptDay + rapid.Int64Range(0, 20).Draw(rt, "day")*tracestudy.Day
		st.Seeds = []int64{rapid.Int64Range(1, 1000).Draw(rt, "seed")}
		if _, err := st.Lay("", trace.Options{From: from, Until: from + days*tracestudy.Day}, 0, 0, warm, warm); err != nil {
			rt.Skip(err)
		}
		if err := st.Check(); err != nil {
			require.Regexp(t, "agent_scale|does not fit", err.Error())
			return
		}
		st.Plan()
		rs, err := st.Execute(context.Background(), 1, nil)
		require.NoError(t, err)
		for i := range rs {
			r := &rs[i]
			u := r.Users
			require.Equal(t, u.Jobs, u.Served+u.Denied+u.Unfinished)
			for _, d := range r.During {
				require.Equal(t, d.Users.Jobs, d.Users.Served+d.Users.Denied+d.Users.Unfinished)
			}
			require.Len(t, r.Agents, r.K)
			var held int64
			for _, a := range r.Agents {
				held += a.GPUSeconds
				require.LessOrEqual(t, a.Granted+a.Refused+a.Denied, a.Requests)
			}
			require.LessOrEqual(t, held, int64(st.Loads[0].Pool)*st.Stay)
		}
		for _, p := range Points(&st, rs) {
			require.Len(t, p.Values, len(Metrics))
			require.False(t, math.IsNaN(p.Value("users_jobs").Mean))
		}
	})
}

func sweepOptions(workers int) sweep.Options { return sweep.Options{Workers: workers} }

// The figure's axes carry at least four labels (gonum's default gave 0,
// 5000, 10000 on the science panel and −20, 0, 20 on the paired
// differences, its log ticks 10 and 100 on the p95 waits), and the k
// axis is labelled at whole k.
func TestFigureAxesAreReadable(t *testing.T) {
	labelled := func(ts []plot.Tick) []string {
		var ls []string
		for _, tk := range ts {
			if tk.Label != "" {
				ls = append(ls, tk.Label)
			}
		}
		return ls
	}
	p := plot.New()
	axis(p, "science", []float64{4500, 7900, 9600})
	require.Equal(t, []string{"0", "2500", "5000", "7500", "10000"}, labelled(p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max)))
	// A p95 wait over 2.5 … 300 h goes log, 1.67 … 450 h: gonum's log
	// ticks labelled only 10 and 100.
	p = plot.New()
	axis(p, "p95 wait (h)", []float64{2.5, 12, 160, 300})
	require.Equal(t, []string{"2", "5", "10", "20", "50", "100", "200"}, labelled(p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max)))
	require.Equal(t, []string{"0", "1", "2", "3", "4", "5", "6", "7", "8"}, labelled(kTicks(8)))
	require.Equal(t, []string{"0", "1", "2"}, labelled(kTicks(2)))
	require.Equal(t, []string{"0", "10", "20", "30", "40", "50", "60"}, labelled(kTicks(64)))
	require.Equal(t, []string{"0", "2", "4", "6", "8", "10", "12", "14", "16", "18", "20"}, labelled(kTicks(21)))
}

// The agents' envelopes come from their entitlement (docs/studies.md
// §6.14, revision 3): on a pool of 128 with agent_share 0.1 the agents'
// group is entitled to 12.8 GPUs. The paper's envelopes scaled to the
// pool give R = 16 (storm, g = 4) and 32 (the science agents, g = 16):
// eight agents sum to 208, φ = 16.25. Envelop scales every R, and g
// with it (rounded down), by one factor so that φ = Σ max(R, g) ÷ 12.8
// is the knob's: at φ = 1 one storm gets R = 12.8, g = ⌊3.2⌋ = 3; three
// agents (80 GPUs) R = 2.56, 5.12, 5.12 and g = 0, 2, 2; eight R =
// 0.985 and 1.97, every g 0; at φ = 2 one storm R = 25.6, g = 6.
func TestEnvelopesFromTheEntitlement(t *testing.T) {
	for _, tc := range []struct {
		k    int
		phi  float64
		want string
	}{
		{1, 1, "12.8/3"},
		{3, 1, "2.56/0 5.12/2 5.12/2"},
		{8, 1, "0.985/0 1.97/0 1.97/0 0.985/0 1.97/0 1.97/0 0.985/0 1.97/0"},
		{1, 2, "25.6/6"},
	} {
		cast, err := Cast(tc.k, 128, 3600, 1)
		require.NoError(t, err)
		before := 0.0
		for _, c := range cast {
			before += max(c.Sustained, float64(c.Guaranteed))
		}
		got := Envelop(cast, 0.1, tc.phi, 128)
		var s []string
		for _, c := range cast {
			s = append(s, fmt.Sprintf("%.3g/%d", c.Sustained, c.Guaranteed))
		}
		require.Equal(t, tc.want, strings.Join(s, " "), "k=%d φ=%v (before: Σ %v)", tc.k, tc.phi, before)
		require.InDelta(t, tc.phi, got, 1e-12, "k=%d", tc.k)
	}
}
