package configs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bursar-hpc/bursar/engine"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func runBytes(t require.TestingT, s engine.Scenario) (metrics, journal string) {
	res, err := engine.Run(s, engine.Options{Journal: true})
	require.NoError(t, err)
	return string(engine.MetricsFile(res)), string(res.Journal)
}

// The printed paper scenario, read back, is the paper's run.
func TestPrintedDefaultScenarioIsThePaperRun(t *testing.T) {
	printed := FormatScenario(engine.DefaultScenario())
	s, err := ParseScenario("default.yaml", printed)
	require.NoError(t, err)
	require.Equal(t, string(printed), string(FormatScenario(s)))
	wm, wj := runBytes(t, engine.DefaultScenario().Explicit())
	gm, gj := runBytes(t, s)
	require.Equal(t, wm, gm)
	require.Equal(t, wj, gj)
	// And the explicit cast runs exactly as the knobs' form.
	km, kj := runBytes(t, engine.DefaultScenario())
	require.Equal(t, km, gm)
	require.Equal(t, kj, gj)
}

// drawKnobs sets every knob of `run` to a random valid value.
func drawKnobs(t *rapid.T) engine.Scenario {
	s := engine.DefaultScenario()
	s.Storms = rapid.IntRange(0, 5).Draw(t, "storms")
	s.Pool = rapid.IntRange(160+16*s.Storms, 1500).Draw(t, "pool")
	s.IOCapacity = rapid.Float64Range(0, 64).Draw(t, "io_capacity")
	s.InferenceCapacity = rapid.Float64Range(0, 20000).Draw(t, "inference_capacity")
	s.Headroom = rapid.IntRange(0, s.Pool).Draw(t, "headroom")
	s.Seed = rapid.Int64Range(0, 1<<40).Draw(t, "seed")
	s.Tasks = rapid.IntRange(0, 300).Draw(t, "tasks")
	s.Leaky = rapid.Bool().Draw(t, "leaky")
	s.Grace = rapid.IntRange(0, 300).Draw(t, "grace")
	s.SciRate = rapid.Float64Range(0, 600).Draw(t, "sci_rate")
	s.SciBucket = rapid.Float64Range(0, 1e6).Draw(t, "sci_bucket")
	s.SciBurst = rapid.IntRange(64, 2*s.Pool).Draw(t, "sci_burst")
	s.StormRate = rapid.Float64Range(0, 600).Draw(t, "storm_rate")
	s.StormBucket = rapid.Float64Range(0, 1e6).Draw(t, "storm_bucket")
	s.StormBurst = rapid.IntRange(16, 2*s.Pool).Draw(t, "storm_burst")
	s.Ticks = rapid.IntRange(1, 1200).Draw(t, "ticks")
	s.StormStart = rapid.IntRange(0, s.Ticks).Draw(t, "storm_start")
	s.StormEnd = rapid.IntRange(s.StormStart+1, s.Ticks+10).Draw(t, "storm_end")
	s.Probe = rapid.Bool().Draw(t, "probe")
	s.SampleEvery = rapid.IntRange(1, 30).Draw(t, "sample_every")
	return s
}

// On any knob set, print → parse is the same scenario and the same run
// (metrics.json and journal byte for byte), and the knobs' form runs the
// same as its explicit cast.
func TestPropertyPrintParseIsTheSameRun(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := drawKnobs(t)
		printed := FormatScenario(s)
		back, err := ParseScenario("drawn.yaml", printed)
		require.NoError(t, err, "%s", printed)
		require.Equal(t, string(printed), string(FormatScenario(back)))
		wm, wj := runBytes(t, s.Explicit())
		gm, gj := runBytes(t, back)
		require.Equal(t, wm, gm)
		require.Equal(t, wj, gj)
		if s.Storms > 0 {
			// The knobs' form writes its knob fields; the same while a
			// storm is there to read them from.
			km, kj := runBytes(t, s)
			require.Equal(t, km, gm)
			require.Equal(t, kj, gj)
		}
	})
}

// Knobs edit an explicit cast the way they edit the knob form.
func TestPropertyKnobsEditTheCastAsTheKnobForm(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		base := drawKnobs(t)
		target := drawKnobs(t)
		viaCast := base.Explicit()
		viaKnobs := base
		for i := range engine.Knobs {
			k := &engine.Knobs[i]
			require.NoError(t, k.Set(&viaCast, k.Get(&target)))
			require.NoError(t, k.Set(&viaKnobs, k.Get(&target)))
		}
		// A file must allow a burst ceiling above the pool; the knobs'
		// form allows it when it needs it.
		viaCast.AllowBurstAbovePool = viaKnobs.Explicit().AllowBurstAbovePool
		require.Equal(t, string(FormatScenario(viaKnobs)), string(FormatScenario(viaCast)))
	})
}

func TestScenarioErrorsNameTheCampaignAndField(t *testing.T) {
	head := "pool: 512\ncampaigns:\n"
	victim := "  - name: victim\n    agent: victim\n"
	cases := []struct {
		name, yaml string
		line       int
		want       string
	}{
		{"unknown top key", "pol: 512\n" + "campaigns:\n" + victim, 1, `pol: unknown key; did you mean "pool"?`},
		{"unknown campaign key", head + victim + "    bucklet: 5\n", 5, `campaigns[0].bucklet: unknown key; did you mean "bucket"?`},
		{"field of another agent", head + victim + "    headroom: 5\n", 5, `campaigns[0].headroom: unknown key`},
		{"unknown agent", head + "  - name: x\n    agent: stromm\n", 4, `unknown agent "stromm"; did you mean "storm"?`},
		{"missing agent", head + "  - name: x\n", 3, `campaigns[0].agent: missing`},
		{"missing name", head + "  - agent: victim\n", 3, `campaigns[0].name: missing`},
		{"duplicate names", head + victim + victim, 5, `duplicate campaign name "victim" (first at line 3)`},
		{"overbooked guarantees", "pool: 100\ncampaigns:\n" + victim + "  - name: big\n    agent: naive\n    guaranteed: 80\n    burst_ceiling: 90\n", 5, `campaign big: guaranteed: the guarantees up to this campaign sum to 112 GPUs, more than the pool of 100`},
		{"burst ceiling above the pool", head + "  - name: s\n    agent: storm\n    burst_ceiling: 600\n", 3, `campaign s: burst_ceiling: 600 GPUs is above the pool of 512 (write pool, or allow_burst_above_pool: true`},
		{"a written burst above a small pool", "pool: 300\ncampaigns:\n  - name: a\n    agent: adaptive\n    burst_ceiling: 384\n", 3, `campaign a: burst_ceiling: 384 GPUs is above the pool of 300`},
		{"a task list beyond the ceiling", head + "  - name: a\n    agent: naive\n    tasks: 77560000087\n", 3, `campaign a: tasks: must be at most 1000000, got 77560000087`},
		{"empty window", head + "  - name: s\n    agent: storm\n    window: {start: 50, end: 50}\n", 3, `campaign s: window: [start, end) = [50, 50) is empty`},
		{"wrong type", head + "  - name: s\n    agent: storm\n    gpus: many\n", 5, `campaigns[0].gpus: campaigns[0].gpus takes a whole number, got "many"`},
		{"pool word elsewhere", head + "  - name: s\n    agent: storm\n    bucket: pool\n", 5, `takes a number, got "pool"`},
		{"unknown class", head + victim + "    class: vip\n", 5, `campaigns[0].class`},
		{"unknown policy", "policy: fifoo\n" + head + victim, 1, `policy: unknown admission policy "fifoo"; did you mean "fifo"?`},
		{"knob of another policy", "policy: {name: quota, half_life: 60}\n" + head + victim, 1, `policy.half_life: half_life is a knob of policy fairshare, not of quota`},
		{"knob of two other policies", "policy: {name: quota, calc_period: 60}\n" + head + victim, 1, `policy.calc_period: calc_period is a knob of policy fairshare, not of quota`},
		{"calc period below a second", "policy: {name: budget, calc_period: 0}\n" + head + victim, 1, `policy.calc_period: calc_period must be at least 1 second, got 0`},
		{"misspelt policy knob", "policy: {name: quota, borowing_limit: 60}\n" + head + victim, 1, `policy.borowing_limit: unknown key; did you mean "borrowing_limit"?`},
		{"policy mapping without name", "policy: {borrowing_limit: 60}\n" + head + victim, 1, `policy.name: missing`},
		{"bad borrowing limit", "policy:\n  name: quota\n  borrowing_limit: -2\n" + head + victim, 3, `borrowing_limit must be ≥ 0 GPUs, or -1`},
		{"bad queueing strategy", "policy: {name: quota, queueing_strategy: LIFO}\n" + head + victim, 1, `queueing_strategy must be BestEffortFIFO or StrictFIFO, got "LIFO"`},
		{"bad preemption strategies", "policy: {name: quota, preemption_strategies: [LessThanInitialShare, LessThanOrEqualToFinalShare]}\n" + head + victim, 1,
			`preemption_strategies must be [LessThanOrEqualToFinalShare, LessThanInitialShare], [LessThanOrEqualToFinalShare] or [LessThanInitialShare], got [LessThanInitialShare LessThanOrEqualToFinalShare]`},
		{"bad lend", "policy: {name: static, lend: always}\n" + head + victim, 1, `lend must be none or scavenger, got "always"`},
		{"bad owners", "policy: {name: static, owners: -1}\n" + head + victim, 1, `owners must be ≥ 0 groups, got -1`},
		{"inflating an unknown campaign", "pool: 512\npolicy: {name: priority, inflate: [victimm]}\ncampaigns:\n" + victim, 2, `policy: invalid scenario: policy: inflate names "victimm", which is not a campaign of the scenario`},
		{"bad min runtime class", "policy: {name: budget, min_runtime: {vip: 5}}\n" + head + victim, 1, `policy.min_runtime.vip: unknown service class "vip"`},
		{"negative min runtime", "policy: {name: budget, min_runtime: {interactive: -2}}\n" + head + victim, 1, `policy.min_runtime.interactive: a minimum runtime must be ≥ 0 seconds, or never (-1), got -2`},
		{"bad restart", "policy: {name: budget, restart: 'checkpoint:0'}\n" + head + victim, 1, `policy.restart: restart "checkpoint:0": the checkpoint interval must be a whole number of seconds ≥ 1 (checkpoint:3600)`},
		{"no campaigns", "pool: 512\n", 1, `campaigns: missing`},
		{"reserved name", head + "  - name: overbooked\n    agent: victim\n", 3, `reserved`},
		{"flow without bucket", head + victim + "    io: {rate: 3}\n", 5, `needs rate and bucket`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseScenario("s.yaml", []byte(c.yaml))
			require.Error(t, err)
			var ce *Error
			require.True(t, errors.As(err, &ce), "%T %v", err, err)
			require.Equal(t, c.line, ce.Line, "%v", err)
			require.Contains(t, err.Error(), c.want)
			require.True(t, strings.HasPrefix(err.Error(), "s.yaml:"), err.Error())
		})
	}
}

// A burst ceiling above the pool runs when the file allows it.
func TestScenarioMayAllowABurstAboveThePool(t *testing.T) {
	s, err := ParseScenario("s.yaml", []byte("pool: 300\nallow_burst_above_pool: true\nticks: 100\ncampaigns:\n  - name: a\n    agent: adaptive\n"))
	require.NoError(t, err)
	_, err = engine.Run(s, engine.Options{})
	require.NoError(t, err)
	require.Contains(t, string(FormatScenario(s)), "allow_burst_above_pool: true\n")
}

// A campaign names only what differs from the paper's campaign of its
// agent; a flow written out replaces the default whole; `pool` follows the
// pool.
func TestScenarioDefaultsPerAgent(t *testing.T) {
	s, err := ParseScenario("s.yaml", []byte("pool: 640\ncampaigns:\n  - name: a\n    agent: adaptive\n    io: {rate: 3, bucket: 100}\n  - name: b\n    agent: backfill\n"))
	require.NoError(t, err)
	a, b := s.Cast[0], s.Cast[1]
	want, _ := engine.DefaultCampaign(engine.AgentAdaptive)
	require.Equal(t, want.Bucket, a.Bucket)
	require.Equal(t, 3.0, a.IO.Rate)
	require.Equal(t, 3.0, a.IO.Ceiling, "the ceiling defaults to the rate")
	require.Equal(t, 640, b.Envelope(s.Pool).BurstCeiling)
	require.Equal(t, 640.0, b.Envelope(s.Pool).Sustained)
}

// The example scenario (three science campaigns, two storms in different
// windows, the probe) runs, and its report and series name every one.
func TestExampleScenarioRunsAndNamesItsCast(t *testing.T) {
	s, err := LoadScenario(filepath.Join("scenarios", "three-science-two-storms.yaml"))
	require.NoError(t, err)
	res, err := engine.Run(s, engine.Options{Journal: true, Series: true})
	require.NoError(t, err)
	require.NoError(t, res.CheckInvariants())
	var rep bytes.Buffer
	require.NoError(t, engine.WriteReport(&rep, res))
	for _, name := range []string{"climate", "genomics", "materials", "storm-am", "storm-pm"} {
		require.Contains(t, rep.String(), name)
	}
	require.Contains(t, rep.String(), "[back pressure] storm-am throttle events")
	require.Contains(t, rep.String(), "[back pressure] storm-pm throttle events")
	header := strings.SplitN(string(engine.SeriesCSV(res)), "\n", 2)[0]
	for _, col := range []string{"victim_held", "climate_held", "genomics_held", "materials_held", "storm_am_held", "storm_pm_held", "probe_held", "backfill_held"} {
		require.Contains(t, header, col)
	}
	require.Len(t, res.Groups, 8)
	require.NotEmpty(t, res.Metrics.ProbeLats)
	// The storms act only in their own windows.
	am, pm := res.GroupOf(engine.AgentStorm), res.GroupOf(engine.AgentStorm)+1
	for i, t0 := range res.Series.T {
		if t0 < 1800 || t0 >= 3000+120 {
			require.Zero(t, res.Series.Held[am][i], "storm-am at t=%d", t0)
		}
		if t0 < 4800 || t0 >= 6000+120 {
			require.Zero(t, res.Series.Held[pm][i], "storm-pm at t=%d", t0)
		}
	}
	// The file is its own print, up to comments and defaults: reading the
	// print gives the same run.
	back, err := ParseScenario("printed.yaml", FormatScenario(s))
	require.NoError(t, err)
	m1, j1 := runBytes(t, s)
	m2, j2 := runBytes(t, back)
	require.Equal(t, m1, m2)
	require.Equal(t, j1, j2)
}

func FuzzParseScenario(f *testing.F) {
	f.Add(FormatScenario(engine.DefaultScenario()))
	if data, err := os.ReadFile(filepath.Join("scenarios", "three-science-two-storms.yaml")); err == nil {
		f.Add(data)
	}
	f.Add([]byte("pool: 64\ncampaigns:\n  - {name: v, agent: victim}\n"))
	f.Add([]byte("campaigns: [{name: s, agent: storm, window: {start: 1, end: 0}}]\n"))
	f.Add([]byte("policy: {name: budget, window: 60, min_runtime: {agent-burst: 5}, groups: [{name: g, members: [v]}]}\ncampaigns: [{name: v, agent: victim}]\n"))
	f.Add([]byte("policy: {name: budget, min_runtime: {interactive: never, opportunistic: 30}, restart: zero}\ncampaigns: [{name: v, agent: victim}]\n"))
	f.Add([]byte("policy: {name: priority, inflate: [v]}\ncampaigns: [{name: v, agent: victim}]\n"))
	f.Add([]byte("policy: {name: fairshare, half_life: 1e-300, w_age: 0}\ncampaigns: [{name: v, agent: victim}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseScenario("fuzz.yaml", data)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		// Whatever parses is valid, prints, and reads back the same.
		require.NoError(t, s.Validate())
		printed := FormatScenario(s)
		back, err := ParseScenario("printed.yaml", printed)
		require.NoError(t, err, "%s", printed)
		require.Equal(t, string(printed), string(FormatScenario(back)))
	})
}

// A config may name a scenario file and sweep any field of it by path (a
// second storm's window, a campaign's bucket) beside the knobs.
func TestConfigSweepsAScenarioFileByPath(t *testing.T) {
	dir := t.TempDir()
	example, err := filepath.Abs(filepath.Join("scenarios", "three-science-two-storms.yaml"))
	require.NoError(t, err)
	cfg := "experiment: facility\nscenario: " + example + "\nseeds: [7, 11]\nfixed:\n  ticks: 2400\n  window.end: 2400\n" +
		"grid:\n  campaigns.storm-pm.window.start: [1200, 1500]\n  campaigns.storm-am.bucket: {full: [30000, 60000], quick: [30000]}\n  headroom: [64, 160]\n"
	file := filepath.Join(dir, "facility.yaml")
	require.NoError(t, os.WriteFile(file, []byte(cfg), 0o644))
	c, err := Load(file)
	require.NoError(t, err)
	plan, err := c.Plan(false, nil)
	require.NoError(t, err)
	require.Equal(t, 2*2*2*2, plan.NumRuns())
	pt, s := plan.Run(plan.NumRuns() - 1)
	require.Equal(t, int64(11), s.Seed)
	require.Len(t, pt.Swept, 3)
	find := func(name string) *engine.Campaign {
		for i := range s.Cast {
			if s.Cast[i].Name == name {
				return &s.Cast[i]
			}
		}
		t.Fatalf("no campaign %s", name)
		return nil
	}
	require.Equal(t, 1500, find("storm-pm").Window.Start)
	require.Equal(t, 6000, find("storm-pm").Window.End, "only the start is swept")
	require.Equal(t, 1800, find("storm-am").Window.Start)
	require.Equal(t, 60000.0, find("storm-am").Bucket)
	require.Equal(t, 160, find("backfill").Headroom)
	require.Equal(t, 2400, s.StormEnd)
	// Grid points never share an edited cast.
	_, first := plan.Run(0)
	require.Equal(t, 30000.0, first.Cast[4].Bucket)
	require.Equal(t, 1200, first.Cast[5].Window.Start)
	require.Equal(t, 768, first.Pool, "the file's pool")
	_, err = engine.Run(first, engine.Options{})
	require.NoError(t, err)

	for _, bad := range []struct{ grid, want string }{
		{"campaigns.storm-pn.bucket: [1]", `no campaign of that name`},
		{"campaigns.storm-pm.headroom: [1]", `a storm campaign has no field "headroom"`},
		{"campaigns.storm-pm.window.start: [6500]", `empty or inverted`},
		{"windw.start: [1]", `no scenario field "windw.start"`},
	} {
		cfg := "experiment: facility\nscenario: " + example + "\nseeds: [7]\ngrid:\n  " + bad.grid + "\n"
		_, err := Parse(file, []byte(cfg))
		require.ErrorContains(t, err, bad.want)
		require.ErrorContains(t, err, "facility.yaml:5")
	}
	// Without a scenario file, a campaign path is an error that says why.
	_, err = Parse(file, []byte("experiment: x\nseeds: [7]\ngrid:\n  campaigns.storm.bucket: [1]\n"))
	require.ErrorContains(t, err, "needs a scenario file")
}

// TestPaperDefaultsFitASmallPool: a campaign that leaves its burst ceiling
// or the backfill's headroom to the paper's default gets at most the pool
// (a minimal 128-GPU file runs); one that writes them keeps its value; at
// 512 GPUs the defaults are the paper's.
func TestPaperDefaultsFitASmallPool(t *testing.T) {
	s, err := ParseScenario("small.yaml", []byte("pool: 128\ncampaigns:\n  - {name: victim, agent: victim}\n  - {name: sci, agent: adaptive}\n"+
		"  - {name: storm, agent: storm}\n  - {name: bf, agent: backfill}\n"))
	require.NoError(t, err)
	require.Equal(t, 128, s.Cast[1].BurstCeiling)
	require.Equal(t, 128, s.Cast[2].BurstCeiling)
	require.Equal(t, 128, s.Cast[3].Headroom)
	require.Equal(t, 16, s.Cast[0].GPUs, "only ceilings and headroom move")

	s, err = ParseScenario("paper.yaml", []byte("campaigns:\n  - {name: sci, agent: adaptive}\n  - {name: bf, agent: backfill}\n"))
	require.NoError(t, err)
	require.Equal(t, 384, s.Cast[0].BurstCeiling)
	require.Equal(t, 160, s.Cast[1].Headroom)
}

// TestScenarioDegenerateLoadsWithWarnings: what the prototype runs loads
// (a headroom above the pool), and what voids a comparison without being
// invalid (a 64-GPU pool with the storm's default 384-GPU target, a
// guarantee above the sustained rate) loads too, with a warning naming
// the campaign (issue 34 §7–8).
func TestScenarioDegenerateLoadsWithWarnings(t *testing.T) {
	doc := "pool: 64\ncampaigns:\n  - name: victim\n    agent: victim\n  - name: surge\n    agent: storm\n    guaranteed: 16\n    sustained: 8\n" +
		"  - name: b\n    agent: backfill\n    headroom: 70\n"
	s, err := ParseScenario("small.yaml", []byte(doc))
	require.NoError(t, err)
	w := s.Warnings()
	require.Len(t, w, 3, "%q", w)
	require.Contains(t, w[0], "campaign surge: its target of 384 outstanding GPUs is above the pool of 64 GPUs")
	require.Contains(t, w[1], "campaign surge: guaranteed 16 GPUs is above its sustained rate of 8 GPUs")
	require.Contains(t, w[2], "campaign b: headroom 70 GPUs is above the pool of 64: the backfill never fills")
}

// TestYAMLErrorNamesTheBreakingLine: an indentation mistake is reported
// at the line that has it, not at the start of the block yaml.v3 names
// (issue 34 §11: line 5 was reported as line 2).
func TestYAMLErrorNamesTheBreakingLine(t *testing.T) {
	for doc, line := range map[string]int{
		"pool: 512\ncampaigns:\n  - name: victim\n    agent: victim\n   ticks: 5\n":           5,
		"pool: 512\nticks: 600\ncampaigns:\n  - name: victim\n agent: victim\n":               5,
		"pool: 512\nticks: 600\ncampaigns:\n  - name: victim\n    agent: victim\n  pool: 3\n": 6,
		"experiment: x\n  pool: 5\n": 2,
	} {
		_, err := ParseScenario("s.yaml", []byte(doc))
		require.Error(t, err, doc)
		require.Contains(t, err.Error(), fmt.Sprintf("s.yaml:%d: invalid YAML", line), doc)
	}
}
