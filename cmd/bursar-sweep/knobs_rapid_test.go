package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bursar-hpc/bursar/configs"
	"github.com/bursar-hpc/bursar/engine"
	"github.com/bursar-hpc/bursar/policy/policies"
	"pgregory.net/rapid"
)

// anyNumber draws from a knob's whole range: any int64 (rapid biases
// towards small values and the edges: 0, ±1, the extremes), and for a
// float knob also fractions and huge magnitudes.
func anyNumber(t *rapid.T, kind string) string {
	if kind == "float" && rapid.Bool().Draw(t, "fraction") {
		return strconv.FormatFloat(rapid.Float64().Draw(t, "f"), 'g', -1, 64)
	}
	if kind == "bool" {
		return rapid.SampledFrom([]string{"true", "false"}).Draw(t, "b")
	}
	return strconv.FormatInt(rapid.Int64().Draw(t, "i"), 10)
}

// runQuiet runs the app with its console discarded.
func runQuiet(args ...string) (string, error) {
	var out strings.Builder
	app := newApp(policies.Default)
	app.Writer, app.ErrWriter = &out, &out
	err := app.Run(append([]string{"bursar-sweep"}, args...))
	return out.String(), err
}

// checkOneLine fails unless err is nil or one line naming want.
func checkOneLine(t *rapid.T, err error, want string) {
	if err == nil {
		return
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") {
		t.Fatalf("error on more than one line:\n%s", msg)
	}
	if !strings.Contains(msg, want) {
		t.Fatalf("error %q does not name %s", msg, want)
	}
}

// TestRunKnobsOverTheirWholeRange: `run --KNOB V` for every knob and any
// V either runs or fails with one line naming the flag; never a panic,
// never a hang (every knob has a ceiling that keeps a run bounded). The
// other knobs stay at the paper's values but for a short run, so that a
// run is cheap unless the drawn knob is ticks itself.
func TestRunKnobsOverTheirWholeRange(t *testing.T) {
	dir := t.TempDir()
	rapid.Check(t, func(t *rapid.T) {
		k := rapid.SampledFrom(engine.Knobs).Draw(t, "knob")
		v := anyNumber(t, k.Kind)
		args := []string{"run", "--out", dir}
		if k.Name != "ticks" {
			args = append(args, "--ticks", "120")
		}
		if k.Kind == "bool" {
			args = append(args, "--"+flagName(&k)+"="+v)
		} else {
			args = append(args, "--"+flagName(&k), v)
		}
		if rapid.Bool().Draw(t, "from a scenario file") {
			args = append(args, "--scenario", filepath.Join("..", "..", "configs", "scenarios", "three-science-two-storms.yaml"))
		}
		_, err := runQuiet(args...)
		checkOneLine(t, err, "--"+flagName(&k))
	})
}

// TestScenarioFieldsOverTheirWholeRange: a scenario file with any one
// scenario-wide or campaign field at any value either runs or fails with
// one line naming the file and line; never a panic.
func TestScenarioFieldsOverTheirWholeRange(t *testing.T) {
	dir := t.TempDir()
	top := []string{"pool", "io_capacity", "inference_capacity", "grace", "seed", "ticks", "sample_every", "window.start", "window.end"}
	rapid.Check(t, func(t *rapid.T) {
		file := filepath.Join(dir, "s.yaml")
		base := map[string]string{"pool": "512", "ticks": "120"}
		var campaign []string
		if rapid.Bool().Draw(t, "scenario-wide") {
			key := rapid.SampledFrom(top).Draw(t, "key")
			kind := "int"
			if strings.HasSuffix(key, "capacity") {
				kind = "float"
			}
			base[key] = anyNumber(t, kind)
		} else {
			f := rapid.SampledFrom(engine.CampaignFields).Draw(t, "field")
			agent := rapid.SampledFrom(engine.AgentKinds).Draw(t, "agent")
			if !f.AppliesTo(agent) {
				t.Skip("field does not apply")
			}
			v := anyNumber(t, f.Kind)
			name, sub, nested := strings.Cut(f.Name, ".")
			switch {
			case nested && name == "window":
				other := map[string]string{"start": "end: 5400", "end": "start: 0"}[sub]
				campaign = append(campaign, fmt.Sprintf("window: {%s: %s, %s}", sub, v, other))
			case nested:
				campaign = append(campaign, fmt.Sprintf("%s: {rate: 1, bucket: 1, %s: %s}", name, sub, v))
			default:
				campaign = append(campaign, name+": "+v)
			}
			campaign = append([]string{"name: x", "agent: " + agent}, campaign...)
		}
		var b strings.Builder
		for _, k := range []string{"pool", "io_capacity", "inference_capacity", "grace", "seed", "ticks", "sample_every"} {
			if v, ok := base[k]; ok {
				fmt.Fprintf(&b, "%s: %s\n", k, v)
			}
		}
		if s, ok := base["window.start"]; ok {
			fmt.Fprintf(&b, "window: {start: %s, end: 5400}\n", s)
		} else if e, ok := base["window.end"]; ok {
			fmt.Fprintf(&b, "window: {start: 0, end: %s}\n", e)
		}
		b.WriteString("campaigns:\n  - {name: victim, agent: victim}\n")
		if len(campaign) > 0 {
			b.WriteString("  - {" + strings.Join(campaign, ", ") + "}\n")
		}
		if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := configs.LoadScenario(file); err != nil {
			checkOneLine(t, err, file+":")
			return
		}
		_, err := runQuiet("run", "--scenario", file, "--out", dir)
		checkOneLine(t, err, file)
	})
}
