package configs

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The committed study configs parse, each as its own experiment.
func TestCommittedStudyConfigsParse(t *testing.T) {
	for _, name := range StudyExperiments {
		c, err := LoadStudy(name + ".yaml")
		require.NoError(t, err, name)
		assert.Equal(t, name, c.Experiment)
	}
	c, err := LoadStudy("agents-arrive.yaml")
	require.NoError(t, err)
	assert.Equal(t, "sdsc-sp2", c.Trace)
	assert.Equal(t, &WindowsSpec{Days: 7}, c.Mapping.Windows, "7-day windows by the rule min(12, ⌊span ÷ D⌋)")
	assert.Equal(t, 8, *c.MaxK)
	assert.Equal(t, int64(2*86400), *c.Stay)
	assert.Equal(t, 1.0, *c.AgentScale)
	assert.Equal(t, 0.1, *c.AgentShare)
	assert.Equal(t, []int64{1}, c.Seeds)
	assert.Nil(t, c.NSeeds)
	assert.Nil(t, c.Pool)
	c, err = LoadStudy("budget-knobs.yaml")
	require.NoError(t, err)
	assert.Equal(t, []int{1, 3, 7, 14}, c.WindowsDays)
	assert.Equal(t, []int{0, 300, 3600, 14400}, c.MinRuntimes)
	assert.Equal(t, &WindowsSpec{Days: 14}, c.Mapping.Windows, "14-day windows by the rule")
}

// A relative trace path is read from the config's folder and named as
// written.
func TestStudyConfigTracePath(t *testing.T) {
	c, err := ParseStudy(filepath.Join("some", "dir", "t.yaml"), []byte("experiment: trace\ntrace: logs/x.swf\n"))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join("some", "dir", "logs", "x.swf"), c.Trace)
	assert.Equal(t, "logs/x.swf", c.TraceName)
	c, err = ParseStudy("t.yaml", []byte("experiment: trace\ntrace: /abs/x.swf.gz\nwindow: {from: 5}\npool: 64\n"))
	require.NoError(t, err)
	assert.Equal(t, "/abs/x.swf.gz", c.Trace)
	assert.Equal(t, &Window{5, 0}, c.Window)
	assert.Equal(t, 64, *c.Pool)
	// The site's files (docs/site-config.md), relative to the config.
	c, err = ParseStudy(filepath.Join("site", "t.yaml"), []byte("experiment: trace\nslurm_conf: slurm.conf\nsshare: /abs/sshare.txt\nkueue: k/kueue.yaml\n"))
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join("site", "slurm.conf"), "/abs/sshare.txt", filepath.Join("site", "k", "kueue.yaml")}, []string{c.SlurmConf, c.Sshare, c.Kueue})
}

// Every mistake names the file, the line and the key.
func TestStudyConfigErrors(t *testing.T) {
	for src, want := range map[string]string{
		"":                                       "s.yaml: the config is empty",
		"trace: x\n":                             "s.yaml:1: experiment: missing",
		"experiment: trace\nexperiment: trace\n": "s.yaml:2: experiment: key given twice (first at line 1)",
		"experiment: tarce\n":                    `s.yaml:1: experiment: "tarce" is not a trace study; did you mean "trace"?`,
		"experiment: trace\nmodes: [site]\n":     "s.yaml:2: modes: unknown key (want experiment, description, trace, window, pool, policies, slurm_conf, sshare, kueue, platform, by, classes, tiers, shares, bucket, meter, restart, warmup, cooldown, windows, lookback, lead_in)",
		"experiment: trace\npolices: [fifo]\n":   `s.yaml:2: polices: unknown key; did you mean "policies"?`,
		"experiment: trace\npolicies: [fifo, fcfs]\n":            `s.yaml:2: policies[1]: unknown "fcfs"`,
		"experiment: trace\npolicies: [fifo, fifo]\n":            `s.yaml:2: policies[1]: "fifo" is listed twice`,
		"experiment: trace\npolicies: []\n":                      "s.yaml:2: policies: the list is empty",
		"experiment: trace\npolicies: fifo\n":                    "s.yaml:2: policies: want a list",
		"experiment: trace\npool: 0\n":                           "s.yaml:2: pool: want a whole number from 1",
		"experiment: trace\npool: 12.5\n":                        "s.yaml:2: pool: want a whole number, got 12.5",
		"experiment: trace\ntrace: \"\"\n":                       "s.yaml:2: trace: the path is empty",
		"experiment: trace\nkueue: \"\"\n":                       "s.yaml:2: kueue: the path is empty",
		"experiment: budget-knobs\nslurm_conf: x\n":              "s.yaml:2: slurm_conf: unknown key",
		"experiment: trace\nwindow: {until: 5}\n":                "s.yaml:2: window.from: missing",
		"experiment: trace\nwindow: {from: 9, until: 5}\n":       "s.yaml:2: window.until: must be after from (9), got 5",
		"experiment: trace\nwindow: {from: -1}\n":                "s.yaml:2: window.from: want a whole number from 0",
		"experiment: trace\nwindow: {from: 0, end: 5}\n":         `s.yaml:2: window.end: unknown key`,
		"experiment: trace\nwindow: 0:5\n":                       "s.yaml:2: window: want a mapping",
		"experiment: budget-knobs\nwindows_days: [1, 0]\n":       "s.yaml:2: windows_days[1]: want a whole number from 1 to 3650, got 0",
		"experiment: budget-knobs\nmin_runtimes_s: [300, 300]\n": "s.yaml:2: min_runtimes_s[1]: 300 is listed twice (also line 2)",
		"experiment: budget-knobs\npolicies: [budget]\n":         "s.yaml:2: policies: unknown key",
		"experiment: agents-arrive\nmodes: [metered]\n":          `s.yaml:2: modes: unknown key`,
		"experiment: agents-arrive\nagent_share: 1\n":            "s.yaml:2: agent_share: want a number above 0 and below 1",
		"experiment: agents-arrive\nagent_scale: 0\n":            "s.yaml:2: agent_scale: want a number above 0 and at most 64, got 0",
		"experiment: agents-arrive\nagent_scale: x\n":            "s.yaml:2: agent_scale: want a number",
		"experiment: agents-arrive\nmax_k: 65\n":                 "s.yaml:2: max_k: want a whole number from 0 to 64",
		"experiment: agents-arrive\nstay: 1\n":                   "s.yaml:2: stay: want at least 2 s",
		"experiment: agents-arrive\nseeds: 3\n":                  "s.yaml:2: seeds: seeds is a list of seeds, as on the command line: write seeds: [1, 2, 3], or nseeds: 3 for the seeds 1 … 3",
		"experiment: agents-arrive\nseeds: [1, 1]\n":             "s.yaml:2: seeds[1]: 1 is listed twice (also line 2)",
		"experiment: agents-arrive\nseeds: [-1]\n":               "s.yaml:2: seeds[0]: want a whole number from 0 to 9007199254740992, got -1",
		"experiment: agents-arrive\nnseeds: 0\n":                 "s.yaml:2: nseeds: want a whole number from 1 to 1000, got 0",
		"experiment: agents-arrive\nseeds: [1]\nnseeds: 2\n":     "s.yaml:1: nseeds: give seeds (a list) or nseeds (a count), not both",
		"experiment: trace\n---\nexperiment: trace\n":            "s.yaml:2: a second YAML document starts here",
		"experiment: &e trace\ndescription: *e\n":                "s.yaml:2: YAML aliases (*e) are not supported",
		"experiment: trace\n  pool: [\n":                         "s.yaml:2: invalid YAML",
		"- experiment: trace\n":                                  "s.yaml:1: want a mapping",
	} {
		_, err := ParseStudy("s.yaml", []byte(src))
		require.Error(t, err, src)
		assert.Contains(t, err.Error(), want, src)
		var ce *Error
		assert.True(t, errors.As(err, &ce), "%q: %T is not a *configs.Error", src, err)
	}
}

// FuzzParseStudy: any input is a StudyConfig or an error naming the file,
// never a panic; what parses names a study and only keys it takes.
func FuzzParseStudy(f *testing.F) {
	for _, name := range StudyExperiments {
		src, err := embedded.ReadFile(name + ".yaml")
		require.NoError(f, err)
		f.Add(src)
	}
	f.Add([]byte("experiment: trace\ntrace: x.swf\nwindow: {from: 1, until: 2}\npool: 3\n"))
	f.Add([]byte("{experiment: budget-knobs, windows_days: [1, 2], min_runtimes_s: [0]}"))
	f.Add([]byte("experiment: agents-arrive\nagent_share: 0.5\nmax_k: 0\nstay: 2d\nnseeds: 1000\nagent_scale: 64\n"))
	f.Add([]byte("experiment: agents-arrive\nseeds: [0, 7, 9007199254740992]\n"))
	f.Add([]byte("experiment: trace\nwindow: {from: 9223372036854775807}\n"))
	f.Add([]byte("experiment: trace\npolicies: [fifo, 7, null]\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		c, err := ParseStudy("fuzz.yaml", src)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if _, ok := studyKeys[c.Experiment]; !ok {
			t.Fatalf("parsed a config of %q", c.Experiment)
		}
		if c.Experiment != "budget-knobs" && (c.WindowsDays != nil || c.MinRuntimes != nil) {
			t.Fatal("budget-knobs keys on another study")
		}
		if c.Experiment != "agents-arrive" && (c.AgentScale != nil || c.AgentShare != nil || c.MaxK != nil || c.Stay != nil || c.Seeds != nil || c.NSeeds != nil) {
			t.Fatal("agents-arrive keys on another study")
		}
		if w := c.Window; w != nil && (w.From < 0 || (w.Until != 0 && w.Until <= w.From)) {
			t.Fatalf("window %+v accepted", *w)
		}
		if c.Pool != nil && *c.Pool < 1 {
			t.Fatalf("pool %d accepted", *c.Pool)
		}
	})
}

// The trace mapping keys: every value read, every mistake named by line
// and key.
func TestStudyConfigTraceMapping(t *testing.T) {
	c, err := ParseStudy("m.yaml", []byte("experiment: budget-knobs\nby: group\nclasses: {standby: opportunistic, \"3\": interactive}\n"+
		"tiers: {\"7\": express, batch: low}\n"+
		"shares: window\nbucket: hours:24\nrestart: zero\nwarmup: 12h\ncooldown: 0\nwindows: 4x14d\n"))
	require.NoError(t, err)
	m := c.Mapping
	assert.Equal(t, "group", m.By)
	assert.Len(t, m.Classes, 2)
	assert.Equal(t, map[string]string{"7": "express", "batch": "low"}, m.Tiers)
	assert.Equal(t, "window", m.Shares)
	assert.Equal(t, "hours:24", m.Bucket)
	assert.Equal(t, "zero", m.Restart)
	assert.Equal(t, int64(43200), *m.Warmup)
	assert.Equal(t, int64(0), *m.Cooldown)
	assert.Equal(t, WindowsSpec{N: 4, Days: 14}, *m.Windows)
	for src, want := range map[string]string{
		"experiment: trace\nby: users\n":             `m.yaml:2: by: "users": want user or group`,
		"experiment: trace\nshares: group\n":         `m.yaml:2: shares: "group": want one of lookback, groups, window, users, equal-groups, equal-users; did you mean "groups"?`,
		"experiment: trace\nbucket: hours:-1\n":      `m.yaml:2: bucket: "hours:-1": want largest-job or hours:N`,
		"experiment: trace\nrestart: checkpoint:0\n": `m.yaml:2: restart: "checkpoint:0": want zero or checkpoint:S`,
		"experiment: trace\nwarmup: -1d\n":           `m.yaml:2: warmup: "-1d": want a duration`,
		"experiment: trace\nwindows: 4x\n":           `m.yaml:2: windows: "4x": D must be a whole number of days`,
		"experiment: trace\nlead_in: 91d\n":          `m.yaml:2: lead_in: "91d": at most 90d`,
		"experiment: trace\nlookback: 30d\n":         `m.yaml:2: lookback: 2592000 s: a lookback is at least 90d (7776000 s)`,
		"experiment: trace\nclasses: {a: burst}\n":   `m.yaml:2: classes.a: unknown class "burst"`,
		"experiment: trace\ntiers: {a: lower}\n":     `m.yaml:2: tiers.a: unknown tier "lower"; did you mean "low"? (want interactive, express, high, normal, low, standby)`,
		"experiment: agents-arrive\nwindows: 4x\n":   `m.yaml:2: windows: "4x": D must be a whole number of days`,
	} {
		_, err := ParseStudy("m.yaml", []byte(src))
		require.Error(t, err, src)
		assert.Contains(t, err.Error(), want, src)
	}
}

// ParseWindows and ParseDuration accept what the docs say and nothing
// else; D alone leaves N to the default rule (N 0).
func TestParseWindowsAndDurations(t *testing.T) {
	for s, want := range map[string]WindowsSpec{"4x14d": {4, 14}, "4×14d": {4, 14}, " 1x7 ": {1, 7}, "14d": {0, 14}, "4": {0, 4}} {
		got, err := ParseWindows(s)
		require.NoError(t, err, s)
		assert.Equal(t, want, got, s)
	}
	for _, s := range []string{"", "0", "0d", "-14d", "0x14d", "4x0d", "4x1.5d", "x14d", "4x14h"} {
		_, err := ParseWindows(s)
		assert.Error(t, err, s)
	}
	for s, want := range map[string]int64{"0": 0, "1d": 86400, "0.5d": 43200, "12h": 43200, "30m": 1800, "90s": 90, "3600": 3600} {
		got, err := ParseDuration(s)
		require.NoError(t, err, s)
		assert.Equal(t, want, got, s)
	}
	for _, s := range []string{"", "-1", "1.5", "d", "1w", "NaN", "1e30d"} {
		_, err := ParseDuration(s)
		assert.Error(t, err, s)
	}
}

// The duration and windows parsers never panic, and what they accept is
// in range.
func FuzzParseDurationAndWindows(f *testing.F) {
	for _, s := range []string{"1d", "0.5d", "12h", "3600", "4x14d", "4×14d", "x", "-1d", "1e300d", "NaNd"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d, err := ParseDuration(s); err == nil && (d < 0 || d > 100*365*86400) {
			t.Fatalf("%q: %d s", s, d)
		}
		if w, err := ParseWindows(s); err == nil && (w.N < 0 || w.N > maxWindows || w.Days < 1) {
			t.Fatalf("%q: %+v", s, w)
		}
	})
}

// A study's policies list takes the variants by name.
func TestStudyPoliciesTakeVariants(t *testing.T) {
	c, err := ParseStudy("t.yaml", []byte("experiment: trace\npolicies: [quota, quota-fair, static-share]\n"))
	require.NoError(t, err)
	assert.Equal(t, []string{"quota", "quota-fair", "static-share"}, c.Policies)
	_, err = ParseStudy("t.yaml", []byte("experiment: trace\npolicies: [quota-fiar]\n"))
	require.ErrorContains(t, err, `did you mean "quota-fair"`)
}
