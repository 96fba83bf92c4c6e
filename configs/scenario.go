package configs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/bursar-hpc/bursar/engine"
	"github.com/bursar-hpc/bursar/policy"
	"gopkg.in/yaml.v3"
)

// The keys of a scenario file (docs/scenarios.md).
var (
	scenarioTopKeys = []string{"pool", "io_capacity", "inference_capacity", "grace", "leaky", "seed", "ticks", "sample_every", "window", "policy", "allow_burst_above_pool", "campaigns"}
	windowKeys      = []string{"start", "end"}
	flowKeys        = []string{"rate", "bucket", "ceiling"}
)

// LoadScenario reads a scenario file ("-" reads standard input).
func LoadScenario(path string) (engine.Scenario, error) { return Reader{}.LoadScenario(path) }

// LoadScenario: see the package's LoadScenario.
func (r Reader) LoadScenario(path string) (engine.Scenario, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(os.Stdin)
		path = "<stdin>"
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return engine.Scenario{}, fmt.Errorf("read scenario: %w", err)
	}
	return r.ParseScenario(path, data)
}

// ParseScenario decodes a scenario file strictly: an unknown key (with the
// nearest known one), a value of the wrong type, a field the campaign's
// agent does not have, a missing name or agent, or a scenario that fails
// engine's Scenario.Validate is an *Error naming the file, the line and
// the key. Omitted scenario-wide fields take the paper's values; an
// omitted campaign field takes the value of the paper's campaign of that
// agent (engine.DefaultCampaign). The result has an explicit cast.
func ParseScenario(file string, data []byte) (engine.Scenario, error) {
	return Reader{}.ParseScenario(file, data)
}

// ParseScenario: see the package's ParseScenario.
func (r Reader) ParseScenario(file string, data []byte) (engine.Scenario, error) {
	s := engine.DefaultScenario()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return s, &Error{File: file, Msg: "the scenario is empty (want a mapping with pool, campaigns, …)"}
		}
		return s, yamlError(file, data, err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return s, &Error{File: file, Line: next.Line, Msg: "a second YAML document starts here; a scenario is one document"}
	case !errors.Is(err, io.EOF):
		return s, yamlError(file, data, err)
	}
	if len(doc.Content) == 0 {
		return s, &Error{File: file, Msg: "the scenario is empty (want a mapping with pool, campaigns, …)"}
	}
	p := &parser{file: file, policies: r.Policies}
	if err := p.noAliases(&doc); err != nil {
		return s, err
	}
	root := doc.Content[0]
	s.Cast = []engine.Campaign{}
	haveCampaigns := false
	policyLine := 0                 // where the policy key is, for its validation errors
	lines := map[string]int{}       // campaign name → line, for validation errors
	var defaulted []map[string]bool // per campaign: the keys it left to the default
	err := p.mapping(root, "", scenarioTopKeys, func(key string, k, v *yaml.Node) error {
		switch key {
		case "pool", "io_capacity", "inference_capacity", "grace", "leaky", "seed", "ticks", "sample_every":
			kn, _ := engine.KnobByName(key)
			x, err := p.value(kn, v, key)
			if err != nil {
				return err
			}
			return kn.Set(&s, x)
		case "window":
			return p.mapping(v, key, windowKeys, func(sub string, _, vv *yaml.Node) error {
				x, err := p.integer(vv, key+"."+sub)
				if sub == "start" {
					s.StormStart = x
				} else {
					s.StormEnd = x
				}
				return err
			})
		case "allow_burst_above_pool":
			x, err := p.value(engine.KnobOfKind(key, "bool"), v, key)
			s.AllowBurstAbovePool = x != 0
			return err
		case "policy":
			policyLine = v.Line
			pc, err := p.policy(v, key)
			if err != nil {
				return err
			}
			pc.Apply(&s)
		case "campaigns":
			haveCampaigns = true
			if v.Kind != yaml.SequenceNode {
				return p.errAt(v, key, "want a list of campaigns, got %s", describe(v))
			}
			for i, cn := range v.Content {
				c, err := p.campaign(cn, fmt.Sprintf("campaigns[%d]", i))
				if err != nil {
					return err
				}
				defaulted = append(defaulted, map[string]bool{
					"burst_ceiling": !hasKey(cn, "burst_ceiling"), "headroom": !hasKey(cn, "headroom")})
				if line, dup := lines[c.Name]; dup {
					return p.errAt(cn, fmt.Sprintf("campaigns[%d].name", i), "duplicate campaign name %q (first at line %d)", c.Name, line)
				}
				lines[c.Name] = cn.Line
				s.Cast = append(s.Cast, c)
			}
		}
		return nil
	})
	if err != nil {
		return s, err
	}
	if !haveCampaigns || len(s.Cast) == 0 {
		return s, p.errAt(root, "campaigns", "missing: a scenario lists its campaigns (campaigns: [{name: victim, agent: victim}, …])")
	}
	fitDefaultsToPool(&s, defaulted)
	if err := s.Validate(); err != nil {
		// Point at the campaign the error names, if any.
		line, key := root.Line, ""
		msg := err.Error()
		if policyLine > 0 && strings.Contains(msg, ": policy: ") {
			line, key = policyLine, "policy"
		}
		for i := range s.Cast {
			if strings.Contains(msg, "campaign "+s.Cast[i].Name+":") {
				line, key = lines[s.Cast[i].Name], fmt.Sprintf("campaigns[%d]", i)
				break
			}
		}
		return s, &Error{File: file, Line: line, Key: key, Msg: msg, Err: err}
	}
	return s, nil
}

// hasKey reports whether the mapping n has the key.
func hasKey(n *yaml.Node, key string) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return true
		}
	}
	return false
}

// fitDefaultsToPool caps the defaults a campaign took from the paper's
// 512-GPU cast at a smaller pool: a burst ceiling (384 for science and
// storms) or a backfill headroom (160) the file did not write is at most
// the pool, so that a minimal file with `pool: 128` runs. A value written
// in the file is never changed (a burst ceiling above the pool is an
// error naming it; a headroom above it runs, with a warning),
// and at 512 GPUs or more nothing moves: the paper's runs stay as they are.
func fitDefaultsToPool(s *engine.Scenario, defaulted []map[string]bool) {
	for i := range s.Cast {
		if i >= len(defaulted) {
			break
		}
		c := &s.Cast[i]
		if defaulted[i]["burst_ceiling"] && !c.CeilingIsPool && c.BurstCeiling > s.Pool && !s.AllowBurstAbovePool {
			c.BurstCeiling = max(s.Pool, c.Guaranteed)
		}
		if defaulted[i]["headroom"] && c.Agent == engine.AgentBackfill && c.Headroom > s.Pool {
			c.Headroom = s.Pool
		}
	}
}

func (p *parser) integer(n *yaml.Node, key string) (int, error) {
	kn := engine.KnobOfKind(key, "int")
	x, err := p.value(kn, n, key)
	return int(x), err
}

// campaignKeys are the keys a campaign of the agent kind may have.
func campaignKeys(agent string) []string {
	keys := []string{"name", "agent", "group", "class"}
	for i := range engine.CampaignFields {
		f := &engine.CampaignFields[i]
		if !f.AppliesTo(agent) {
			continue
		}
		top, _, _ := strings.Cut(f.Name, ".")
		if !slices.Contains(keys, top) {
			keys = append(keys, top)
		}
	}
	return keys
}

func (p *parser) campaign(n *yaml.Node, path string) (engine.Campaign, error) {
	if n.Kind != yaml.MappingNode {
		return engine.Campaign{}, p.errAt(n, path, "want a campaign (a mapping with name, agent, …), got %s", describe(n))
	}
	// The agent decides which keys are allowed and the defaults: read it
	// first.
	var agentNode *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "agent" {
			agentNode = n.Content[i+1]
		}
	}
	if agentNode == nil {
		return engine.Campaign{}, p.errAt(n, join(path, "agent"), "missing: every campaign names its agent (%s)", strings.Join(engine.AgentKinds, ", "))
	}
	agent, err := p.str(agentNode, join(path, "agent"))
	if err != nil {
		return engine.Campaign{}, err
	}
	c, ok := engine.DefaultCampaign(agent)
	if !ok {
		return c, p.errAt(agentNode, join(path, "agent"), "unknown agent %q%s (agents: %s)", agent, suggest(agent, engine.AgentKinds), strings.Join(engine.AgentKinds, ", "))
	}
	c.Name = ""
	err = p.mapping(n, path, campaignKeys(agent), func(key string, k, v *yaml.Node) error {
		kp := join(path, key)
		switch key {
		case "agent":
			return nil
		case "name":
			name, err := p.name(v, kp)
			if err != nil {
				return err
			}
			if name == "overbooked" {
				return p.errAt(v, kp, "the name overbooked is reserved for the report's overbooking proof")
			}
			c.Name = name
		case "group":
			g, err := p.name(v, kp)
			c.Group = g
			return err
		case "class":
			str, err := p.str(v, kp)
			if err != nil {
				return err
			}
			cls, err := policy.ParseClass(str)
			if err != nil {
				return p.errAt(v, kp, "%v", err)
			}
			c.Class = cls
		case "io", "inference":
			if v.ShortTag() == "!!null" {
				if key == "io" {
					c.IO = nil
				} else {
					c.Inference = nil
				}
				return nil
			}
			// A flow written out replaces the default one whole: rate
			// and bucket are required, the ceiling defaults to the rate.
			var f policy.Flow
			var have [3]bool
			err := p.mapping(v, kp, flowKeys, func(sub string, _, vv *yaml.Node) error {
				fld, _ := engine.CampaignFieldByName(key + "." + sub)
				x, err := p.value(engine.KnobOfKind(kp+"."+sub, fld.Kind), vv, kp+"."+sub)
				i := slices.Index(flowKeys, sub)
				have[i] = true
				switch sub {
				case "rate":
					f.Rate = x
				case "bucket":
					f.Bucket = x
				default:
					f.Ceiling = x
				}
				return err
			})
			if err != nil {
				return err
			}
			if !have[0] || !have[1] {
				return p.errAt(v, kp, "a flow envelope needs rate and bucket (ceiling defaults to the rate)")
			}
			if !have[2] {
				f.Ceiling = f.Rate
			}
			if key == "io" {
				c.IO = &f
			} else {
				c.Inference = &f
			}
		case "window":
			return p.mapping(v, kp, windowKeys, func(sub string, _, vv *yaml.Node) error {
				fld, _ := engine.CampaignFieldByName("window." + sub)
				x, err := p.integer(vv, kp+"."+sub)
				fld.Set(&c, float64(x))
				return err
			})
		default:
			fld, _ := engine.CampaignFieldByName(key)
			if fld.Pool && v.Kind == yaml.ScalarNode && v.ShortTag() == "!!str" && v.Value == "pool" {
				fld.SetPool(&c, true)
				return nil
			}
			x, err := p.value(engine.KnobOfKind(kp, fld.Kind), v, kp)
			if err != nil {
				if fld.Pool {
					err.(*Error).Msg += " or the word pool"
				}
				return err
			}
			fld.Set(&c, x)
		}
		return nil
	})
	if err != nil {
		return c, err
	}
	if c.Name == "" {
		return c, p.errAt(n, join(path, "name"), "missing: every campaign has a name")
	}
	return c, nil
}

// FormatScenario writes a scenario as a complete scenario file: every
// scenario-wide field and every field of every campaign, so that reading
// it back gives the same scenario (and the same run, byte for byte). A
// scenario without an explicit cast is written with the paper's cast its
// knobs describe.
func FormatScenario(s engine.Scenario) []byte {
	s = s.Explicit()
	var b bytes.Buffer
	b.WriteString("# A Bursar scenario (docs/scenarios.md). Run it: bursar-sweep run --scenario FILE\n")
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	fmt.Fprintf(&b, "pool: %d\nio_capacity: %s\ninference_capacity: %s\ngrace: %d\nleaky: %t\nseed: %d\nticks: %d\nsample_every: %d\n",
		s.Pool, num(s.IOCapacity), num(s.InferenceCapacity), s.Grace, s.Leaky, s.Seed, s.Ticks, s.SampleEvery)
	fmt.Fprintf(&b, "window: {start: %d, end: %d}\n", s.StormStart, s.StormEnd)
	if s.Policy != "" {
		fmt.Fprintf(&b, "policy: %s\n", FormatPolicy(&s))
	}
	if s.AllowBurstAbovePool {
		b.WriteString("allow_burst_above_pool: true\n")
	}
	b.WriteString("campaigns:\n")
	for i := range s.Cast {
		c := &s.Cast[i]
		fmt.Fprintf(&b, "  - name: %s\n    agent: %s\n", c.Name, c.Agent)
		if c.Group != "" {
			fmt.Fprintf(&b, "    group: %s\n", c.Group)
		}
		fmt.Fprintf(&b, "    class: %s\n", c.Class)
		done := map[string]bool{}
		for j := range engine.CampaignFields {
			f := &engine.CampaignFields[j]
			if !f.AppliesTo(c.Agent) {
				continue
			}
			top, _, nested := strings.Cut(f.Name, ".")
			if nested {
				if done[top] {
					continue
				}
				done[top] = true
				switch top {
				case "io", "inference":
					fl := c.IO
					if top == "inference" {
						fl = c.Inference
					}
					if fl == nil {
						fmt.Fprintf(&b, "    %s: null\n", top)
						continue
					}
					fmt.Fprintf(&b, "    %s: {rate: %s, bucket: %s, ceiling: %s}\n", top, num(fl.Rate), num(fl.Bucket), num(fl.Ceiling))
				case "window":
					fmt.Fprintf(&b, "    window: {start: %d, end: %d}\n", c.Window.Start, c.Window.End)
				}
				continue
			}
			v := f.Get(c)
			switch {
			case f.IsPool(c):
				fmt.Fprintf(&b, "    %s: pool\n", f.Name)
			case f.Kind == "int":
				fmt.Fprintf(&b, "    %s: %d\n", f.Name, int64(v))
			case math.IsNaN(v):
				continue
			default:
				fmt.Fprintf(&b, "    %s: %s\n", f.Name, num(v))
			}
		}
	}
	return b.Bytes()
}
