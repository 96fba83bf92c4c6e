package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bursar-hpc/bursar/engine"
	"github.com/bursar-hpc/bursar/internal/cliusage"
	"github.com/urfave/cli/v2"
)

// flagName is the CLI spelling of a scenario knob (storm_bucket →
// storm-bucket).
func flagName(k *engine.Knob) string { return strings.ReplaceAll(k.Name, "_", "-") }

// knobFlags makes one flag per scenario knob, each defaulting to the
// published scenario's value.
func knobFlags(category string) []cli.Flag {
	def := engine.DefaultScenario()
	var flags []cli.Flag
	for i := range engine.Knobs {
		k := &engine.Knobs[i]
		name, v := flagName(k), k.Get(&def)
		switch k.Kind {
		case "bool":
			flags = append(flags, &cli.BoolFlag{Name: name, Usage: k.Usage, Value: v != 0, Category: category})
		case "int":
			flags = append(flags, &cli.Int64Flag{Name: name, Usage: k.Usage, Value: int64(v), Category: category})
		default:
			flags = append(flags, &cli.Float64Flag{Name: name, Usage: k.Usage, Value: v, Category: category})
		}
	}
	return flags
}

// effectiveScenario is what `run` runs: the --scenario file (or the
// paper's scenario) with the knob flags given applied, its cast written
// out, validated.
func effectiveScenario(c *cli.Context) (engine.Scenario, error) {
	s := engine.DefaultScenario()
	onlySet := false
	if file := c.String("scenario"); file != "" {
		var err error
		if s, err = configReader(c).LoadScenario(file); err != nil {
			return s, err
		}
		onlySet = true // the file's values stand unless a flag is given
	}
	s, err := applyKnobFlags(c, s, onlySet)
	if err != nil {
		return s, err
	}
	if c.IsSet("policy") {
		name, names := c.String("policy"), appPolicies(c).Known()
		if !slices.Contains(names, name) {
			return s, fmt.Errorf("--policy: unknown admission policy %q%s (policies: %s)", name, cliusage.DidYouMean(name, names), strings.Join(names, ", "))
		}
		if name != s.Policy {
			// The file's knobs are for its own policy; another one runs
			// with its defaults.
			s.PolicyKnobs = nil
		}
		s.Policy, s.Policies = name, appPolicies(c)
	}
	s = s.Explicit()
	if err := s.Validate(); err != nil {
		return s, withKnobFlags(c, err)
	}
	return s, nil
}

// withKnobFlags names the knob flags given beside a scenario's validation
// error: a rule between knobs (the guarantees within the pool, the storm
// window inside the run) is broken by the flags as much as by the file.
func withKnobFlags(c *cli.Context, err error) error {
	var given []string
	for i := range engine.Knobs {
		if name := flagName(&engine.Knobs[i]); c.IsSet(name) {
			given = append(given, fmt.Sprintf("--%s %v", name, c.Value(name)))
		}
	}
	if c.IsSet("policy") {
		given = append(given, "--policy "+c.String("policy"))
	}
	if len(given) == 0 {
		return err
	}
	return fmt.Errorf("with %s: %w", strings.Join(given, ", "), err)
}

// applyKnobFlags sets the knobs from their flags (only the flags given on
// the command line when onlySet).
func applyKnobFlags(c *cli.Context, s engine.Scenario, onlySet bool) (engine.Scenario, error) {
	for i := range engine.Knobs {
		k := &engine.Knobs[i]
		name := flagName(k)
		if onlySet && !c.IsSet(name) {
			continue
		}
		var v float64
		switch k.Kind {
		case "bool":
			if c.Bool(name) {
				v = 1
			}
		case "int":
			v = float64(c.Int64(name))
		default:
			v = c.Float64(name)
		}
		if err := k.Set(&s, v); err != nil {
			return s, fmt.Errorf("--%s: %w", name, err)
		}
	}
	return s, nil
}
